//go:build linux

package mmv_test

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/osfile"
)

// TestStaleTemporariesReclaimed plants temporaries of "app" and of its
// overflow files as a writer killed mid-growth leaves them, their locks
// free, whatever pid they carry (a process that has exited, pid 1 as a
// container's writer has, a live process's), and temporaries whose lock
// a live writer holds: Start of "app" removes the first, keeps the
// second, and leaves every other name alone (other files' temporaries,
// names without a pid).
func TestStaleTemporariesReclaimed(t *testing.T) {
	if childRole() == "live" { // a live process, until the test kills it
		os.Stdout.WriteString("ready\n")
		io.Copy(io.Discard, os.Stdin)
		return
	}
	live, _ := startChild(t, "TestStaleTemporariesReclaimed", "live")
	dead, alive := strconv.Itoa(deadPid(t)), strconv.Itoa(live.Process.Pid)

	dir := t.TempDir()
	stale := []string{
		".app." + dead + ".0123abcd", ".app." + dead + ".89abcdef",
		".app.1.0123abcd", ".app." + alive + ".0123abcd",
		".app.2." + dead + ".0123abcd", ".app.17.1.0123abcd",
	}
	held := []string{".app." + dead + ".fedcba98", ".app.2.1.fedcba98"}
	kept := []string{
		".other." + dead + ".0123abcd",
		".app.0123456789ab",
		"app." + dead + ".0123abcd",
		".app.x" + dead + ".0123abcd",
		".app." + dead + ".lock", // not a temporary: its random part is not hex
	}
	for _, name := range append(append(stale, held...), kept...) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("left over"), 0o644))
	}
	for _, name := range held { // a writer's lock: an open description of its own
		f, err := os.Open(filepath.Join(dir, name))
		require.NoError(t, err)
		defer f.Close()
		require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB))
	}
	r := appRegistry(t, dir, 0)
	startOrSkip(t, r)
	defer r.Close()
	for _, name := range stale {
		assert.NoFileExists(t, filepath.Join(dir, name), "a temporary whose lock is free was kept")
	}
	for _, name := range append(held, kept...) {
		assert.FileExists(t, filepath.Join(dir, name), "a temporary that is not an abandoned one of app was removed")
	}
}

// TestKilledGrowersReclaimed kills writers with SIGKILL while they grow
// their file as fast as they can, so that some die with a temporary on
// disk: after the next Start of the name, only the file is left.
func TestKilledGrowersReclaimed(t *testing.T) {
	needFileLayer(t)
	if childRole() == "grower" {
		r := mmv.NewRegistry("app", &mmv.Options{Dir: os.Getenv("MMV_TEST_DIR")})
		require.NoError(t, r.AddIndom(mmv.Indom{Serial: 1}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "m", Type: mmv.Uint64, Semantics: mmv.SemCounter, Indom: 1}))
		startOrSkip(t, r)
		os.Stdout.WriteString("ready\n")
		for i := int32(0); ; i++ { // until killed
			require.NoError(t, r.AddInstance(1, mmv.Instance{ID: i, Name: "i" + strconv.Itoa(int(i))}))
			require.NoError(t, r.Flush())
		}
	}
	t.Parallel() // it waits on its children
	dir := t.TempDir()
	left := 0
	for range 10 {
		child, _ := startChild(t, "TestKilledGrowersReclaimed", "grower", "MMV_TEST_DIR="+dir)
		time.Sleep(20 * time.Millisecond) // let it grow: not an assertion
		require.NoError(t, child.Process.Signal(syscall.SIGKILL))
		child.Wait()
		for _, name := range entries(t, dir) {
			if strings.HasPrefix(name, ".app.") {
				left++
			}
		}
		r := mmv.NewRegistry("app", &mmv.Options{Dir: dir})
		startOrSkip(t, r)
		assert.Equal(t, []string{"app"}, entries(t, dir))
		require.NoError(t, r.Close())
	}
	t.Logf("%d temporaries left by 10 killed writers", left)
}

// grow is the role of a writer that declares metrics after Start as fast
// as it can, until killed: growth steps of its first file, then of its
// overflow files, grower.2, grower.3..., of 200 values each, so that it
// makes one every 200 metrics.
func grow(t *testing.T) {
	r := mmv.NewRegistry("grower", &mmv.Options{Dir: os.Getenv("MMV_TEST_DIR"), Flags: mmv.Process, MaxFileValues: 200, MaxRegistryMetrics: -1})
	mmv.NewCounter(r, "first", "", mmv.Count).Inc()
	startOrSkip(t, r)
	os.Stdout.WriteString("ready\n")
	for i := 0; ; i++ {
		mmv.NewCounter(r, fmt.Sprintf("late%05d", i), "", mmv.Count).Inc()
		if i%50 == 0 {
			r.Flush()
		}
	}
}

