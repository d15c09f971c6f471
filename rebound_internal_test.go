package mmv

import (
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReboundCarriesBounded: a generation of cells bound together is
// carried at the two publications after its binding, then at the first
// after each of reboundAges, then let go, however often the registry
// publishes: carried at every publication for a second, a registry
// publishing every 50 µs touched each cell 20,000 times under its lock.
func TestReboundCarriesBounded(t *testing.T) {
	var b rebound
	*b.fresh() = append(*b.fresh(), &cell{}, &cell{})
	t0 := time.Now()
	at := func(d time.Duration) int {
		b.published(t0.Add(d), false)
		if b.empty() {
			return -1
		}
		return b.gens[0].pubs
	}
	assert.Equal(t, 1, at(0))
	assert.Equal(t, 2, at(50*time.Microsecond))
	for d := 100 * time.Microsecond; d < 10*time.Millisecond; d += 50 * time.Microsecond {
		require.Equal(t, 2, at(d), "at %v", d)
	}
	assert.Equal(t, 3, at(10*time.Millisecond))
	assert.Equal(t, 3, at(99*time.Millisecond))
	assert.Equal(t, 4, at(100*time.Millisecond))
	assert.Equal(t, 4, at(999*time.Millisecond))
	assert.Equal(t, -1, at(time.Second), "carried past the last age, let go")

	// A later wake's cells are a generation of their own; Flush's carry
	// counts for every generation.
	*b.fresh() = append(*b.fresh(), &cell{})
	b.published(t0, false)
	*b.fresh() = append(*b.fresh(), &cell{})
	require.Len(t, b.gens, 2)
	b.published(t0.Add(time.Millisecond), true)
	assert.Equal(t, []int{2, 1}, []int{b.gens[0].pubs, b.gens[1].pubs})
}

// TestUpdateRacingBindCarriedByTheTimer: an update left in its cell's own
// memory after the two publications that follow the binding reaches the
// file at a later publication of the timer's, with no Flush, Snapshot or
// declaration to carry it.
func TestUpdateRacingBindCarriedByTheTimer(t *testing.T) {
	r, c, stale := startedUpdateRacingBind(t, 5*time.Millisecond)
	c.Inc()
	v := vecValue(t, r, "c", "k=a")
	require.Eventually(t, func() bool { return v.Int() == 1 }, 5*time.Second, time.Millisecond)
	time.Sleep(30 * time.Millisecond) // the two publications after the binding, and more
	atomic.AddUint64(stale.u64(), 2)  // the update's add, after them
	assert.Eventually(t, func() bool { return v.Int() == 3 }, 5*time.Second, time.Millisecond, "the file's value")
}

// TestCarryingPublicationsAllocateNothing: while the cells bound lately
// keep the timer armed, with nothing else to publish, its publications
// only carry them, and allocate nothing: they ran a whole publication
// each, whose allocations an allocation test of a bridge's export,
// racing them, counted now and then (otelexporter's
// TestLateKeyAllocations, 8 for 7 under -race in CI).
func TestCarryingPublicationsAllocateNothing(t *testing.T) {
	needFileLayer(t)
	r := NewRegistry("carrying", &Options{Dir: filepath.Join(t.TempDir(), "mmv"), PublishDelay: time.Millisecond})
	defer r.Close()
	NewCounterVec(r, "c", "", Count, "k").With("a").Inc()
	require.NoError(t, r.Start())
	carrying := func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return !r.rebound.empty() && r.timer.armed
	}
	require.True(t, carrying(), "Start's bindings keep the timer armed")
	allocs := testing.AllocsPerRun(20, func() { time.Sleep(3 * time.Millisecond) })
	require.True(t, carrying(), "still carrying: the runs were within the ages")
	assert.Zero(t, allocs, "allocations of the timer's publications that only carry")
}
