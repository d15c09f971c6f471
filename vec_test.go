package mmv_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
)

// pcpValue returns what PCP's reader shows for an instance of a metric of
// the file vec, "" when it shows no such instance.
func pcpValue(ms []pcptest.Metric, metric, inst string) string {
	m := pcptest.Find(ms, "mmv.vec."+metric)
	if m == nil {
		return ""
	}
	if in := m.Instance(inst); in != nil {
		return in.Value
	}
	return ""
}

// TestVecFirstUseThroughPCP: for every kind of vector, instances used
// first before Start and after it, read by PCP's reader after Flush with
// exact values. Histograms publish their statistics at refresh, so their
// values are read after Close.
func TestVecFirstUseThroughPCP(t *testing.T) {
	tmp, dir := pcpDir(t)
	r := newRegistry(t, "vec", dir, mmv.Options{PublishDelay: time.Hour}) // only Flush publishes
	counters := mmv.NewCounterVec(r, "requests", "", mmv.Count, "k")
	gauges := mmv.NewGaugeVec(r, "temp", "", mmv.NoUnits, "k")
	ints := mmv.NewIntGaugeVec(r, "queue", "", mmv.Count, "k")
	timers := mmv.NewTimerVec(r, "busy", "", "k")
	hists := mmv.NewHistogramVec(r, "size", "", mmv.Byte, &mmv.HistogramOptions{Min: 1, Max: 1024, SubBuckets: 4}, "k")
	counters.With("/declared")

	type want struct{ metric, inst, value string }
	cases := []struct {
		inst   string
		update func(inst string)
		want   []want
	}{
		{"early", func(in string) {
			counters.With(in).Add(5)
			gauges.With(in).Set(0.5)
			ints.With(in).Add(-3)
			timers.With(in).Observe(1500 * time.Microsecond)
			hists.With(in).Observe(100)
		}, []want{{"requests", "k=early", "5"}, {"temp", "k=early", "0.5"}, {"queue", "k=early", "-3"}, {"busy", "k=early", "1500000"}}},
		{"late/1", func(in string) {
			counters.With(in).Inc()
			counters.With(in).Inc()
			gauges.With(in).Add(-1.25)
			ints.With(in).Set(42)
			timers.With(in).Observe(2 * time.Millisecond)
			hists.With(in).Observe(3)
			hists.With(in).Observe(5)
		}, []want{{"requests", "k=late/1", "2"}, {"temp", "k=late/1", "-1.25"}, {"queue", "k=late/1", "42"}, {"busy", "k=late/1", "2000000"}}},
	}
	cases[0].update(cases[0].inst) // before Start
	startOrSkip(t, r)
	cases[1].update(cases[1].inst)
	counters.With("/declared").Add(7)
	require.NoError(t, r.Flush())

	ms := pcptest.Info(t, tmp)
	assert.Equal(t, "7", pcpValue(ms, "requests", "k=/declared"))
	for _, c := range cases {
		for _, w := range c.want {
			assert.Equal(t, w.value, pcpValue(ms, w.metric, w.inst), "mmv.vec.%s[%s]", w.metric, w.inst)
		}
		// Histogram instances are there; their values come at refresh.
		assert.NotEmpty(t, pcpValue(ms, "size.count", "k="+c.inst), "size.count[k=%s]", c.inst)
		assert.NotEmpty(t, pcpValue(ms, "size.bucket", "k="+c.inst+",le=+Inf"), "size.bucket[k=%s,le=+Inf]", c.inst)
	}

	require.NoError(t, r.Close()) // refreshes the histograms; the file stays
	ms = pcptest.Info(t, tmp)
	for _, w := range []want{
		{"size.count", "k=early", "1"}, {"size.sum", "k=early", "100"}, {"size.bucket", "k=early,le=112", "1"},
		{"size.count", "k=late/1", "2"}, {"size.mean", "k=late/1", "4"}, {"size.max", "k=late/1", "5"},
		{"size.bucket", "k=late/1,le=3", "1"}, {"size.bucket", "k=late/1,le=3.5", "0"}, {"size.bucket", "k=late/1,le=5", "1"}, {"size.bucket", "k=late/1,le=6", "0"},
		{"requests", "k=late/1", "2"}, {"busy", "k=early", "1500000"},
	} {
		assert.Equal(t, w.value, pcpValue(ms, w.metric, w.inst), "after Close: mmv.vec.%s[%s]", w.metric, w.inst)
	}
	if m := pcptest.Find(ms, "mmv.vec.size.bucket"); assert.NotNil(t, m) {
		assert.Len(t, m.Instances, 2*(1+4*10+1), "bucket instances of two histograms")
	}
}

