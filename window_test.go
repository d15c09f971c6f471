package mmv

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// After a change of distribution the window's p99, min and max are the new
// distribution's within one window, while the cumulative count keeps
// everything; refreshed every second, as by default.
func TestWindowForgets(t *testing.T) {
	h, t0 := windowed(t, 0)
	for range 1_000_000 {
		h.Observe(0.002)
	}
	n, p99, _, _, _ := windowAt(h, t0+time.Second)
	assert.Equal(t, uint64(1_000_000), n)
	assert.Equal(t, 0.002, p99)
	// From now on, 5,000 observations of 2 s a second: 0.5% of the
	// window at first, all of it after one window.
	change := t0 + time.Second
	for s := 1; s <= 70; s++ {
		for range 5000 {
			h.Observe(2)
		}
		var lo, hi float64
		var total uint64
		n, p99, lo, hi, total = windowAt(h, change+time.Duration(s)*time.Second)
		switch {
		case s == 1:
			assert.Less(t, p99, 0.0025, "p99 in the 2 ms bucket while the 2 ms dominate")
		case s >= 60:
			require.Equal(t, 2.0, p99, "p99 %d s after the change", s)
			require.Equal(t, 2.0, lo, "min %d s after the change", s)
			require.Equal(t, 2.0, hi)
			require.Equal(t, uint64(1_000_000+s*5000), total, "cumulative count")
			require.LessOrEqual(t, n, uint64(60*5000))
		}
	}
}

// The window covers between 5/6 of its span, less one interval, and its
// span: at every refresh, of observations made one per second.
func TestWindowSpan(t *testing.T) {
	h, t0 := windowed(t, time.Minute)
	for s := 1; s <= 300; s++ {
		h.Observe(1)
		n, _, _, _, _ := windowAt(h, t0+time.Duration(s)*time.Second)
		if s >= 60 {
			require.GreaterOrEqual(t, n, uint64(49), "second %d", s)
			require.LessOrEqual(t, n, uint64(60), "second %d", s)
		}
	}
}

// A busy histogram read at irregular times (its refresh, and Snapshot,
// Stats or Quantile in between, every interval at least) keeps marks
// enough for its window to cover 5/6 of its span less an interval, and
// at most one it will never use again, older than the span, until its
// next mark drops it: each such mark kept a busy value's 64 + 152 bytes
// with the default buckets.
func TestWindowBusyKeepsOnlyMarksItUses(t *testing.T) {
	h, t0 := windowed(t, time.Minute)
	w := h.w
	rng := rand.New(rand.NewPCG(3, 5))
	for now := t0; now < t0+20*time.Minute; {
		now += time.Duration(1 + rng.Int64N(int64(time.Second)))
		h.Observe(0.01)
		_, base := readWindow(h, now)
		from := w.marks[base].at
		if now-t0 > w.span {
			require.GreaterOrEqual(t, now-from, w.span*5/6-time.Second, "window at %v", now-t0)
			require.LessOrEqual(t, now-from, w.span, "window at %v", now-t0)
			require.LessOrEqual(t, base, 1, "marks older than the span at %v", now-t0)
		}
	}
	assert.Equal(t, len(w.marks), cap(w.marks), "room for marks never taken")
}

// A histogram idle for a span keeps one mark (its last busy step's end,
// moved to the last idle step's), in its window's memory, and one array
// of counts, where each window made 8 marks at its first read, 7 with an
// array of counts: 1.6 kB a vector's value with the default buckets, most
// values idle most of the time, and then two, in a slice of 128 bytes.
// Its window then counts what comes as any other.
func TestWindowIdleKeepsOneMark(t *testing.T) {
	h, t0 := windowed(t, time.Minute)
	w := h.w
	h.Observe(0.002)
	for s := 1; s <= 130; s++ {
		n, _, _, _, _ := windowAt(h, t0+time.Duration(s)*time.Second)
		switch {
		case s < 50:
			require.Equal(t, uint64(1), n, "second %d", s)
		case s > 70:
			require.Zero(t, n, "second %d", s)
		}
	}
	require.Len(t, w.marks, 1, "marks kept by an idle histogram")
	assert.Same(t, &w.first[0], &w.marks[0], "its mark in its window's memory")
	assert.NotNil(t, w.marks[0].counts, "its array of counts")
	h.Observe(4)
	n, _, lo, hi, total := windowAt(h, t0+131*time.Second)
	assert.Equal(t, uint64(1), n)
	assert.Equal(t, 4.0, lo)
	assert.Equal(t, 4.0, hi)
	assert.Equal(t, uint64(2), total)
}

