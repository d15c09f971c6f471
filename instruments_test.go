package mmv

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv/internal/pcptest"
)

func TestCounterCarriesUpdatesMadeBeforeStart(t *testing.T) {
	r := newTestRegistry(t, "inst")
	c := NewCounter(r, "requests", "Requests served", Count)
	c.Inc()
	c.Add(41)
	require.EqualValues(t, 42, c.Get(), "before Start: Get")
	startOrSkip(t, r)
	v := mustValue(t, r, "requests", "")
	require.EqualValues(t, 42, v.Int(), "file after Start")
	c.Add(8)
	require.EqualValues(t, 50, c.Get(), "Get")
	require.EqualValues(t, 50, v.Int(), "file")
	// An update that raced with Start lands in the instrument's own memory;
	// Close carries it.
	c.cell.mem[0] = 5
	require.EqualValues(t, 55, c.Get(), "Get with a straggler")
	r.mu.Lock()
	r.unbindCellsLocked()
	r.mu.Unlock()
	require.EqualValues(t, 55, v.Int(), "file after carry")
}

func TestInstrumentsDeclareTheirMetrics(t *testing.T) {
	r := newTestRegistry(t, "inst")
	NewCounter(r, "c", "a counter\nwith a long help", Byte)
	NewGauge(r, "g", "a gauge", Second)
	NewIntGauge(r, "ig", "an integer gauge", Count)
	NewTimer(r, "t", "a timer")
	want := map[string]Metric{
		"c":  {Type: Uint64, Semantics: SemCounter, Units: Byte, ShortHelp: "a counter", LongHelp: "with a long help"},
		"g":  {Type: Double, Semantics: SemInstant, Units: Second, ShortHelp: "a gauge"},
		"ig": {Type: Int64, Semantics: SemInstant, Units: Count, ShortHelp: "an integer gauge"},
		"t":  {Type: Uint64, Semantics: SemCounter, Units: Nanosecond, ShortHelp: "a timer"},
	}
	for _, m := range r.metrics {
		w := want[m.Name]
		w.Name = m.Name
		assert.Equal(t, w, m.Metric, "metric %s", m.Name)
	}
}

func TestDeclarationPanicsWithTheRegistryError(t *testing.T) {
	r := newTestRegistry(t, "inst")
	NewCounter(r, "a", "", Count)
	for _, tc := range []struct {
		f    func()
		want error
	}{
		{func() { NewCounter(r, "a", "", Count) }, ErrDuplicate},
		{func() { NewGauge(r, "1x", "", Count) }, ErrName},
		{func() { NewHistogram(r, "h", "", Count, &HistogramOptions{SubBuckets: 3}) }, ErrRange},
		{func() { NewCounterVec(r, "v", "", Count, "x", "x") }, ErrDuplicate},
		{func() { NewCounterVec(r, "w", "", Count, "a b") }, ErrName},
		{func() { NewCounterVec(r, "z", "", Count) }, ErrLabel},
	} {
		func() {
			defer func() {
				err, _ := recover().(error)
				assert.ErrorIs(t, err, tc.want, "panic")
			}()
			tc.f()
		}()
	}
}

func TestDeclareAfterStart(t *testing.T) {
	r := newTestRegistry(t, "inst")
	NewCounter(r, "early", "", Count).Inc()
	startOrSkip(t, r)
	c := NewCounter(r, "late", "", Count)
	c.Add(2)
	v := NewCounterVec(r, "late_vec", "", Count, "k")
	v.With("a").Inc()
	h := NewHistogram(r, "late_hist", "", Count, nil)
	h.Observe(3)
	require.NoError(t, r.Flush())
	assert.EqualValues(t, 2, mustValue(t, r, "late", "").Int(), "late counter")
	assert.EqualValues(t, 1, vecValue(t, r, "late_vec", "k=a").Int(), "late vector")
	r.Close()
}