// TestVecConcurrentFirstUse: goroutines ask for overlapping new names at
// once and count through them, some before Start, some racing with it and
// Flush. Exactly one instance is made per name, every goroutine gets the
// same instrument, and PCP reads exactly the sums.
func TestVecConcurrentFirstUse(t *testing.T) {
	needFileLayer(t)
	tmp, dir := pcpDir(t)
	r := newRegistry(t, "vec", dir, mmv.Options{PublishDelay: time.Millisecond})
	v := mmv.NewCounterVec(r, "hits", "", mmv.Count, "k")
	const (
		workers = 16
		names   = 60
		rounds  = 200
	)
	name := func(w, i int) string { return fmt.Sprintf("n%d", (w*7+i)%names) } // overlapping, in different orders
	got := make([][]*mmv.Counter, workers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range workers {
		got[w] = make([]*mmv.Counter, names)
		wg.Go(func() {
			<-start
			for round := range rounds {
				for i := range names {
					c := v.With(name(w, i))
					c.Inc()
					if round == 0 {
						got[w][(w*7+i)%names] = c
					}
				}
				if w == 0 && round == rounds/4 {
					assert.NoError(t, r.Start())
				}
				if w == 1 && round%50 == 0 {
					r.Flush() // before Start: a no-op
				}
			}
		})
	}
	close(start)
	wg.Wait()

	insts := v.Instances()
	assert.Len(t, insts, names)
	seen := map[string]bool{}
	for _, in := range insts {
		assert.False(t, seen[in], "instance %q twice", in)
		seen[in] = true
	}
	for i := range names {
		for w := 1; w < workers; w++ {
			require.Equal(t, got[0][i], got[w][i], "n%d: goroutines got different counters", i)
		}
		assert.Equal(t, uint64(workers*rounds), got[0][i].Get(), "n%d", i)
	}
	// Updates racing with Start may sit in memory until Close carries them.
	require.NoError(t, r.Close())
	ms := pcptest.Info(t, tmp)
	m := pcptest.Find(ms, "mmv.vec.hits")
	require.NotNil(t, m)
	assert.Len(t, m.Instances, names)
	for i := range names {
		assert.Equal(t, fmt.Sprint(workers*rounds), pcpValue(ms, "hits", fmt.Sprintf("k=n%d", i)), "hits[n%d]", i)
	}
}

// TestVecConcurrentFirstUseAfterStart: the same after Start, read through
// PCP after Flush while the registry stays open.
func TestVecConcurrentFirstUseAfterStart(t *testing.T) {
	tmp, dir := pcpDir(t)
	r := newRegistry(t, "vec", dir, mmv.Options{})
	v := mmv.NewIntGaugeVec(r, "level", "", mmv.Count, "k")
	hv := mmv.NewHistogramVec(r, "lat", "", mmv.Second, &mmv.HistogramOptions{SubBuckets: 1}, "k")
	startOrSkip(t, r)
	const workers, names, rounds = 8, 40, 100
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range rounds {
				for i := range names {
					in := fmt.Sprintf("p%d", (i+w)%names)
					v.With(in).Add(2)
					hv.With(in).Observe(0.5)
				}
			}
		})
	}
	wg.Wait()
	require.NoError(t, r.Flush())
	ms := pcptest.Info(t, tmp)
	for i := range names {
		assert.Equal(t, fmt.Sprint(2*workers*rounds), pcpValue(ms, "level", fmt.Sprintf("k=p%d", i)))
		assert.Equal(t, uint64(workers*rounds), hv.With(fmt.Sprintf("p%d", i)).Stats().Count)
	}
	assert.Len(t, hv.Instances(), names)
}

// TestVecLimit: beyond the limit Get says ErrTooMany, naming the vector,
// the instance and the limit, and With returns nil, which drops updates.
func TestVecLimit(t *testing.T) {
	for _, c := range []struct {
		name    string
		limit   int // 0: the default
		made    int // instances made before the limit is set
		started bool
	}{
		{"default", 0, 3, false},
		{"small before Start", 5, 2, false},
		{"small after Start", 5, 2, true},
		{"below those made", 1, 3, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRegistry(t, "lim", t.TempDir(), mmv.Options{})
			v := mmv.NewCounterVec(r, "capped", "", mmv.Count, "k")
			for i := range c.made {
				require.NotNil(t, v.With(fmt.Sprint("d", i)))
			}
			limit := mmv.DefaultVecLimit
			if c.limit != 0 {
				v.SetLimit(c.limit)
				limit = c.limit
			}
			assert.Equal(t, limit, v.Limit())
			if c.started {
				startOrSkip(t, r)
			}
			for i := c.made; i < limit; i++ {
				_, err := v.Get(fmt.Sprint("x", i))
				require.NoError(t, err, "instance %d of %d", i, limit)
			}
			_, err := v.Get("one-too-many")
			require.ErrorIs(t, err, mmv.ErrTooMany)
			for _, s := range []string{`"capped"`, `"k=one-too-many"`, fmt.Sprint(limit)} {
				assert.Contains(t, err.Error(), s)
			}
			assert.Nil(t, v.With("one-too-many"))
			assert.ErrorIs(t, v.Err(), mmv.ErrTooMany)
			v.With("one-too-many").Add(5) // dropped
			assert.Len(t, v.Instances(), max(limit, c.made))
			assert.NotNil(t, v.With("d0"), "an instance made stays")

			v.SetLimit(max(limit, c.made) + 1) // room for one more
			assert.NotNil(t, v.With("one-too-many"))
			assert.Zero(t, v.With("one-too-many").Get(), "the dropped update stays dropped")
		})
	}
}

// TestVecCanonicalNames: any label values make an instance, named in the
// canonical form, two lists of values never the same instance for PCP
// (the first-space trap is gone), and each instance carries its values as
// PCP instance labels.
func TestVecCanonicalNames(t *testing.T) {
	tmp, dir := pcpDir(t)
	r := newRegistry(t, "vec", dir, mmv.Options{Cluster: 301})
	v := mmv.NewCounterVec(r, "reqs", "", mmv.Count, "route", "method")
	startOrSkip(t, r)
	cases := []struct {
		values []string
		name   string
	}{
		{[]string{"/a", "GET /a"}, "route=/a,method=GET%20/a"},
		{[]string{"/a", "GET /b"}, "route=/a,method=GET%20/b"},
		{[]string{"/a", "GET"}, "route=/a,method=GET"},
		{[]string{"x,method=y", ""}, "route=x%2Cmethod%3Dy,method="},
		{[]string{"x", "y"}, "route=x,method=y"},
		{[]string{"Zürich", "100%"}, "route=Zürich,method=100%25"},
		{[]string{" lead", "trail "}, "route=%20lead,method=trail%20"},
		{[]string{"a\x00b", "tab\t"}, "route=a%00b,method=tab%09"},
	}
	for i, c := range cases {
		ctr, err := v.Get(c.values...)
		require.NoError(t, err, "%q", c.values)
		ctr.Add(uint64(i + 1))
	}
	require.NoError(t, r.Flush())
	m := pcptest.Find(pcptest.Info(t, tmp), "mmv.vec.reqs")
	require.NotNil(t, m)
	require.Len(t, m.Instances, len(cases))
	for i, c := range cases {
		in := m.Instance(c.name)
		if assert.NotNil(t, in, "instance %q", c.name) {
			assert.Equal(t, fmt.Sprint(i+1), in.Value, c.name)
			route, _ := in.Label("route")
			method, _ := in.Label("method")
			assert.Equal(t, jsonString(t, c.values[0]), route, "route label of %q", c.name)
			assert.Equal(t, jsonString(t, c.values[1]), method, "method label of %q", c.name)
		}
	}
}

