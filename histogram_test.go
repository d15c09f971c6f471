package mmv

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBucketIndexAndBounds(t *testing.T) {
	l, err := newBuckets(&HistogramOptions{Min: 1, Max: 1000, SubBuckets: 4}, NoUnits)
	require.NoError(t, err)
	// (1, 1024] in 10 powers of two of 4 buckets, plus under and overflow.
	require.EqualValues(t, 42, l.n, "buckets")
	for _, c := range []struct {
		x    float64
		want int
	}{
		{math.Inf(-1), 0}, {-5, 0}, {math.Copysign(0, -1), 0}, {0, 0}, {0.999, 0}, {1, 0},
		{1.0000001, 1}, {1.24, 1}, {1.25, 1}, {1.26, 2}, {1.99, 4}, {2, 4}, {2.01, 5},
		{1023.9, 40}, {1024, 40}, {1024.1, 41}, {math.Inf(1), 41},
	} {
		assert.Equal(t, c.want, l.index(c.x), "index(%v)", c.x)
	}
	// The buckets tile the line, each (lower, upper] and narrow enough.
	prev := math.Inf(-1)
	for i := range l.n {
		lo, hi := l.bounds(i)
		require.False(t, lo != prev || !(hi > lo), "bucket %d is (%v, %v], previous ended at %v", i, lo, hi, prev)
		assert.False(t, i > 0 && i < l.n-1 && (hi-lo)/lo > 1.0/4+1e-15, "bucket %d (%v, %v] is wider than lower/SubBuckets", i, lo, hi)
		prev = hi
	}
	names := l.names()
	assert.False(t, names[0] != "1" || names[1] != "1.25" || names[l.n-1] != "+Inf" || names[l.n-2] != "1024", "names %q ... %q", names[:3], names[l.n-3:])
	assert.Equal(t, len(names), len(slices.Compact(slices.Clone(names))), "bucket names repeat")
}

// TestBucketsHoldTheirUpperBound: in both layouts a bucket counts lower <
// v <= upper, as its name (and Prometheus's le) says, exactly: its upper
// bound and the float64 just below are in it, the float64 just above in
// the next, its lower bound in the one before; and zero, -0, negatives,
// the extremes of float64 and the infinities in the outer buckets.
func TestBucketsHoldTheirUpperBound(t *testing.T) {
	for _, o := range []HistogramOptions{
		{Min: 1, Max: 16, SubBuckets: 8}, {Min: 1, Max: 1000, SubBuckets: 4}, {SubBuckets: 1}, {Min: 0.5, Max: 64, SubBuckets: 1024},
		{Min: 0x1p-1022, Max: 0x1p-1000, SubBuckets: 2}, {Min: 0x1p1000, Max: 0x1p1023, SubBuckets: 16}, {Min: 1e-9, Max: 1e-6, SubBuckets: 1024},
		{}, {Buckets: []float64{1, 2, 5}}, {Buckets: []float64{-1, 0, 0.5, 1, 3}}, {Buckets: []float64{-5, -2, 1e-3, 1.1e-3, 1.2e-3, 7, 1e6}},
		{Buckets: []float64{0x1p-1074, 1, math.MaxFloat64}},
	} {
		l, err := newBuckets(&o, Second)
		require.NoError(t, err, "%+v", o)
		up, down := math.Inf(1), math.Inf(-1)
		for i := range l.n {
			lower, upper := l.bounds(i)
			if i < l.n-1 {
				require.Equal(t, i, l.index(upper), "%+v: upper bound %v of bucket %d", o, upper, i)
				require.Equal(t, i, l.index(math.Nextafter(upper, down)), "%+v: just below the upper bound %v of bucket %d", o, upper, i)
				require.Equal(t, i+1, l.index(math.Nextafter(upper, up)), "%+v: just above the upper bound %v of bucket %d", o, upper, i)
			}
			if i > 0 {
				require.Equal(t, i-1, l.index(lower), "%+v: lower bound %v of bucket %d", o, lower, i)
				require.Equal(t, i, l.index(math.Nextafter(lower, up)), "%+v: just above the lower bound %v of bucket %d", o, lower, i)
			}
		}
		// Where each value falls, as the bounds say.
		for _, x := range []float64{down, -math.MaxFloat64, -1, -0x1p-1074, math.Copysign(0, -1), 0, 0x1p-1074, 0x1p-1022, 1, math.MaxFloat64, up} {
			want := l.n - 1
			for i := range l.n - 1 {
				if _, upper := l.bounds(i); x <= upper {
					want = i
					break
				}
			}
			require.Equal(t, want, l.index(x), "%+v: index(%v)", o, x)
		}
	}
}

func TestBucketNamesUniqueAtFinestResolution(t *testing.T) {
	l, err := newBuckets(&HistogramOptions{Min: 1e-9, Max: 1e-6, SubBuckets: 1024}, NoUnits)
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, n := range l.names() {
		require.False(t, seen[n], "name %q repeats", n)
		seen[n] = true
	}
}