func TestGauges(t *testing.T) {
	r := newTestRegistry(t, "inst")
	g := NewGauge(r, "g", "", NoUnits)
	ig := NewIntGauge(r, "ig", "", Count)
	g.Set(1.5)
	g.Inc()
	ig.Add(10)
	ig.Dec()
	startOrSkip(t, r)
	assert.EqualValues(t, 2.5, mustValue(t, r, "g", "").Float(), "gauge carried")
	assert.EqualValues(t, 9, mustValue(t, r, "ig", "").Int(), "int gauge carried")
	g.Set(-3)
	g.Add(0.25)
	g.Dec()
	ig.Set(-7)
	ig.Inc()
	assert.Equal(t, -3.75, g.Get(), "gauge")
	assert.Equal(t, -3.75, mustValue(t, r, "g", "").Float(), "gauge in the file")
	assert.EqualValues(t, -6, ig.Get(), "int gauge")
	assert.EqualValues(t, -6, mustValue(t, r, "ig", "").Int(), "int gauge in the file")
}

func TestTimerSumsNanoseconds(t *testing.T) {
	r := newTestRegistry(t, "inst")
	tm := NewTimer(r, "t", "")
	startOrSkip(t, r)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				tm.Observe(300 * time.Nanosecond) // less than a microsecond each
			}
		}()
	}
	wg.Wait()
	require.EqualValues(t, 8*1000*300, mustValue(t, r, "t", "").Int(), "file, in ns")
	tm.Observe(-time.Second)
	w := tm.Start()
	time.Sleep(2 * time.Millisecond)
	require.GreaterOrEqual(t, w.Stop(), 2*time.Millisecond, "Stop")
	tm.Time(func() { time.Sleep(time.Millisecond) })
	got := mustValue(t, r, "t", "").Int()
	require.False(t, got < 2400000+3000000 || time.Duration(got) != tm.Get(), "file = %d ns, Get = %v", got, tm.Get())
}

func TestConcurrentCounting(t *testing.T) {
	r := newTestRegistry(t, "inst")
	c := NewCounter(r, "c", "", Count)
	v := NewCounterVec(r, "v", "", Count, "k")
	v.With("a")
	v.With("b")
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range 4 {
		wg.Go(func() {
			<-start
			inst := v.With([]string{"a", "b"}[i%2])
			for range 20000 {
				c.Inc()
				inst.Add(2)
			}
		})
	}
	close(start)
	// Start while the goroutines count: nothing is lost or counted twice.
	startOrSkip(t, r)
	wg.Wait()
	r.mu.Lock()
	r.unbindCellsLocked() // what Close does before it closes the file
	r.mu.Unlock()
	assert.EqualValues(t, 80000, mustValue(t, r, "c", "").Int(), "counter")
	for _, in := range []string{"a", "b"} {
		assert.EqualValues(t, 80000, vecValue(t, r, "v", "k="+in).Int(), "vec %s", in)
	}
}

// TestConcurrentSetting: Sets racing Start's binding leave a value some
// Set stored, in the instrument and in the file, never a sum of two.
func TestConcurrentSetting(t *testing.T) {
	for round := range 20 {
		r := newTestRegistry(t, fmt.Sprint("set", round))
		g := NewGauge(r, "g", "", NoUnits)
		ig := NewIntGauge(r, "ig", "", Count)
		c := NewCounter(r, "c", "", Count)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range 4 {
			wg.Go(func() {
				<-start
				n := i%2 + 1
				for range 2000 {
					g.Set(float64(n))
					ig.Set(int64(n))
					c.Set(uint64(n))
				}
			})
		}
		close(start)
		startOrSkip(t, r)
		wg.Wait()
		require.NoError(t, r.Flush())
		assert.Contains(t, []float64{1, 2}, g.Get(), "gauge, round %d", round)
		assert.Contains(t, []int64{1, 2}, ig.Get(), "int gauge, round %d", round)
		assert.Contains(t, []uint64{1, 2}, c.Get(), "counter, round %d", round)
		assert.Equal(t, g.Get(), mustValue(t, r, "g", "").Float(), "gauge in the file, round %d", round)
		assert.Equal(t, ig.Get(), mustValue(t, r, "ig", "").Int(), "int gauge in the file, round %d", round)
		assert.EqualValues(t, c.Get(), mustValue(t, r, "c", "").Int(), "counter in the file, round %d", round)
		require.NoError(t, r.Close())
	}
}

