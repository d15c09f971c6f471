package mmv_test

import (
	"path/filepath"
	"strconv"
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
	require.NoError(t, r.Start())
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
		{"busy", "", "64-bit int", "counter", "microsec", "1500"},
		{"latency.count", "", "64-bit unsigned int", "counter", "count", "100"},
		{"latency.sum", "", "double", "counter", "millisec", "5050"},
		{"latency.min", "", "double", "instant", "millisec", "1"},
		{"latency.max", "", "double", "instant", "millisec", "100"},
		{"latency.mean", "", "double", "instant", "millisec", "50.5"},
		{"latency.p50", "", "double", "instant", "millisec", fmtF(h.Quantile(0.5))},
		{"latency.p999", "", "double", "instant", "millisec", fmtF(h.Quantile(0.999))},
		{"latency.bucket", "1.25", "64-bit unsigned int", "counter", "count", "1"},
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
