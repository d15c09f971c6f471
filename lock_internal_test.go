//go:build linux

package mmv

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestLinkRename: where the file system has no RENAME_NOREPLACE, a link
// and an unlink take a free name, and leave a taken one and the temporary
// as they were.
func TestLinkRename(t *testing.T) {
	dir := t.TempDir()
	d, err := openDir(dir)
	require.NoError(t, err)
	defer d.close()
	write := func(name, body string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		return string(b)
	}
	write(".tmp", "ours")
	require.NoError(t, d.linkRename(".tmp", "app"))
	assert.Equal(t, "ours", read("app"))
	assert.NoFileExists(t, filepath.Join(dir, ".tmp"))

	write(".tmp", "second")
	require.ErrorIs(t, d.linkRename(".tmp", "app"), unix.EEXIST)
	assert.Equal(t, "ours", read("app"), "the taken name")
	assert.Equal(t, "second", read(".tmp"), "the temporary")
}

// TestClaimsWaitForTheDirectoryLock: a registry starting while another
// holds the directory's lock (making its file) waits for it, then starts;
// one held past claimWait fails Start with ErrInUse naming the directory,
// and leaves nothing behind.
func TestClaimsWaitForTheDirectoryLock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mmv")
	holder, err := openDir(dir)
	require.NoError(t, err)
	defer holder.close()
	start := func(name string) error {
		r := NewRegistry(name, &Options{Dir: dir})
		t.Cleanup(func() { r.Close() })
		require.NoError(t, r.AddMetric(Metric{Name: "m", Type: Uint64, Semantics: SemCounter}))
		return r.Start()
	}

	unlock, err := holder.lockClaims()
	require.NoError(t, err)
	go func(unlock func()) {
		time.Sleep(100 * time.Millisecond)
		unlock()
	}(unlock)
	began := time.Now()
	require.NoError(t, start("waits"))
	assert.GreaterOrEqual(t, time.Since(began), 100*time.Millisecond, "Start while the lock is held")

	defer func(was time.Duration) { claimWait = was }(claimWait)
	claimWait = 50 * time.Millisecond
	unlock, err = holder.lockClaims()
	require.NoError(t, err)
	defer unlock()
	err = start("refused")
	require.ErrorIs(t, err, ErrInUse)
	assert.Contains(t, err.Error(), dir)
	assert.NoFileExists(t, filepath.Join(dir, "refused"))
}
