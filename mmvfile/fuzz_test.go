package mmvfile_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv/mmvfile"
)

// FuzzParse checks that Parse, DumpAs (as each PCP) and Lint never panic or hang (and so
// never read outside b: a read beyond a slice panics), that every error
// wraps exactly one sentinel, and that what Parse accepts is consistent.
// The seed corpus in testdata/fuzz/FuzzParse holds valid files of each
// version from libpcp_mmv and from our writer, corrupt ones, and the files
// of other writers in testdata/corpus (added by seedCorpus).
func FuzzParse(f *testing.F) {
	seedCorpus(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, pcp := range []mmvfile.PCP{mmvfile.PCP603, mmvfile.PCP72} {
			var out bytes.Buffer
			_, err := mmvfile.DumpAs(&out, "fuzz", b, time.Unix(1700000000, 0), pcp)
			require.NoError(t, err)
		}
		file, err := mmvfile.Parse(b)
		if err != nil {
			n := 0
			for _, s := range sentinels {
				if errors.Is(err, s) {
					n++
				}
			}
			require.EqualValues(t, 1, n, "%v wraps", err)
			return
		}
		file.Lint("fuzz")
		for _, v := range file.Values {
			require.False(t, v.Metric == nil || v.Metric.Singular() != (v.Instance == nil), "value at %d: metric %v, instance %v", v.Offset, v.Metric, v.Instance)
			if v.Instance != nil && file.Indom(v.Metric.Indom) != nil {
				require.Equal(t, v.Metric.Indom, v.Instance.Indom.Serial, "value at %d: the instance's indom is not the metric's", v.Offset)
			}
		}
		for _, in := range file.Indoms {
			for _, inst := range in.Instances {
				require.Same(t, in, inst.Indom, "indom %d lists the instance at %d of another indom", in.Serial, inst.Offset)
			}
		}
	})
}

// seedCorpus adds the files of testdata/corpus, other writers' files, to
// the fuzzer's seeds.
func seedCorpus(f *testing.F) {
	files, err := filepath.Glob("testdata/corpus/*/*.mmv")
	require.NoError(f, err)
	for _, file := range files {
		b, err := os.ReadFile(file)
		require.NoError(f, err)
		f.Add(b)
	}
}
