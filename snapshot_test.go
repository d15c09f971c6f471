package mmv_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
)

// Snapshot reads what instruments counted, started or not.
func ExampleRegistry_Snapshot() {
	r := mmv.NewRegistry("snapshot_example", nil) // never started
	mmv.NewCounterVec(r, "requests", "Requests", mmv.Count, "route").With("/api").Add(3)
	snap, _ := r.Snapshot()
	for _, m := range snap {
		for _, v := range m.Values {
			fmt.Println(m.Name, v.Instance, v.Labels, v.Value)
		}
	}
	// Output:
	// requests route=/api [{route /api false}] 3
}

// TestSnapshotRacesUpdates: snapshots taken while instruments count, new
// instances come and the registry starts never tear a value nor lose an
// update: the last snapshot has every one (run under -race).
func TestSnapshotRacesUpdates(t *testing.T) {
	r := newRegistry(t, "snapshot_race", t.TempDir(), mmv.Options{})
	c := mmv.NewCounterVec(r, "c", "c", mmv.Count, "k")
	h := mmv.NewHistogramVec(r, "h", "h", mmv.Second, nil, "k")
	const n, workers = 2000, 4
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n {
				k := fmt.Sprint(i % 7)
				c.With(k).Inc()
				h.With(k).Observe(float64(w))
			}
		}()
	}
	startOrSkip(t, r)
	for range 20 {
		_, err := r.Snapshot()
		require.NoError(t, err)
	}
	wg.Wait()
	snap, err := r.Snapshot()
	require.NoError(t, err)
	sum := map[string]uint64{}
	for _, m := range snap {
		for _, v := range m.Values {
			if u, ok := v.Value.(uint64); ok {
				sum[m.Name] += u
			}
		}
	}
	assert.Equal(t, uint64(n*workers), sum["c"])
	assert.Equal(t, uint64(n*workers), sum["h.count"])
	assert.Equal(t, uint64(n*workers), sum["h.bucket"])
}

// BenchmarkSnapshot: a snapshot of a started registry holding a counter
// vector of 1,000 instances and a histogram vector of 100 (19 buckets and
// 9 statistics each): what a test pays per Snapshot, mmvtest's Get or
// Compare.
func BenchmarkSnapshot(b *testing.B) {
	r := newRegistry(b, "snapshot_bench", b.TempDir(), mmv.Options{})
	c := mmv.NewCounterVec(r, "c", "c", mmv.Count, "k")
	h := mmv.NewHistogramVec(r, "h", "h", mmv.Second, nil, "k")
	for i := range 1000 {
		c.With(fmt.Sprint(i)).Inc()
		if i < 100 {
			h.With(fmt.Sprint(i)).Observe(1)
		}
	}
	startOrSkip(b, r)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Snapshot(); err != nil {
			b.Fatal(err)
		}
	}
}
