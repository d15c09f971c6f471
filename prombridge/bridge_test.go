package prombridge_test

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/prombridge"
)

// TestApplicationMetrics: each kind of family reaches PCP with its values,
// type, semantics, units, help and labels.
func TestApplicationMetrics(t *testing.T) {
	pcptest.MustHavePCP(t)
	pr := prometheus.NewRegistry()
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "http_requests_total", Help: "Requests served.\nBy code and method.",
		ConstLabels: prometheus.Labels{"service": "api"}}, []string{"code", "method", "path"})
	cpu := prometheus.NewCounter(prometheus.CounterOpts{Name: "work_cpu_seconds_total", Help: "CPU time spent working."})
	temp := prometheus.NewGauge(prometheus.GaugeOpts{Name: "room_temperature_celsius", Help: "Temperature of the room."})
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "request_duration_seconds", Help: "Request latency.",
		Buckets: []float64{0.01, 0.1, 1}}, []string{"route"})
	size := prometheus.NewSummary(prometheus.SummaryOpts{Name: "response_size_bytes", Help: "Response sizes.",
		Objectives: map[float64]float64{0.5: 0.05, 0.9: 0.01}})
	uptime := prometheus.NewUntypedFunc(prometheus.UntypedOpts{Name: "uptime_ratio", Help: "Untyped."}, func() float64 { return 0.25 })
	long := prometheus.NewGauge(prometheus.GaugeOpts{Name: "long_help", Help: strings.Repeat("é", 200)})
	pr.MustRegister(requests, cpu, temp, latency, size, uptime, long)
	requests.WithLabelValues("200", "GET", "/").Add(3)
	requests.WithLabelValues("500", "POST", "/a b,c=Zürich").Inc()
	cpu.Add(1.25)
	temp.Set(21.5)
	for _, v := range []float64{0.005, 0.05, 0.5, 5} {
		latency.WithLabelValues("/api").Observe(v)
	}
	for _, v := range []float64{100, 200, 300} {
		size.Observe(v)
	}

	r, tmp := newRegistry(t)
	b, err := prombridge.Register(r, pr, nil)
	require.NoError(t, err)
	pcptest.NeedFileLayer(t)
	require.NoError(t, r.Start())
	require.NoError(t, b.Refresh())
	ms := read(t, r, tmp)

	m := find(t, ms, "http_requests")
	assert.Equal(t, "counter", m.Semantics)
	assert.Equal(t, "64-bit unsigned int", m.Type)
	assert.Equal(t, "count", m.Units)
	assert.Equal(t, "Requests served.", m.ShortHelp)
	assert.Equal(t, "By code and method.", m.LongHelp)
	require.Len(t, m.Instances, 2)
	in := instance(t, m, "code=200,method=GET,path=/,service=api")
	assert.Equal(t, "3", in.Value)
	l, _ := in.Label("service")
	assert.Equal(t, `"api"`, l, "constant labels are instance labels")
	in = instance(t, m, "code=500,method=POST,path=/a%20b%2Cc%3DZürich,service=api")
	assert.Equal(t, "1", in.Value)
	l, _ = in.Label("path")
	assert.Equal(t, `"/a b,c=Zürich"`, l)

	m = find(t, ms, "work_cpu_seconds")
	assert.True(t, m.Singular())
	assert.Equal(t, "microsec", m.Units)
	assert.Equal(t, "1250000", m.Value, "1.25 s in µs")

	m = find(t, ms, "room_temperature_celsius")
	assert.Equal(t, "instant", m.Semantics)
	assert.Equal(t, "double", m.Type)
	assert.Equal(t, "none", m.Units)
	assert.Equal(t, "21.5", m.Value)
	assert.Equal(t, "0.25", find(t, ms, "uptime_ratio").Value)

	m = find(t, ms, "request_duration_seconds.bucket")
	assert.Equal(t, "counter", m.Semantics)
	for le, n := range map[string]string{"0.01": "1", "0.1": "2", "1": "3", "+Inf": "4"} {
		assert.Equal(t, n, instance(t, m, "route=/api,le="+le).Value, "le=%s", le)
	}
	m = find(t, ms, "request_duration_seconds.sum")
	assert.Equal(t, "microsec", m.Units)
	assert.Equal(t, "5555000", instance(t, m, "route=/api").Value)
	assert.Equal(t, "4", instance(t, find(t, ms, "request_duration_seconds.count"), "route=/api").Value)

	m = find(t, ms, "response_size_bytes.quantile")
	assert.Equal(t, "byte", m.Units)
	assert.Equal(t, "200", instance(t, m, "quantile=0.5").Value)
	assert.Equal(t, "300", instance(t, m, "quantile=0.9").Value)
	assert.Equal(t, "600", find(t, ms, "response_size_bytes.sum").Value)
	assert.Equal(t, "3", find(t, ms, "response_size_bytes.count").Value)

	assert.Equal(t, strings.Repeat("é", 126)+"...", find(t, ms, "long_help").ShortHelp, "400 bytes cut to 255 with its mark, on a rune")

	st := b.Stats()
	assert.Equal(t, 7, st.Families)
	assert.Equal(t, 8, st.Series, "2 requests, 1 latency, 5 singular families")
	assert.NoError(t, b.Err())
}

