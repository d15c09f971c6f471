#!/bin/sh
# regen.sh rebuilds the golden MMV files in this directory with libpcp_mmv.
#
#   testdata/golden/regen.sh [SCENARIO...]
#
# It builds gen.c with gcc against libpcp_mmv (Debian: libpcp-mmv1-dev),
# runs it with PCP_TMP_DIR set to a scratch directory, and lets it copy each
# file libpcp wrote to <scenario>.mmv here. With no argument every scenario
# is regenerated. See README.md.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

${CC:-gcc} -Wall -Wextra -o "$tmp/gen" "$here/gen.c" -lpcp_mmv -lpcp
mkdir "$tmp/pcp"
PCP_TMP_DIR="$tmp/pcp" "$tmp/gen" "$here" "$@"
