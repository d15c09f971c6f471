package prombridge_test

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv/internal/canon"
	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/prombridge"
)

// recorder is a gatherer that keeps what it gathered last: what the
// bridge published at its last refresh.
type recorder struct {
	prometheus.Gatherer
	mu   sync.Mutex
	last []*dto.MetricFamily
}

// gathered returns what the last Gather returned.
func (r *recorder) gathered() []*dto.MetricFamily {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

func (r *recorder) Gather() ([]*dto.MetricFamily, error) {
	mfs, err := r.Gatherer.Gather()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last = mfs
	return mfs, err
}

// sample is one value of the exposition as PCP should show it.
type sample struct {
	metric, instance string // instance "" when singular
	value            float64
	counter          bool
}

// expected lists every sample of the families as the package doc maps
// them, stated here again from the exposition: names (a counter's _total
// dropped unless a family of that name is gathered too), instance names,
// +Inf buckets, counters in µs for seconds.
func expected(mfs []*dto.MetricFamily) []sample {
	var out []sample
	for _, mf := range mfs {
		name := mf.GetName()
		secs := strings.HasSuffix(strings.TrimSuffix(name, "_total"), "_seconds")
		micro := func(v float64) float64 {
			if secs {
				return math.Round(v * 1e6)
			}
			return math.Round(v)
		}
		pcp := name
		if mf.GetType() == dto.MetricType_COUNTER && !slices.ContainsFunc(mfs, func(o *dto.MetricFamily) bool { return o.GetName()+"_total" == name }) {
			pcp = strings.TrimSuffix(name, "_total")
		}
		for _, m := range mf.Metric {
			var names, values []string
			for _, l := range m.Label {
				names, values = append(names, l.GetName()), append(values, l.GetValue())
			}
			// inst names the instance of the labels, and of label l with
			// value v after them when l is not "".
			inst := func(l, v string) string {
				ns, vs := slices.Clone(names), slices.Clone(values)
				if l != "" {
					ns, vs = append(ns, l), append(vs, v)
				}
				if len(ns) == 0 {
					return ""
				}
				n, _ := canon.Name(ns, vs)
				return n
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				out = append(out, sample{pcp, inst("", ""), micro(m.GetCounter().GetValue()), true})
			case dto.MetricType_GAUGE:
				out = append(out, sample{name, inst("", ""), m.GetGauge().GetValue(), false})
			case dto.MetricType_UNTYPED:
				out = append(out, sample{name, inst("", ""), m.GetUntyped().GetValue(), false})
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				for _, b := range h.Bucket {
					out = append(out, sample{name + ".bucket", inst("le", strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64)), float64(b.GetCumulativeCount()), true})
				}
				out = append(out, sample{name + ".bucket", inst("le", "+Inf"), float64(h.GetSampleCount()), true},
					sample{name + ".sum", inst("", ""), micro(h.GetSampleSum()), true},
					sample{name + ".count", inst("", ""), float64(h.GetSampleCount()), true})
			case dto.MetricType_SUMMARY:
				s := m.GetSummary()
				for _, q := range s.Quantile {
					out = append(out, sample{name + ".quantile", inst("quantile", strconv.FormatFloat(q.GetQuantile(), 'g', -1, 64)), q.GetValue(), false})
				}
				out = append(out, sample{name + ".sum", inst("", ""), micro(s.GetSampleSum()), true},
					sample{name + ".count", inst("", ""), float64(s.GetSampleCount()), true})
			}
		}
	}
	return out
}

// checkExposition checks that PCP shows every sample of the families the
// bridge gathered last, with its value and semantics, and returns how
// many it checked.
func checkExposition(t *testing.T, ms []pcptest.Metric, mfs []*dto.MetricFamily) int {
	t.Helper()
	samples := expected(mfs)
	for _, s := range samples {
		m := pcptest.Find(ms, "mmv."+file+"."+s.metric)
		if !assert.NotNil(t, m, "PCP does not show %s", s.metric) {
			continue
		}
		want := map[bool]string{true: "counter", false: "instant"}[s.counter]
		assert.Equal(t, want, m.Semantics, s.metric)
		got := m.Value
		if s.instance != "" {
			in := m.Instance(s.instance)
			if !assert.NotNil(t, in, "%s has no instance %q", s.metric, s.instance) {
				continue
			}
			got = in.Value
		}
		v, err := strconv.ParseFloat(got, 64)
		require.NoError(t, err, "%s[%s] = %q", s.metric, s.instance, got)
		if s.counter {
			assert.Equal(t, s.value, v, "%s[%s]", s.metric, s.instance)
		} else {
			assert.InDelta(t, s.value, v, 1e-9*max(1, math.Abs(s.value)), "%s[%s]", s.metric, s.instance)
		}
	}
	return len(samples)
}

// TestExposition: with the Go and process collectors and application
// families, every sample of the gathered exposition is in PCP with its
// value, after a family and a label set were added while running.
func TestExposition(t *testing.T) {
	pcptest.MustHavePCP(t)
	pr := prometheus.NewRegistry()
	pr.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "requests_total", Help: "Requests."}, []string{"code", "method"})
	pr.MustRegister(requests)
	requests.WithLabelValues("200", "GET").Add(7)
	g := &recorder{Gatherer: pr}

	r, tmp := newRegistry(t)
	// Only the refreshes the test makes, and the one at Start, which the
	// bridge serialises with them: PCP shows what the last one gathered.
	b, err := prombridge.Register(r, g, &prombridge.Options{Interval: time.Hour})
	require.NoError(t, err)
	require.NoError(t, r.Start())
	require.NoError(t, b.Refresh())
	n := checkExposition(t, read(t, r, tmp), g.gathered())
	t.Logf("%d samples of %d families in PCP", n, len(g.gathered()))

	// Growth: a family and a label set that appear while running.
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "latency_seconds", Help: "Latency."}, []string{"route"})
	pr.MustRegister(latency)
	latency.WithLabelValues("/x y").Observe(0.3)
	requests.WithLabelValues("404", "HEAD").Inc()
	require.NoError(t, b.Refresh())
	ms := read(t, r, tmp)
	n = checkExposition(t, ms, g.gathered())
	t.Logf("after growth: %d samples of %d families in PCP", n, len(g.gathered()))
	assert.NotNil(t, find(t, ms, "requests").Instance("code=404,method=HEAD"))
	assert.NotNil(t, find(t, ms, "latency_seconds.bucket").Instance("route=/x%20y,le=+Inf"))
	assert.NoError(t, b.Err())
}
