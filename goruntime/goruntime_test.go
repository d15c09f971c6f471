package goruntime

import (
	"math"
	"regexp"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/mmvtest"
)

func TestName(t *testing.T) {
	for in, want := range map[string]string{
		"/gc/heap/allocs:bytes":                         "gc.heap.allocs_bytes",
		"/gc/heap/allocs:objects":                       "gc.heap.allocs_objects",
		"/gc/heap/allocs-by-size:bytes":                 "gc.heap.allocs_by_size_bytes",
		"/cpu/classes/gc/mark/assist:cpu-seconds":       "cpu.classes.gc.mark.assist_cpu_seconds",
		"/sched/goroutines:goroutines":                  "sched.goroutines_goroutines",
		"/sched/goroutines/running:goroutines":          "sched.goroutines.running_goroutines",
		"/godebug/non-default-behavior/x509sha1:events": "godebug.non_default_behavior.x509sha1_events",
		"/a/9lives/b.c:x":                               "a.x9lives.b_c_x",
		"/a/_b:units":                                   "a.x_b_units",
		"/nounit":                                       "nounit",
	} {
		assert.Equal(t, want, Name(in), "Name(%q)", in)
	}
}

// pcpName is PCP's metric name syntax: dot-separated parts, each a letter
// then letters, digits and '_'.
var pcpName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)*$`)

// TestNamesOfThisRuntime proves the rule on every metric this Go version
// offers: valid names, no collision, no name that is a prefix of another
// at a dot, within one file's 1023 metrics.
func TestNamesOfThisRuntime(t *testing.T) {
	ds := metrics.All()
	for _, prefix := range []string{"", "go"} {
		names := Names(ds, prefix)
		for _, n := range names {
			assert.True(t, pcpName.MatchString(n), "%q is not a valid PCP name", n)
		}
		assert.NoError(t, CheckNames(names))
		assert.LessOrEqual(t, len(names), mmv.MaxMetrics, "more metrics than a file holds")
		t.Logf("prefix %q: %d runtime metrics give %d PCP metrics", prefix, len(ds), len(names))
	}
	assert.False(t, CheckNames([]string{"a.b", "a.b.c"}) == nil || CheckNames([]string{"x", "x"}) == nil || CheckNames([]string{"a.b", "a.bc"}) != nil, "CheckNames misjudges")
}

func TestRegister(t *testing.T) {
	pcptest.NeedFileLayer(t) // the values refreshed are the file's
	r := mmv.NewRegistry("goruntime", &mmv.Options{Dir: t.TempDir()})
	defer r.Close()
	require.NoError(t, Register(r, &Options{Interval: 10 * time.Millisecond}))
	require.NoError(t, r.Start())
	require.GreaterOrEqual(t, refreshed(t, r, "sched.goroutines_goroutines"), int64(1), "goroutines")
	runtime.GC()
	assert.GreaterOrEqual(t, refreshed(t, r, "gc.cycles.total_gc_cycles"), int64(1), "GC cycles after runtime.GC")
	count, err := r.Value("gc.heap.allocs_by_size_bytes.count", "")
	require.NoError(t, err)
	assert.NotEqualValues(t, 0, count.Int(), "allocs-by-size histogram counted nothing")
	_, err = mmvtest.Lookup(r, "gc.heap.allocs_by_size_bytes.bucket", "+Inf") // a vector's: Registry.Value refuses it
	assert.NoError(t, err)
	// A second bridge on the same registry collides.
	assert.Error(t, Register(r, nil), "registering twice succeeded")
}

// TestRegisterThroughPCP reads the bridge's file with PCP's real reader.
func TestRegisterThroughPCP(t *testing.T) {
	pcptest.NeedFileLayer(t)
	pcptest.MustHavePCP(t)
	tmp := t.TempDir()
	r := mmv.NewRegistry("goruntime", &mmv.Options{Dir: tmp + "/mmv"})
	defer r.Close()
	require.NoError(t, Register(r, &Options{Prefix: "go"}))
	require.NoError(t, r.Start())
	runtime.GC()
	// Wait, bounded, for a refresh after the GC: cycles counted and
	// allocations bucketed; the checks below fail if none comes.
	const cycles, allocs = "mmv.goruntime.go.gc.cycles.total_gc_cycles", "mmv.goruntime.go.gc.heap.allocs_by_size_bytes.bucket"
	var ms []pcptest.Metric
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		ms = pcptest.Info(t, tmp)
		if m := pcptest.Find(ms, cycles); m != nil && m.Value != "0" && bucketSum(pcptest.Find(ms, allocs)) > 0 ||
			time.Now().After(deadline) {
			break
		}
	}
	n := 0
	for _, m := range ms {
		if strings.HasPrefix(m.Name, "mmv.goruntime.go.") {
			n++
		}
	}
	assert.Equal(t, len(Names(metrics.All(), "go")), n, "metrics of the bridge PCP shows")
	for _, c := range []struct {
		name, typ, sem, units string
	}{
		{"gc.heap.allocs_bytes", "64-bit unsigned int", "counter", "byte"},
		{"gc.heap.live_bytes", "64-bit int", "instant", "byte"},
		{"cpu.classes.total_cpu_seconds", "64-bit unsigned int", "counter", "nanosec"},
		{"sync.mutex.wait.total_seconds", "64-bit unsigned int", "counter", "nanosec"},
		{"sched.goroutines_goroutines", "64-bit int", "instant", "count"},
		{"gc.gogc_percent", "64-bit int", "instant", "none"},
		{"sched.latencies_seconds.bucket", "64-bit unsigned int", "counter", "count"},
		{"sched.latencies_seconds.count", "64-bit unsigned int", "counter", "count"},
	} {
		m := pcptest.Find(ms, "mmv.goruntime.go."+c.name)
		if !assert.NotNil(t, m, "PCP does not show %s", c.name) {
			continue
		}
		assert.False(t, m.Type != c.typ || m.Semantics != c.sem || m.Units != c.units, "%s: %s %s %q, want %s %s %q", c.name, m.Type, m.Semantics, m.Units, c.typ, c.sem, c.units)
	}
	m := pcptest.Find(ms, cycles)
	assert.False(t, m == nil || m.Value == "0", "GC cycles through PCP: %+v", m)
	h := pcptest.Find(ms, allocs)
	require.False(t, h == nil || len(h.Instances) < 10 || h.Instance("le=+Inf") == nil, "allocs-by-size buckets through PCP: %+v", h)
	assert.NotEqualValues(t, 0, bucketSum(h), "allocs-by-size buckets are all zero")
}

// bucketSum adds up the counts PCP shows for a histogram's buckets; nil
// sums to 0.
func bucketSum(h *pcptest.Metric) uint64 {
	var sum uint64
	if h == nil {
		return 0
	}
	for _, in := range h.Instances {
		var c uint64
		for _, ch := range in.Value {
			c = c*10 + uint64(ch-'0')
		}
		sum += c
	}
	return sum
}

// TestRegisterRefusedDeclaresNothing: when the registry refuses the last
// of the bridge's metrics (the program has its name), Register declares
// none of them, before or after Start.
func TestRegisterRefusedDeclaresNothing(t *testing.T) {
	names := Names(metrics.All(), "")
	last := names[len(names)-1]
	for _, started := range []bool{false, true} {
		r := mmv.NewRegistry("goruntime", &mmv.Options{Dir: t.TempDir()})
		mmv.NewGauge(r, last, "the program's own", mmv.NoUnits)
		if started {
			pcptest.NeedFileLayer(t) // unstarted, it ran above
			require.NoError(t, r.Start())
		}
		assert.ErrorIs(t, Register(r, nil), mmv.ErrDuplicate)
		for _, name := range names[:len(names)-1] {
			_, err := mmv.Declare[mmv.Counter](r, name, "", mmv.Count)
			assert.NoError(t, err, "%s is free (started %v)", name, started)
		}
		r.Close()
	}
}

// TestRegisterBucketsPastTheCaps: buckets past the registry's caps on
// instances are left out and said, the metrics declared and refreshed.
func TestRegisterBucketsPastTheCaps(t *testing.T) {
	r := mmv.NewRegistry("goruntime", &mmv.Options{Dir: t.TempDir(), MaxIndomInstances: 8})
	defer r.Close()
	assert.ErrorIs(t, Register(r, &Options{Interval: 10 * time.Millisecond}), mmv.ErrTooMany)
	pcptest.NeedFileLayer(t) // the refreshed values are the file's
	require.NoError(t, r.Start())
	assert.GreaterOrEqual(t, refreshed(t, r, "sched.goroutines_goroutines"), int64(1), "goroutines")
	dropped, err := r.Value("mmv.dropped", "cap")
	require.NoError(t, err)
	assert.Positive(t, dropped.Int())
}

// TestServedBeforeStart: a registry never started (a host without PCP,
// served by package expose) serves every runtime metric as the runtime
// counts it, refreshed by each Gather (mmv.Registry.Poll): the histograms,
// and the scalars, which were low-level Values with no storage before
// Start and were left out, unsaid (a service's goroutines, heap and GC
// cycles missing from its /metrics on a host without PCP).
func TestServedBeforeStart(t *testing.T) {
	r := mmv.NewRegistry("goruntime", &mmv.Options{Dir: t.TempDir()})
	defer r.Close()
	require.NoError(t, Register(r, &Options{Interval: time.Hour}))
	sink := make([][]byte, 0, 1000)
	for i := range 1000 {
		sink = append(sink, make([]byte, 64+i))
	}
	runtime.KeepAlive(sink)
	s := []metrics.Sample{{Name: "/gc/heap/allocs-by-size:bytes"}, {Name: "/gc/gogc:percent"}, {Name: "/cpu/classes/total:cpu-seconds"}}
	metrics.Read(s)
	var allocs uint64
	for _, c := range s[0].Value.Float64Histogram().Counts {
		allocs += c
	}
	require.Greater(t, allocs, uint64(1000), "the runtime's count")
	require.NotZero(t, s[1].Value.Uint64())
	gathered := func() map[string]*mmv.Value { // singular metrics' values
		got := map[string]*mmv.Value{}
		r.Gather(func(f *mmv.Family) {
			if len(f.Samples) == 1 && f.Samples[0].Instance == "" {
				got[f.Name] = f.Samples[0].Value
			}
		})
		return got
	}
	for _, started := range []bool{false, true} {
		if started {
			pcptest.NeedFileLayer(t)
			require.NoError(t, r.Start())
		}
		got := gathered()
		c, ok := got["gc.heap.allocs_by_size_bytes.count"]
		require.True(t, ok, "the histogram's count (started %v)", started)
		assert.GreaterOrEqual(t, uint64(c.Int()), allocs, "the histogram's count (started %v)", started)
		want := map[string]bool{}
		for _, name := range Names(metrics.All(), "") {
			if !strings.HasSuffix(name, ".bucket") {
				want[name] = true
			}
		}
		for name := range got {
			delete(want, name)
		}
		assert.Empty(t, want, "metrics not served (started %v)", started)
		if g := got["gc.gogc_percent"]; assert.NotNil(t, g, "started %v", started) {
			assert.EqualValues(t, s[1].Value.Uint64(), g.Int(), "gc.gogc_percent (started %v)", started)
		}
		if g := got["sched.goroutines_goroutines"]; assert.NotNil(t, g, "started %v", started) {
			assert.Positive(t, g.Int(), "goroutines (started %v)", started)
		}
		if g := got["cpu.classes.total_cpu_seconds"]; assert.NotNil(t, g, "started %v", started) {
			assert.GreaterOrEqual(t, g.Int(), int64(s[2].Value.Float64()*1e9), "CPU time in nanoseconds (started %v)", started)
		}
	}
}

// TestFloatTotalWrapsPastTwoTo64: a float total kept as a counter in
// nanoseconds reaches 2^64 after 584 CPU-years, 9 months of
// /cpu/classes/total:cpu-seconds at GOMAXPROCS 768; past it the counter
// wraps, as PCP reads a u64 counter, its increments right, where it
// stopped there for good, unsaid, its rate zero.
func TestFloatTotalWrapsPastTwoTo64(t *testing.T) {
	const ns = 1e9
	before, ok := total(1.8e10, ns) // seconds, below 2^64 ns
	require.True(t, ok)
	after, ok := total(1.9e10, ns) // past it
	require.True(t, ok)
	assert.EqualValues(t, uint64(1e18), after-before, "the increment across 2^64, as PCP reads a wrap")
	for _, f := range []float64{-1, math.NaN(), math.Inf(1)} {
		_, ok := total(f, ns)
		assert.False(t, ok, "%v is no total", f)
	}
}

// TestHelpFits: a description of any length is cut to a help text PCP
// keeps, valid UTF-8 (a cut within a character was not), at a word where
// one is near the cut, marked by "...".
func TestHelpFits(t *testing.T) {
	for _, d := range []string{
		"x" + strings.Repeat("é", 200),
		strings.Repeat("word ", 100),
	} {
		short, long := help(metrics.Description{Name: "/a/b:bytes", Description: d})
		for _, s := range []string{short, long} {
			assert.LessOrEqual(t, len(s), mmv.MaxStringLen)
			assert.True(t, utf8.ValidString(s), "%q", s)
			assert.True(t, strings.HasSuffix(s, "..."), "%q", s)
		}
	}
	_, long := help(metrics.Description{Name: "/a/b:bytes", Description: strings.Repeat("word ", 100)})
	assert.True(t, strings.HasSuffix(long, " word..."), "%q", long)
}
