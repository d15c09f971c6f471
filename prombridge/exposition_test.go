package prombridge_test

import (
	"context"
	"fmt"
	"math"
	"os"
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

	"github.com/gopcp/mmv"
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
// them (samples), named as PCP names them: a counter's _total dropped
// unless a family of that name is gathered too.
func expected(mfs []*dto.MetricFamily) []sample {
	var out []sample
	for _, e := range samples(mfs, nil) {
		name := e.family.name
		if e.family.typ == dto.MetricType_COUNTER && !slices.ContainsFunc(mfs, func(o *dto.MetricFamily) bool { return o.GetName()+"_total" == name }) {
			name = strings.TrimSuffix(name, "_total")
		}
		out = append(out, sample{name + e.suffix, e.instance, e.value, e.counter})
	}
	return out
}

// checkExposition checks that PCP shows every sample of the families the
// bridge gathered last, with its value and semantics, and returns how
// many it checked.
func checkExposition(t *testing.T, ms []pcptest.Metric, name string, mfs []*dto.MetricFamily) int {
	t.Helper()
	samples := expected(mfs)
	for _, s := range samples {
		m := pcptest.Find(ms, "mmv."+name+"."+s.metric)
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
// value, read by PCP's reader in pminfo, after a family and a label set
// were added while running, and after a series disappeared.
func TestExposition(t *testing.T) {
	pcptest.MustHavePCP(t)
	r, tmp := newRegistry(t)
	exposition(t, r, file, func() []pcptest.Metric { return read(t, r, tmp) })
}

// TestExpositionThroughPMCD is TestExposition read through pmcd.
func TestExpositionThroughPMCD(t *testing.T) {
	p := pcptest.MustHavePMCD(t)
	// Its name under the pid, in the host's directory: the closed records
	// of an earlier run of it (-count 2, a pid reused), whose Start reads
	// them and shows their overflow files' metrics with no value
	// (tombstone.go), removed first, and its own at the end.
	name := fmt.Sprintf("%s%d", file, os.Getpid())
	pcptest.RemoveClosedRecords(t, p.Dir, name)
	r := mmv.NewRegistry(name, &mmv.Options{Dir: p.Dir, Flags: mmv.Process})
	t.Cleanup(func() { r.Close() })
	exposition(t, r, name, func() []pcptest.Metric {
		require.NoError(t, r.Flush())
		var ms []pcptest.Metric
		// pmcd's agent sees a new file at its next fetch; a fetch racing a
		// growth step may miss a value: read until one shows them all.
		require.Eventually(t, func() bool {
			var err error
			ms, err = p.Fetch(context.Background(), "mmv."+name)
			return err == nil && len(ms) > 0 && pcptest.Valued(ms)
		}, 10*time.Second, 50*time.Millisecond, "pmcd shows mmv.%s", name)
		return ms
	})
}

// exposition publishes a registry of the Go and process collectors and
// application families on r, named name, and checks with read that every
// sample gathered is in PCP: at first, after growth, after a series
// disappeared.
func exposition(t *testing.T, r *mmv.Registry, name string, read func() []pcptest.Metric) {
	pr := prometheus.NewRegistry()
	pr.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "requests_total", Help: "Requests."}, []string{"code", "method"})
	pr.MustRegister(requests)
	requests.WithLabelValues("200", "GET").Add(7)
	g := &recorder{Gatherer: pr}

	// Only the refreshes the test makes, after the one at Start: PCP shows
	// what the last one gathered. A series absent at a refresh is removed
	// at once.
	b := started(t, r, g, &prombridge.Options{Interval: time.Hour, Grace: time.Nanosecond})
	require.NoError(t, b.Refresh())
	n := checkExposition(t, read(), name, g.gathered())
	t.Logf("%d samples of %d families in PCP", n, len(g.gathered()))

	// Growth: a family and a label set that appear while running.
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "latency_seconds", Help: "Latency."}, []string{"route"})
	pr.MustRegister(latency)
	latency.WithLabelValues("/x y").Observe(0.3)
	requests.WithLabelValues("404", "HEAD").Inc()
	require.NoError(t, b.Refresh())
	ms := read()
	n = checkExposition(t, ms, name, g.gathered())
	t.Logf("after growth: %d samples of %d families in PCP", n, len(g.gathered()))
	requestsIn := func(ms []pcptest.Metric) *pcptest.Metric { return pcptest.Find(ms, "mmv."+name+".requests") }
	assert.NotNil(t, requestsIn(ms).Instance("code=404,method=HEAD"))
	assert.NotNil(t, pcptest.Find(ms, "mmv."+name+".latency_seconds.bucket").Instance("route=/x%20y,le=+Inf"))

	// A series that disappears leaves PCP; the rest stays exact.
	requests.DeleteLabelValues("404", "HEAD")
	require.NoError(t, b.Refresh())
	ms = read()
	n = checkExposition(t, ms, name, g.gathered())
	t.Logf("after a series disappeared: %d samples of %d families in PCP", n, len(g.gathered()))
	assert.Nil(t, requestsIn(ms).Instance("code=404,method=HEAD"))
	assert.NoError(t, b.Err())
}
