//go:build (linux || darwin || freebsd) && !mmv_noport

package osfile

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// plantTemp writes a temporary at name in dir holding content, and, when
// locked, holds its lock (an open description of its own, as its writer
// has) until the test ends.
func plantTemp(t *testing.T, dir, name, content string, locked bool) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	if locked {
		f, err := os.Open(path)
		require.NoError(t, err)
		t.Cleanup(func() { f.Close() })
		require.NoError(t, unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB))
	}
	return path
}

// TestReclaimByLock: Create("app") removes the temporaries of app and of
// its overflow files whose lock is free, whatever pid their names carry
// (1, a container's writer; this process's, which exists) and whatever
// their size (a writer killed in its create is left with an empty one),
// and keeps those whose lock is held, those of other files, a link, and
// names that are no temporaries.
func TestReclaimByLock(t *testing.T) {
	dir := t.TempDir()
	gone := []string{".app.1.0123abcd", tempName("app", os.Getpid(), "0123abcd"), ".app.2.1.0123abcd", ".app.10.4194304.0123abcd"}
	kept := []string{".other.1.0123abcd", ".appx.1.0123abcd", ".app.x.1.0123abcd", ".app.1.lock", ".app.1.0123456789abcdef", "app.1.0123abcd"}
	for _, name := range append(gone, kept...) {
		plantTemp(t, dir, name, "left over", false)
	}
	gone = append(gone, filepath.Base(plantTemp(t, dir, ".app.1.00000000", "", false)))
	locked := []string{".app.1.89abcdef", ".app.2.1.89abcdef"}
	for _, name := range locked {
		plantTemp(t, dir, name, "being written", true)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "outside"), []byte("a file"), 0o644))
	require.NoError(t, os.Symlink("outside", filepath.Join(dir, ".app.1.22222222")))

	f := create(t, openTestDir(t, dir), "app", 4096)
	defer f.Close(true)
	for _, name := range gone {
		assert.NoFileExists(t, filepath.Join(dir, name), "an abandoned temporary was kept")
	}
	for _, name := range append(append(kept, locked...), ".app.1.22222222", "outside") {
		_, err := os.Lstat(filepath.Join(dir, name))
		assert.NoError(t, err, "%s was removed", name)
	}
}

// TestTempAbandoned: mmvdump -lint's test is reclaim's, its lock, but for
// an empty temporary of a live pid, which may be its writer's between its
// creation and its lock, for tempGrace; it removes nothing.
func TestTempAbandoned(t *testing.T) {
	dir := t.TempDir()
	left := plantTemp(t, dir, ".app.1.0123abcd", "left over", false)
	held := plantTemp(t, dir, ".app.1.89abcdef", "being written", true)
	notTemp := plantTemp(t, dir, ".app.1.lock", "left over", false)
	fresh := plantTemp(t, dir, tempName("app", os.Getpid(), "00000000"), "", false)
	old := plantTemp(t, dir, tempName("app", os.Getpid(), "11111111"), "", false)
	long := time.Now().Add(-2 * tempGrace)
	require.NoError(t, os.Chtimes(old, long, long))
	deadEmpty := plantTemp(t, dir, tempName("app", 1<<22+12345, "22222222"), "", false)
	assert.True(t, TempAbandoned(left))
	assert.False(t, TempAbandoned(held))
	assert.False(t, TempAbandoned(notTemp))
	assert.False(t, TempAbandoned(fresh), "empty, of a live pid, lately")
	assert.True(t, TempAbandoned(old), "empty, left for longer than tempGrace")
	assert.True(t, TempAbandoned(deadEmpty), "empty, its pid gone")
	assert.False(t, TempAbandoned(filepath.Join(dir, ".app.1.fedcba98")), "no file")
	assert.FileExists(t, left)
}

// TestLockNewWaitsForALook: a temporary's lock, taken by one looking at
// it between its creation and its writer's lock (reclaim, mmvdump -lint),
// is waited for; held for longer than such a look, it fails as before.
func TestLockNewWaitsForALook(t *testing.T) {
	path := plantTemp(t, t.TempDir(), ".app.1.0123abcd", "", false)
	look := func() *os.File {
		f, err := os.Open(path)
		require.NoError(t, err)
		require.NoError(t, unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB))
		return f
	}
	w, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	defer w.Close()

	first := look()
	time.AfterFunc(2*time.Millisecond, func() { first.Close() })
	require.NoError(t, lockNew(int(w.Fd())))
	require.NoError(t, unix.Flock(int(w.Fd()), unix.LOCK_UN))

	l := look()
	defer l.Close()
	start := time.Now()
	assert.ErrorIs(t, lockNew(int(w.Fd())), unix.EWOULDBLOCK)
	assert.Less(t, time.Since(start), time.Second)
}