// TestBucketNamesOfCloseBounds: bounds that agree in 6 significant digits
// take as many more as tell them apart, and the others keep 6, where the
// histogram was refused for a name twice; every name parses back to its
// bound.
func TestBucketNamesOfCloseBounds(t *testing.T) {
	for _, c := range []struct {
		bounds []float64
		names  []string
	}{
		{[]float64{1.0000001, 1.0000002, 2}, []string{"1.0000001", "1.0000002", "2", "+Inf"}},
		{[]float64{0.5, 1e6, 1000001}, []string{"0.5", "1e+06", "1.000001e+06", "+Inf"}},
		{[]float64{0.1, 0.10000000000000002}, []string{"0.1", "0.10000000000000002", "+Inf"}},
		{[]float64{0.25, 0.5}, []string{"0.25", "0.5", "+Inf"}},
	} {
		l, err := newBuckets(&HistogramOptions{Buckets: c.bounds}, NoUnits)
		require.NoError(t, err)
		names := l.names()
		assert.Equal(t, c.names, names, "%v", c.bounds)
		for i, b := range c.bounds {
			back, err := strconv.ParseFloat(names[i], 64)
			require.NoError(t, err)
			assert.Equal(t, b, back, "%v", c.bounds)
		}
	}
	r := NewRegistry("close", &Options{Dir: t.TempDir()})
	defer r.Close()
	assert.NotPanics(t, func() {
		NewHistogram(r, "h", "", Count, &HistogramOptions{Buckets: []float64{1.0000001, 1.0000002, 2}})
	})
}

func TestBucketOptions(t *testing.T) {
	for _, o := range []HistogramOptions{
		{Min: -1}, {Min: 10, Max: 5}, {SubBuckets: 3}, {SubBuckets: 2048}, {Min: 1e-300, Max: 1e300, SubBuckets: 1024},
	} {
		_, err := newBuckets(&o, NoUnits)
		assert.Error(t, err, "options %+v accepted", o)
	}
	l, err := newBuckets(&HistogramOptions{SubBuckets: 8}, NoUnits)
	require.False(t, err != nil || l.n != 242, "log-linear defaults: %d buckets, %v; want 242", l.n, err)
	for q, want := range map[float64]string{0.5: "p50", 0.9: "p90", 0.99: "p99", 0.999: "p999", 0.05: "p05", 1: "p100", 0.9999: "p9999"} {
		got, err := quantileName(q)
		if assert.NoError(t, err, "quantileName(%v)", q) {
			assert.Equal(t, want, got, "quantileName(%v)", q)
		}
	}
	for _, q := range []float64{0, -1, 1.5, math.NaN()} {
		_, err := quantileName(q)
		assert.Error(t, err, "quantile %v accepted", q)
	}
}

// sinceStart is a window over everything, for histograms made without a
// registry.
func sinceStart(l *buckets) *window {
	w, err := newWindow(SinceStart, time.Second, l.n, clock())
	if err != nil {
		panic(err)
	}
	return w
}

// exactQuantile is the sample of rank ceil(q*n).
func exactQuantile(sorted []float64, q float64) float64 {
	rank := int(math.Ceil(q * float64(len(sorted))))
	return sorted[max(1, min(rank, len(sorted)))-1]
}

func TestQuantileAccuracy(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	dists := map[string]func() float64{
		"uniform":     func() float64 { return 1 + rng.Float64()*999 },
		"exponential": func() float64 { return 0.01 + rng.ExpFloat64()*5 },
		"lognormal":   func() float64 { return math.Exp(rng.NormFloat64()*2 + 3) },
		"bimodal": func() float64 {
			if rng.IntN(10) == 0 {
				return 500 + rng.Float64()*10
			}
			return 0.5 + rng.Float64()
		},
		"constant": func() float64 { return 42 },
	}
	qs := []float64{0.01, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 1}
	for _, sub := range []int{4, 8, 32} {
		bound := 1 / float64(2*sub)
		for _, name := range slices.Sorted(maps.Keys(dists)) {
			gen := dists[name]
			l, err := newBuckets(&HistogramOptions{Min: 1e-3, Max: 1e7, SubBuckets: sub}, NoUnits)
			require.NoError(t, err)
			h := newHistogram(l, NoUnits, sinceStart(l), nil)
			n := 1 + rng.IntN(100000)
			xs := make([]float64, n)
			for i := range xs {
				xs[i] = gen()
				h.Observe(xs[i])
			}
			slices.Sort(xs)
			worst := 0.0
			for _, q := range qs {
				exact, est := exactQuantile(xs, q), h.Quantile(q)
				rel := math.Abs(est-exact) / exact
				worst = max(worst, rel)
				assert.LessOrEqual(t, rel, bound*(1+1e-12), "%d sub-buckets, %s, n=%d: q%v estimate %v, exact %v: relative error",
					sub, name, n, q, est, exact)
			}
			t.Logf("%2d sub-buckets, %-11s n=%6d: worst relative error %.4f (bound %.4f)", sub, name, n, worst, bound)
			st := h.Stats()
			var sum float64
			for _, x := range xs {
				sum += x
			}
			assert.False(t, st.Count != uint64(n) || st.Min != xs[0] || st.Max != xs[n-1] || math.Abs(st.Sum-sum) > 1e-9*sum, "%s: stats %+v, want count %d min %v max %v sum %v", name, st, n, xs[0], xs[n-1], sum)
		}
	}
}