func TestVec(t *testing.T) {
	r := newTestRegistry(t, "inst")
	cv := NewCounterVec(r, "requests", "by route", Count, "route")
	gv := NewGaugeVec(r, "temp", "", NoUnits, "sensor")
	iv := NewIntGaugeVec(r, "queue", "", Count, "dir")
	tv := NewTimerVec(r, "busy", "", "stage")
	empty := NewCounterVec(r, "none", "", Count, "x")
	cv.With("/")
	cv.With("/api").Add(3)
	_, err := cv.Get("/", "extra")
	assert.ErrorIs(t, err, ErrLabel, `Get with two values for one label`)
	cv.With("/", "extra").Inc() // With returns nil, whose Inc is a no-op, not a crash
	assert.EqualValues(t, 0, len(empty.Instances()), "empty vector has instances")
	startOrSkip(t, r)
	gv.With("cpu1").Set(41.5)
	iv.With("out").Inc()
	tv.With("db").Observe(time.Millisecond)
	for _, c := range []struct {
		metric, inst string
		want         float64
	}{
		{"requests", "route=/api", 3}, {"requests", "route=/", 0}, {"temp", "sensor=cpu1", 41.5}, {"queue", "dir=out", 1}, {"busy", "stage=db", 1e6},
	} {
		assert.Equal(t, c.want, vecValue(t, r, c.metric, c.inst).Float(), "%s[%s]", c.metric, c.inst)
	}
	got := cv.Instances()
	assert.False(t, len(got) != 2 || got[1] != "route=/api" || empty.With("x") == nil, "Instances = %q", got)
}

func TestAutoIndomKeepsLowSerialsFree(t *testing.T) {
	r := newTestRegistry(t, "inst")
	NewCounterVec(r, "a", "", Count, "x").With("x")
	require.NoError(t, r.AddIndom(Indom{Serial: 1, Instances: []Instance{{0, "y"}}}))
	assert.EqualValues(t, firstDerivedSerial+fnv32("a")%derivedSerials, r.metrics[0].Indom, "vector indom serial, derived in the upper half")
}

func TestPoll(t *testing.T) {
	r := newTestRegistry(t, "inst")
	base := pcptest.Pollers()
	var n atomic.Int64
	var bad atomic.Value // why a run should not have been
	inRun, release := make(chan struct{}), make(chan struct{})
	r.Poll(time.Millisecond, func() {
		r.mu.Lock()
		state := r.state
		r.mu.Unlock()
		if state == closed || state == declaring && n.Load() > 0 {
			bad.Store(fmt.Sprintf("run %d with the registry %v", n.Load()+1, state)) // Start's, first, is before started
		}
		if n.Add(1) == 3 {
			close(inRun)
			<-release
		}
	})
	require.Equal(t, base, pcptest.Pollers(), "Poll started a goroutine before Start")
	startOrSkip(t, r)
	select {
	case <-inRun: // the third run, and it is in progress
	case <-time.After(time.Minute):
		t.Fatalf("f ran %d times in a minute", n.Load())
	}
	require.Equal(t, base+1, pcptest.Pollers(), "Poll's goroutine")
	// Close does not wait for a run in progress; once it ends, none
	// starts: the goroutine ends.
	closed := make(chan struct{})
	go func() { r.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(time.Minute):
		t.Fatal("Close waits for the run in progress")
	}
	close(release)
	require.Eventually(t, func() bool { return pcptest.Pollers() == base }, 10*time.Second, time.Millisecond, "Poll's goroutine runs on after Close")
	assert.EqualValues(t, 3, n.Load(), "runs")
	assert.Nil(t, bad.Load())
}