// TestVecRefusals: values a vector cannot take (not one per label, a name
// beyond 255 bytes, a value not UTF-8, over the limit, on a closed registry) make Get return
// why and With nil, count for nothing toward the limit, and are counted by
// reason in the registry's own metric, which PCP shows.
func TestVecRefusals(t *testing.T) {
	tmp, dir := pcpDir(t)
	r := newRegistry(t, "vec", dir, mmv.Options{Cluster: 302})
	v := mmv.NewCounterVec(r, "by_request", "", mmv.Count, "route")
	hv := mmv.NewHistogramVec(r, "lat", "", mmv.Second, nil, "route")
	v.SetLimit(2)
	startOrSkip(t, r)
	for _, c := range []struct {
		values []string
		want   error
	}{
		{[]string{}, mmv.ErrLabel},
		{[]string{"a", "b"}, mmv.ErrLabel},
		{[]string{strings.Repeat("x", 250)}, mmv.ErrTooLong},
		{[]string{strings.Repeat(" ", 100)}, mmv.ErrTooLong}, // escaped, it is 300 bytes
		{[]string{"/caf\xe9"}, mmv.ErrLabel},                 // PCP's JSON labels and a scrape show it as "/caf\uFFFD"
	} {
		_, err := v.Get(c.values...)
		assert.ErrorIs(t, err, c.want, "Get(%q)", c.values)
		assert.Nil(t, v.With(c.values...), "With(%q)", c.values)
		assert.ErrorIs(t, v.Err(), c.want, "Err after %q", c.values)
	}
	assert.Nil(t, v.WithLabels(map[string]string{"path": "/"}), "a label not the vector's")
	_, err := hv.Get(strings.Repeat("y", 246)) // fits, but with ",le=+Inf" does not
	assert.ErrorIs(t, err, mmv.ErrTooLong)
	assert.ErrorContains(t, err, `vector "lat" instance "route=yyy`, "names the vector, the value and the bucket")
	assert.ErrorContains(t, err, `bucket "route=yyy`)
	// None counted: two fit under the limit of 2, not a third.
	assert.NotNil(t, v.With("POST"))
	assert.NotNil(t, v.WithLabels(map[string]string{"route": "PUT"}))
	_, err = v.Get("HEAD")
	assert.ErrorIs(t, err, mmv.ErrTooMany)
	assert.Equal(t, []string{"route=POST", "route=PUT"}, v.Instances())
	assert.NotNil(t, hv.With("ok"))
	require.NoError(t, r.Flush())

	// 12 refused values (5 by Get and With each, the map, the
	// histogram's), 1 over the limit.
	ms := pcptest.Info(t, tmp)
	assert.Equal(t, "12", pcpValue(ms, "mmv.dropped", "refused"))
	assert.Equal(t, "1", pcpValue(ms, "mmv.dropped", "limit"))
	assert.Equal(t, "0", pcpValue(ms, "mmv.dropped", "cap"))
	assert.Panics(t, func() { mmv.NewCounter(r, "mmv.mine", "", mmv.Count) }, "mmv.* is the registry's")

	v.SetLimit(10)
	require.NoError(t, r.Close())
	_, err = v.Get("after-close")
	assert.ErrorIs(t, err, mmv.ErrClosed)
	assert.NotNil(t, v.With("POST"), "existing instruments stay, their updates dropped")
}

// TestVecValuesOfManyLabels: an entry keeps up to three values in its own
// memory and more in an array of their own, their number the vector's:
// vectors of 1, 3, 4 and 6 labels find each instrument again after their
// tables grew and after most were deleted (the table rebuilt from the
// values kept), name their instances from all the values, and refuse one
// value fewer or more.
func TestVecValuesOfManyLabels(t *testing.T) {
	r := newRegistry(t, "many", t.TempDir(), mmv.Options{})
	for _, n := range []int{1, 3, 4, 6} {
		labels := make([]string, n)
		for i := range labels {
			labels[i] = "l" + strconv.Itoa(i)
		}
		v := mmv.NewCounterVec(r, "c"+strconv.Itoa(n), "", mmv.Count, labels...)
		values := func(k int) []string {
			vs := make([]string, n)
			for i := range vs {
				vs[i] = fmt.Sprint("v", k, "_", i)
			}
			return vs
		}
		made := make([]*mmv.Counter, 300)
		for k := range made {
			made[k] = v.With(values(k)...)
			require.NotNil(t, made[k], "%d labels, values %d", n, k)
		}
		for k := range made {
			assert.Same(t, made[k], v.With(values(k)...), "%d labels, values %d again", n, k)
		}
		for k := range 250 {
			require.True(t, v.Delete(values(k)...), "%d labels, values %d deleted", n, k)
		}
		for k := 250; k < len(made); k++ {
			assert.Same(t, made[k], v.With(values(k)...), "%d labels, values %d after deletions", n, k)
		}
		names := v.Instances()
		require.Len(t, names, 50)
		want := make([]string, n)
		for i, x := range values(299) {
			want[i] = labels[i] + "=" + x
		}
		assert.Equal(t, strings.Join(want, ","), names[49], "%d labels", n)
		for _, vs := range [][]string{values(299)[:n-1], append(values(299), "more")} {
			_, err := v.Get(vs...)
			assert.ErrorIs(t, err, mmv.ErrLabel, "%d labels, %d values", n, len(vs))
		}
	}
}