// The window's counts per bucket, min and max are those of the
// observations made since its oldest mark within the span, and that
// mark leaves out none made within 5/6 of the span less an interval,
// whatever steps were idle: marks moved over idle steps, the others then
// dropped, and the oldest's array reused, do not mix them up.
func TestWindowCountsWithIdleSteps(t *testing.T) {
	h, t0 := windowed(t, time.Minute)
	w, l := h.w, h.l
	rng := rand.New(rand.NewPCG(7, 11))
	type obs struct {
		at     time.Duration
		x      float64
		bucket int
	}
	var made []obs
	busy, phase := false, 0
	for s := 1; s <= 1200; s++ {
		if phase--; phase <= 0 { // busy or idle, for 1 s to 3 min
			busy, phase = !busy, 1+rng.IntN(180)
		}
		at := t0 + time.Duration(s)*time.Second
		if busy && rng.IntN(2) == 0 {
			for range rng.IntN(4) + 1 {
				x := []float64{0.001, 0.02, 0.3, 4}[rng.IntN(4)] * (1 + rng.Float64()/10)
				h.Observe(x)
				made = append(made, obs{at - time.Second/2, x, l.index(x)})
			}
		}
		st, base := readWindow(h, at)
		from := w.marks[base].at
		want := make([]uint64, l.n)
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, o := range made {
			if o.at > from {
				want[o.bucket]++
				lo, hi = math.Min(lo, o.x), math.Max(hi, o.x)
			} else {
				require.Less(t, o.at, at-(w.span*5/6-time.Second), "second %d: an observation within the window left out", s)
			}
		}
		require.Equal(t, want, st.in, "second %d", s)
		require.Equal(t, lo, st.min, "min, second %d", s)
		require.Equal(t, hi, st.max, "max, second %d", s)
	}
}

// SinceStart keeps everything; a window shorter than two intervals is
// refused.
func TestWindowOptions(t *testing.T) {
	l, err := newBuckets(&HistogramOptions{}, Second)
	require.NoError(t, err)
	t0 := 1000 * time.Second
	h := newHistogram(l, Second, sinceStart(l), nil)
	h.Observe(0.002)
	n, _, lo, _, _ := windowAt(h, t0+24*time.Hour)
	assert.Equal(t, uint64(1), n)
	assert.Equal(t, 0.002, lo)
	_, err = newWindow(time.Second, time.Second, l.n, t0)
	assert.Error(t, err)
	assert.Panics(t, func() {
		NewHistogram(NewRegistry("w", nil), "h", "", Second, &HistogramOptions{Window: 500 * time.Millisecond})
	})
}