// TestPollBeforeStart: before Start, each Gather and Snapshot runs the
// registry's polls first, outside its lock (a poll may call the
// registry), one run at a time, so that a registry never started serves
// what they copy; a poll running already is not run again, nor waited
// for (a poll that gathers).
func TestPollBeforeStart(t *testing.T) {
	r := newTestRegistry(t, "inst")
	level := NewIntGauge(r, "level", "", Count)
	var runs, running atomic.Int64
	r.Poll(time.Hour, func() {
		if running.Add(1) > 1 {
			t.Error("two runs at once")
		}
		defer running.Add(-1)
		_, err := r.Value("level", "") // the registry's lock is free
		assert.ErrorIs(t, err, ErrNotStarted)
		level.Set(runs.Add(1) * 10)
	})
	gathered := func() int64 {
		var v int64 = -1
		r.Gather(func(f *Family) {
			if f.Name == "level" {
				v = f.Samples[0].Value.Int()
			}
		})
		return v
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { gathered() })
	}
	wg.Wait()
	n := runs.Load()
	assert.True(t, n >= 1 && n <= 4, "a run a Gather, but while one runs: %d", n)
	assert.EqualValues(t, (n+1)*10, gathered(), "what the run of this Gather copied")
	_, err := r.Snapshot()
	require.NoError(t, err)
	assert.EqualValues(t, n+2, runs.Load(), "and a Snapshot")

	// A poll that gathers is not run again below its own Gather.
	r2 := newTestRegistry(t, "inst2")
	var inner atomic.Int64
	r2.Poll(time.Hour, func() {
		inner.Add(1)
		r2.Gather(func(*Family) {})
	})
	done := make(chan struct{})
	go func() { r2.Gather(func(*Family) {}); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a poll that gathers waits for itself")
	}
	assert.EqualValues(t, 1, inner.Load())
}

func TestProgramName(t *testing.T) {
	for in, want := range map[string]string{
		"/usr/bin/my-server": "my_server",
		"./httpserver.test":  "httpserver_test",
		"C:\\x\\app.exe":     "C__x_app", // not a Unix path: kept whole
		"9lives":             "go_9lives",
		"":                   "go",
	} {
		assert.Equal(t, want, programName([]string{in}), "programName(%q)", in)
	}
	assert.NoError(t, checkFileName(Default.Name(), 0), "Default's name")
}

func TestNilInstruments(t *testing.T) {
	var c *Counter
	var g *Gauge
	var ig *IntGauge
	var tm *Timer
	var h *Histogram
	c.Inc()
	c.Add(1)
	c.Set(1)
	g.Set(1)
	g.Inc()
	ig.Inc()
	ig.Set(1)
	tm.Observe(time.Second)
	tm.Start().Stop()
	h.Observe(1)
	h.ObserveDuration(time.Second)
	require.False(t, c.Get() != 0 || g.Get() != 0 || ig.Get() != 0 || tm.Get() != 0 || h.Stats().Count != 0 || math.Float64bits(h.Quantile(0.5)) != 0, "nil instruments hold values")
}

// The hot path: each instrument's update against a raw atomic add on the
// same machine in the same run.

// BenchmarkCounterInc calls Counter.Inc directly, to compare with
// BenchmarkAtomicAddBaseline; BenchmarkInstruments calls through a func
// value, which adds an indirect call to every case alike.
func BenchmarkCounterInc(b *testing.B) {
	r := newTestRegistry(b, "bench")
	c := NewCounter(r, "c", "", Count)
	startOrSkip(b, r)
	b.ReportAllocs()
	for b.Loop() {
		c.Inc()
	}
}

// BenchmarkInstruments times each instrument's update on a started
// registry (and a counter's before Start), serially and in parallel.
func BenchmarkInstruments(b *testing.B) {
	cases := []struct {
		name  string
		start bool
		op    func(r *Registry) func()
	}{
		{"Counter.Inc", true, func(r *Registry) func() { return NewCounter(r, "c", "", Count).Inc }},
		{"Counter.Inc/BeforeStart", false, func(r *Registry) func() { return NewCounter(r, "c", "", Count).Inc }},
		{"Gauge.Set", true, func(r *Registry) func() { g := NewGauge(r, "g", "", NoUnits); return func() { g.Set(1.5) } }},
		{"Gauge.Add", true, func(r *Registry) func() { g := NewGauge(r, "g", "", NoUnits); return func() { g.Add(1) } }},
		{"IntGauge.Inc", true, func(r *Registry) func() { return NewIntGauge(r, "g", "", Count).Inc }},
		{"Timer.Observe", true, func(r *Registry) func() {
			tm := NewTimer(r, "t", "")
			return func() { tm.Observe(1500 * time.Nanosecond) }
		}},
		{"Timer.StartStop", true, func(r *Registry) func() { tm := NewTimer(r, "t", ""); return func() { tm.Start().Stop() } }},
		{"CounterVec.Inc", true, func(r *Registry) func() { return NewCounterVec(r, "v", "", Count, "a").With("b").Inc }},
	}
	for _, c := range cases {
		for _, parallel := range []bool{false, true} {
			name := c.name
			if parallel {
				name += "/Parallel"
			}
			b.Run(name, func(b *testing.B) {
				r := newTestRegistry(b, "bench")
				op := c.op(r)
				if c.start {
					startOrSkip(b, r)
				}
				b.ReportAllocs()
				if !parallel {
					for b.Loop() {
						op()
					}
					return
				}
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						op()
					}
				})
			})
		}
	}
}