// TestVecWithDoesNotAllocate: With on an existing instance, whether in the
// rebuilt map or among those added since.
func TestVecWithDoesNotAllocate(t *testing.T) {
	r := newRegistry(t, "allocs", t.TempDir(), mmv.Options{})
	v := mmv.NewCounterVec(r, "v", "", mmv.Count, "k")
	v.With("a")
	startOrSkip(t, r)
	for i := range 20 {
		v.With(fmt.Sprint("n", i))
	}
	for _, in := range []string{"a", "n0", "n19"} {
		assert.EqualValues(t, 0, testing.AllocsPerRun(1000, func() { v.With(in).Inc() }), "With(%q) allocates", in)
	}
}

// TestVecLookupsRacingRebuilds: lock-free lookups of existing values,
// from two goroutines, always find their instrument while others add
// thousands of values (the table filled in place and replaced, larger,
// again and again) and churn (deleted entries left dead in their slots,
// then the table rebuilt without them), and a deleted value used again
// gets a new instrument that lookups find from then on.
func TestVecLookupsRacingRebuilds(t *testing.T) {
	r := newRegistry(t, "rebuilds", t.TempDir(), mmv.Options{MaxIndomInstances: -1, MaxInstances: -1, MaxFileValues: -1, MaxValues: -1, PublishDelay: time.Millisecond})
	v := mmv.NewCounterVec(r, "v", "", mmv.Count, "route", "code")
	v.SetLimit(10000)
	startOrSkip(t, r)
	steady := make([]*mmv.Counter, 8)
	for i := range steady {
		steady[i] = v.With(fmt.Sprint("/steady/", i), "200")
	}
	var stop atomic.Bool
	var wrong atomic.Int64
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for !stop.Load() {
				for i, c := range steady {
					if v.With(fmt.Sprint("/steady/", i), "200") != c {
						wrong.Add(1)
					}
				}
			}
		})
	}
	var writers sync.WaitGroup
	writers.Go(func() {
		for i := range 3000 {
			v.With(fmt.Sprint("/new/", i), "200").Inc()
		}
	})
	writers.Go(func() {
		for i := range 2000 {
			k := fmt.Sprint("/churn/", i%50)
			v.With(k, "500").Inc()
			assert.True(t, v.Delete(k, "500"))
		}
	})
	writers.Wait()
	stop.Store(true)
	wg.Wait()
	assert.Zero(t, wrong.Load(), "lookups of existing values that missed their instrument")
	for i, c := range steady {
		assert.Same(t, c, v.With(fmt.Sprint("/steady/", i), "200"))
	}
	for i := range 3000 {
		c := v.With(fmt.Sprint("/new/", i), "200")
		require.NotNil(t, c)
		assert.EqualValues(t, 1, c.Get(), "/new/%d", i)
	}
	again := v.With("/churn/0", "500")
	assert.Zero(t, again.Get(), "a deleted value comes back new")
	assert.Same(t, again, v.With("/churn/0", "500"))
	assert.Len(t, v.Instances(), len(steady)+3000+1)
}

// BenchmarkVecWith is With on an existing instance and Inc, against a
// plain map lookup of the same counters and Inc in the same run.
func BenchmarkVecWith(b *testing.B) {
	const n = 100
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprint("/route/", i)
	}
	r := mmv.NewRegistry("bench", &mmv.Options{Dir: b.TempDir()})
	defer r.Close()
	v := mmv.NewCounterVec(r, "v", "", mmv.Count, "route")
	startOrSkip(b, r)
	plain := map[string]*mmv.Counter{}
	for _, in := range names {
		plain[in] = v.With(in)
	}
	// 100 instances made after Start: the last ones are among the recent
	// ones (those since the last rebuild, at 64), the others in the
	// rebuilt map.
	for _, c := range []struct{ name, inst string }{{"rebuilt", names[10]}, {"recent", names[n-5]}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				v.With(c.inst).Inc()
			}
		})
	}
	b.Run("map-baseline", func(b *testing.B) {
		in := names[10]
		b.ReportAllocs()
		for b.Loop() {
			plain[in].Inc()
		}
	})
}

// TestVecFirstUseInOverflowFile: a vector whose metric lands in an overflow
// file (the registry's 1024th metric and up) grows there too.
func TestVecFirstUseInOverflowFile(t *testing.T) {
	tmp, dir := pcpDir(t)
	r := newRegistry(t, "vec", dir, mmv.Options{Cluster: 300})
	for i := range mmv.MaxMetrics {
		mmv.NewCounter(r, fmt.Sprintf("c%d", i), "", mmv.Count)
	}
	v := mmv.NewCounterVec(r, "spill", "", mmv.Count, "k")
	hv := mmv.NewHistogramVec(r, "spill_h", "", mmv.Second, &mmv.HistogramOptions{SubBuckets: 1}, "k")
	v.With("declared")
	v.With("early").Add(2)
	startOrSkip(t, r)
	v.With("late").Add(3)
	v.With("declared").Inc()
	hv.With("late").Observe(1)
	require.NoError(t, r.Flush())
	assert.FileExists(t, filepath.Join(tmp, "mmv", "vec.2"), "the vectors' overflow file")
	ms := pcptest.Info(t, tmp)
	for in, want := range map[string]string{"declared": "1", "early": "2", "late": "3"} {
		assert.Equal(t, want, pcpValue(ms, "spill", "k="+in), "spill[%s]", in)
	}
	require.NoError(t, r.Close())
	ms = pcptest.Info(t, tmp)
	assert.Equal(t, "1", pcpValue(ms, "spill_h.count", "k=late"))
	assert.Equal(t, "3", pcpValue(ms, "spill", "k=late"))
}

