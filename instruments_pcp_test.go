package mmv_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
)

// TestInstrumentsThroughPCP reads every instrument with PCP's real reader:
// the type, semantics and units PCP reports, and the values.
func TestInstrumentsThroughPCP(t *testing.T) {
	pcptest.MustHavePCP(t)
	tmp := t.TempDir()
	r := mmv.NewRegistry("inst", &mmv.Options{Dir: filepath.Join(tmp, "mmv")})
	c := mmv.NewCounter(r, "requests", "Requests served", mmv.Count)
	g := mmv.NewGauge(r, "ratio", "A ratio", mmv.NoUnits)
	ig := mmv.NewIntGauge(r, "in_flight", "Requests in flight", mmv.Count)
	tm := mmv.NewTimer(r, "busy", "Time busy")
	h := mmv.NewHistogram(r, "latency", "Latency", mmv.Millisecond, &mmv.HistogramOptions{Min: 1, Max: 1000, SubBuckets: 4})
	cv := mmv.NewCounterVec(r, "by_route", "Requests by route", mmv.Count, "route")
	hv := mmv.NewHistogramVec(r, "size", "Sizes by route", mmv.Byte, &mmv.HistogramOptions{Buckets: []float64{256, 1024, 4096}}, "route")
	for _, route := range []string{"/a", "/b"} {
		cv.With(route)
		hv.With(route)
	}
	c.Add(5) // before Start
	startOrSkip(t, r)
	defer r.Close()
	c.Inc()
	g.Set(0.25)
	ig.Add(3)
	tm.Observe(1500 * time.Microsecond)
	for i := 1; i <= 100; i++ {
		h.Observe(float64(i))
	}
	cv.With("/b").Add(7)
	hv.With("/a").Observe(1000)
	r.Close() // refreshes the histograms a last time; the file stays

	ms := pcptest.Info(t, tmp)
	for _, w := range []struct {
		name, inst, typ, sem, units, value string
	}{
		{"requests", "", "64-bit unsigned int", "counter", "count", "6"},
		{"ratio", "", "double", "instant", "none", "0.25"},
		{"in_flight", "", "64-bit int", "instant", "count", "3"},
		{"busy", "", "64-bit unsigned int", "counter", "nanosec", "1500000"},
		{"latency.count", "", "64-bit unsigned int", "counter", "count", "100"},
		{"latency.sum", "", "double", "counter", "millisec", "5050"},
		{"latency.min", "", "double", "instant", "millisec", "1"},
		{"latency.max", "", "double", "instant", "millisec", "100"},
		{"latency.mean", "", "double", "instant", "millisec", "50.5"},
		{"latency.p50", "", "double", "instant", "millisec", fmtF(h.Quantile(0.5))},
		{"latency.p999", "", "double", "instant", "millisec", fmtF(h.Quantile(0.999))},
		{"latency.bucket", "1", "64-bit unsigned int", "counter", "count", "1"}, // 1, at its bound
		{"latency.bucket", "1.25", "64-bit unsigned int", "counter", "count", "0"},
		{"latency.bucket", "2", "64-bit unsigned int", "counter", "count", "1"},
		{"latency.bucket", "+Inf", "64-bit unsigned int", "counter", "count", "0"},
		{"by_route", "route=/b", "64-bit unsigned int", "counter", "count", "7"},
		{"size.count", "route=/a", "64-bit unsigned int", "counter", "count", "1"},
		{"size.p99", "route=/a", "double", "instant", "byte", "1000"},
		{"size.bucket", "route=/a,le=1024", "64-bit unsigned int", "counter", "count", "1"},
	} {
		m := pcptest.Find(ms, "mmv.inst."+w.name)
		if !assert.NotNil(t, m, "PCP does not show mmv.inst.%s", w.name) {
			continue
		}
		assert.False(t, m.Type != w.typ || m.Semantics != w.sem || m.Units != w.units, "mmv.inst.%s: %s, %s, %q; want %s, %s, %q", w.name, m.Type, m.Semantics, m.Units, w.typ, w.sem, w.units)
		v := m.Value
		if w.inst != "" {
			in := m.Instance(w.inst)
			if !assert.NotNil(t, in, "mmv.inst.%s has no instance %q", w.name, w.inst) {
				continue
			}
			v = in.Value
		}
		assert.Equal(t, w.value, v, "mmv.inst.%s[%s]", w.name, w.inst)
	}
	m := pcptest.Find(ms, "mmv.inst.latency.bucket")
	assert.False(t, m == nil || len(m.Instances) != 42, "latency buckets: %+v", m)
}