// TestUpdatesDoNotAllocate: no instrument's update allocates. (Their speed
// is measured by the benchmarks, against a raw atomic add in the same run.)
func TestUpdatesDoNotAllocate(t *testing.T) {
	r := newTestRegistry(t, "allocs")
	c := NewCounter(r, "c", "", Count)
	g := NewGauge(r, "g", "", NoUnits)
	ig := NewIntGauge(r, "ig", "", Count)
	tm := NewTimer(r, "t", "")
	h := NewHistogram(r, "h", "", Second, nil)
	cv := NewCounterVec(r, "cv", "", Count, "a")
	startOrSkip(t, r)
	v, err := r.Value("c", "")
	require.NoError(t, err)
	gv, err := r.Value("g", "")
	require.NoError(t, err)
	ops := map[string]func(){
		"Value.Add":         func() { v.Add(1) },
		"Value.Set":         func() { v.Set(3) },
		"Value.SetFloat":    func() { gv.SetFloat(0.5) },
		"Counter.Set":       func() { c.Set(7) },
		"IntGauge.Set":      func() { ig.Set(-2) },
		"Gauge.Set":         func() { g.Set(1.5) },
		"Counter.Inc":       func() { c.Inc() },
		"Gauge.Add":         func() { g.Add(0.5) },
		"IntGauge.Add":      func() { ig.Add(1) },
		"Timer.Observe":     func() { tm.Observe(time.Millisecond) },
		"Timer.Start.Stop":  func() { tm.Start().Stop() },
		"Histogram.Observe": func() { h.Observe(0.25) },
		"Vec.With.Inc":      func() { cv.With("a").Inc() },
	}
	for name, op := range ops {
		assert.EqualValues(t, 0, testing.AllocsPerRun(1000, op), "%s allocates", name)
	}
}

// TestPollSurvivesGoexit: a Poll function that ends its goroutine
// once (runtime.Goexit, as testing's FailNow does) runs again at the
// next interval: it ended the poll's goroutine, and the poll with it,
// for the registry's life.
func TestPollSurvivesGoexit(t *testing.T) {
	r := newTestRegistry(t, "pollgoexit")
	var runs atomic.Int32
	r.Poll(10*time.Millisecond, func() {
		if runs.Add(1) == 2 { // the first on the poll's goroutine
			runtime.Goexit()
		}
	})
	startOrSkip(t, r)
	assert.Eventually(t, func() bool { return runs.Load() >= 5 }, 5*time.Second, 5*time.Millisecond, "runs after the Goexit")
}

// TestPollStopped: the function Poll returns stops the poll, before
// Start or after, from within its function too: Gather runs it no more,
// Start starts no goroutine for it, its goroutine ends, and no run
// begins once the stop returned. A bridge closed (prombridge) left its
// poll ticking for the registry's life, a goroutine for each Gatherer a
// service swapped.
func TestPollStopped(t *testing.T) {
	r := newTestRegistry(t, "pollstop")
	base := pcptest.Pollers()
	var before, self, after atomic.Int64
	stopBefore := r.Poll(time.Millisecond, func() { before.Add(1) })
	r.Gather(func(*Family) {})
	require.EqualValues(t, 1, before.Load(), "Gather's run before Start")
	stopBefore()
	r.Gather(func(*Family) {})
	assert.EqualValues(t, 1, before.Load(), "Gather's run of a stopped poll")
	var stopSelf func()
	ready := make(chan struct{})
	stopSelf = r.Poll(time.Millisecond, func() {
		<-ready
		if self.Add(1) == 3 {
			stopSelf() // within its own run
		}
	})
	close(ready)
	stopAfter := r.Poll(time.Millisecond, func() { after.Add(1) })
	startOrSkip(t, r)
	require.Eventually(t, func() bool { return after.Load() >= 3 && self.Load() >= 3 }, 10*time.Second, time.Millisecond)
	stopAfter()
	stopped := after.Load()
	require.Eventually(t, func() bool { return pcptest.Pollers() == base }, 10*time.Second, time.Millisecond, "goroutines of stopped polls")
	time.Sleep(20 * time.Millisecond)
	assert.LessOrEqual(t, after.Load(), stopped+1, "runs begun after the stop returned (one may have begun before)")
	assert.EqualValues(t, 3, self.Load(), "runs after stopping itself")
	assert.EqualValues(t, 1, before.Load(), "Start's run of a poll stopped before it")
	require.NoError(t, r.Close())
	stopAfter() // again, after Close: nothing
}