// jsonString is s as a JSON string, as PCP shows a label's value.
func jsonString(t *testing.T, s string) string {
	b, err := json.Marshal(s)
	require.NoError(t, err)
	return string(b)
}

// TestVecInPCPTerms: Metric, Indom and Labels say what a vector is in PCP,
// for those who label its indom themselves.
func TestVecInPCPTerms(t *testing.T) {
	tmp, dir := pcpDir(t)
	// One file (no values budget), whose cluster every indom id has.
	r := newRegistry(t, "vec", dir, mmv.Options{Cluster: 304, MaxFileValues: -1})
	v := mmv.NewCounterVec(r, "reqs", "", mmv.Count, "route", "status")
	h := mmv.NewHistogramVec(r, "lat", "", mmv.Second, nil, "route")
	assert.Equal(t, "reqs", v.Metric())
	assert.Equal(t, "lat", h.Metric())
	assert.Equal(t, []string{"route", "status"}, v.Labels())
	require.NoError(t, r.AddIndomLabel(v.Indom(), mmv.Label{Name: "team", Value: "web"}))
	v.With("/", "200")
	h.With("/")
	startOrSkip(t, r)
	ms := pcptest.Info(t, tmp)
	for metric, serial := range map[string]uint32{"reqs": v.Indom(), "lat.count": h.Indom()} {
		m := pcptest.Find(ms, "mmv.vec."+metric)
		require.NotNil(t, m, metric)
		assert.True(t, strings.HasPrefix(m.Indom, fmt.Sprintf("70.%d ", 304<<11|serial)), "%s: indom %s, serial %d", metric, m.Indom, serial)
	}
	team, _ := pcptest.Find(ms, "mmv.vec.reqs").Label("team")
	assert.Equal(t, `"web"`, team, "the label on the vector's indom")
}

// TestVecLabelBudget: a vector's instances carry their values as PCP
// instance labels while the file keeps 32 label records for the program's
// own, each instance those of its labels that fit a record; a deleted
// instance gives its records back, to the next vector that labels; the
// file holds exactly the labels Snapshot shows.
func TestVecLabelBudget(t *testing.T) {
	r := mmv.NewRegistry("vec_label_budget", &mmv.Options{Dir: t.TempDir()})
	defer r.Close()
	a := mmv.NewCounterVec(r, "a", "", mmv.Count, "route", "code")
	a.SetLimit(mmv.MaxLabels)
	a.With(strings.Repeat("x", 240), "200").Inc() // route's label is too long: code's only
	for i := range 100 {
		a.With(strconv.Itoa(i), "200").Inc()
	}
	startOrSkip(t, r)
	for i := 100; i < 200; i++ {
		a.With(strconv.Itoa(i), "200").Inc()
	}
	require.NoError(t, r.Flush())
	inFile, records := fileInstanceLabels(t, r.Path())
	assert.Equal(t, snapshotInstanceLabels(t, r), inFile)
	const reserve, names = 32, 2
	assert.Greater(t, records, mmv.MaxLabels-reserve-names, "labelled while the budget allowed")
	assert.LessOrEqual(t, records, mmv.MaxLabels-reserve, "the program's records kept")
	assert.Len(t, inFile, records/2+1, "the first instance carries one label")
	assert.Equal(t, []string{`{"code":"200"}`}, inFile[instanceAt{a.Indom(), firstInstanceID(t, r, "a")}])

	for i := range 50 {
		require.True(t, a.Delete(strconv.Itoa(i), "200"))
	}
	a.With("new", "200").Inc() // labelled again: the budget has room
	b := mmv.NewCounterVec(r, "b", "", mmv.Count, "k")
	b.With("x").Inc()
	require.NoError(t, r.Flush())
	inFile, after := fileInstanceLabels(t, r.Path())
	assert.Equal(t, snapshotInstanceLabels(t, r), inFile)
	assert.Equal(t, records-2*50+2+1, after, "the deleted instances' records given back, two to a's new value, one to b")
	assert.Equal(t, []string{`{"k":"x"}`}, inFile[instanceAt{b.Indom(), firstInstanceID(t, r, "b")}])
}

