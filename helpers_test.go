package mmv_test

import (
	"bufio"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
)

// Tests that need another process re-run the test binary on themselves:
// childEnv names the part to play, and the test function plays it when the
// variable is set, instead of testing.

const childEnv = "MMV_TEST_CHILD"

// childRole returns the part this process plays, "" in the test itself.
func childRole() string { return os.Getenv(childEnv) }

// childCmd returns a command running test in a copy of the test binary as
// role, with env added. With cred, the child runs as that user, from a copy
// of the binary it can read (the go tool's build directory is private).
func childCmd(t *testing.T, test, role string, cred *syscall.Credential, env ...string) *exec.Cmd {
	t.Helper()
	bin, err := os.Executable()
	require.NoError(t, err)
	if cred != nil {
		dir := t.TempDir()
		os.Chmod(filepath.Dir(dir), 0o755)
		os.Chmod(dir, 0o755)
		copyTo := filepath.Join(dir, "mmv.test")
		require.NoError(t, copyFile(bin, copyTo))
		bin = copyTo
	}
	cmd := exec.Command(bin, "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), append(env, childEnv+"="+role)...)
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	return cmd
}

// startChild runs test as role in a child process with env added, and
// waits until it prints a line "ready", or "ready X" to tell X, which it
// returns. The child is killed at the end of the test.
func startChild(t *testing.T, test, role string, env ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := childCmd(t, test, role, nil, env...)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	ready := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(out)
		for s.Scan() {
			if x, ok := strings.CutPrefix(s.Text(), "ready"); ok {
				ready <- strings.TrimSpace(x)
				break
			}
		}
		close(ready)
		for s.Scan() {
		}
	}()
	select {
	case x, ok := <-ready:
		require.True(t, ok, "the child ended before it was ready")
		return cmd, x
	case <-time.After(time.Minute):
		t.Fatal("the child did not get ready")
	}
	return nil, ""
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// pcpDir returns a fresh PCP_TMP_DIR for a test that reads with PCP, and
// the mmv directory in it where registries write; without PCP the test
// skips or fails as pcptest.MustHavePCP says.
func pcpDir(t *testing.T) (tmp, dir string) {
	t.Helper()
	pcptest.MustHavePCP(t)
	tmp = t.TempDir()
	return tmp, filepath.Join(tmp, "mmv")
}

// newRegistry makes a registry writing in dir, closed when the test ends.
func newRegistry(t testing.TB, name, dir string, opts mmv.Options) *mmv.Registry {
	t.Helper()
	opts.Dir = dir
	r := mmv.NewRegistry(name, &opts)
	t.Cleanup(func() { r.Close() })
	return r
}

// startReg makes a registry as newRegistry, declares with decl and starts.
func startReg(t *testing.T, name, dir string, opts mmv.Options, decl func(r *mmv.Registry)) *mmv.Registry {
	t.Helper()
	r := newRegistry(t, name, dir, opts)
	decl(r)
	require.NoError(t, r.Start())
	return r
}

// eachLayout runs test once for each layout of the values: packed, as
// libpcp_mmv lays them out, and padded (Options.PadValues).
func eachLayout(t *testing.T, test func(t *testing.T, pad bool)) {
	t.Helper()
	t.Run("packed", func(t *testing.T) { test(t, false) })
	t.Run("padded", func(t *testing.T) { test(t, true) })
}

// value returns the handle on a metric's instance.
func value(t *testing.T, r *mmv.Registry, metric, instance string) *mmv.Value {
	t.Helper()
	v, err := r.Value(metric, instance)
	require.NoError(t, err)
	return v
}

// under returns the metrics whose names start with prefix.
func under(ms []pcptest.Metric, prefix string) map[string]pcptest.Metric {
	out := map[string]pcptest.Metric{}
	for _, m := range ms {
		if strings.HasPrefix(m.Name, prefix) {
			out[m.Name] = m
		}
	}
	return out
}

// get returns the metric of that name, failing the test when PCP does not
// show it.
func get(t *testing.T, ms []pcptest.Metric, name string) pcptest.Metric {
	t.Helper()
	m := pcptest.Find(ms, name)
	if m == nil {
		var names []string
		for _, m := range ms {
			names = append(names, m.Name)
		}
		require.Failf(t, "metric not shown", "PCP does not show %s; it shows %v", name, names)
	}
	return *m
}

// exampleRegistry stands for a registry writing in $PCP_TMP_DIR/mmv, as by
// default: the examples write in a temporary directory instead, so they
// run anywhere, which done removes after closing the registry.
func exampleRegistry(name string, opts *mmv.Options) (r *mmv.Registry, done func()) {
	dir, err := os.MkdirTemp("", "mmv-example")
	if err != nil {
		log.Fatal(err)
	}
	if opts == nil {
		opts = &mmv.Options{}
	}
	opts.Dir = filepath.Join(dir, "mmv")
	r = mmv.NewRegistry(name, opts)
	return r, func() { r.Close(); os.RemoveAll(dir) }
}

// entries returns the names in dir.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// removeParts removes the files a closed registry left: its first file
// and its overflow files, <name>.2 and up.
func removeParts(tb testing.TB, r *mmv.Registry) {
	tb.Helper()
	assert.NoError(tb, os.Remove(r.Path()))
	for i := 2; ; i++ {
		if err := os.Remove(fmt.Sprintf("%s.%d", r.Path(), i)); err != nil {
			assert.ErrorIs(tb, err, os.ErrNotExist)
			return
		}
	}
}