// TestEveryGatherRunsAPollBeforeStart: a Gather after another returned
// runs the poll again. The run counted itself ended before it let the
// poll go, so a Gather right after found it running and skipped it, and
// showed what the last one copied (TestPollBeforeStart failed so in CI).
func TestEveryGatherRunsAPollBeforeStart(t *testing.T) {
	r := newTestRegistry(t, "everygather")
	var runs atomic.Int64
	r.Poll(time.Hour, func() { runs.Add(1) })
	for i := range int64(2000) {
		r.Gather(func(*Family) {})
		require.Equal(t, i+1, runs.Load(), "runs after Gather %d", i+1)
	}
}

// TestZeroInstrumentsActAsNil: the zero value of every instrument type (a
// struct field never given a New function's instrument) is an instrument
// declared nowhere, as a nil one: every exported method ignores updates
// and settings and reads zero, and none panics (update methods never do,
// the package doc says). They dereferenced the handle, buckets or
// registry they do not have. Each type's methods are listed by
// reflection, so that one added later is called here too.
func TestZeroInstrumentsActAsNil(t *testing.T) {
	calls := map[reflect.Type]map[string]func(zero, nilOne any) (got, want any){}
	on := func(typ any, method string, f func(i any) any) {
		tt := reflect.TypeOf(typ)
		if calls[tt] == nil {
			calls[tt] = map[string]func(zero, nilOne any) (got, want any){}
		}
		calls[tt][method] = func(zero, nilOne any) (any, any) { return f(zero), f(nilOne) }
	}
	counter := func(i any) *Counter { return i.(*Counter) }
	on((*Counter)(nil), "Inc", func(i any) any { counter(i).Inc(); return counter(i).Get() })
	on((*Counter)(nil), "Add", func(i any) any { counter(i).Add(2); return counter(i).Get() })
	on((*Counter)(nil), "Set", func(i any) any { counter(i).Set(3); return counter(i).Get() })
	on((*Counter)(nil), "Get", func(i any) any { return counter(i).Get() })
	gauge := func(i any) *Gauge { return i.(*Gauge) }
	on((*Gauge)(nil), "Set", func(i any) any { gauge(i).Set(3); return gauge(i).Get() })
	on((*Gauge)(nil), "Add", func(i any) any { gauge(i).Add(2); return gauge(i).Get() })
	on((*Gauge)(nil), "Inc", func(i any) any { gauge(i).Inc(); return gauge(i).Get() })
	on((*Gauge)(nil), "Dec", func(i any) any { gauge(i).Dec(); return gauge(i).Get() })
	on((*Gauge)(nil), "Get", func(i any) any { return gauge(i).Get() })
	ig := func(i any) *IntGauge { return i.(*IntGauge) }
	on((*IntGauge)(nil), "Set", func(i any) any { ig(i).Set(3); return ig(i).Get() })
	on((*IntGauge)(nil), "Add", func(i any) any { ig(i).Add(2); return ig(i).Get() })
	on((*IntGauge)(nil), "Inc", func(i any) any { ig(i).Inc(); return ig(i).Get() })
	on((*IntGauge)(nil), "Dec", func(i any) any { ig(i).Dec(); return ig(i).Get() })
	on((*IntGauge)(nil), "Get", func(i any) any { return ig(i).Get() })
	timer := func(i any) *Timer { return i.(*Timer) }
	on((*Timer)(nil), "Observe", func(i any) any { timer(i).Observe(time.Second); return timer(i).Get() })
	on((*Timer)(nil), "Time", func(i any) any { timer(i).Time(func() {}); return timer(i).Get() })
	on((*Timer)(nil), "Start", func(i any) any { timer(i).Start().Stop(); return timer(i).Get() })
	on((*Timer)(nil), "Get", func(i any) any { return timer(i).Get() })
	hist := func(i any) *Histogram { return i.(*Histogram) }
	on((*Histogram)(nil), "Observe", func(i any) any { hist(i).Observe(1); return hist(i).Stats() })
	on((*Histogram)(nil), "ObserveDuration", func(i any) any { hist(i).ObserveDuration(time.Second); return hist(i).Stats() })
	on((*Histogram)(nil), "Since", func(i any) any { hist(i).Since(time.Now()); return hist(i).Stats() })
	on((*Histogram)(nil), "Stats", func(i any) any { return hist(i).Stats() })
	on((*Histogram)(nil), "Quantile", func(i any) any { return math.Float64bits(hist(i).Quantile(0.5)) })
	vecCalls((*Vec[Counter])(nil), on)
	vecCalls((*Vec[Histogram])(nil), on)

	zeros := []any{new(Counter), new(Gauge), new(IntGauge), new(Timer), new(Histogram), new(Vec[Counter]), new(Vec[Histogram])}
	for _, zero := range zeros {
		typ := reflect.TypeOf(zero)
		var exported []string
		for i := range typ.NumMethod() {
			exported = append(exported, typ.Method(i).Name)
		}
		require.ElementsMatch(t, exported, slices.Collect(maps.Keys(calls[typ])), "%v: the methods called", typ)
		for _, name := range exported {
			var got, want any
			if !assert.NotPanics(t, func() { got, want = calls[typ][name](zero, reflect.Zero(typ).Interface()) }, "%v{}.%s", typ.Elem(), name) {
				continue
			}
			assert.Equal(t, want, got, "%v{}.%s: as a nil one", typ.Elem(), name)
		}
		assert.Equal(t, reflect.New(typ.Elem()).Interface(), zero, "%v{}: still zero", typ.Elem())
	}
}