// TestVecLabelsAfterBudgetFreed: a vector that met the file's label
// budget labels its new values again once deletions or expiry freed it
// (Reset here), where the first instance refused turned its labels off
// for good: every value of a churning vector (request ids, clients,
// SetExpiry) that once met the budget had no label PCP, pmseries and
// Grafana could select it by, for the life of the registry. The budget is
// asked again only once labels were freed: a new value meanwhile pays a
// compare.
func TestVecLabelsAfterBudgetFreed(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "mmv")
	r := newRegistry(t, "labfreed", dir, mmv.Options{})
	v := mmv.NewCounterVec(r, "clients", "Requests by client", mmv.Count, "client")
	startOrSkip(t, r)
	for i := range 300 { // past the budget: 223 records with one label name
		v.With(fmt.Sprint("old", i)).Inc()
	}
	require.NoError(t, r.Flush())
	_, full := fileInstanceLabels(t, r.Path())
	require.Equal(t, mmv.MaxLabels-32, full, "the budget, the program's 32 kept")
	v.With("still-full").Inc()
	require.True(t, v.Delete("old0"))
	v.With("one-freed").Inc()
	require.NoError(t, r.Flush())
	labels, records := fileInstanceLabels(t, r.Path())
	assert.Equal(t, full, records, "the record old0 freed, taken again")
	assert.Contains(t, fmt.Sprint(labels), `{"client":"one-freed"}`)
	assert.NotContains(t, fmt.Sprint(labels), `{"client":"still-full"}`)

	v.Reset() // the budget is free again
	require.NoError(t, r.Flush())
	_, records = fileInstanceLabels(t, r.Path())
	require.Zero(t, records, "no label left after Reset")
	v.With("new").Inc()
	require.NoError(t, r.Flush())
	labels, _ = fileInstanceLabels(t, r.Path())
	assert.Equal(t, snapshotInstanceLabels(t, r), labels)
	assert.Contains(t, fmt.Sprint(labels), `{"client":"new"}`, "the file's labels of a value first used with the budget free")
	if pcptest.WantPCP(t) {
		out, ok := pcptest.Pminfo(t, tmp, "-l", "mmv.labfreed.clients")
		require.True(t, ok, out)
		assert.Contains(t, out, `"client":"new"`, "PCP's labels of client=new")
	}
}

// TestHistogramVecLabels: a histogram vector's instances carry their
// values as labels as a counter vector's do, in the file as in Snapshot,
// and a deleted one's records go with it.
func TestHistogramVecLabels(t *testing.T) {
	r := mmv.NewRegistry("histvec_labels", &mmv.Options{Dir: t.TempDir()})
	defer r.Close()
	h := mmv.NewHistogramVec(r, "latency", "", mmv.Second, nil, "route", "method")
	h.With("/a", "GET").Observe(1)
	startOrSkip(t, r)
	h.With("/b", "PUT").Observe(2)
	require.NoError(t, r.Flush())
	inFile, records := fileInstanceLabels(t, r.Path())
	assert.Equal(t, snapshotInstanceLabels(t, r), inFile)
	assert.Equal(t, 4, records, "two label records for each of two instances")
	assert.Contains(t, inFile, instanceAt{h.Indom(), firstInstanceID(t, r, "latency.count")})

	require.True(t, h.Delete("/a", "GET"))
	require.NoError(t, r.Flush())
	inFile, records = fileInstanceLabels(t, r.Path())
	assert.Equal(t, snapshotInstanceLabels(t, r), inFile)
	assert.Equal(t, 2, records)
}

// TestAddInstanceToVectorIndom: the instances of a vector's indom (a
// histogram vector's statistics') are its label values, added by With
// alone: AddInstance refuses one, which its vector would not know of and
// would add again under another id.
func TestAddInstanceToVectorIndom(t *testing.T) {
	r := newRegistry(t, "vecindom", filepath.Join(t.TempDir(), "mmv"), mmv.Options{})
	v := mmv.NewCounterVec(r, "requests", "", mmv.Count, "route")
	h := mmv.NewHistogramVec(r, "latency", "", mmv.Second, nil, "route")
	for _, serial := range []uint32{v.Indom(), h.Indom()} {
		err := r.AddInstance(serial, mmv.Instance{ID: 7, Name: "route=/a"})
		require.ErrorIs(t, err, mmv.ErrInUse)
		assert.ErrorContains(t, err, "a vector's, whose instances are its label values")
	}
	v.With("/a").Inc()
	h.With("/a").Observe(1)
	startOrSkip(t, r)
	snaps, err := r.Snapshot()
	require.NoError(t, err)
	i := slices.IndexFunc(snaps, func(m mmv.MetricSnapshot) bool { return m.Name == "requests" })
	require.GreaterOrEqual(t, i, 0, "requests in the snapshot")
	require.Len(t, snaps[i].Values, 1)
	assert.Equal(t, "route=/a", snaps[i].Values[0].Instance)
}

// TestAddInstanceToInstrumentIndom: AddInstance refuses every indom the
// registry made for an instrument, not only a vector's: a histogram's
// buckets' (a vector's, whose ids its With derives, where an instance
// added under one of them made a later label value's buckets clash with
// it; a single one's, whose buckets are its bounds).
func TestAddInstanceToInstrumentIndom(t *testing.T) {
	r := newRegistry(t, "instrindom", filepath.Join(t.TempDir(), "mmv"), mmv.Options{})
	mmv.NewHistogramVec(r, "latency", "", mmv.Second, nil, "route")
	mmv.NewHistogram(r, "size", "", mmv.Byte, nil)
	snaps, err := r.Snapshot()
	require.NoError(t, err)
	for _, name := range []string{"latency.bucket", "size.bucket"} {
		i := slices.IndexFunc(snaps, func(m mmv.MetricSnapshot) bool { return m.Name == name })
		require.GreaterOrEqual(t, i, 0, "%s in the snapshot", name)
		err := r.AddInstance(snaps[i].Indom, mmv.Instance{ID: 1 << 20, Name: "x"})
		require.ErrorIs(t, err, mmv.ErrInUse, name)
		assert.ErrorContains(t, err, "made by the registry for an instrument", name)
	}
}