// TestQuantileEndsExact: the quantiles of the highest and lowest ranks
// are the window's max and min, which it knows exactly: the middle of
// their bucket, narrowed to them, put p100 below the max (37.5 for 5 and
// 50 in the bucket (25, 50]), and p0.01 above the min.
func TestQuantileEndsExact(t *testing.T) {
	l, err := newBuckets(&HistogramOptions{Buckets: []float64{1, 25, 50, 100}}, NoUnits)
	require.NoError(t, err)
	h := newHistogram(l, NoUnits, sinceStart(l), nil)
	for _, x := range []float64{30, 5, 50, 40} {
		h.Observe(x)
	}
	for q, want := range map[float64]float64{1: 50, 0.999: 50, 0.75: 37.5, 0.25: 5, 0.01: 5} {
		assert.Equal(t, want, h.Quantile(q), "q%v of 5, 30, 40, 50 in buckets (1, 25], (25, 50]", q)
	}
}

// TestHistogramObserveDuration: a duration in the histogram's units of
// time, in seconds when they are not a time; an energy in watt-hours,
// whose time dimension is the extra unit's, was taken for hours.
func TestHistogramObserveDuration(t *testing.T) {
	for units, want := range map[Units]float64{Second: 1.5, Millisecond: 1500, Microsecond: 1.5e6, Nanosecond: 1.5e9, Count: 1.5, Minute: 0.025, Watt.Mul(Hour): 1.5} {
		l, _ := newBuckets(&HistogramOptions{Min: 1e-3, Max: 1e10}, NoUnits)
		h := newHistogram(l, units, sinceStart(l), nil)
		h.ObserveDuration(1500 * time.Millisecond)
		assert.InDelta(t, want, h.Stats().Sum, 1e-9*want, "units %v", units)
	}
}

// TestHistogramShownAtPublication: a histogram first used after Start
// shows its values in the file that publishes it, as Start's files show
// those observed before it, not 0 until its next refresh (an Interval
// later): PCP read a count of 0 for a histogram that had counted.
func TestHistogramShownAtPublication(t *testing.T) {
	r := NewRegistry("histshown", &Options{Dir: t.TempDir(), PublishDelay: time.Hour}) // published by Flush alone
	t.Cleanup(func() { r.Close() })
	hv := NewHistogramVec(r, "size", "", Byte, &HistogramOptions{Min: 1, Max: 1 << 20, Interval: time.Hour}, "route")
	hv.With("/a").Observe(10)
	startOrSkip(t, r)
	require.EqualValues(t, 1, vecValue(t, r, "size.count", "route=/a").Int(), "Start's file")
	hv.With("/b").Observe(100)
	hv.With("/b").Observe(300)
	require.NoError(t, r.Flush())
	assert.EqualValues(t, 2, vecValue(t, r, "size.count", "route=/b").Int(), "size.count[/b]")
	assert.Equal(t, 300.0, vecValue(t, r, "size.max", "route=/b").Float(), "size.max[/b]")
	assert.Equal(t, 400.0, vecValue(t, r, "size.sum", "route=/b").Float(), "size.sum[/b]")
	assert.EqualValues(t, 1, vecValue(t, r, "size.bucket", "route=/b,le=104").Int(), "size.bucket[/b:104]")
	// The next growth shows those made since that wait for it, past the
	// room the last left (histGroup.waiting); those in the room are bound
	// at once, and refreshed as the others.
	for i := range 10 { // 170 values each: the default caps take 11 more
		hv.With("/c" + strconv.Itoa(i)).Observe(100)
	}
	g := hv.kind.(*histGroup)
	var waiting []string
	g.mu.Lock()
	for _, o := range g.hs {
		if o.vals == nil || o.vals[len(g.bounds)].Load() == nil { // its count waits
			waiting = append(waiting, o.inst)
		}
	}
	g.mu.Unlock()
	require.NotEmpty(t, waiting, "histograms waiting for the growth")
	require.NoError(t, r.Flush())
	for _, inst := range waiting {
		assert.EqualValues(t, 1, vecValue(t, r, "size.count", inst).Int(), "size.count[%s]", inst)
	}
}

