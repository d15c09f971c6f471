//go:build linux

package mmv

import (
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestClaimsWaitForTheDirectoryLock: a registry starting while another
// holds the directory's lock (making its file) waits for it, then starts;
// one held past claimWait fails Start with ErrInUse naming the directory,
// and leaves nothing behind.
func TestClaimsWaitForTheDirectoryLock(t *testing.T) {
	needFileLayer(t)
	dir := filepath.Join(t.TempDir(), "mmv")
	holder, err := openDir(dir)
	require.NoError(t, err)
	defer holder.Close()
	start := func(name string) error {
		r := NewRegistry(name, &Options{Dir: dir})
		t.Cleanup(func() { r.Close() })
		require.NoError(t, r.AddMetric(Metric{Name: "m", Type: Uint64, Semantics: SemCounter}))
		return r.Start()
	}

	unlock, err := holder.LockClaims(claimWait)
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
	unlock, err = holder.LockClaims(claimWait)
	require.NoError(t, err)
	defer unlock()
	err = start("refused")
	require.ErrorIs(t, err, ErrInUse)
	assert.Contains(t, err.Error(), dir)
	held := regexp.MustCompile(`held its lock for (\S+),`).FindStringSubmatch(err.Error())
	require.Len(t, held, 2, "%v", err)
	d, perr := time.ParseDuration(held[1])
	require.NoError(t, perr)
	assert.GreaterOrEqual(t, d, claimWait, "the wait, where the last pause was named (10 ms)")
	assert.NoFileExists(t, filepath.Join(dir, "refused"))
}
