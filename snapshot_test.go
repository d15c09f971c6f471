package mmv_test

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/mmvfile"
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

// TestReadLabelsAsDeclared: Snapshot and Gather show every label as it was
// declared, Optional included, whatever form the registry keeps its value
// in (a plain string is kept unboxed, others as given).
func TestReadLabelsAsDeclared(t *testing.T) {
	needFileLayer(t)
	r := mmv.NewRegistry("readlabels", &mmv.Options{Dir: t.TempDir()})
	defer r.Close()
	mmv.NewCounter(r, "hits", "", mmv.Count)
	require.NoError(t, r.AddIndom(mmv.Indom{Serial: 3, Instances: []mmv.Instance{{ID: 1, Name: "one"}}}))
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "per", Type: mmv.Uint64, Semantics: mmv.SemCounter, Indom: 3}))
	declared := []mmv.Label{{Name: "env", Value: "prod", Optional: true}, {Name: "tier", Value: "web"}, {Name: "shards", Value: 4.0, Optional: true}}
	for _, l := range declared {
		require.NoError(t, r.AddLabel(l))
	}
	require.NoError(t, r.AddInstanceLabel(3, 1, mmv.Label{Name: "rack", Value: "r1", Optional: true}))
	require.NoError(t, r.Start()) // the low-level API's values have storage, and Gather shows them
	rack := []mmv.Label{{Name: "rack", Value: "r1", Optional: true}}
	snap, err := r.Snapshot()
	require.NoError(t, err)
	for _, m := range snap {
		assert.Equal(t, declared, m.Labels, "Snapshot of %s", m.Name)
		if m.Name == "per" {
			assert.Equal(t, rack, m.Values[0].Labels, "Snapshot of per's instance")
		}
	}
	gathered := 0
	r.Gather(func(f *mmv.Family) {
		gathered++
		assert.Equal(t, declared, f.Labels, "Gather of %s", f.Name)
		if f.Name == "per" {
			assert.Equal(t, rack, f.Samples[0].Labels, "Gather of per's instance")
		}
	})
	assert.Equal(t, 2, gathered)
}

// TestElapsedAsPCPExportsIt: PCP's reader exports an Elapsed metric as a
// counter in microseconds whatever its record says, and its values are
// microseconds (AddDuration): Snapshot (so mmvtest) and Gather show those
// semantics and units, where they showed the declared ones (an instant in
// milliseconds here), and a test or a bridge reading them took 2,000 µs
// for 2,000 ms of an instant. The declaration is accepted and the file
// keeps its record as declared, as libpcp_mmv writes one in milliseconds
// (TestGolden's elapsed).
func TestElapsedAsPCPExportsIt(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "mmv")
	r := newRegistry(t, "elapsedread", dir, mmv.Options{})
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "busy", Type: mmv.Elapsed, Semantics: mmv.SemInstant, Units: mmv.Millisecond}))
	startOrSkip(t, r)
	value(t, r, "busy", "").AddDuration(2 * time.Millisecond)
	f, err := mmvfile.Open(r.Path())
	require.NoError(t, err)
	require.Len(t, f.Metrics, 1)
	assert.Equal(t, mmv.SemInstant, f.Metrics[0].Semantics, "the file's record, as declared")
	assert.Equal(t, mmv.Millisecond, f.Metrics[0].Units, "the file's record, as declared")
	if pcptest.WantPCP(t) {
		m := pcptest.Find(pcptest.Info(t, tmp), "mmv.elapsedread.busy")
		require.NotNil(t, m)
		require.Equal(t, "counter", m.Semantics)
		require.Equal(t, "microsec", m.Units)
		require.Equal(t, "2000", m.Value)
	}
	snap, err := r.Snapshot()
	require.NoError(t, err)
	seen := 0
	for _, m := range snap {
		if m.Name == "busy" {
			seen++
			assert.Equal(t, mmv.SemCounter, m.Semantics, "Snapshot's semantics of an Elapsed metric")
			assert.Equal(t, mmv.Microsecond, m.Units, "Snapshot's units of an Elapsed metric")
			assert.Equal(t, int64(2000), m.Values[0].Value)
		}
	}
	r.Gather(func(f *mmv.Family) {
		if f.Name == "busy" {
			seen++
			assert.Equal(t, mmv.SemCounter, f.Semantics, "Gather's semantics of an Elapsed metric")
			assert.Equal(t, mmv.Microsecond, f.Units, "Gather's units of an Elapsed metric")
		}
	})
	assert.Equal(t, 2, seen)
}

// TestReadsWhilePaced: while the timer's pace holds label values
// out of the file (a burst of publications spent, values churning: new
// ones first used, old ones deleted), Snapshot and Gather read every live
// value exact, those in the file and those waiting in their instruments'
// memory alike, and none deleted.
func TestReadsWhilePaced(t *testing.T) {
	needFileLayer(t)
	r := newRegistry(t, "readspaced", filepath.Join(t.TempDir(), "mmv"), mmv.Options{})
	v := mmv.NewCounterVec(r, "requests", "", mmv.Count, "id")
	startOrSkip(t, r)
	for i := range 10 { // past the burst
		v.With(fmt.Sprint("f", i)).Inc()
		require.NoError(t, r.Flush())
		require.True(t, v.Delete(fmt.Sprint("f", i)))
	}
	want := map[string]uint64{}
	waited := 0
	for i := range 3000 {
		name := fmt.Sprint(i)
		v.With(name).Add(uint64(i + 1))
		want["id="+name] = uint64(i + 1)
		if i >= 20 {
			old := fmt.Sprint(i - 20)
			require.True(t, v.Delete(old))
			delete(want, "id="+old)
		}
		if i%100 != 99 {
			continue
		}
		if !fileShows(r, "requests", "id="+name) {
			waited++
		}
		snap := map[string]uint64{}
		ms, err := r.Snapshot()
		require.NoError(t, err)
		for _, m := range ms {
			if m.Name == "requests" {
				for _, iv := range m.Values {
					snap[iv.Instance] = iv.Value.(uint64)
				}
			}
		}
		require.Equal(t, want, snap, "Snapshot after %d", i)
		gathered := map[string]uint64{}
		r.Gather(func(f *mmv.Family) {
			if f.Name == "requests" {
				for _, s := range f.Samples {
					gathered[s.Instance] = uint64(s.Value.Int())
				}
			}
		})
		require.Equal(t, want, gathered, "Gather after %d", i)
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("%d of 30 reads met the last value waiting for the file", waited)
	assert.Positive(t, waited, "reads while values waited for the pace")
}
