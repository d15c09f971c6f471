//go:build linux

package mmv_test

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/expose"
	"github.com/gopcp/mmv/internal/pcptest"
)

// gathered is a copy of what Gather visited, which it reuses.
type gathered struct {
	mmv.Family
	samples []mmv.Sample
}

func gather(r *mmv.Registry) map[string]gathered {
	out := map[string]gathered{}
	r.Gather(func(f *mmv.Family) {
		g := gathered{Family: *f}
		g.Labels = append([]mmv.Label(nil), f.Labels...)
		for _, s := range f.Samples {
			s.Values = append([]string(nil), s.Values...)
			s.Buckets = append([]uint64(nil), s.Buckets...)
			g.samples = append(g.samples, s)
		}
		out[f.Name] = g
	})
	return out
}

// TestGather: what Gather reads of each kind of metric, before Start and
// after, and nothing once closed.
func TestGather(t *testing.T) {
	r := mmv.NewRegistry("gather", &mmv.Options{Dir: t.TempDir()})
	require.NoError(t, r.AddLabel(mmv.Label{Name: "app", Value: "shop"}))
	mmv.NewCounter(r, "hits", "Hits", mmv.Count).Add(3)
	vec := mmv.NewGaugeVec(r, "temp", "By room", mmv.NoUnits, "room", "floor")
	vec.With("hall, east", "1").Set(20.5)
	h := mmv.NewHistogram(r, "lat", "Latency", mmv.Second, &mmv.HistogramOptions{Buckets: []float64{1, 2}})
	h.Observe(0.5)
	h.Observe(1.5)
	h.Observe(1.7)
	require.NoError(t, r.AddIndom(mmv.Indom{Serial: 5, Instances: []mmv.Instance{{ID: 1, Name: "eth0"}}}))
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "net", Type: mmv.Uint32, Semantics: mmv.SemCounter, Indom: 5}))
	require.NoError(t, r.AddInstanceLabel(5, 1, mmv.Label{Name: "speed", Value: 10}))
	require.NoError(t, r.AddMetricLabel("hits", mmv.Label{Name: "kind", Value: "all"}))

	check := func(started bool) {
		t.Helper()
		g := gather(r)
		assert.Equal(t, []mmv.Label{{Name: "app", Value: "shop"}, {Name: "kind", Value: "all"}}, g["hits"].Labels)
		assert.Equal(t, int64(3), g["hits"].samples[0].Value.Int())
		assert.Equal(t, []string{"room", "floor"}, g["temp"].LabelNames)
		assert.Equal(t, []string{"hall, east", "1"}, g["temp"].samples[0].Values)
		assert.Equal(t, 20.5, g["temp"].samples[0].Value.Float())
		lat := g["lat"]
		assert.Equal(t, "Latency", lat.ShortHelp)
		assert.Equal(t, []float64{1, 2, math.Inf(1)}, lat.Bounds)
		assert.Equal(t, []uint64{1, 2, 0}, lat.samples[0].Buckets, "per bucket")
		assert.Equal(t, uint64(3), lat.samples[0].Count)
		assert.InDelta(t, 3.7, lat.samples[0].Sum, 1e-12)
		assert.NotContains(t, g, "lat.bucket")
		assert.NotContains(t, g, "lat.count")
		assert.NotContains(t, g, "lat.sum")
		if !started {
			assert.NotContains(t, g, "net", "no storage before Start")
			assert.NotContains(t, g, "lat.p50", "no storage before Start")
			return
		}
		assert.Contains(t, g, "lat.p50")
		net := g["net"].samples[0]
		assert.Equal(t, "eth0", net.Instance)
		assert.Equal(t, []mmv.Label{{Name: "speed", Value: 10}}, net.Labels)
		assert.Equal(t, int64(9), net.Value.Int())
	}
	check(false)
	startOrSkip(t, r)
	v, err := r.Value("net", "eth0")
	require.NoError(t, err)
	v.Add(9)
	check(true)
	require.NoError(t, r.Close())
	assert.Empty(t, gather(r))
}