// fmtF formats a double as pminfo prints it.
func fmtF(f float64) string { return strconv.FormatFloat(f, 'g', 16, 64) }

// TestTimerRateThroughPMCD runs what docs/instruments.md shows of a Timer: pmval,
// through pmcd, converts its nanoseconds to time utilization, the average
// number of goroutines inside the timed code, and pmrep prints it in
// seconds per second when told -y sec.
func TestTimerRateThroughPMCD(t *testing.T) {
	t.Parallel() // it waits on pmval and pmrep
	p := pcptest.MustHavePMCD(t)
	name := fmt.Sprintf("timer%d", os.Getpid())
	pcptest.RemoveClosedRecords(t, p.Dir, name)
	r := mmv.NewRegistry(name, &mmv.Options{Dir: p.Dir, Flags: mmv.Process})
	defer r.Close()
	tm := mmv.NewTimer(r, "work", "Time spent working")
	startOrSkip(t, r)
	metric := "mmv." + name + ".work"
	require.Eventually(t, func() bool {
		ms, err := p.Fetch(context.Background(), metric)
		return err == nil && len(ms) == 1
	}, 10*time.Second, 50*time.Millisecond, "pmcd's agent loads the file")

	// Two goroutines always busy: the timer gains two seconds a second.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		last := time.Now()
		for ctx.Err() == nil {
			time.Sleep(10 * time.Millisecond)
			now := time.Now()
			tm.Observe(2 * now.Sub(last))
			last = now
		}
	}()

	run := func(env []string, name string, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		assert.NoError(t, err, "%s: %s", name, out) // not require: pmrep runs in a goroutine of its own
		return string(out)
	}
	// The samples: the last field of each line after the header's last
	// line (pmval's "interval:", pmrep's units), but pmrep's first, N/A
	// until it has two fetches to make a rate of.
	rates := func(out, after string) []float64 {
		t.Helper()
		_, samples, ok := strings.Cut(out, after)
		require.True(t, ok, "no %q in %s", after, out)
		var xs []float64
		for _, line := range strings.Split(samples, "\n")[1:] {
			if f := strings.Fields(line); len(f) > 0 && f[len(f)-1] != "N/A" {
				x, err := strconv.ParseFloat(f[len(f)-1], 64)
				require.NoError(t, err, "sample line %q", line)
				xs = append(xs, x)
			}
		}
		return xs
	}
	// pmval and pmrep sample the same two seconds, side by side.
	_, err := exec.LookPath("/usr/bin/pmrep")
	hasPmrep := err == nil
	var pmrep string
	var wg sync.WaitGroup
	if hasPmrep {
		wg.Go(func() {
			pmrep = run([]string{"PCP_TMP_DIR=", "PATH=/usr/bin:" + os.Getenv("PATH")}, "/usr/bin/pmrep", "-t", "0.5", "-s", "4", "-y", "sec", metric)
		})
	}
	pmval := run([]string{"PCP_TMP_DIR="}, "pmval", "-t", "0.5", "-s", "4", metric)
	wg.Wait()
	assert.Contains(t, pmval, "units:     nanosec (converting to time utilization)")
	xs := rates(pmval, "interval:")
	require.NotEmpty(t, xs, "pmval printed no sample:\n%s", pmval)
	for _, x := range xs {
		assert.InDelta(t, 2, x, 0.5, "pmval's utilization:\n%s", pmval)
	}
	if !hasPmrep {
		return
	}
	xs = rates(pmrep, "s/s")
	require.NotEmpty(t, xs, "pmrep printed no sample:\n%s", pmrep)
	for _, x := range xs {
		assert.InDelta(t, 2, x, 0.5, "pmrep -y sec:\n%s", pmrep)
	}
}

