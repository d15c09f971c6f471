//go:build linux

package mmv_test

import (
	"bytes"
	"os"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
)

// resources counts what a registry could leak: open descriptors,
// goroutines, memory mappings, and entries in its directory.
type resources struct{ fds, goroutines, maps, files int }

func countResources(t *testing.T, dir string) resources {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	maps, err := os.ReadFile("/proc/self/maps")
	require.NoError(t, err)
	return resources{fds: len(fds), goroutines: runtime.NumGoroutine(), maps: bytes.Count(maps, []byte("\n")),
		files: len(entries(t, dir))}
}

// TestNoLeakOverStartCloseCycles starts and closes a registry over and
// over, with the garbage collector off: the closed files' ranges, released
// only once no handle on them is reachable (retire_linux.go), never number
// more than about a thousand at once, since Close asks for a collection
// when as many wait; once the last ones are released the descriptors,
// goroutines, mappings and files are back where they were, but the last
// Close's record of its file (.app.closed), the one file left. MMV_LONG=1 runs
// 100,000 cycles instead of 2,000 (before the fix, about 65,000 exhausted
// the process's mappings).
func TestNoLeakOverStartCloseCycles(t *testing.T) {
	cycles := 2000
	if os.Getenv("MMV_LONG") == "1" {
		cycles = 100_000
	}
	dir := t.TempDir()
	before := countResources(t, dir)
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	peak := 0
	for i := range cycles {
		r := mmv.NewRegistry("app", &mmv.Options{Dir: dir, Flags: mmv.Process})
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "m", Type: mmv.Uint64, Semantics: mmv.SemCounter}))
		startOrSkip(t, r)
		v, err := r.Value("m", "")
		require.NoError(t, err)
		v.Inc()
		require.NoError(t, r.Close())
		if i%16 == 0 {
			peak = max(peak, countResources(t, dir).maps-before.maps)
		}
	}
	// retire_linux.go's retiredGCEvery, a quarter more when a collection
	// was asked for lately, and those retired while the last collection's
	// are being unmapped.
	require.Less(t, peak, 1024+512, "closed files' ranges waiting at once")
	var after resources
	// The Go runtime may map a little more memory of its own meanwhile;
	// a leak is one mapping per cycle.
	const runtimeSlack = 16
	back := func() bool {
		runtime.GC()
		after = countResources(t, dir)
		return after.fds <= before.fds && after.goroutines <= before.goroutines &&
			after.maps <= before.maps+runtimeSlack && after.files == 1
	}
	// Not a timing assertion: the last ranges go with the next collections.
	if !waitFor(30*time.Second, back) {
		t.Fatalf("after %d cycles: %+v, before: %+v", cycles, after, before)
	}
	// The last Close's record of its file, which PCP ignores; each Start
	// removed the one before.
	require.Equal(t, []string{".app.closed"}, entries(t, dir))
	t.Logf("after %d cycles: %+v, before: %+v, at most %d more mappings", cycles, after, before, peak)
}

// waitFor polls cond until it holds or d has passed.
func waitFor(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); ; time.Sleep(50 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(end) {
			return false
		}
	}
}
