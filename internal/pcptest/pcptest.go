// Package pcptest runs Performance Co-Pilot's own reader over MMV files, as
// the oracle of the tests: what PCP shows is what the library wrote.
//
// Require skips a test when PCP is not installed, or fails it when the
// environment sets MMV_REQUIRE_PCP=1 (as CI does), so the tests pass on a
// machine with only Go and can never be skipped silently in CI.
//
// Info reads a directory of files with no daemon: pminfo loads PCP's MMV
// agent (pmda_mmv.so, domain 70) in-process with PCP_TMP_DIR pointing at
// the directory. PMCD reads through the running pmcd instead, for tests of a
// live system. Dump runs PCP's mmvdump on one file.
//
// Every PCP command runs under Timeout, so a hung reader fails the test.
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
	"testing"
	"time"

	"github.com/gopcp/mmv/internal/pcpconf"
)

// Domain is the PMID domain of PCP's MMV agent.
const Domain = 70

// Timeout bounds every PCP command the package runs.
var Timeout = 30 * time.Second

// RequireEnv is the environment variable that turns Require's skip into a
// failure when set to "1".
const RequireEnv = "MMV_REQUIRE_PCP"

// Config returns the value of a PCP configuration variable, such as
// PCP_PMDAS_DIR, as PCP's pmGetConfig finds it: the environment first, then
// the first pcp.conf found ($PCP_CONF, $PCP_DIR/etc/pcp.conf,
// /etc/pcp.conf, /usr/local/etc/pcp.conf). It returns "" when neither has
// it.
func Config(name string) string {
	return pcpconf.Get(os.Getenv, name, pcpconf.Files)
}

// tools are the paths of the PCP pieces the package runs.
type tools struct {
	pminfo, agent, mmvdump string
}

// Installed reports whether PCP's reader is usable: pminfo on PATH, the MMV
// agent and mmvdump in $PCP_PMDAS_DIR/mmv, and the namespace root in
// $PCP_VAR_DIR/pmns. The error says what is missing.
func Installed() error {
	_, err := find()
	return err
}

func find() (tools, error) {
	var t tools
	var err error
	if t.pminfo, err = exec.LookPath("pminfo"); err != nil {
		return t, errors.New("pminfo is not on PATH (Debian: apt-get install pcp libpcp-mmv1-dev)")
	}
	pmdas := Config("PCP_PMDAS_DIR")
	if pmdas == "" {
		return t, errors.New("PCP_PMDAS_DIR is not set and no pcp.conf gives it")
	}
	t.agent = filepath.Join(pmdas, "mmv", "pmda_mmv.so")
	t.mmvdump = filepath.Join(pmdas, "mmv", "mmvdump")
	for _, f := range []string{t.agent, t.mmvdump} {
		if _, err := os.Stat(f); err != nil {
			return t, fmt.Errorf("PCP's MMV agent is missing: %v", err)
		}
	}
	if v := Config("PCP_VAR_DIR"); v != "" {
		if _, err := os.Stat(filepath.Join(v, "pmns", "root")); err != nil {
			return t, fmt.Errorf("PCP's namespace root is missing (run ./Rebuild in %s): %v", filepath.Join(v, "pmns"), err)
		}
	}
	return t, nil
}

// Require skips the test when PCP's reader is not installed (see
// Installed), or fails it when MMV_REQUIRE_PCP=1.
func Require(t testing.TB) {
	t.Helper()
	requireWith(t, Installed(), isStrict())
}

func isStrict() bool { return os.Getenv(RequireEnv) == "1" }

func requireWith(t testing.TB, missing error, strict bool) {
	t.Helper()
	switch {
	case missing == nil:
	case strict:
		t.Fatalf("PCP is required (%s=1) but not usable: %v", RequireEnv, missing)
	default:
		t.Skipf("PCP not installed, skipping (set %s=1 to fail instead): %v", RequireEnv, missing)
	}
}

func mustFind(t testing.TB) tools {
	t.Helper()
	tl, err := find()
	if err != nil {
		t.Fatalf("pcptest: %v (call pcptest.Require first)", err)
	}
	return tl
}

// run runs a command under Timeout, with the environment changed by env
// ("NAME=value" sets, "NAME=" unsets), and returns its standard output and
// error.
func run(ctx context.Context, env []string, name string, args ...string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
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
// order. The test fails when pminfo fails or its output does not parse.
func Info(t testing.TB, tmpdir string) []Metric {
	t.Helper()
	tl := mustFind(t)
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

// Dump returns what PCP's mmvdump prints for a file. mmvdump's exit status
// is ignored (6.0.3 complains about empty sections); the test fails only
// when it cannot run.
func Dump(t testing.TB, file string) string {
	t.Helper()
	tl := mustFind(t)
	out, stderr, err := run(context.Background(), nil, tl.mmvdump, file)
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("mmvdump %s: %v\n%s", file, err, stderr)
	}
	return out + stderr
}

// RunExample runs an example program's run function for d, with
// PCP_TMP_DIR set to a temporary directory, checks that what it printed
// says where its file is and how to read it with pminfo, and returns what
// PCP's reader shows of the directory. It needs PCP, as Require.
func RunExample(t *testing.T, run func(context.Context, io.Writer, time.Duration) error, d time.Duration, file string) []Metric {
	t.Helper()
	Require(t)
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