// TestGatherVectorPastLabels: a vector's values are gathered with their
// label values even past the labels a file holds (MaxLabels), where PCP's
// instance labels stop.
func TestGatherVectorPastLabels(t *testing.T) {
	r := mmv.NewRegistry("gather_labels", &mmv.Options{Dir: t.TempDir()})
	v := mmv.NewCounterVec(r, "hits", "Hits", mmv.Count, "id")
	n := mmv.MaxLabels + 10
	for i := range n {
		v.With(strconv.Itoa(i)).Add(uint64(i))
	}
	startOrSkip(t, r)
	defer r.Close()
	s := gather(r)["hits"].samples
	require.Len(t, s, n)
	for i, s := range s {
		assert.Equal(t, []string{strconv.Itoa(i)}, s.Values)
		assert.Equal(t, int64(i), s.Value.Int())
	}
}

// TestGatherVecInstanceLabel: a label the program adds on a vector's
// instance (Registry.AddInstanceLabel on Vec.Indom, a histogram
// vector's statistics' too), which PCP and Snapshot show, is in Gather's
// Sample.Labels and so in package expose's scrape, where Gather left out
// every instance label of a vector's indom; the labels the vector derives
// from its values stay in Sample.Values alone. A label named as one of
// the vector's label names is refused (ErrDuplicate): the vector's value
// is the one every reader shows.
func TestGatherVecInstanceLabel(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "mmv")
	r := newRegistry(t, "gathervl", dir, mmv.Options{})
	v := mmv.NewCounterVec(r, "requests", "Requests", mmv.Count, "route")
	v.With("/api").Add(3)
	h := mmv.NewHistogramVec(r, "latency", "Latency", mmv.Second, &mmv.HistogramOptions{Buckets: []float64{1}}, "route")
	h.With("/api").Observe(0.5)
	startOrSkip(t, r)
	id, hid := firstInstanceID(t, r, "requests"), firstInstanceID(t, r, "latency.count")
	require.NoError(t, r.AddInstanceLabel(v.Indom(), id, mmv.Label{Name: "region", Value: "eu"}))
	require.NoError(t, r.AddInstanceLabel(h.Indom(), hid, mmv.Label{Name: "region", Value: "us"}))
	require.ErrorIs(t, r.AddInstanceLabel(v.Indom(), id, mmv.Label{Name: "route", Value: "/other"}), mmv.ErrDuplicate,
		"a program label named as the vector's label")
	require.NoError(t, r.Flush())

	// The file, which PCP reads, and Snapshot have the labels.
	labels, _ := fileInstanceLabels(t, r.Path())
	assert.Equal(t, []string{`{"region":"eu"}`, `{"route":"/api"}`}, labels[instanceAt{v.Indom(), id}])
	assert.Equal(t, labels, snapshotInstanceLabels(t, r))
	if pcptest.WantPCP(t) {
		out, ok := pcptest.Pminfo(t, tmp, "-l", "mmv.gathervl.requests", "mmv.gathervl.latency.count")
		require.True(t, ok, out)
		assert.Contains(t, out, `"region":"eu"`, "PCP shows the label")
		assert.Contains(t, out, `"region":"us"`, "PCP shows the label")
	}

	g := gather(r)
	req := g["requests"].samples
	require.Len(t, req, 1)
	assert.Equal(t, []mmv.Label{{Name: "region", Value: "eu"}}, req[0].Labels, "the program's label; the vector's are its Values")
	assert.Equal(t, []string{"/api"}, req[0].Values)
	lat := g["latency"].samples
	require.Len(t, lat, 1)
	assert.Equal(t, []mmv.Label{{Name: "region", Value: "us"}}, lat[0].Labels, "a histogram vector's instance")
	scrape := string(expose.Append(nil, r, expose.Text))
	assert.Contains(t, scrape, `requests_total{region="eu",route="/api"} 3`)
	assert.Contains(t, scrape, `latency_seconds_count{region="us",route="/api"} 1`)
}

// TestGatherSentinel: with the Sentinel flag, a value PCP's reader shows
// as no value (SetNoValue) is left out, and comes back once set.
func TestGatherSentinel(t *testing.T) {
	r := mmv.NewRegistry("gather_sentinel", &mmv.Options{Dir: t.TempDir(), Flags: mmv.Sentinel})
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "n", Type: mmv.Int64, Semantics: mmv.SemInstant}))
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "f", Type: mmv.Double, Semantics: mmv.SemInstant}))
	startOrSkip(t, r)
	defer r.Close()
	for _, name := range []string{"n", "f"} {
		v, err := r.Value(name, "")
		require.NoError(t, err)
		v.SetNoValue()
		assert.NotContains(t, gather(r), name)
		v.Set(2)
		assert.Contains(t, gather(r), name)
	}
}