// Explicit buckets count previous < v <= bound, as client_golang's, and
// the branch-free search agrees with a linear one.
func TestExplicitBuckets(t *testing.T) {
	l, err := newBuckets(&HistogramOptions{Buckets: []float64{1, 2, 5}}, Second)
	require.NoError(t, err)
	assert.Equal(t, []string{"1", "2", "5", "+Inf"}, l.names())
	for x, want := range map[float64]int{math.Inf(-1): 0, -3: 0, 1: 0, 1.5: 1, 2: 1, 5: 2, 5.1: 3, math.Inf(1): 3} {
		assert.Equal(t, want, l.index(x), "index(%v)", x)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, bounds := range [][]float64{DefaultBuckets, {0}, {1, 2, 3, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9}, {-1, 0, 0.5, 1, 3}, {-5, -2, 1e-3, 1.1e-3, 1.2e-3, 7, 1e6}} {
		l, err := newBuckets(&HistogramOptions{Buckets: bounds}, Second)
		require.NoError(t, err)
		for range 10000 {
			x := math.Exp(rng.NormFloat64()*4) - 0.5
			want := len(bounds)
			for i, b := range bounds {
				if x <= b {
					want = i
					break
				}
			}
			require.Equal(t, want, l.index(x), "bounds %v, x %v", bounds, x)
		}
	}
	ms, err := newBuckets(&HistogramOptions{}, Millisecond)
	require.NoError(t, err)
	assert.Equal(t, "0.1", ms.names()[0], "default bounds in the histogram's time units")
	assert.Equal(t, "50000", ms.names()[len(DefaultBuckets)-1])
	for _, o := range []HistogramOptions{
		{Buckets: []float64{2, 1}}, {Buckets: []float64{1, 1}}, {Buckets: []float64{math.NaN()}},
		{Buckets: []float64{math.Inf(1)}}, {Buckets: []float64{1}, SubBuckets: 8},
	} {
		_, err := newBuckets(&o, Second)
		assert.Error(t, err, "options %+v", o)
	}
}

// Observe allocates nothing, in either layout.
func TestObserveAllocs(t *testing.T) {
	for _, o := range []*HistogramOptions{nil, {SubBuckets: 8}} {
		h := NewHistogram(NewRegistry("allocs", nil), "h", "", Second, o)
		xs := benchInputs()
		i := 0
		allocs := testing.AllocsPerRun(10000, func() {
			h.Observe(xs[i&1023])
			i++
		})
		assert.Zero(t, allocs)
	}
}

// Stats and Quantile read the window with a scratch on their stack for
// the default buckets, where the scratch each window kept is its
// group's now (histGroup.scratch).
func TestReadsAllocateNothing(t *testing.T) {
	h := NewHistogram(NewRegistry("reads", nil), "h", "", Second, nil)
	h.Observe(0.01)
	assert.Zero(t, testing.AllocsPerRun(1000, func() { h.Stats() }), "Stats")
	assert.Zero(t, testing.AllocsPerRun(1000, func() { h.Quantile(0.99) }), "Quantile")
}

// A window is never empty while observations come: read less often than
// its span (a registry never started, read on demand), or by refreshes
// whose delays after their ticks vary at a Window of two Intervals, its
// base is the mark before the last, older than the span, where it was
// the last mark, and min, max, mean and quantiles read 0.
func TestWindowNeverEmptyWhileObserved(t *testing.T) {
	l, err := newBuckets(&HistogramOptions{}, Second)
	require.NoError(t, err)
	const iv = 100 * time.Millisecond
	t0 := 1000 * time.Second
	for _, c := range []struct {
		name string
		at   func(k int) time.Duration
	}{
		{"refreshes at a window of two intervals", func(k int) time.Duration {
			return t0 + time.Duration(k+1)*iv + time.Duration(30+(k*37)%50)*time.Microsecond
		}},
		{"reads a span and a tenth apart", func(k int) time.Duration { return t0 + time.Duration(k+1)*2*iv*11/10 }},
	} {
		w, err := newWindow(2*iv, iv, l.n, t0)
		require.NoError(t, err)
		h := newHistogram(l, Second, w, nil)
		for k := range 200 {
			h.Observe(0.25)
			st, _ := readWindow(h, c.at(k))
			require.NotZero(t, st.n, "%s: read %d", c.name, k)
			require.Equal(t, 0.25, st.max, "%s: read %d", c.name, k)
			st, _ = readWindow(h, c.at(k)+time.Microsecond) // a Stats just after
			require.NotZero(t, st.n, "%s: read %d, again", c.name, k)
		}
	}
}

// TestWindowOfHistogramGoingIdle: a histogram gone idle holds no
// observation older than its span: its last mark, moved over idle steps,
// is no mark added past a span (window.base), whose rule took the one
// before, holding observations up to a step older than the span.
func TestWindowOfHistogramGoingIdle(t *testing.T) {
	h, t0 := windowed(t, time.Minute)
	const busy = 120 // seconds observed, one observation each
	worst, at := uint64(0), ""
	for s := 1; s <= 240; s++ {
		if s <= busy {
			h.Observe(1)
		}
		now := t0 + time.Duration(s)*time.Second
		st, base := readWindow(h, now)
		inSpan := uint64(max(0, min(busy, s)-max(0, s-60))) // made in (now-span, now]
		if st.n > inSpan && st.n-inSpan > worst {
			worst = st.n - inSpan
			at = fmt.Sprintf("second %d (%d s idle): the window holds %d observations, %d of them made within its span; its base mark is %v old",
				s, max(0, s-busy), st.n, inSpan, now-h.w.marks[base].at)
		}
	}
	require.Zero(t, worst, "observations older than the span in the window, at most; worst at %s", at)
}

// TestWindowMeanOfItsOwnObservations: the window's mean is that of the
// observations in it, whatever came before: its sum was the cumulative
// sum less the base mark's, and an outlier older than the span (1e17,
// whose float64 absorbs a 1, 2 or 3 added to it; an infinity, which
// absorbs everything) left the mean of 1, 2 and 3 reading 0 or NaN, outside
// the window's min and max, for good. The cumulative sum keeps them.
func TestWindowMeanOfItsOwnObservations(t *testing.T) {
	for _, outlier := range []float64{1e17, math.Inf(1), math.Inf(-1)} {
		h, t0 := windowed(t, time.Minute)
		h.Observe(outlier)
		for s := 1; s <= 130; s++ {
			readWindow(h, t0+time.Duration(s)*time.Second)
		}
		for _, x := range []float64{1, 2, 3} {
			h.Observe(x)
		}
		st, _ := readWindow(h, t0+131*time.Second)
		require.Equal(t, uint64(3), st.n, "after %v", outlier)
		assert.Equal(t, 6.0, st.inSum, "the window's sum, after %v", outlier)
		assert.Equal(t, outlier+6, st.sum, "the cumulative sum, after %v", outlier)
		assert.Equal(t, 2.0, st.inSum/float64(st.n), "the mean published, after %v", outlier)
	}
}

// TestWindowSumExactAcrossSteps: each step's end moves the stripes' sums
// into the sum of the steps ended while goroutines observe: the
// cumulative sum, a counter, never goes back, and ends exact, as the
// count does and the window's sum over a span's steps.
func TestWindowSumExactAcrossSteps(t *testing.T) {
	h, t0 := windowed(t, time.Minute)
	const per, goroutines = 20000, 4
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range per {
				h.Observe(float64(g*per + i + 1))
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	last, now := 0.0, t0
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		now += 10 * time.Second // a step, which every read ends
		st, _ := readWindow(h, now)
		require.GreaterOrEqual(t, st.sum, last, "the cumulative sum went back")
		last = st.sum
	}
	const n = goroutines * per
	st, _ := readWindow(h, now+10*time.Second)
	assert.Equal(t, uint64(n), st.total)
	assert.Equal(t, float64(n*(n+1)/2), st.sum)
	h2, t1 := windowed(t, time.Minute)
	for s := 1; s <= 5; s++ {
		h2.Observe(float64(s))
		readWindow(h2, t1+time.Duration(s)*10*time.Second)
	}
	st, _ = readWindow(h2, t1+55*time.Second)
	assert.Equal(t, 15.0, st.inSum, "the window's sum, over its steps")
	assert.Equal(t, uint64(5), st.n)
}

// TestObservationAtStepEndWholeInWindow: an observation made during a
// step's end, between its reads of the tally, is in the window whole or
// not at all, at every refresh after: its count was read after the step
// had marked the counts, its min, max and sum before the step took them,
// so once the mark of that step was the window's base, the window counted
// it and held nothing of it, and published a min of +Inf, a max of -Inf
// and a mean of 0 (for a step: 10 s at the default window).
func TestObservationAtStepEndWholeInWindow(t *testing.T) {
	g, h, t0 := publishedHistogram(t)
	stepEndHook = func() { stepEndHook = nil; h.Observe(5) }
	t.Cleanup(func() { stepEndHook = nil })
	held := 0
	for s := 1; s <= 140; s++ {
		total, stats := publishedAt(g, t0+time.Duration(s)*time.Second)
		if s >= 10 {
			require.Nil(t, stepEndHook, "a step ends at the read 10 s in")
		}
		if total == 0 {
			continue
		}
		require.Equal(t, uint64(1), total)
		require.Equal(t, 5.0, stats[0], "the cumulative sum, second %d", s)
		requireWindowOf(t, 5, stats, "second %d: min, max, mean and quantiles", s)
		if stats[1] != 0 {
			held++
		}
	}
	assert.GreaterOrEqual(t, held, 45, "seconds the window held the observation")
}

// TestObserveInFlightPublishesConsistently: a refresh that reads the tally
// while an Observe is between its stores publishes statistics that hold
// together, whatever stores it sees: it published a min of +Inf and a max
// of -Inf for a window whose only observation was counted and not yet
// stored further, and a mean below the min for one counted and not yet
// summed beside others.
func TestObserveInFlightPublishesConsistently(t *testing.T) {
	for stores := range 4 {
		g, h, t0 := publishedHistogram(t)
		observeParts(h, 5, 0, stores)
		_, stats := publishedAt(g, t0+time.Second)
		requireWindowOf(t, 5, stats, "alone, after %d of its stores", stores)
		observeParts(h, 5, stores, 4)
		total, stats := publishedAt(g, t0+2*time.Second)
		require.Equal(t, uint64(1), total)
		require.Equal(t, []float64{5, 5, 5, 5, 5, 5, 5, 5}, stats, "once whole, after %d stores", stores)

		g, h, t0 = publishedHistogram(t)
		h.Observe(5)
		observeParts(h, 5, 0, stores)
		_, stats = publishedAt(g, t0+time.Second)
		requireWindowOf(t, 5, stats, "beside another, after %d of its stores", stores)
	}
}
