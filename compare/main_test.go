package compare

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gopcp/mmv/internal/pcpconf"
	"github.com/performancecopilot/speed/v4"
)

// dirEnv names the directory the test binary runs in once re-executed.
const dirEnv = "MMV_COMPARE_DIR"

// tmpDir is the PCP_TMP_DIR of this run: Speed writes its files in
// tmpDir/mmv, and so do the mmv registries of the tests.
var tmpDir string

// TestMain runs the tests in a child process whose Speed writes into a
// temporary directory.
//
// Speed does not read PCP_TMP_DIR from the environment: when its package is
// initialised it reads pcp.conf ($PCP_CONF, else $PCP_DIR/etc/pcp.conf) and
// takes PCP_TMP_DIR from there, so on a machine with PCP installed it would
// write into the system's /var/lib/pcp/tmp/mmv. Since that happens before
// TestMain runs, the parent writes a pcp.conf of its own naming a temporary
// directory and runs the same test binary again with PCP_CONF pointing at
// it.
func TestMain(m *testing.M) {
	if tmpDir = os.Getenv(dirEnv); tmpDir != "" {
		speed.EraseFileOnStop = true
		os.Exit(m.Run())
	}
	os.Exit(reexec())
}

func reexec() int {
	dir, err := os.MkdirTemp("", "mmv-compare-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer os.RemoveAll(dir)
	conf := filepath.Join(dir, "pcp.conf")
	if err := os.WriteFile(conf, []byte(pcpConf(dir)), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var env []string
	for _, kv := range os.Environ() {
		switch name, _, _ := strings.Cut(kv, "="); name {
		case "PCP_DIR", "PCP_CONF", "PCP_TMP_DIR", dirEnv:
		default:
			env = append(env, kv)
		}
	}
	env = append(env, "PCP_CONF="+conf, "PCP_TMP_DIR="+dir, dirEnv+"="+dir)
	cmd := exec.Command(os.Args[0], os.Args[1:]...)
	cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr = env, os.Stdin, os.Stdout, os.Stderr
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit) && exit.ExitCode() > 0:
		return exit.ExitCode()
	default:
		fmt.Fprintln(os.Stderr, "running the tests in a child process:", err)
		return 2
	}
}

// pcpConf is the system's pcp.conf, found as libpcp finds it, with
// PCP_TMP_DIR changed to dir: PCP's own tools run by the tests read it too.
func pcpConf(dir string) string {
	var confs []string
	if c := os.Getenv("PCP_CONF"); c != "" {
		confs = append(confs, c)
	}
	if d := os.Getenv("PCP_DIR"); d != "" {
		confs = append(confs, filepath.Join(d, "etc", "pcp.conf"))
	}
	var out strings.Builder
	for _, c := range append(confs, pcpconf.Files...) {
		b, err := os.ReadFile(c)
		if err != nil {
			continue
		}
		for line := range strings.Lines(string(b)) {
			if k, _, _ := strings.Cut(line, "="); strings.TrimSpace(k) != "PCP_TMP_DIR" {
				out.WriteString(strings.TrimSuffix(line, "\n") + "\n")
			}
		}
		break
	}
	out.WriteString("PCP_TMP_DIR=" + dir + "\n")
	return out.String()
}

// speedClient starts a Speed client named name with the metrics ms, checks
// its file is in tmpDir, and stops it when tb ends.
func speedClient(tb testing.TB, name string, ms ...speed.Metric) *speed.PCPClient {
	tb.Helper()
	c, err := speed.NewPCPClient(name)
	if err != nil {
		tb.Fatal(err)
	}
	for _, m := range ms {
		if err := c.Register(m); err != nil {
			tb.Fatal(err)
		}
	}
	if err := c.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Stop() })
	if _, err := os.Stat(filepath.Join(tmpDir, "mmv", name)); err != nil {
		tb.Fatalf("Speed did not write its file in the test's directory: %v", err)
	}
	return c
}
