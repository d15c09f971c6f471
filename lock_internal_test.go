//go:build linux

package mmv

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
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

// TestTimerWaitsForNoClaimWithTheLock: the timer's publication of a new
// overflow file, while another registry holds the directory's lock, does
// not hold the registry's lock waiting for it: a first use of a new label
// value meanwhile returns at once, the file is made once the directory's
// lock is let go, and a lock held past claimWait is named by Err.
func TestTimerWaitsForNoClaimWithTheLock(t *testing.T) {
	needFileLayer(t)
	dir := filepath.Join(t.TempDir(), "mmv")
	defer func(was time.Duration) { claimWait = was }(claimWait)
	claimWait = 400 * time.Millisecond
	r := NewRegistry("claims", &Options{Dir: dir, MaxFileValues: 64, PublishDelay: 5 * time.Millisecond})
	defer r.Close()
	v := NewCounterVec(r, "requests", "Requests", Count, "route")
	require.NoError(t, r.Start())
	holder, err := openDir(dir)
	require.NoError(t, err)
	defer holder.Close()
	unlock, err := holder.LockClaims(claimWait)
	require.NoError(t, err)
	held := true
	defer func() {
		if held {
			unlock()
		}
	}()

	// 70 counters past the file's 64 values: an overflow file, made by the timer.
	for i := range 70 {
		NewCounter(r, fmt.Sprintf("c%d", i), "", Count)
	}
	time.Sleep(20 * time.Millisecond) // the timer fired, and found the lock held
	began := time.Now()
	v.With("/new").Inc()
	assert.Less(t, time.Since(began), 100*time.Millisecond, "a first use while the timer waits for the directory's lock")
	require.Eventually(t, func() bool { return errors.Is(r.Err(), ErrInUse) }, 5*time.Second, 10*time.Millisecond,
		"a lock held past claimWait is said")
	assert.Contains(t, r.Err().Error(), dir)

	unlock()
	held = false
	require.Eventually(t, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.parts) > 1 && !slices.ContainsFunc(r.parts, func(p *part) bool { return p.file == nil })
	}, 5*time.Second, 10*time.Millisecond, "the overflow file made once the lock is let go")
	require.Eventually(t, func() bool { return r.Err() == nil }, 5*time.Second, 10*time.Millisecond)
	require.NoError(t, r.Flush())
	if values, ok := pcpValues(t, r, "requests"); ok {
		assert.Equal(t, map[string]int64{"route=/new": 1}, values)
	}
}
