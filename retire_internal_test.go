//go:build linux

package mmv

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

const staleChildEnv = "MMV_TEST_STALE_CHILD"

// staleStores plays updaters preempted inside an update, between loading
// the address of their value and storing into it, while the registry
// closes: one through a Value handle, one through an instrument's cell.
// The addresses are loaded before Close, the stores come after it, after
// collections, and later than the second of grace the earlier design gave
// such updaters (it unmapped the closed range then, and the store killed
// the process). The handles stay live across the window, as an updater's
// own does (runtime.KeepAlive in every method).
func staleStores(t *testing.T) {
	r := NewRegistry("stale", &Options{Dir: t.TempDir(), Flags: Process})
	require.NoError(t, r.AddMetric(Metric{Name: "m", Type: Uint64, Semantics: SemCounter}))
	c := NewCounter(r, "c", "", Count)
	startOrSkip(t, r)
	handles := map[string]*Value{"value": mustValue(t, r, "m", ""), "counter": c.cell.v.Load()}
	words := map[string]*uint64{}
	for via, h := range handles {
		words[via] = h.u64() // the window opens
	}
	require.NoError(t, r.Close())
	for range 3 {
		runtime.GC()
	}
	time.Sleep(1500 * time.Millisecond)
	runtime.GC()
	for via, p := range words {
		atomic.AddUint64(p, 1) // the window closes
		os.Stdout.WriteString("stored through " + via + "\n")
	}
	runtime.KeepAlive(handles)
}

// TestStaleStoreAfterClose: an update that loaded its value's address just
// before Close and stores into it afterwards, however late, lands in
// private memory, and the process lives (a store into an unmapped page
// would kill it with SIGSEGV, so the stores run in a child process).
func TestStaleStoreAfterClose(t *testing.T) {
	needFileLayer(t)
	if os.Getenv(staleChildEnv) != "" {
		staleStores(t)
		return
	}
	t.Parallel() // it waits on its child, which waits 1.5 s
	bin, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(bin, "-test.run=^TestStaleStoreAfterClose$", "-test.count=1")
	// A child built with -race sleeps a second before it exits unless
	// told not to (GORACE's atexit_sleep_ms).
	cmd.Env = append(os.Environ(), staleChildEnv+"=1", "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the child died:\n%.2000s", out)
	assert.Contains(t, string(out), "stored through value\n")
	assert.Contains(t, string(out), "stored through counter\n")
}

// TestRetiredRangeLivesWithItsHandles: a closed file's range stays mapped
// while a handle on it is reachable, however many collections run, and is
// unmapped once none is.
func TestRetiredRangeLivesWithItsHandles(t *testing.T) {
	r := NewRegistry("retired", &Options{Dir: t.TempDir(), Flags: Process})
	require.NoError(t, r.AddMetric(Metric{Name: "m", Type: Uint64, Semantics: SemCounter}))
	startOrSkip(t, r)
	v := mustValue(t, r, "m", "")
	p := unsafe.Pointer(v.u64())
	require.NoError(t, r.Close())
	for range 3 {
		runtime.GC()
	}
	assert.True(t, mapped(p), "the closed file's range was unmapped while a handle on it lives")
	runtime.KeepAlive(v)
	released := false
	for end := time.Now().Add(10 * time.Second); !released && time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		runtime.GC()
		released = !mapped(p)
	}
	assert.True(t, released, "the closed file's range is still mapped with no handle on it")
}

// TestRetiredRangeOutlivesNoRegistry: a closed file's range is unmapped
// while the registry and its instruments live on, updated after Close:
// neither keeps a handle on the file, nor a histogram kept after its
// Delete, whose histOut it holds (histEntry).
func TestRetiredRangeOutlivesNoRegistry(t *testing.T) {
	r := NewRegistry("instruments", &Options{Dir: t.TempDir(), Flags: Process})
	c := NewCounter(r, "c", "", Count)
	cv := NewCounterVec(r, "cv", "", Count, "l")
	g := NewGauge(r, "g", "", NoUnits)
	ig := NewIntGaugeVec(r, "ig", "", Count, "l")
	tm := NewTimer(r, "t", "")
	h := NewHistogram(r, "h", "", NoUnits, nil)
	hv := NewHistogramVec(r, "hv", "", NoUnits, nil, "l")
	NewGaugeFunc(r, "gf", "", NoUnits, func() float64 { return 1 })
	var deleted *Histogram // nil-safe until kept
	update := func() {
		c.Inc()
		cv.With("a").Inc()
		g.Set(1)
		ig.With("a").Inc()
		tm.Observe(time.Millisecond)
		h.Observe(1)
		hv.With("a").Observe(1)
		deleted.Observe(1)
	}
	update()
	startOrSkip(t, r)
	update()
	deleted = hv.With("deleted")
	deleted.Observe(1)
	require.NoError(t, r.Flush())
	require.True(t, hv.Delete("deleted"))
	var ranges []unsafe.Pointer
	for _, p := range r.parts {
		ranges = append(ranges, p.file.os.Base())
	}
	require.NoError(t, r.Close())
	update()
	for _, p := range ranges {
		released := false
		for end := time.Now().Add(10 * time.Second); !released && time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			runtime.GC()
			released = !mapped(p)
		}
		assert.True(t, released, "a closed file's range is still mapped")
	}
	update()
	runtime.KeepAlive(r)
}

// mapped reports whether the page at p is mapped.
func mapped(p unsafe.Pointer) bool {
	size := uintptr(os.Getpagesize())
	var vec byte
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(p)&^(size-1), size, uintptr(unsafe.Pointer(&vec)))
	return errno != unix.ENOMEM
}