// unitScale returns the factor of the scale PCP prints in units such as
// "count x 10^-3" (1 when none).
func unitScale(units string) float64 {
	if m := regexp.MustCompile(`x 10\^(-?\d+)`).FindStringSubmatch(units); m != nil {
		e, _ := strconv.Atoi(m[1])
		return math.Pow(10, float64(e))
	}
	return 1
}

// TestFractionalSumsKept: a histogram's or summary's sum, fractional by
// nature, keeps its fraction in units that are not a time or a space:
// counts and dimensionless values in thousandths, as otelexporter keeps
// float totals. A ratio histogram that observed 0.2 showed a sum of 0
// beside a count of 1, its mean and rate 0 in PCP. A counter keeps whole
// units, rounded, but in seconds and milliseconds (microseconds): most
// counters count whole events (requests_total), which thousandths would
// show a thousandfold, and a total's rounding is at most half a unit,
// never accumulated.
func TestFractionalSumsKept(t *testing.T) {
	pcptest.MustHavePCP(t)
	reg := prometheus.NewRegistry()
	requests := prometheus.NewCounter(prometheus.CounterOpts{Name: "requests_total", Help: "r"})
	work := prometheus.NewCounter(prometheus.CounterOpts{Name: "work_units_total", Help: "work done, in fractional units"})
	ratio := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "cache_fill_ratio", Help: "fill ratio", Buckets: []float64{0.25, 0.5, 1}})
	items := prometheus.NewSummary(prometheus.SummaryOpts{Name: "batch_items_total", Help: "items per batch"})
	wait := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "queue_wait", Help: "in minutes (Options.Units)", Buckets: []float64{1}})
	chunk := prometheus.NewSummary(prometheus.SummaryOpts{Name: "chunk", Help: "in Kbytes (Options.Units)"})
	reg.MustRegister(requests, work, ratio, items, wait, chunk)
	requests.Add(3)
	work.Add(2.4)
	ratio.Observe(0.2)
	items.Observe(2.5)
	wait.Observe(0.5)
	chunk.Observe(1.5)
	units := func(family string) mmv.Units {
		switch family {
		case "queue_wait":
			return mmv.Minute
		case "chunk":
			return mmv.Kbyte
		}
		return prombridge.Units(family)
	}
	r, tmp := newRegistry(t)
	b := started(t, r, reg, &prombridge.Options{Interval: time.Hour, Units: units})
	require.NoError(t, b.Refresh())
	ms := read(t, r, tmp)

	for _, c := range []struct {
		metric, units string
		want          float64
	}{
		{"requests", "count", 3},
		{"work_units", "count", 2}, // 2.4, rounded: whole units
		{"cache_fill_ratio.sum", "x 10^-3", 0.2},
		{"cache_fill_ratio.count", "count", 1},
		{"batch_items_total.sum", "count x 10^-3", 2.5},
		{"queue_wait.sum", "microsec", 30e6}, // half a minute
		{"chunk.sum", "byte", 1536},          // 1.5 Kbyte
	} {
		m := find(t, ms, c.metric)
		assert.Equal(t, c.units, m.Units, c.metric)
		v, err := strconv.ParseFloat(m.Value, 64)
		require.NoError(t, err)
		assert.InDelta(t, c.want, v*unitScale(m.Units), 1e-9, "PCP shows %s = %s [%s] for a gathered %v", c.metric, m.Value, m.Units, c.want)
	}
	assert.Contains(t, find(t, ms, "cache_fill_ratio.sum").LongHelp, `integer counter of "x 10^-3"`)
}

// TestHelpWithNULPublished: client_golang takes any help text, a NUL byte
// included, which mmv refuses in a metric's help: the family was refused,
// every sample of it counted as declaration at every refresh, for a text
// PCP only shows. Its help is published with the NUL made a space, and
// its values with it.
func TestHelpWithNULPublished(t *testing.T) {
	pcptest.MustHavePCP(t)
	reg := prometheus.NewRegistry()
	requests := prometheus.NewCounter(prometheus.CounterOpts{Name: "requests_total", Help: "served\x00requests"})
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "latency_seconds", Help: "latency\x00of requests", Buckets: []float64{1}}, []string{"code"})
	depth := prometheus.NewGauge(prometheus.GaugeOpts{Name: "queue_depth", Help: "depth\nof\x00the queue"})
	reg.MustRegister(requests, latency, depth)
	requests.Add(3)
	latency.WithLabelValues("200").Observe(0.5)
	depth.Set(4)
	r, tmp := newRegistry(t)
	b := started(t, r, reg, nil)
	require.NoError(t, b.Refresh())
	ms := read(t, r, tmp)
	m := find(t, ms, "requests")
	assert.Equal(t, "3", m.Value)
	assert.Equal(t, "served requests", m.ShortHelp)
	m = find(t, ms, "latency_seconds.count")
	assert.Equal(t, "1", instance(t, m, "code=200").Value)
	assert.Equal(t, "latency of requests", m.ShortHelp)
	m = find(t, ms, "queue_depth")
	assert.Equal(t, "4", m.Value)
	assert.Equal(t, "depth", m.ShortHelp)
	assert.Equal(t, "of the queue", m.LongHelp)
	assert.Zero(t, droppedTotal(t, ms))
}