// temporaries returns the temporaries in dir whose file match accepts.
func temporaries(t *testing.T, dir string, match func(file string, pid int) bool) []string {
	var out []string
	for _, e := range entries(t, dir) {
		if file, pid, ok := osfile.ParseTemp(e); ok && match(file, pid) {
			out = append(out, e)
		}
	}
	return out
}

// TestKilledOverflowGrowersReclaimed: a writer SIGKILLed while it grows
// its overflow files leaves their temporaries, as large as the files.
// The next run of the name, which declares only what its first file
// holds and never makes those files again, removes them at Start: Start
// and Close leave no temporary. It removed only the first file's (the
// name it made), and the overflow files' piled up, crash after crash.
func TestKilledOverflowGrowersReclaimed(t *testing.T) {
	needFileLayer(t)
	if childRole() == "grower" {
		grow(t)
	}
	dir := filepath.Join(t.TempDir(), "mmv")
	all := func(string, int) bool { return true }
	for round := range 40 {
		cmd, _ := startChild(t, "TestKilledOverflowGrowersReclaimed", "grower", "MMV_TEST_DIR="+dir)
		time.Sleep(time.Duration(50+round*37%200) * time.Millisecond)
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		cmd.Wait()
		left := temporaries(t, dir, func(file string, _ int) bool { return file != "grower" })
		// The next run, which declares what it declares before Start and
		// ends cleanly.
		next := mmv.NewRegistry("grower", &mmv.Options{Dir: dir, Flags: mmv.Process})
		mmv.NewCounter(next, "first", "", mmv.Count).Inc()
		require.NoError(t, next.Start())
		require.NoError(t, next.Close())
		require.Empty(t, temporaries(t, dir, all), "temporaries a killed writer left that the next run's Start and Close kept; the directory: %v", entries(t, dir))
		if len(left) > 0 {
			t.Logf("round %d: %v reclaimed", round, left)
			return
		}
	}
	t.Skip("no kill left an overflow file's temporary in 40 rounds")
}

// TestContainerWritersTemporariesReclaimed: a writer that is pid 1 of its
// PID namespace (a container's main process) names its temporaries
// .<name>.1.<random>, and pid 1 exists in every namespace: Start, which
// removed a temporary once kill(pid, 0) was ESRCH, never removed these,
// not even the first file's, in a crash loop. A temporary's lock, free
// once its writer is gone, tells it, whatever namespace numbered the pid:
// the next run on the host removes them all, its overflow files' too.
func TestContainerWritersTemporariesReclaimed(t *testing.T) {
	needFileLayer(t)
	if childRole() == "grower" {
		grow(t)
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root for unshare --pid")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("needs unshare")
	}
	dir := filepath.Join(t.TempDir(), "mmv")
	byPID1 := func() []string {
		return temporaries(t, dir, func(file string, pid int) bool { return pid == 1 })
	}
	for round := 0; round < 60 && (round == 0 || len(byPID1()) == 0); round++ {
		cmd := childCmd(t, "TestContainerWritersTemporariesReclaimed", "grower", nil, "MMV_TEST_DIR="+dir)
		cmd.Path, cmd.Args = unshare, append([]string{"unshare", "--pid", "--fork", "--kill-child"}, cmd.Args...)
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		line := make([]byte, 64)
		out.Read(line) // "ready"
		time.Sleep(time.Duration(round*7%60) * time.Millisecond)
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL)) // unshare: its child, pid 1, dies with it
		cmd.Wait()
		time.Sleep(20 * time.Millisecond)
	}
	left := byPID1()
	if len(left) == 0 {
		t.Skip("no kill left a temporary in 60 rounds")
	}
	// The next run, on the host, of the same name.
	next := mmv.NewRegistry("grower", &mmv.Options{Dir: dir, Flags: mmv.Process})
	mmv.NewCounter(next, "first", "", mmv.Count).Inc()
	require.NoError(t, next.Start())
	require.NoError(t, next.Close())
	assert.Empty(t, byPID1(), "temporaries a dead container writer (pid 1) left, kept by the next run's Start and Close (%v before)", left)
}