// TestHistogramContendedExactThroughPCP: goroutines observing one
// histogram and one of a vector's at once, more of them than cores, while
// the statistics are refreshed every few milliseconds, each goroutine on
// the stripe its stack picks (histogram.go): PCP's reader then shows a
// count equal to the sum of the buckets and to the observations made, each
// bucket's count exact, and the exact sum (integers, so no rounding).
func TestHistogramContendedExactThroughPCP(t *testing.T) {
	pcptest.MustHavePCP(t)
	tmp := t.TempDir()
	r := mmv.NewRegistry("stripes", &mmv.Options{Dir: filepath.Join(tmp, "mmv")})
	opts := &mmv.HistogramOptions{Buckets: []float64{10, 20, 30, 40}, Interval: 2 * time.Millisecond}
	h := mmv.NewHistogram(r, "latency", "Latency", mmv.Millisecond, opts)
	hv := mmv.NewHistogramVec(r, "size", "Sizes", mmv.Byte, opts, "route")
	startOrSkip(t, r)
	defer r.Close()
	const goroutines, each = 8, 20000
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			v := hv.With("/a")
			for i := range each {
				x := float64((g*each+i)%50 + 1) // 1..50, ten to a bucket
				h.Observe(x)
				v.Observe(x)
			}
		})
	}
	wg.Wait()
	r.Close() // refreshes the histograms a last time; the file stays

	ms := pcptest.Info(t, tmp)
	const n = goroutines * each
	want := map[string]string{"count": strconv.Itoa(n), "sum": strconv.Itoa(n / 50 * (50 * 51 / 2))}
	for _, le := range []string{"10", "20", "30", "40", "+Inf"} {
		want["bucket/"+le] = strconv.Itoa(n / 5)
	}
	for prefix, inst := range map[string]string{"latency": "", "size": "route=/a"} {
		var buckets int
		for what, w := range want {
			name, i := prefix+"."+what, inst
			if b, ok := strings.CutPrefix(what, "bucket/"); ok {
				name, i = prefix+".bucket", b
				if inst != "" {
					i = inst + ",le=" + b
				}
			}
			m := pcptest.Find(ms, "mmv.stripes."+name)
			if !assert.NotNil(t, m, "PCP does not show mmv.stripes.%s", name) {
				continue
			}
			v := m.Value
			if i != "" {
				in := m.Instance(i)
				if !assert.NotNil(t, in, "mmv.stripes.%s has no instance %q", name, i) {
					continue
				}
				v = in.Value
			}
			assert.Equal(t, w, v, "mmv.stripes.%s[%s]", name, i)
			if name == prefix+".bucket" {
				c, err := strconv.Atoi(v)
				require.NoError(t, err)
				buckets += c
			}
		}
		assert.Equal(t, n, buckets, "%s: the buckets add up to the count", prefix)
	}
}