func TestHistogramPublishes(t *testing.T) {
	r := newTestRegistry(t, "hist")
	h := NewHistogram(r, "latency", "Request latency", Millisecond,
		&HistogramOptions{Min: 1, Max: 1000, SubBuckets: 4, Interval: time.Hour})
	hv := NewHistogramVec(r, "size", "Response size", Byte,
		&HistogramOptions{Min: 1, Max: 1 << 20, Quantiles: []float64{0.5, 0.75}, Interval: 10 * time.Millisecond}, "route")
	for i := 1; i <= 100; i++ {
		h.Observe(float64(i)) // before Start
	}
	startOrSkip(t, r)
	// Start refreshed once.
	for metric, want := range map[string]float64{
		"latency.count": 100, "latency.sum": 5050, "latency.min": 1, "latency.max": 100,
		"latency.mean": 50.5, "latency.p50": h.Quantile(0.5), "latency.p999": h.Quantile(0.999),
	} {
		assert.Equal(t, want, mustValue(t, r, metric, "").Float(), "%s", metric)
	}
	assert.EqualValues(t, 1, mustValue(t, r, "latency.bucket", "1").Int(), "underflow bucket, up to 1: 1")
	assert.EqualValues(t, 0, mustValue(t, r, "latency.bucket", "1.25").Int(), "bucket (1, 1.25]")
	assert.EqualValues(t, 1, mustValue(t, r, "latency.bucket", "2").Int(), "bucket (1.75, 2]: 2")
	assert.EqualValues(t, 0, mustValue(t, r, "latency.bucket", "+Inf").Int(), "overflow bucket")
	// The vector refreshes on its own interval. A refresh writes its values
	// one after another, so all of them are awaited, not the count alone.
	hv.With("/b").Observe(100)
	hv.With("/b").Observe(300)
	count, sizeMax := vecValue(t, r, "size.count", "route=/b"), vecValue(t, r, "size.max", "route=/b")
	p75, bucket := vecValue(t, r, "size.p75", "route=/b"), vecValue(t, r, "size.bucket", "route=/b,le=104")
	assert.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.EqualValues(c, 2, count.Int(), "size.count[/b]")
		assert.Equal(c, 300.0, sizeMax.Float(), "size.max[/b]")
		assert.Equal(c, hv.With("/b").Quantile(0.75), p75.Float(), "size.p75[/b]")
		assert.EqualValues(c, 1, bucket.Int(), "size.bucket[/b:104]")
	}, 5*time.Second, 5*time.Millisecond)
	_, err := r.Value("size.p99", "route=/b")
	assert.Error(t, err, "size.p99 published though not asked for")
	// Close refreshes a last time, even with an interval of an hour.
	h.Observe(2000)
	v := mustValue(t, r, "latency.count", "")
	mx := mustValue(t, r, "latency.max", "")
	r.mu.Lock()
	for _, f := range r.onClose {
		f()
	}
	r.onClose = nil
	r.mu.Unlock()
	assert.False(t, v.Int() != 101 || mx.Float() != 2000, "after Close: count %d max %v, want 101 and 2000", v.Int(), mx.Float())
}

func TestHistogramConcurrentObserve(t *testing.T) {
	l, _ := newBuckets(&HistogramOptions{}, NoUnits)
	h := newHistogram(l, NoUnits, sinceStart(l), nil)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10000 {
				h.Observe(float64(g*10000 + i + 1))
			}
		}()
	}
	wg.Wait()
	st := h.Stats()
	require.False(t, st.Count != 40000 || st.Min != 1 || st.Max != 40000 || st.Sum != 40000*40001/2, "stats %+v", st)
}

// BenchmarkHistogramObserve is the hot path of a histogram, against
// BenchmarkHistogramBaseline: the atomic add on a bucket alone.
func BenchmarkHistogramObserve(b *testing.B) {
	h := NewHistogram(newTestRegistry(b, "bench"), "h", "", Second, &HistogramOptions{Min: 1e-6, Max: 100})
	xs := benchInputs()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		h.Observe(xs[i&1023])
		i++
	}
}

func BenchmarkHistogramBaseline(b *testing.B) {
	counts := make([]uint64, 1024)
	xs := benchInputs()
	i := 0
	for b.Loop() {
		x := xs[i&1023]
		sinkF = x
		atomicAdd(&counts[i&1023])
		i++
	}
}

func BenchmarkHistogramObserveParallel(b *testing.B) {
	h := NewHistogram(newTestRegistry(b, "bench"), "h", "", Second, &HistogramOptions{Min: 1e-6, Max: 100})
	xs := benchInputs()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			h.Observe(xs[i&1023])
			i++
		}
	})
}

// BenchmarkHistogramStripes is Observe from RunParallel's goroutines on
// a histogram of the default buckets in one stripe, as every histogram
// was before stripes, and in as many as it gets on this machine
// (stripesFor), used from the first collision, made with it or, as a
// vector's, taken from spares then: ns/op is the wall time of one
// observation, all goroutines running at once.
//
//	go test -run '^$' -bench HistogramStripes -count 5
func BenchmarkHistogramStripes(b *testing.B) {
	l, err := newBuckets(&HistogramOptions{}, Second)
	require.NoError(b, err)
	xs := benchInputs()
	stripes := stripesFor(runtime.GOMAXPROCS(0))
	for _, c := range []struct {
		name    string
		stripes int
		spares  *spareStripes
	}{
		{"1", 1, nil},
		{strconv.Itoa(stripes), stripes, nil},
		{strconv.Itoa(stripes) + "-spares", stripes, newSpareStripes(l.n, stripes)},
	} {
		b.Run(c.name, func(b *testing.B) {
			c.spares.refill() // as a vector's new value does
			h := &Histogram{l: l, w: sinceStart(l)}
			if c.spares != nil {
				h.tally.initFrom(c.spares)
			} else {
				h.tally.init(l.n, c.stripes)
			}
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for i := 0; pb.Next(); i++ {
					h.Observe(xs[i&1023])
				}
			})
		})
	}
}

var sinkF float64

func atomicAdd(p *uint64) { atomic.AddUint64(p, 1) }