// vecCalls registers with on a call of every exported method of Vec[T],
// each returning what the vector then reads.
func vecCalls[T any](typ *Vec[T], on func(typ any, method string, f func(i any) any)) {
	vec := func(i any) *Vec[T] { return i.(*Vec[T]) }
	reads := func(v *Vec[T]) any {
		return []any{v.Err(), v.Limit(), v.Expiry(), v.Instances(), v.Metric(), v.Indom(), v.Labels()}
	}
	on(typ, "With", func(i any) any { return []any{vec(i).With("a"), vec(i).With(), reads(vec(i))} })
	on(typ, "WithLabels", func(i any) any {
		return []any{vec(i).WithLabels(map[string]string{"k": "a"}), vec(i).WithLabels(nil), reads(vec(i))}
	})
	on(typ, "Get", func(i any) any {
		a, errA := vec(i).Get("a")
		b, errB := vec(i).Get()
		return []any{a, b, errors.Is(errA, ErrUnknown), errors.Is(errB, ErrUnknown), reads(vec(i))}
	})
	on(typ, "Delete", func(i any) any { return []any{vec(i).Delete(), vec(i).Delete("a"), reads(vec(i))} })
	on(typ, "Reset", func(i any) any { vec(i).Reset(); return reads(vec(i)) })
	on(typ, "SetInstanceLabels", func(i any) any { vec(i).SetInstanceLabels(false); return reads(vec(i)) })
	on(typ, "SetLimit", func(i any) any { vec(i).SetLimit(3); return reads(vec(i)) })
	on(typ, "SetExpiry", func(i any) any { vec(i).SetExpiry(time.Minute); return reads(vec(i)) })
	for _, read := range []string{"Err", "Limit", "Expiry", "Instances", "Metric", "Indom", "Labels"} {
		on(typ, read, func(i any) any { return reads(vec(i)) })
	}
}