// TestHistogramLongHelp: the lines of a histogram's help after the first
// are the long help of each of its metrics (pminfo -T), as a counter's are
// of its one, h.bucket's followed by what its instances are, and Gather's
// Family's LongHelp.
func TestHistogramLongHelp(t *testing.T) {
	tmp, dir := pcpDir(t)
	r := newRegistry(t, "histlong", dir, mmv.Options{Cluster: 401})
	const long = "Measured from accept to the last byte written."
	mmv.NewHistogram(r, "lat", "Request latency\n"+long, mmv.Second, nil)
	mmv.NewCounter(r, "c", "Requests\n"+long, mmv.Count)
	startOrSkip(t, r)

	ms := pcptest.Info(t, tmp)
	require.Equal(t, long, get(t, ms, "mmv.histlong.c").LongHelp, "a counter's long help (control)")
	hist := under(ms, "mmv.histlong.lat.")
	require.Len(t, hist, 10, "bucket, count, sum, min, max, mean and 4 quantiles")
	for name, m := range hist {
		if name == "mmv.histlong.lat.bucket" {
			assert.True(t, strings.HasPrefix(m.LongHelp, long+"\n"), "%s: %q", name, m.LongHelp)
			assert.Contains(t, m.LongHelp, "upper bounds", "%s says what its instances are", name)
			continue
		}
		assert.Equal(t, long, m.LongHelp, "%s", name)
	}

	var gathered string
	r.Gather(func(f *mmv.Family) {
		if f.Name == "lat" {
			gathered = f.LongHelp
		}
	})
	assert.Equal(t, long, gathered, "Gather's histogram Family")
}

// TestHistogramBucketIDsFollowBounds: a new version that changes a
// histogram's buckets keeps each bound's instance id, as PCP's reader
// shows them: a client that resolved le=2 once (pmval -i, pmrep) reads
// le=2's count, or none. Numbered by position, le=2's id went to le=4 when a
// bucket below it was added, and le=2 took le=1's: the client showed
// another bucket's counts under the old bound, no one told.
func TestHistogramBucketIDsFollowBounds(t *testing.T) {
	tmp, dir := pcpDir(t)
	run := func(buckets []float64) map[string]int {
		r := newRegistry(t, "hb", dir, mmv.Options{})
		h := mmv.NewHistogram(r, "lat", "", mmv.Second, &mmv.HistogramOptions{Buckets: buckets})
		startOrSkip(t, r)
		h.Observe(1.5)
		require.NoError(t, r.Flush())
		ids := instanceIDs(t, pcptest.Info(t, tmp), "mmv.hb.lat.bucket")
		require.NoError(t, r.Close())
		return ids
	}
	before := run([]float64{2, 4})
	after := run([]float64{1, 2, 4, 8})
	require.Len(t, after, 5)
	for bound, id := range before {
		assert.Equal(t, id, after[bound], "the id of bucket le=%s", bound)
	}
	seen := map[int]string{}
	for bound, id := range after {
		assert.NotContains(t, seen, id, "bounds %s and %s", seen[id], bound)
		seen[id] = bound
	}
}

// TestBucketIDsCollide: two bounds whose names hash to one id
// (50988 and 309602: FNV-1a in the lower half of the ids) get distinct
// ids, the second the next one, and each bucket's count reads under its
// own bound through PCP's reader. The limitation operating.md states,
// as for vectors' values: the id a bound takes alone goes to the lower
// bound of the two once both are declared.
func TestBucketIDsCollide(t *testing.T) {
	tmp, dir := pcpDir(t)
	run := func(buckets []float64, observe ...float64) ([]pcptest.Instance, map[string]int) {
		r := newRegistry(t, "hc", dir, mmv.Options{})
		h := mmv.NewHistogram(r, "lat", "", mmv.Second, &mmv.HistogramOptions{Buckets: buckets})
		startOrSkip(t, r)
		for _, v := range observe {
			h.Observe(v)
		}
		// Close refreshes the histogram a last time and leaves the file:
		// read before it, the counts were those of the poll's run at
		// Start's end, zeros when it ran before these observations.
		require.NoError(t, r.Close())
		ms := pcptest.Info(t, tmp)
		return get(t, ms, "mmv.hc.lat.bucket").Instances, instanceIDs(t, ms, "mmv.hc.lat.bucket")
	}
	alone, aloneIDs := run([]float64{309602}, 100000)
	require.Len(t, alone, 2)
	insts, ids := run([]float64{50988, 309602}, 40000, 100000, 100000)
	require.Len(t, insts, 3)
	counts := map[string]string{}
	for _, in := range insts {
		counts[in.Name] = in.Value
	}
	assert.Equal(t, map[string]string{"50988": "1", "309602": "2", "+Inf": "0"}, counts, "each bucket's count under its bound")
	assert.Equal(t, ids["50988"]+1, ids["309602"], "the colliding bound takes the next id")
	assert.Equal(t, aloneIDs["309602"], ids["50988"], "309602's id alone goes to 50988, the lower")
	assert.Equal(t, aloneIDs["+Inf"], ids["+Inf"], "+Inf keeps its id")
}