// benchInputs are latencies, log-normally spread around a millisecond.
func benchInputs() []float64 {
	rng := rand.New(rand.NewPCG(3, 4))
	xs := make([]float64, 1024)
	for i := range xs {
		xs[i] = math.Exp(rng.NormFloat64()*1.5) / 1000
	}
	return xs
}

// TestTallyStripesAddUp: what each stripe holds adds up, whichever stripe
// goroutines wrote: counts and sums add, min and max are over every
// stripe, and a new window step resets every stripe's.
func TestTallyStripesAddUp(t *testing.T) {
	var ta tally
	ta.init(3, 4)
	ta.stripes(func(w []atomic.Uint64) {
		require.Len(t, w, 8, "3+3 words, padded to a cache line")
		require.Zero(t, uintptr(unsafe.Pointer(&w[0]))%64, "a stripe starts on a cache line")
	})
	lo, hi, _ := ta.step(false)
	require.Equal(t, [2]float64{math.Inf(1), math.Inf(-1)}, [2]float64{lo, hi}, "a new tally's: those of no observation")
	k := 0
	ta.stripes(func(w []atomic.Uint64) {
		w[tallyCounts+k%3].Add(uint64(k + 1))
		w[tallySum].Store(math.Float64bits(float64(10 * (k + 1))))
		w[tallyMin].Store(math.Float64bits(float64(k - 5)))
		w[tallyMax].Store(math.Float64bits(float64(k + 5)))
		k++
	})
	assert.Equal(t, 4, k)
	assert.Equal(t, []uint64{1 + 4, 2, 3}, []uint64{ta.count(0), ta.count(1), ta.count(2)})
	counts := make([]uint64, 3)
	assert.Equal(t, uint64(1+4+2+3), ta.counts(counts))
	assert.Equal(t, []uint64{1 + 4, 2, 3}, counts)
	assert.Equal(t, 100.0, ta.sum())
	lo, hi, sum := ta.step(true)
	assert.Equal(t, [3]float64{-5, 8, 100}, [3]float64{lo, hi, sum})
	lo, hi, sum = ta.step(false)
	assert.Equal(t, [3]float64{math.Inf(1), math.Inf(-1), 0}, [3]float64{lo, hi, sum}, "reset for a new step")
	assert.Equal(t, 100.0, ta.sum(), "the step's sum carried")
	assert.Equal(t, 1, stripesFor(1))
	assert.Equal(t, 4, stripesFor(2))
	assert.Equal(t, 8, stripesFor(3))
	assert.Equal(t, maxStripes, stripesFor(64))
}

// TestEmptyStripesAligned: stripes start on a cache line, hold no
// observation, and take no padding where Go's allocator aligns whole
// lines itself, as it does for every size a histogram's stripes take.
func TestEmptyStripesAligned(t *testing.T) {
	for _, buckets := range []int{1, 5, 19, 61, 200, 1024} {
		stride := strideOf(buckets)
		for _, stripes := range []int{1, 2, 8} {
			n := stride * stripes
			w := emptyStripes(n, stride)
			require.Len(t, w, n)
			require.Zero(t, uintptr(unsafe.Pointer(&w[0]))%64, "%d buckets, %d stripes: on a cache line", buckets, stripes)
			assert.Equal(t, n, cap(w), "%d buckets, %d stripes: no padding allocated", buckets, stripes)
			for k := 0; k < n; k += stride {
				assert.Equal(t, [3]uint64{0, posInf, negInf}, [3]uint64{w[k+tallySum].Load(), w[k+tallyMin].Load(), w[k+tallyMax].Load()})
			}
		}
	}
}

// TestHistogramVecRemovedInOrder: a histogram vector's Delete finds its
// histogram by index, in O(1) (BenchmarkVecChurn), and the histograms
// removed leave the group's lists once they are as many as the others:
// through deletions and values used again, every live histogram is at
// its index, the removed are never more than the live, and Gather shows
// the live ones in the order made, with what each observed.
func TestHistogramVecRemovedInOrder(t *testing.T) {
	r, hv, g := uncappedHistVec(t, "histremoved", 1000)
	var made []string // live values, in the order made
	observed := map[string]uint64{}
	use := func(v string) {
		if !slices.Contains(made, v) {
			made = append(made, v)
		}
		hv.With(v).Observe(float64(len(v)))
		observed[v]++
	}
	check := func(step string) {
		g.mu.Lock()
		for i, o := range g.hs {
			if o.e != nil {
				require.Equal(t, int32(i), o.e.j, "%s: a histogram not at its index", step)
			}
		}
		require.Less(t, 2*g.removed, max(len(g.hs), 1), "%s: more removed than live", step)
		g.mu.Unlock()
		shown := []string{}
		r.Gather(func(f *Family) {
			if f.Metric.Name == "size" {
				for _, s := range f.Samples {
					shown = append(shown, s.Values[0])
					n := observed[s.Values[0]]
					require.Equal(t, n, s.Count, "%s: %s", step, s.Values[0])
					require.Equal(t, float64(n)*float64(len(s.Values[0])), s.Sum, "%s: %s", step, s.Values[0])
				}
			}
		})
		require.Equal(t, made, shown, "%s: Gather's histograms", step)
	}
	for i := range 100 {
		use("/" + strconv.Itoa(i))
	}
	check("made")
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 20 {
		for range 1 + rng.IntN(40) {
			if len(made) == 0 {
				break
			}
			v := made[rng.IntN(len(made))]
			require.True(t, hv.Delete(v))
			made = slices.DeleteFunc(made, func(x string) bool { return x == v })
			delete(observed, v)
		}
		check(fmt.Sprintf("round %d, deleted", round))
		for range rng.IntN(30) {
			use("/" + strconv.Itoa(rng.IntN(150)))
		}
		check(fmt.Sprintf("round %d, used", round))
		if round == 10 {
			require.NoError(t, r.Flush())
		}
	}
}