// TestGatherUnpublished: instruments that count in their memory while a
// full disk keeps their values out of the file are gathered with their
// counts, and from the file once it has room.
func TestGatherUnpublished(t *testing.T) {
	_, r, v, filler := fullVec(t, time.Hour, 0)
	const n = 300
	for i := range n {
		c, err := v.Get(strconv.Itoa(i))
		require.NoError(t, err)
		c.Add(uint64(i))
	}
	check := func() {
		t.Helper()
		got := map[string]int64{}
		for _, s := range gather(r)["v"].samples {
			got[s.Values[0]] = s.Value.Int()
		}
		for i := range n {
			assert.Equal(t, int64(i), got[strconv.Itoa(i)], i)
		}
	}
	require.Error(t, r.Flush())
	check()
	require.NoError(t, os.Remove(filler))
	require.NoError(t, r.Flush())
	check()
}

// TestGatherDuringGrowthShowsEveryValue: a counter in the file since
// Start is in every Gather and has its value in every Snapshot while
// growth steps of its file run one after another. A step in flight lets
// the registry's lock go, and Gather and Snapshot, given no handle for
// any value of a part in flight, left the counter out (within 5 to 131
// rounds in every run): a scrape through package expose that met a
// growth step lost every series of the file (Registry.readLocked).
func TestGatherDuringGrowthShowsEveryValue(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mmv")
	r := newRegistry(t, "gd", dir, mmv.Options{PublishDelay: time.Millisecond})
	steady := mmv.NewCounter(r, "steady", "always there", mmv.Count)
	steady.Add(7)
	startOrSkip(t, r)

	var stop atomic.Bool
	var wg sync.WaitGroup
	defer func() { stop.Store(true); wg.Wait() }()
	wg.Go(func() { // growth steps, one after another
		for i := 0; !stop.Load(); i++ {
			v, err := mmv.DeclareVec[mmv.Counter](r, "grow"+strconv.Itoa(i), "growth", mmv.Count, "k")
			if err != nil {
				return
			}
			for j := range 200 {
				v.With(strconv.Itoa(j)).Inc()
			}
			r.Flush()
		}
	})

	deadline := time.Now().Add(3 * time.Second)
	for round := 0; time.Now().Before(deadline) && round < 3000; round++ {
		seen := false
		r.Gather(func(f *mmv.Family) {
			if f.Name == "steady" {
				seen = len(f.Samples) == 1 && f.Samples[0].Value != nil && f.Samples[0].Value.Int() == 7
			}
		})
		require.True(t, seen, "round %d: Gather left out the counter steady, bound in the file since Start", round)
		ms, err := r.Snapshot()
		require.NoError(t, err)
		for _, m := range ms {
			if m.Name == "steady" {
				require.Len(t, m.Values, 1)
				require.Equal(t, uint64(7), m.Values[0].Value, "round %d: Snapshot's value of steady", round)
			}
		}
	}
}

// TestGatherPastAStuckPoll: before Start, Gather and Snapshot wait for the
// registry's polls' runs a while, not for ever, as Start does: a poll
// stuck (a bridge's collector that never returns) hung package expose's
// every scrape of a registry never started.
func TestGatherPastAStuckPoll(t *testing.T) {
	r := newRegistry(t, "stuckgather", t.TempDir(), mmv.Options{})
	level := mmv.NewIntGauge(r, "level", "", mmv.Count)
	release := make(chan struct{})
	defer close(release)
	r.Poll(time.Hour, func() {
		<-release
		level.Set(42)
	})
	gathered := make(chan int)
	go func() {
		n := 0
		r.Gather(func(*mmv.Family) { n++ })
		_, err := r.Snapshot()
		assert.NoError(t, err)
		gathered <- n
	}()
	select {
	case n := <-gathered:
		assert.Equal(t, 1, n, "the families")
	case <-time.After(time.Minute):
		t.Fatal("Gather waits for a stuck poll")
	}
}