// TestLeLabelByHandRefused: a label le added by hand where PCP would
// show it on a histogram's buckets (the registry's, the buckets'
// metric, their indom, one bucket) is refused: the buckets carry their
// bound in their names, not as a label, so PCP showed that le on every
// bucket, where a tool grouping by le read another bound. le stays a
// label like any other where no bucket is: a program's own indom, a
// histogram's statistics.
func TestLeLabelByHandRefused(t *testing.T) {
	tmp, dir := pcpDir(t)
	r := newRegistry(t, "lehand", dir, mmv.Options{})
	bounds := &mmv.HistogramOptions{Buckets: []float64{1, 2}}
	mmv.NewHistogram(r, "lat", "", mmv.Second, bounds).Observe(1.5)
	mmv.NewHistogramVec(r, "vlat", "", mmv.Second, bounds, "route").With("/a").Observe(1.5)
	require.NoError(t, r.AddIndom(mmv.Indom{Serial: 7, Instances: []mmv.Instance{{ID: 1, Name: "fast"}}}))
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "mine", Type: mmv.Uint64, Semantics: mmv.SemCounter, Units: mmv.Count, Indom: 7}))
	startOrSkip(t, r)
	le := func(v string) mmv.Label { return mmv.Label{Name: "le", Value: v} }
	assert.ErrorIs(t, r.AddLabel(le("registry")), mmv.ErrDuplicate, "the registry's")
	snap, err := r.Snapshot()
	require.NoError(t, err)
	buckets := 0
	for _, m := range snap {
		if !strings.HasSuffix(m.Name, ".bucket") {
			continue
		}
		buckets++
		assert.ErrorIs(t, r.AddMetricLabel(m.Name, le("metric")), mmv.ErrDuplicate, m.Name)
		assert.ErrorIs(t, r.AddIndomLabel(m.Indom, le("indom")), mmv.ErrDuplicate, m.Name)
		err := r.AddInstanceLabel(m.Indom, m.Values[0].ID, le("instance"))
		assert.ErrorIs(t, err, mmv.ErrDuplicate, m.Name)
		assert.ErrorContains(t, err, "le")
	}
	require.Equal(t, 2, buckets)
	assert.NoError(t, r.AddMetricLabel("lat.count", le("count")), "a statistic has no bucket")
	assert.NoError(t, r.AddInstanceLabel(7, 1, le("0.25")), "a program's own indom")
	require.NoError(t, r.Flush())
	var shown []string // where PCP shows a label le, and its value (JSON)
	for _, m := range pcptest.Info(t, tmp) {
		if v, ok := m.Label("le"); ok {
			shown = append(shown, m.Name+" "+v)
		}
		for _, in := range m.Instances {
			if v, ok := in.Label("le"); ok {
				shown = append(shown, m.Name+"["+in.Name+"] "+v)
			}
		}
	}
	assert.ElementsMatch(t, []string{"mmv.lehand.lat.count \"count\"", "mmv.lehand.mine[fast] \"0.25\""}, shown)
}