// TestTallySpreadsOnCollision: every goroutine writes a tally's first
// stripe until a collision, which starts the picking, and later
// collisions change the multiplier; Observe's collision allocates
// nothing.
func TestTallySpreadsOnCollision(t *testing.T) {
	var ta tally
	ta.init(19, 4)
	first := unsafe.Pointer(ta.first)
	assert.Equal(t, first, ta.stripe(), "no collision: the first stripe")
	assert.Zero(t, testing.AllocsPerRun(10, ta.collided))
	m := ta.mult.Load()
	assert.NotZero(t, m, "picking")
	ta.collided()
	assert.NotEqual(t, m, ta.mult.Load(), "every goroutine picks again")
	// 64 goroutines alive at once, so on 64 stacks: one that ended could
	// leave its stack to the next.
	assert.Greater(t, len(picks(&ta)), 1, "64 goroutines' stacks pick more than one stripe")
}

// TestTallyTakesSpareStripes: a vector's histogram has its first stripe
// alone until its first collision, which takes the others from the
// group's spares without allocating; with none left, every goroutine
// writes the first until a refill, after which the next collision takes
// them. No two tallies share spares.
func TestTallyTakesSpareStripes(t *testing.T) {
	spares := newSpareStripes(19, 4)
	ts := make([]tally, firstSpareBatch+1)
	for i := range ts {
		ts[i].initFrom(spares)
		require.Nil(t, ts[i].rest.Load(), "no spares before a collision")
	}
	next := 0
	assert.Zero(t, testing.AllocsPerRun(firstSpareBatch-1, func() { ts[next].collided(); next++ }), "a collision takes spares without allocating")
	taken := map[*atomic.Uint64]bool{}
	for i := range ts[:firstSpareBatch] {
		p := ts[i].rest.Load()
		require.NotNil(t, p, "spares taken at the first collision")
		taken[p] = true
		assert.Zero(t, uintptr(unsafe.Pointer(p))%64, "spares start on a cache line")
	}
	assert.Len(t, taken, firstSpareBatch, "each its own")
	lo, hi, _ := ts[0].step(false)
	assert.Equal(t, [2]float64{math.Inf(1), math.Inf(-1)}, [2]float64{lo, hi}, "spares hold no observation")

	last := &ts[firstSpareBatch]
	last.collided()
	assert.Nil(t, last.rest.Load(), "none left")
	assert.Equal(t, []unsafe.Pointer{unsafe.Pointer(last.first)}, picks(last), "every pick the first stripe")
	spares.refill()
	last.collided()
	require.NotNil(t, last.rest.Load(), "taken after the refill")
	assert.Greater(t, len(picks(last)), 1, "picks spread once taken")
	sets := func() int { return len(spares.batch.Load().words) / spares.setWords() }
	require.Equal(t, 2*firstSpareBatch, sets(), "a batch taken up is followed by one twice as large")
	spares.refill()
	assert.Equal(t, 2*firstSpareBatch, sets(), "none made while some are left")
	for range sets() {
		spares.take()
	}
	spares.refill()
	assert.Equal(t, 4*firstSpareBatch, sets())
	assert.Equal(t, int64(0), spares.batch.Load().next.Load())
}

// TestHistogramSpreadsUnderContention: goroutines observing one histogram
// at once start the picking, and every observation counts, in the first
// stripe or the others, made before, during or after; one goroutine alone
// never starts it. So for a vector's histogram, whose others are taken
// from spares at that collision.
func TestHistogramSpreadsUnderContention(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs two goroutines running at once")
	}
	l, err := newBuckets(&HistogramOptions{Buckets: []float64{1, 2}}, Second)
	require.NoError(t, err)
	for _, spares := range []*spareStripes{nil, newSpareStripes(l.n, 4)} {
		t.Run(fmt.Sprintf("spares=%t", spares != nil), func(t *testing.T) {
			h := newHistogram(l, Second, sinceStart(l), spares)
			for range 100000 {
				h.Observe(1)
			}
			require.Zero(t, h.mult.Load(), "one goroutine never collides")
			var n atomic.Int64
			n.Store(100000)
			deadline := time.Now().Add(10 * time.Second)
			var wg sync.WaitGroup
			for range 2 {
				wg.Go(func() {
					for k := 0; k < 100 || h.mult.Load() == 0 && time.Now().Before(deadline); k++ {
						for range 1000 {
							h.Observe(2)
						}
						n.Add(1000)
					}
				})
			}
			wg.Wait()
			require.NotZero(t, h.mult.Load(), "two goroutines observing for 10 s never collided")
			require.NotNil(t, h.rest.Load(), "the stripes after the first, made or taken")
			s := h.Stats()
			assert.Equal(t, uint64(n.Load()), s.Count)
			assert.Equal(t, []uint64{100000, uint64(n.Load() - 100000), 0}, []uint64{h.count(0), h.count(1), h.count(2)})
			assert.Equal(t, float64(100000+2*(n.Load()-100000)), s.Sum)
		})
	}
}

