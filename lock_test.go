//go:build linux

package mmv_test

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/mmvfile"
)

// appRegistry returns a registry "app" in dir with one counter.
func appRegistry(t *testing.T, dir string, flags mmv.Flags) *mmv.Registry {
	t.Helper()
	r := mmv.NewRegistry("app", &mmv.Options{Dir: dir, Flags: flags})
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "m", Type: mmv.Uint64, Semantics: mmv.SemCounter}))
	return r
}

// TestInUseInProcess: a second registry of the same name and directory
// fails to Start with ErrInUse naming the file and our pid, and its Close
// (Process flag) leaves the first one's file alone. Once the first is
// closed the name is free, and Close leaves nothing behind.
func TestInUseInProcess(t *testing.T) {
	dir := t.TempDir()
	first := appRegistry(t, dir, mmv.Process)
	require.NoError(t, first.Start())
	second := appRegistry(t, dir, mmv.Process)
	err := second.Start()
	require.ErrorIs(t, err, mmv.ErrInUse)
	t.Log(err)
	assert.Contains(t, err.Error(), filepath.Join(dir, "app"))
	assert.Contains(t, err.Error(), "pid "+strconv.Itoa(os.Getpid()))
	require.NoError(t, second.Close())
	f, err := mmvfile.Open(filepath.Join(dir, "app"))
	require.NoError(t, err, "the refused registry's Close removed the owner's file")
	assert.Equal(t, int32(os.Getpid()), f.Header.PID)

	require.NoError(t, first.Close())
	third := appRegistry(t, dir, 0)
	require.NoError(t, third.Start())
	require.NoError(t, third.Close())
	assert.Equal(t, []string{"app"}, entries(t, dir), "Close left more than the file")
}

// TestInUseOtherProcess: a name held by another live process fails to
// Start with ErrInUse naming that process's pid; once that process is
// killed with SIGKILL, never closing its registry, the name is free.
func TestInUseOtherProcess(t *testing.T) {
	if childRole() == "holder" {
		r := appRegistry(t, os.Getenv("MMV_TEST_DIR"), mmv.Process)
		require.NoError(t, r.Start())
		os.Stdout.WriteString("ready\n")
		time.Sleep(time.Hour) // until killed
		return
	}
	dir := t.TempDir()
	child, _ := startChild(t, "TestInUseOtherProcess", "holder", "MMV_TEST_DIR="+dir)
	r := appRegistry(t, dir, mmv.Process)
	err := r.Start()
	require.ErrorIs(t, err, mmv.ErrInUse)
	t.Log(err)
	assert.Contains(t, err.Error(), filepath.Join(dir, "app"))
	assert.Contains(t, err.Error(), "pid "+strconv.Itoa(child.Process.Pid))

	require.NoError(t, child.Process.Signal(syscall.SIGKILL))
	child.Wait()
	require.NoError(t, r.Start())
	f, err := mmvfile.Open(filepath.Join(dir, "app"))
	require.NoError(t, err)
	assert.Equal(t, int32(os.Getpid()), f.Header.PID)
	require.NoError(t, r.Close())
	assert.Empty(t, entries(t, dir), "Close with the Process flag left files")
}

// TestInUseReleasedOnFailedStart: a Start that fails (a directory planted
// at the file's name) releases the name and leaves no lock behind.
func TestInUseReleasedOnFailedStart(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "app"), 0o755))
	r := appRegistry(t, dir, 0)
	require.Error(t, r.Start())
	assert.Equal(t, []string{"app"}, entries(t, dir))
	require.NoError(t, os.Remove(filepath.Join(dir, "app")))
	other := appRegistry(t, dir, mmv.Process)
	require.NoError(t, other.Start(), "a failed Start kept the name")
	require.NoError(t, other.Close())
}
