// Package pcptest runs Performance Co-Pilot's own reader over MMV files, as
// the oracle of the tests: what PCP shows is what the library wrote.
//
// It also says what a test needs of its environment, as the standard
// library's internal/testenv does: HasPCP, HasPMCD and HasLibPCPMMV report
// what is missing, and MustHavePCP, MustHavePMCD and MustHaveLibPCPMMV skip
// the test when it is, or fail it when the environment sets
// MMV_REQUIRE_PCP=1 (as CI does), so the tests pass on a machine with only
// Go and can never be skipped silently in CI. MustHave does the same for
// any other need. NeedFileLayer skips, and never fails, a test that needs
// mmv's files where the build has no port (HasFileLayer): that is the
// build's fact, not the environment's.
//
// Every helper that runs PCP (Info, Pminfo, Dump, DumpExit, RunExample,
// MustHavePMCD, StartPMCD, FetchLoop) asks for what it needs itself, as
// MustHavePCP does: a test that uses one skips on a machine without PCP even when it
// forgot to ask, and fails under MMV_REQUIRE_PCP=1. A test that needs PCP
// for one check only calls WantPCP and leaves that check out.
//
// Info reads a directory of files with no daemon: pminfo loads PCP's MMV
// agent (pmda_mmv.so, domain 70) in-process with PCP_TMP_DIR pointing at
// the directory. PMCD reads through the running pmcd instead, for tests of a
// live system; StartPMCD starts a pmcd of the test's own, for tests that
// could crash it (PCP 6.0.3's pmcd can die of a restarting writer, see
// docs/design.md), and FetchLoop fetches through either as fast as a client
// can. Dump runs PCP's mmvdump on one file.
//
// Every PCP command runs under Timeout, so a hung reader fails the test.
//
// The PCP is the host's, or the one installed in the directory
// MMV_PCP_ROOT names (RootEnv): a chroot with PCP 7.2 made by
// .ci/pcp7-chroot, whose commands run through Command. Version and AtLeast
// tell a test which PCP it reads through, for the behaviours that differ.
package pcptest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopcp/mmv/internal/pcpconf"
)

// Domain is the PMID domain of PCP's MMV agent.
const Domain = 70

// Timeout bounds every PCP command the package runs.
var Timeout = 30 * time.Second

// RequireEnv is the environment variable that, set to "1", turns every
// MustHave skip into a failure: the environment CI provides (PCP, pmcd,
// gcc and libpcp_mmv, root) is then required.
const RequireEnv = "MMV_REQUIRE_PCP"

// Config returns the value of a PCP configuration variable, such as
// PCP_PMDAS_DIR, as PCP's pmGetConfig finds it: the environment first, then
// the first pcp.conf found ($PCP_CONF, $PCP_DIR/etc/pcp.conf,
// /etc/pcp.conf, /usr/local/etc/pcp.conf; under MMV_PCP_ROOT, the root's
// /etc/pcp.conf, its paths as seen inside it). It returns "" when neither
// has it.
func Config(name string) string {
	if Root() != "" {
		if v := os.Getenv(name); v != "" {
			return v
		}
		return pcpconf.Value(rootConf(), name)
	}
	return pcpconf.Get(os.Getenv, name, pcpconf.Files)
}

// tools are the paths of the PCP pieces the package runs.
type tools struct {
	pminfo, agent, mmvdump string
}

// HasPCP reports whether PCP's reader is usable: pminfo on PATH, the MMV
// agent and mmvdump in $PCP_PMDAS_DIR/mmv, and the namespace root in
// $PCP_VAR_DIR/pmns. The error says what is missing.
func HasPCP() error {
	_, err := find()
	return err
}

func find() (tools, error) {
	var t tools
	var err error
	if Root() != "" && os.Geteuid() != 0 {
		return t, fmt.Errorf("%s=%s needs root (unshare and chroot)", RootEnv, Root())
	}
	if t.pminfo, err = lookPath("pminfo"); err != nil {
		return t, fmt.Errorf("no pminfo (Debian: apt-get install pcp libpcp-mmv1-dev): %v", err)
	}
	pmdas := Config("PCP_PMDAS_DIR")
	if pmdas == "" {
		return t, errors.New("PCP_PMDAS_DIR is not set and no pcp.conf gives it")
	}
	t.agent = filepath.Join(pmdas, "mmv", "pmda_mmv.so")
	t.mmvdump = filepath.Join(pmdas, "mmv", "mmvdump")
	for _, f := range []string{t.agent, t.mmvdump} {
		if _, err := os.Stat(hostPath(f)); err != nil {
			return t, fmt.Errorf("PCP's MMV agent is missing: %v", err)
		}
	}
	if v := Config("PCP_VAR_DIR"); v != "" {
		if _, err := os.Stat(hostPath(filepath.Join(v, "pmns", "root"))); err != nil {
			return t, fmt.Errorf("PCP's namespace root is missing (run ./Rebuild in %s): %v", filepath.Join(v, "pmns"), err)
		}
	}
	return t, nil
}