// TestRegistryLabelNamedAsVectorsRefused: a registry label named as a
// vector's label is refused, added after the vector or before it (the
// vector then refused, all of it): PCP showed the registry's value on
// each of the vector's instances without a label of its own, route="web"
// on the instance route=/a. Other names stay free.
func TestRegistryLabelNamedAsVectorsRefused(t *testing.T) {
	tmp, dir := pcpDir(t)
	r := newRegistry(t, "reglabel", dir, mmv.Options{})
	v := mmv.NewCounterVec(r, "requests", "", mmv.Count, "route")
	v.SetInstanceLabels(false)
	v.With("/a").Inc()
	mmv.NewHistogramVec(r, "lat", "", mmv.Second, nil, "method").With("GET").Observe(1)
	for _, name := range []string{"route", "method"} {
		err := r.AddLabel(mmv.Label{Name: name, Value: "web"})
		assert.ErrorIs(t, err, mmv.ErrDuplicate, name)
		assert.ErrorContains(t, err, name)
	}
	require.NoError(t, r.AddLabel(mmv.Label{Name: "team", Value: "web"}))
	startOrSkip(t, r)
	for _, name := range []string{"team", "region"} { // added before the vectors, or after Start
		if name == "region" {
			require.NoError(t, r.AddLabel(mmv.Label{Name: name, Value: "eu"}))
		}
		_, err := mmv.DeclareVec[mmv.Counter](r, "calls_"+name, "", mmv.Count, "peer", name)
		assert.ErrorIs(t, err, mmv.ErrDuplicate, name)
		assert.ErrorContains(t, err, `label "`+name+`"`)
		for _, declare := range []func(){ // a programming error: the New functions panic
			func() { mmv.NewGaugeVec(r, "level_"+name, "", mmv.Count, name) },
			func() { mmv.NewHistogramVec(r, "size_"+name, "", mmv.Byte, nil, name) },
		} {
			func() {
				defer func() {
					err, _ := recover().(error)
					assert.ErrorIs(t, err, mmv.ErrDuplicate, name)
				}()
				declare()
			}()
		}
	}
	// Nothing of the refused vectors is left: their names declare again.
	mmv.NewCounterVec(r, "calls_team", "", mmv.Count, "peer").With("db").Inc()
	mmv.NewHistogramVec(r, "size_team", "", mmv.Byte, nil, "peer").With("db").Observe(1)
	require.NoError(t, r.Flush())
	assert.Equal(t, []mmv.Label{{Name: "team", Value: "web"}, {Name: "region", Value: "eu"}}, r.Labels())
	var shown []string // the labels route and method PCP shows on instances
	for _, m := range pcptest.Info(t, tmp) {
		for _, in := range m.Instances {
			for _, name := range []string{"route", "method", "team"} {
				if v, ok := in.Label(name); ok && (name != "team" || !strings.Contains(m.Name, "_team")) {
					shown = append(shown, m.Name+"["+in.Name+"] "+name+"="+v)
				}
			}
		}
	}
	assert.NotContains(t, strings.Join(shown, " "), `route="web"`)
	assert.NotContains(t, strings.Join(shown, " "), `method="web"`)
	assert.Contains(t, shown, `mmv.reglabel.lat.count[method=GET] method="GET"`)
}