// TestAddMetricToInstrumentIndom: AddMetric and Tx.AddMetric refuse, as
// AddInstance does, a metric over an indom the registry made for an
// instrument, naming the metric, the indom and the instrument. Accepted, a
// metric over a vector's indom had values the vector never bound: a handle
// on one (Registry.Value) detached for good, silently, once the vector
// deleted its instance and made it again.
func TestAddMetricToInstrumentIndom(t *testing.T) {
	r := newRegistry(t, "metricindom", filepath.Join(t.TempDir(), "mmv"), mmv.Options{})
	v := mmv.NewCounterVec(r, "hits", "", mmv.Count, "k")
	hv := mmv.NewHistogramVec(r, "latency", "", mmv.Second, nil, "route")
	mmv.NewHistogram(r, "size", "", mmv.Byte, nil)
	v.With("a").Inc()
	snaps, err := r.Snapshot()
	require.NoError(t, err)
	indomOf := func(metric string) uint32 {
		i := slices.IndexFunc(snaps, func(m mmv.MetricSnapshot) bool { return m.Name == metric })
		require.GreaterOrEqual(t, i, 0, "%s in the snapshot", metric)
		return snaps[i].Indom
	}
	for _, c := range []struct {
		serial uint32
		owner  string
	}{
		{v.Indom(), `vector "hits"`}, {hv.Indom(), `vector "latency"`},
		{indomOf("latency.bucket"), `metric "latency.bucket"`}, {indomOf("size.bucket"), `metric "size.bucket"`},
	} {
		m := mmv.Metric{Name: "extra", Type: mmv.Uint64, Semantics: mmv.SemCounter, Indom: c.serial}
		err := r.AddMetric(m)
		require.ErrorIs(t, err, mmv.ErrInUse, c.owner)
		assert.ErrorContains(t, err, `metric "extra"`)
		assert.ErrorContains(t, err, fmt.Sprintf("indom %d is %s's", c.serial, c.owner))
		err = r.Transact(func(tx *mmv.Tx) error { return tx.AddMetric(m) })
		require.ErrorIs(t, err, mmv.ErrInUse, "Tx.AddMetric, %s", c.owner)
		assert.ErrorContains(t, err, c.owner)
	}
	_, err = r.Value("extra", "k=a")
	assert.Error(t, err, "no metric declared")
	// An indom the program declared takes metrics, as ever.
	require.NoError(t, r.AddIndom(mmv.Indom{Serial: 7, Instances: []mmv.Instance{{ID: 1, Name: "a"}}}))
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "extra", Type: mmv.Uint64, Semantics: mmv.SemCounter, Indom: 7}))
}

// TestVecAcceptsUnicodeSpaceAtEnd: a label value ending or starting in a
// Unicode space (U+00A0, U+3000, U+2028) is an instance as any other: to
// PCP such a space is bytes, its tools' white space is C's isspace, ASCII,
// which the canonical name escapes. The check used Unicode's, and refused
// them naming an indom, not the vector.
func TestVecAcceptsUnicodeSpaceAtEnd(t *testing.T) {
	r := newRegistry(t, "unispace", filepath.Join(t.TempDir(), "mmv"), mmv.Options{})
	v := mmv.NewCounterVec(r, "hits", "", mmv.Count, "size")
	values := []string{"10\u00a0", "x\u3000", "y\u2028", "\u00a0z", "10 ", "\t"}
	for _, val := range values {
		c, err := v.Get(val)
		require.NoError(t, err, "value %q", val)
		c.Inc()
	}
	assert.Len(t, v.Instances(), len(values))
	assert.Contains(t, v.Instances(), "size=10\u00a0")
	assert.Contains(t, v.Instances(), "size=10%20", "an ASCII space is escaped")
}

// TestVecTooLongNamesTheLabelAtFault: values whose instance name would
// pass 255 bytes are refused naming the label of the value longest in the
// name, escaped as it is there, that value cut short, and every value's
// escaped length; the error named the first value, here the innocent
// "/api", then the longest raw one: 100 plain bytes beside 90 commas, 270
// bytes escaped and too long alone.
func TestVecTooLongNamesTheLabelAtFault(t *testing.T) {
	r := newRegistry(t, "toolong", filepath.Join(t.TempDir(), "mmv"), mmv.Options{})
	v := mmv.NewCounterVec(r, "hits", "", mmv.Count, "route", "user")
	_, err := v.Get("/api", strings.Repeat("x", 300))
	require.ErrorIs(t, err, mmv.ErrTooLong)
	assert.ErrorContains(t, err, `vector "hits" label "user"`)
	assert.ErrorContains(t, err, `"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"... (300 bytes escaped)`)
	assert.ErrorContains(t, err, "escaped lengths: route 4, user 300")
	assert.NotContains(t, err.Error(), `"/api"`)
	assert.Less(t, len(err.Error()), 200, "readable: %v", err)
	assert.Equal(t, err, v.Err(), "Err says it")

	_, err = v.Get(strings.Repeat(",", 90), strings.Repeat("x", 100))
	require.ErrorIs(t, err, mmv.ErrTooLong)
	assert.ErrorContains(t, err, `vector "hits" label "route"`, "the value too long alone once escaped")
	assert.ErrorContains(t, err, `(270 bytes escaped)`)
	assert.ErrorContains(t, err, "escaped lengths: route 270, user 100")
}

// TestNilVecAndValueDoNotPanic: every method of a nil *Vec, what
// DeclareVec returns with its refusal, and a nil *Value's Type are safe
// (the package doc): Limit, SetLimit, Expiry, Instances, Labels, Metric,
// Indom and SetInstanceLabels dereferenced it, and a program setting up a
// vector DeclareVec refused crashed.
func TestNilVecAndValueDoNotPanic(t *testing.T) {
	var v *mmv.Vec[mmv.Counter]
	var val *mmv.Value
	for name, f := range map[string]func(){
		"Vec.Limit":             func() { v.Limit() },
		"Vec.SetLimit":          func() { v.SetLimit(10) },
		"Vec.Expiry":            func() { v.Expiry() },
		"Vec.Instances":         func() { v.Instances() },
		"Vec.Labels":            func() { v.Labels() },
		"Vec.Metric":            func() { v.Metric() },
		"Vec.Indom":             func() { v.Indom() },
		"Vec.SetInstanceLabels": func() { v.SetInstanceLabels(false) },
		"Value.Type":            func() { val.Type() },
	} {
		assert.NotPanics(t, f, "nil %s", name)
	}
	assert.Zero(t, v.Limit())
	assert.Nil(t, v.Instances())
}