// MustHave skips the test when missing is not nil, or fails it when
// MMV_REQUIRE_PCP=1: the one place a test's need is skipped or enforced.
func MustHave(t testing.TB, missing error) {
	t.Helper()
	switch {
	case missing == nil:
	case os.Getenv(RequireEnv) == "1":
		t.Fatalf("required (%s=1) but missing: %v", RequireEnv, missing)
	default:
		t.Skipf("skipping (set %s=1 to fail instead): %v", RequireEnv, missing)
	}
}

// MustHavePCP skips or fails the test, as MustHave, when PCP's reader is
// not usable (see HasPCP).
func MustHavePCP(t testing.TB) {
	t.Helper()
	MustHave(t, HasPCP())
}

// WantPCP reports whether PCP's reader is usable, for a test that checks
// PCP's view only when it can: it fails the test, as MustHave, when PCP
// is missing and MMV_REQUIRE_PCP=1.
func WantPCP(t testing.TB) bool {
	t.Helper()
	err := HasPCP()
	if err != nil && os.Getenv(RequireEnv) == "1" {
		MustHave(t, err)
	}
	return err == nil
}

// HasLibPCPMMV reports whether a C program can be built with libpcp_mmv:
// gcc on PATH, and a probe that uses the library compiles and links.
var HasLibPCPMMV = sync.OnceValue(func() error {
	gcc, err := lookPath("gcc")
	if err != nil {
		return fmt.Errorf("no gcc: %v", err)
	}
	dir, err := os.MkdirTemp("", "pcptest")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	probe := filepath.Join(dir, "probe.c")
	if err := os.WriteFile(probe, []byte("#include <pcp/pmapi.h>\n#include <pcp/mmv_stats.h>\n"+
		"int main(void) { return mmv_stats_registry(\"p\", 0, 0) == 0; }\n"), 0o644); err != nil {
		return err
	}
	if out, err := Command(context.Background(), gcc, "-o", filepath.Join(dir, "probe"), probe, "-lpcp_mmv", "-lpcp").CombinedOutput(); err != nil {
		return fmt.Errorf("libpcp_mmv is not usable (Debian: apt-get install libpcp-mmv1-dev): %v\n%s", err, out)
	}
	return nil
})

// MustHaveLibPCPMMV skips or fails the test, as MustHave, when a C program
// cannot be built with libpcp_mmv (see HasLibPCPMMV).
func MustHaveLibPCPMMV(t testing.TB) {
	t.Helper()
	MustHave(t, HasLibPCPMMV())
}

// need returns PCP's tools, or skips or fails the test as MustHavePCP
// when they are missing. Every helper that runs a PCP program gets them
// through need, so a test that uses one skips where PCP is absent (and
// fails under MMV_REQUIRE_PCP=1) whether or not it asked first.
func need(t testing.TB) tools {
	t.Helper()
	tl, err := find()
	MustHave(t, err)
	return tl
}

// run runs a command under Timeout, with the environment changed by env
// ("NAME=value" sets, "NAME=" unsets), and returns its standard output and
// error.
func run(ctx context.Context, env []string, name string, args ...string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	cmd := Command(ctx, name, args...)
	cmd.Env = environ(os.Environ(), env)
	cmd.WaitDelay = time.Second
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("%s timed out after %v: %w", name, Timeout, ctx.Err())
	}
	return o.String(), e.String(), err
}

// environ returns base with the changes of env: "NAME=value" sets NAME,
// "NAME=" removes it.
func environ(base, env []string) []string {
	out := make([]string, 0, len(base)+len(env))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, k+"=") }) {
			out = append(out, kv)
		}
	}
	for _, kv := range env {
		if _, v, _ := strings.Cut(kv, "="); v != "" {
			out = append(out, kv)
		}
	}
	return out
}