// TestHandLabelNamedAsInstancesRefused: a label added by hand to a
// metric, indom or instance whose instance names carry a label of that
// name (a vector's, a histogram's buckets' le after their vector's) is
// refused, as one on a vector's instance was: PCP showed it on every instance not
// labelled itself, contradicting its name. The bridges publish buckets
// so (prombridge, otelexporter, goruntime: a counter vector with label
// le, SetInstanceLabels(false)), and a metric's or indom's le showed on
// each of them, another bound, as a route did on a histogram vector's
// buckets, which no instance label names. Other names stay free.
func TestHandLabelNamedAsInstancesRefused(t *testing.T) {
	tmp, dir := pcpDir(t)
	r := newRegistry(t, "vechand", dir, mmv.Options{})
	b, err := mmv.DeclareVec[mmv.Counter](r, "bridged.bucket", "", mmv.Count, "route", "le")
	require.NoError(t, err)
	b.SetInstanceLabels(false) // as the bridges do
	b.With("/a", "0.25").Add(1)
	hv := mmv.NewHistogramVec(r, "lat", "", mmv.Second, &mmv.HistogramOptions{Buckets: []float64{1}}, "route")
	hv.With("/a").Observe(0.5)
	startOrSkip(t, r)
	snap, err := r.Snapshot()
	require.NoError(t, err)
	indom, first := map[string]uint32{}, map[string]int32{}
	for _, m := range snap {
		indom[m.Name] = m.Indom
		if len(m.Values) > 0 {
			first[m.Name] = m.Values[0].ID
		}
	}
	for _, c := range []struct{ metric, label, vec string }{
		{"bridged.bucket", "le", `"bridged.bucket"`}, {"bridged.bucket", "route", `"bridged.bucket"`},
		{"lat.bucket", "route", `"lat"`}, {"lat.count", "route", `"lat"`},
	} {
		l := mmv.Label{Name: c.label, Value: "hand"}
		assert.ErrorIs(t, r.AddMetricLabel(c.metric, l), mmv.ErrDuplicate, "%s's %s", c.metric, c.label)
		err := r.AddIndomLabel(indom[c.metric], l)
		assert.ErrorIs(t, err, mmv.ErrDuplicate, "%s's indom's %s", c.metric, c.label)
		assert.ErrorContains(t, err, c.label)
		err = r.AddInstanceLabel(indom[c.metric], first[c.metric], l)
		assert.ErrorIs(t, err, mmv.ErrDuplicate, "%s's first instance's %s", c.metric, c.label)
		assert.ErrorContains(t, err, c.vec, "the vector named")
	}
	free := mmv.Label{Name: "team", Value: "web"}
	assert.NoError(t, r.AddMetricLabel("bridged.bucket", free))
	assert.NoError(t, r.AddIndomLabel(indom["lat.bucket"], free))
	require.NoError(t, r.Flush())
	var shown []string // the labels le and route PCP shows, and where
	for _, m := range pcptest.Info(t, tmp) {
		for _, in := range m.Instances {
			for _, name := range []string{"le", "route"} {
				if v, ok := in.Label(name); ok {
					shown = append(shown, m.Name+"["+in.Name+"] "+name+"="+v)
				}
			}
		}
	}
	assert.ElementsMatch(t, []string{
		`mmv.vechand.lat.count[route=/a] route="/a"`, `mmv.vechand.lat.sum[route=/a] route="/a"`,
		`mmv.vechand.lat.min[route=/a] route="/a"`, `mmv.vechand.lat.max[route=/a] route="/a"`,
		`mmv.vechand.lat.mean[route=/a] route="/a"`, `mmv.vechand.lat.p50[route=/a] route="/a"`,
		`mmv.vechand.lat.p90[route=/a] route="/a"`, `mmv.vechand.lat.p99[route=/a] route="/a"`,
		`mmv.vechand.lat.p999[route=/a] route="/a"`,
	}, shown, "the instances' own labels alone")
}