// TestHistogramWithoutHelp: a histogram declared with no help has none in
// Gather (so no # HELP in expose), as a counter with none, and its
// statistics' help texts in PCP name the histogram where they would name
// its help, not stop at "mean of ".
func TestHistogramWithoutHelp(t *testing.T) {
	r := newTestRegistry(t, "nohelp")
	NewHistogram(r, "lat", "", Second, &HistogramOptions{Buckets: []float64{1}, Quantiles: []float64{0.5}})
	NewHistogram(r, "size", "Sizes", Byte, &HistogramOptions{Buckets: []float64{1}, Quantiles: []float64{0.5}})
	NewCounter(r, "c", "", Count).Inc()
	helps := map[string]string{}
	r.Gather(func(f *Family) { helps[f.Name] = f.ShortHelp })
	assert.Equal(t, map[string]string{"c": "", "lat": "", "size": "Sizes"}, helps, "the Families' help")

	snaps, err := r.Snapshot()
	require.NoError(t, err)
	got := map[string]string{}
	for _, m := range snaps {
		if m.Name != "c" {
			got[m.Name] = m.ShortHelp
		}
	}
	assert.Equal(t, map[string]string{
		"lat.bucket": "observations by bucket of lat", "lat.count": "observations of lat",
		"lat.sum": "sum of observations of lat", "lat.min": "smallest observation of lat",
		"lat.max": "largest observation of lat", "lat.mean": "mean of lat", "lat.p50": "0.5 quantile of lat (estimate)",
		// With a help, the texts name it, as ever.
		"size.bucket": "observations by bucket of Sizes", "size.count": "observations of Sizes",
		"size.sum": "sum of observations of Sizes", "size.min": "smallest observation of Sizes",
		"size.max": "largest observation of Sizes", "size.mean": "mean of Sizes", "size.p50": "0.5 quantile of Sizes (estimate)",
	}, got)
}

// TestHistogramHelpTooLongRefusedAsCounters: a histogram's help is
// refused as a Counter's when its first line or the lines after it pass
// 255 bytes (ErrTooLong, naming the histogram), before anything is
// declared, where a long help of more was refused by its statistics'
// metrics (naming h.count) after h.bucket took it cut, and a long first
// line was taken, cut. A long help of 255 bytes is taken: h.bucket's,
// which adds what its instances are, is cut to fit.
func TestHistogramHelpTooLongRefusedAsCounters(t *testing.T) {
	long := "Request latency\n" + strings.Repeat("Explains the histogram at length. ", 10)
	require.Greater(t, len(long), 300)
	first := strings.Repeat("h", MaxStringLen+1)
	for _, tc := range []struct {
		what, help string
	}{{"long help", long}, {"short help", first}} {
		t.Run(tc.what, func(t *testing.T) {
			r := newTestRegistry(t, "longhelp")
			before := declared(t, r)
			for name, declare := range map[string]func(){
				"Histogram":    func() { NewHistogram(r, "lat", tc.help, Second, nil) },
				"HistogramVec": func() { NewHistogramVec(r, "lat", tc.help, Second, nil, "k") },
				"Counter":      func() { NewCounter(r, "lat", tc.help, Count) },
			} {
				err := refusal(declare)
				require.ErrorIs(t, err, ErrTooLong, name)
				assert.ErrorContains(t, err, `metric "lat": too long: help text of`, name)
			}
			assert.Equal(t, before, declared(t, r), "nothing declared")
		})
	}

	r := newTestRegistry(t, "fithelp")
	fits := strings.Repeat("h", MaxStringLen)
	NewHistogram(r, "lat", "Latency\n"+fits, Second, nil)
	snaps, err := r.Snapshot()
	require.NoError(t, err)
	for _, m := range snaps {
		if m.Name == "lat.bucket" {
			assert.Len(t, m.LongHelp, MaxStringLen, "h.bucket's, cut")
		} else {
			assert.Equal(t, fits, m.LongHelp, m.Name)
		}
	}
}

// TestLogLinearBucketHoldsItsBound: Gather's Bounds are the buckets' upper
// bounds, which expose writes as le (cumulative, v <= le) and a vector
// names its bucket instances by: an observation equal to a bound is
// counted up to it, not in the next bucket (with 8 sub-buckets every
// integer from 8 up is a bound), Min's in the underflow bucket and Max's
// in the last before overflow.
func TestLogLinearBucketHoldsItsBound(t *testing.T) {
	r := newTestRegistry(t, "loglin")
	h := NewHistogram(r, "size", "Sizes", Count, &HistogramOptions{Min: 1, Max: 16, SubBuckets: 8})
	for _, x := range []float64{1, 8, 9, 16} {
		h.Observe(x)
	}
	var bounds []float64
	var counts []uint64
	r.Gather(func(f *Family) {
		if f.Name == "size" {
			bounds, counts = f.Bounds, f.Samples[0].Buckets
		}
	})
	require.NotEmpty(t, bounds)
	got := map[float64]uint64{}
	for i, b := range bounds {
		if counts[i] > 0 {
			got[b] = counts[i]
		}
	}
	assert.Equal(t, map[float64]uint64{1: 1, 8: 1, 9: 1, 16: 1}, got, "counts by upper bound")
}