// InfoArgs returns the pminfo arguments Info uses: the MMV agent loaded
// in-process (-K), every field of every mmv metric.
func InfoArgs(agent string) []string {
	return []string{"-L", "-K", "clear", "-K", fmt.Sprintf("add,%d,%s,mmv_init", Domain, agent), "-dfmtTl", "mmv"}
}

// Info reads every MMV file in tmpdir/mmv with PCP's reader and no daemon,
// as
//
//	PCP_TMP_DIR=tmpdir pminfo -L -K clear -K add,70,$PCP_PMDAS_DIR/mmv/pmda_mmv.so,mmv_init -dfmtTl mmv
//
// and returns the metrics it shows, mmv.control.* included, in pminfo's
// order. Without PCP it skips or fails the test as MustHavePCP; the test
// fails when pminfo fails or its output does not parse.
func Info(t testing.TB, tmpdir string) []Metric {
	t.Helper()
	tl := need(t)
	out, stderr, err := run(context.Background(), []string{"PCP_TMP_DIR=" + tmpdir}, tl.pminfo, InfoArgs(tl.agent)...)
	if err != nil {
		t.Fatalf("pminfo on %s: %v\n%s%s", tmpdir, err, stderr, out)
	}
	if stderr != "" {
		t.Logf("pminfo on %s wrote to stderr:\n%s", tmpdir, stderr)
	}
	ms, err := Parse(out)
	if err != nil {
		t.Fatalf("pminfo on %s: %v\n%s", tmpdir, err, out)
	}
	return ms
}

// Pminfo runs pminfo with the MMV agent loaded in-process, as Info does,
// on tmpdir/mmv, with args instead of Info's, and returns what it printed,
// standard error included, and whether it exited with 0.
func Pminfo(t testing.TB, tmpdir string, args ...string) (string, bool) {
	t.Helper()
	tl := need(t)
	load := InfoArgs(tl.agent)[:5] // -L and the -K options
	out, stderr, err := run(context.Background(), []string{"PCP_TMP_DIR=" + tmpdir}, tl.pminfo, append(load, args...)...)
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("pminfo on %s: %v\n%s", tmpdir, err, stderr)
	}
	return out + stderr, err == nil
}

// Dump returns what PCP's mmvdump prints for a file. mmvdump's exit status
// is ignored (6.0.3 complains about empty sections); the test fails only
// when it cannot run. A file a root's mmvdump cannot see is dumped from a
// copy (see Visible), named as file in the output. Without PCP it skips or
// fails the test as MustHavePCP.
func Dump(t testing.TB, file string) string {
	t.Helper()
	stdout, stderr, _ := DumpExit(t, file)
	return stdout + stderr
}

// DumpExit runs PCP's mmvdump on a file and returns its output and exit
// status; the test fails only when it cannot run.
func DumpExit(t testing.TB, file string) (stdout, stderr string, status int) {
	t.Helper()
	tl := need(t)
	seen := Visible(t, file)
	stdout, stderr, err := run(context.Background(), nil, tl.mmvdump, seen)
	stdout = strings.Replace(stdout, "MMV file   = "+seen+"\n", "MMV file   = "+file+"\n", 1)
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return stdout, stderr, exit.ExitCode()
	}
	if err != nil {
		t.Fatalf("mmvdump %s: %v\n%s", file, err, stderr)
	}
	return stdout, stderr, 0
}

// RunExample runs an example program's run function for d, with
// PCP_TMP_DIR set to a temporary directory, checks that what it printed
// says where its file is and how to read it with pminfo, and returns what
// PCP's reader shows of the directory. It needs PCP, as MustHavePCP, and
// the file layer, as NeedFileLayer (RunWithoutFiles is the test of the
// rest).
func RunExample(t *testing.T, run func(context.Context, io.Writer, time.Duration) error, d time.Duration, file string) []Metric {
	t.Helper()
	NeedFileLayer(t)
	MustHavePCP(t)
	tmp := t.TempDir()
	t.Setenv("PCP_TMP_DIR", tmp)
	var out bytes.Buffer
	if err := run(context.Background(), &out, d); err != nil {
		t.Fatal(err)
	}
	t.Log(out.String())
	if !strings.Contains(out.String(), filepath.Join(tmp, "mmv", file)) || !strings.Contains(out.String(), "pminfo -f mmv."+file) {
		t.Errorf("output does not say where the file is and how to read it:\n%s", out.String())
	}
	return Info(t, tmp)
}