// TestHandLabelNamedAsPCPsRefused: a label added by hand (AddLabel,
// AddMetricLabel, AddIndomLabel, AddInstanceLabel) named as one PCP puts
// on every metric itself is refused with ErrDuplicate, as a vector's is:
// PCP showed it in place of its own at every level, hostname="pod-7" for
// the registry's, machineid for the metric's, domainname on every
// instance for the indom's, userid on the one instance, so that pmseries
// gave the series another host's identity.
func TestHandLabelNamedAsPCPsRefused(t *testing.T) {
	tmp, dir := pcpDir(t)
	r := newRegistry(t, "pcphand", dir, mmv.Options{})
	require.NoError(t, r.AddIndom(mmv.Indom{Serial: 1, Instances: []mmv.Instance{{ID: 1, Name: "one"}, {ID: 2, Name: "two"}}}))
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "per", Type: mmv.Uint32, Semantics: mmv.SemInstant, Indom: 1}))
	adds := []struct {
		subject string
		add     func(mmv.Label) error
	}{
		{"registry", r.AddLabel},
		{`metric "per"`, func(l mmv.Label) error { return r.AddMetricLabel("per", l) }},
		{"indom 1", func(l mmv.Label) error { return r.AddIndomLabel(1, l) }},
		{"indom 1 instance 2", func(l mmv.Label) error { return r.AddInstanceLabel(1, 2, l) }},
	}
	for _, name := range mmv.PCPLabelNames() {
		for _, a := range adds {
			err := a.add(mmv.Label{Name: name, Value: "ours"})
			if assert.ErrorIs(t, err, mmv.ErrDuplicate, "%s label %s", a.subject, name) {
				assert.ErrorContains(t, err, a.subject+` label "`+name+`"`)
				assert.ErrorContains(t, err, "PCP")
			}
		}
	}
	startOrSkip(t, r)
	m := get(t, pcptest.Info(t, tmp), "mmv.pcphand.per")
	require.Len(t, m.Instances, 2)
	for _, name := range mmv.PCPLabelNames() {
		got, _ := m.Label(name)
		assert.NotEqual(t, `"ours"`, got, "PCP shows the metric's %s as ours", name)
		for _, in := range m.Instances {
			got, _ := in.Label(name)
			assert.NotEqual(t, `"ours"`, got, "PCP shows %s of instance %s as ours", name, in.Name)
		}
	}
}

// TestVecLabelNamedAsPCPsRefused: a vector's label named as one PCP puts
// on every metric itself, the host's context labels (hostname, userid...)
// and the agent's (agent), is refused with ErrDuplicate, as one named as
// the registry's is: PCP showed that value on each of the vector's
// instances without a label of its own (a histogram vector's buckets,
// SetInstanceLabels(false), past the label budget), hostname="<this
// host>" on the bucket hostname=web1,le=1, userid=0 on userid=1000.
func TestVecLabelNamedAsPCPsRefused(t *testing.T) {
	tmp, dir := pcpDir(t)
	r := newRegistry(t, "pcplabels", dir, mmv.Options{})
	names := mmv.PCPLabelNames()
	require.Subset(t, names, []string{"agent", "hostname", "domainname", "machineid", "userid", "groupid"}, "as pminfo -l shows them")
	declared := map[string]string{} // metric to the label its instance names carry
	for _, name := range names {
		v, err := mmv.DeclareVec[mmv.Counter](r, "c_"+name, "", mmv.Count, "peer", name)
		if assert.ErrorIs(t, err, mmv.ErrDuplicate, name) {
			assert.ErrorContains(t, err, `vector "c_`+name+`" label "`+name+`"`)
			assert.ErrorContains(t, err, "PCP")
		} else {
			v.SetInstanceLabels(false)
			v.With("db", "1000").Inc()
			declared["c_"+name] = name
		}
		func() {
			defer func() {
				if err, _ := recover().(error); err != nil {
					assert.ErrorIs(t, err, mmv.ErrDuplicate, name)
				}
			}()
			mmv.NewHistogramVec(r, "h_"+name, "", mmv.Second, &mmv.HistogramOptions{Buckets: []float64{1}}, name).With("1000").Observe(1)
			declared["h_"+name+".bucket"] = name
		}()
	}
	startOrSkip(t, r)
	require.NoError(t, r.Flush())
	ms := pcptest.Info(t, tmp)
	for metric, name := range declared {
		m := get(t, ms, "mmv.pcplabels."+metric)
		for _, in := range m.Instances {
			if got, ok := in.Label(name); ok {
				assert.Equal(t, `"1000"`, got, "%s[%s]: PCP shows %s=%s", metric, in.Name, name, got)
			}
		}
	}
}
