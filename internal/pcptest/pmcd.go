package pcptest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gopcp/mmv/internal/osfile"
)

// PMCD reads metrics through a pmcd and its MMV agent, as monitoring
// tools do: the host's (MustHavePMCD), or one the test started for itself
// (StartPMCD). The host's pmcd's agent reads the system directory Dir, not
// a test's temporary one: write files there (mmv.Options.Dir = p.Dir)
// under names no other test uses, and nothing that could crash it (see
// StartPMCD).
type PMCD struct {
	// Dir is the directory pmcd's MMV agent reads: for the host's,
	// $PCP_TMP_DIR/mmv from pcp.conf (/var/lib/pcp/tmp/mmv on Debian).
	Dir     string
	pminfo  string
	pmstore string
	private *private // a pmcd of the test's own, or nil for the host's
}

// HasPMCD reports whether pmcd answers, through its MMV agent, for
// mmv.control.files.
func HasPMCD() error {
	_, err := pmcd()
	return err
}

// MustHavePMCD returns the helper once pmcd answers (see HasPMCD), or
// skips or fails the test as MustHave (CI starts pmcd in .ci/run). A test
// that restarts registries takes a pmcd of its own instead (StartPMCD).
// Under MMV_PCP_ROOT the host's pmcd is not the PCP chosen: the test gets
// a pmcd of its own inside the root (StartPMCD), stopped when it ends.
func MustHavePMCD(t testing.TB) *PMCD {
	t.Helper()
	MustHavePCP(t)
	if Root() != "" {
		return StartPMCD(t)
	}
	p, err := pmcd()
	MustHave(t, err)
	return p
}

func pmcd() (*PMCD, error) {
	tl, err := find()
	if err != nil {
		return nil, err
	}
	p := &PMCD{pminfo: tl.pminfo}
	tmp := Config("PCP_TMP_DIR")
	if tmp == "" {
		return nil, fmt.Errorf("PCP_TMP_DIR is not in pcp.conf")
	}
	p.Dir = filepath.Join(tmp, "mmv")
	if p.pmstore, err = lookPath("pmstore"); err != nil {
		return nil, fmt.Errorf("no pmstore: %v", err)
	}
	if _, err := p.Fetch(context.Background(), "mmv.control.files"); err != nil {
		return nil, err
	}
	return p, nil
}

// Fetch runs pminfo -dfmtTl NAMES through pmcd and parses the output.
// Names pmcd does not know, and metrics whose file vanished during the
// fetch, are left out of the result, not an error: a
// file being replaced is briefly absent. Any other failure, such as pmcd
// not answering, is an error. Fetch reports to no testing.TB, so it can run
// from any goroutine.
func (p *PMCD) Fetch(ctx context.Context, names ...string) ([]Metric, error) {
	args := append(append(p.hostArgs(), "-dfmtTl"), names...)
	// PCP_TMP_DIR is unset so that pminfo, like pmcd, uses the system one.
	out, stderr, err := run(ctx, []string{"PCP_TMP_DIR="}, p.pminfo, args...)
	if err != nil && !onlyUnknown(stderr) {
		return nil, fmt.Errorf("pminfo %s: %v: %s", strings.Join(args, " "), err, stderr)
	}
	ms, perr := Parse(dropVanished(out))
	if perr != nil {
		return nil, perr
	}
	return ms, nil
}

// vanishedRE matches the line pminfo prints for a metric whose file went
// away while pminfo looked it up, as when a writer restarts during the
// fetch.
var vanishedRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.]*: pm[A-Za-z]+: Unknown (or illegal metric identifier|metric name)$`)

// dropVanished leaves out the metrics that vanished during a fetch, as
// names pmcd does not know are left out.
func dropVanished(out string) string {
	var b strings.Builder
	for l := range strings.Lines(out) {
		if !vanishedRE.MatchString(strings.TrimSuffix(l, "\n")) {
			b.WriteString(l)
		}
	}
	return b.String()
}

// onlyUnknown reports whether pminfo's error output holds nothing but
// "Unknown metric name" lines.
func onlyUnknown(stderr string) bool {
	stderr = strings.TrimSpace(stderr)
	if stderr == "" {
		return false
	}
	for l := range strings.Lines(stderr) {
		if !strings.HasSuffix(strings.TrimSpace(l), ": Unknown metric name") {
			return false
		}
	}
	return true
}

// Reload makes pmcd's MMV agent rescan its directory now
// (pmstore mmv.control.reload 1). It rescans by itself on the next fetch
// when the directory changed, so tests rarely need this.
func (p *PMCD) Reload(ctx context.Context) error {
	_, stderr, err := run(ctx, []string{"PCP_TMP_DIR="}, p.pmstore, append(p.hostArgs(), "mmv.control.reload", "1")...)
	if err != nil {
		return fmt.Errorf("pmstore mmv.control.reload 1: %v: %s", err, stderr)
	}
	return nil
}

// RemoveClosedRecords removes, now and when the test ends, the closed
// records a Process registry of the name leaves in dir when it closes
// (.<name>.closed, .<name>.N.closed for its overflow files), which the
// next Start of the name reads: a test running a Process registry in the
// host's directory leaves nothing there, and its run under a name an
// earlier one used (-count 2, a pid reused) reads no earlier run's
// metrics. Called before the registry is made, its cleanup runs after the
// registry's Close (a defer, or a cleanup registered later).
func RemoveClosedRecords(t testing.TB, dir, name string) {
	t.Helper()
	remove := func() {
		for _, pattern := range []string{osfile.ClosedName(name), osfile.ClosedName(name + ".[0-9]*")} {
			records, err := filepath.Glob(filepath.Join(dir, pattern))
			if err != nil {
				t.Errorf("closed records of %s: %v", name, err)
			}
			for _, f := range records {
				if err := os.Remove(f); err != nil {
					t.Errorf("closed record of %s: %v", name, err)
				}
			}
		}
	}
	remove()
	t.Cleanup(remove)
}