// TestGetAfterCloseSaysClosed: a vector of a closed registry refuses new
// values with ErrClosed, also when it holds its limit, where it said
// ErrTooMany, as if a SetLimit would do.
func TestGetAfterCloseSaysClosed(t *testing.T) {
	r := mmv.NewRegistry("closedvec", &mmv.Options{Dir: filepath.Join(t.TempDir(), "mmv")})
	v := mmv.NewCounterVec(r, "requests", "", mmv.Count, "route")
	v.SetLimit(1)
	v.With("/a").Inc()
	require.NoError(t, r.Close())
	_, err := v.Get("/b")
	require.ErrorIs(t, err, mmv.ErrClosed)
	assert.NotErrorIs(t, err, mmv.ErrTooMany)
}

// TestVecLabelNamesLeavingNoRoomRefused: label names whose instance
// name passes 255 bytes with every value empty ("name=" each, joined by
// ',', and for a histogram vector its buckets' ",le=0.00025") leave room
// for no value: the declaration is refused (ErrTooLong), naming the
// rule, as a name too long is; the vector was declared, and refused every
// value it was given, each an ErrTooLong of With.
func TestVecLabelNamesLeavingNoRoomRefused(t *testing.T) {
	r := mmv.NewRegistry("noroom", &mmv.Options{Dir: t.TempDir()})
	defer r.Close()
	long := "a" + strings.Repeat("b", mmv.MaxStringLen-1) // "a...b=" is 256 bytes
	_, err := mmv.DeclareVec[mmv.Counter](r, "c", "", mmv.Count, long)
	assert.ErrorIs(t, err, mmv.ErrTooLong, "one label name")
	many := make([]string, 128) // "l0=,l1=,...": 3 or 4 bytes each
	for i := range many {
		many[i] = fmt.Sprintf("l%d", i)
	}
	_, err = mmv.DeclareVec[mmv.Counter](r, "c2", "", mmv.Count, many...)
	assert.ErrorIs(t, err, mmv.ErrTooLong, "many label names")
	fits := long[:mmv.MaxStringLen-1] // "a...b=" is 255 bytes
	v, err := mmv.DeclareVec[mmv.Counter](r, "c3", "", mmv.Count, fits)
	require.NoError(t, err, "label names with room for empty values")
	_, err = v.Get("")
	assert.NoError(t, err)

	var p any
	func() {
		defer func() { p = recover() }()
		mmv.NewHistogramVec(r, "h", "", mmv.Second, nil, fits)
	}()
	require.Implements(t, (*error)(nil), p, "a histogram vector's buckets' names")
	assert.ErrorIs(t, p.(error), mmv.ErrTooLong)
}

// TestHistogramVecRefusesLabelLe: le names a histogram vector's buckets
// by their upper bound, after its own labels ("route=/a,le=0.25"), as
// Prometheus's le: a label le of the vector's own is refused at its
// declaration (ErrName, the New function's panic), as client_golang
// refuses it, naming the vector, the label and the rule. Accepted, its
// buckets were "le=x,le=1" in PCP, le twice in one instance name, and
// the scrape renamed the vector's le exported_le, where PCP shows le: two
// names of one label. A counter vector's label le is a bridge's buckets'
// (goruntime, prombridge, otelexporter): still accepted.
func TestHistogramVecRefusesLabelLe(t *testing.T) {
	tmp, dir := pcpDir(t)
	r := newRegistry(t, "lehist", dir, mmv.Options{})
	one := &mmv.HistogramOptions{Buckets: []float64{1}}
	var h *mmv.Vec[mmv.Histogram]
	var p any
	func() {
		defer func() { p = recover() }()
		h = mmv.NewHistogramVec(r, "lat", "", mmv.NoUnits, one, "route", "le")
	}()
	if h != nil { // accepted: what PCP makes of it
		h.With("/a", "x").Observe(0.5)
		startOrSkip(t, r)
		require.NoError(t, r.Flush())
		ms := pcptest.Info(t, tmp)
		var shown []string
		for _, name := range []string{"mmv.lehist.lat.bucket", "mmv.lehist.lat.count"} {
			for _, in := range get(t, ms, name).Instances {
				le, _ := in.Label("le")
				shown = append(shown, fmt.Sprintf("%s[%q] labels %s (le %s)", name, in.Name, in.Labels, le))
			}
		}
		require.Failf(t, "label le accepted", "PCP shows %s", strings.Join(shown, "; "))
	}
	require.Implements(t, (*error)(nil), p, "the New function's panic")
	err := p.(error)
	require.ErrorIs(t, err, mmv.ErrName)
	assert.ErrorContains(t, err, `vector "lat" label "le"`)
	assert.ErrorContains(t, err, "buckets")

	h = mmv.NewHistogramVec(r, "lat", "", mmv.NoUnits, one, "route", "exported_le")
	h.With("/a", "x").Observe(0.5)
	c, err := mmv.DeclareVec[mmv.Counter](r, "lat_buckets", "", mmv.Count, "route", "le")
	require.NoError(t, err, "a counter vector's le")
	c.With("/a", "1").Inc()
	startOrSkip(t, r)
	require.NoError(t, r.Close()) // the statistics refreshed
	var names []string
	for _, in := range get(t, pcptest.Info(t, tmp), "mmv.lehist.lat.bucket").Instances {
		names = append(names, in.Name)
	}
	assert.ElementsMatch(t, []string{"route=/a,exported_le=x,le=1", "route=/a,exported_le=x,le=+Inf"}, names,
		"the name refused is free, and the buckets carry le once")
}