// TestHistogramFamilyHelpWhole: a histogram's help, accepted up to 255
// bytes, is its Family's whole in Gather (and expose's # HELP): it was cut
// past 239 bytes, made from "observations of " and the help, then cut.
func TestHistogramFamilyHelpWhole(t *testing.T) {
	r := newTestRegistry(t, "famhelp")
	help := strings.Repeat("h", 250)
	NewHistogram(r, "lat", help, Second, nil)
	var got *string
	r.Gather(func(f *Family) {
		if f.Name == "lat" {
			s := f.ShortHelp
			got = &s
		}
	})
	require.NotNil(t, got, "the histogram's family")
	assert.Equal(t, help, *got, "the help as given, accepted, is the Family's")
}

// TestQuantileOfInfiniteAndHugeObservations: a quantile is within the
// window's min and max, as the bound says, whatever the observations: the
// middle of a bucket narrowed to -Inf (an observation of -Inf) read NaN,
// and that of one narrowed to ±1.6e308, whose width overflows, +Inf.
func TestQuantileOfInfiniteAndHugeObservations(t *testing.T) {
	for _, c := range []struct {
		bounds []float64
		xs     []float64
	}{
		{[]float64{0, 10}, []float64{math.Inf(-1), -5, 1, 2}},
		{[]float64{0, 10}, []float64{1, 2, 20, math.Inf(1)}},
		{[]float64{-1.7e308, 1.7e308}, []float64{-1.6e308, -1.5e308, 1.5e308, 1.6e308}},
		{[]float64{1}, []float64{-math.MaxFloat64, -math.MaxFloat64, math.MaxFloat64, math.MaxFloat64}},
	} {
		l, err := newBuckets(&HistogramOptions{Buckets: c.bounds}, NoUnits)
		require.NoError(t, err)
		h := newHistogram(l, NoUnits, sinceStart(l), nil)
		for _, x := range c.xs {
			h.Observe(x)
		}
		sorted := slices.Sorted(slices.Values(c.xs))
		for _, q := range []float64{0.01, 0.25, 0.5, 0.75, 0.99, 1} {
			est, exact := h.Quantile(q), exactQuantile(sorted, q)
			assert.False(t, !(est >= sorted[0] && est <= sorted[len(sorted)-1]) || l.index(est) != l.index(exact),
				"%v in buckets %v: q%v estimate %v, exact %v, outside [min, max] or in another bucket", c.xs, c.bounds, q, est, exact)
		}
	}
}

// TestObserveDurationAtDefaultBounds: a duration is observed in the
// histogram's units correctly rounded (the nanoseconds divided by the
// unit's), and one equal to a default bound counts in the bucket that
// bound names, in every unit of time: multiplied by the unit's inverse,
// 100µs read 0.09999999999999999 ms, and 2.5 s, 5 s, 10 s in minutes and
// 250µs, 1 ms, 25 s in hours passed their bounds, made otherwise, into the
// bucket above.
func TestObserveDurationAtDefaultBounds(t *testing.T) {
	for units, ns := range map[Units]float64{Nanosecond: 1, Microsecond: 1e3, Millisecond: 1e6, Second: 1e9, Minute: 60e9, Hour: 3600e9} {
		l, err := newBuckets(&HistogramOptions{}, units)
		require.NoError(t, err)
		for i, b := range DefaultBuckets {
			d := time.Duration(math.Round(b * 1e9))
			h := newHistogram(l, units, sinceStart(l), nil)
			h.ObserveDuration(d)
			assert.Equal(t, float64(d)/ns, h.Stats().Max, "%v observed in %v", d, units)
			assert.EqualValues(t, 1, h.count(i), "%v observed in %v: in the bucket of bound %v", d, units, l.names()[i])
		}
	}
}

// TestStepEndIsNoCollision: a window's step end sets each stripe's sum to
// 0 (tally.step), which fails the compare-and-swap of an Observe between its
// load and its swap; one goroutine alone observing then took it for a
// collision, and went on in stripes, spares taken, for good.
func TestStepEndIsNoCollision(t *testing.T) {
	r := NewRegistry("steps", &Options{Dir: t.TempDir()})
	defer r.Close()
	h := NewHistogram(r, "h", "", Second, nil)
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		for !stop.Load() {
			h.w.mu.Lock()
			h.tally.step(true)
			h.w.mu.Unlock()
		}
	})
	deadline := time.Now().Add(300 * time.Millisecond)
	for n := 0; time.Now().Before(deadline); n++ {
		h.Observe(float64(n%1000) / 1000)
	}
	stop.Store(true)
	wg.Wait()
	assert.Zero(t, h.tally.mult.Load(), "one goroutine observing took a step's end for a collision")
}
