package prombridge_test

import (
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/prombridge"
)

// TestSeriesDisappear: a series deleted from client_golang leaves PCP at
// the next refresh (an error-free Gather: Grace does not hold it), and
// comes back from zero.
func TestSeriesDisappear(t *testing.T) {
	pcptest.MustHavePCP(t)
	pr := prometheus.NewRegistry()
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "requests_total", Help: "r"}, []string{"code"})
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "latency_seconds", Help: "l", Buckets: []float64{1}}, []string{"code"})
	pr.MustRegister(requests, latency)
	for _, code := range []string{"200", "500"} {
		requests.WithLabelValues(code).Add(5)
		latency.WithLabelValues(code).Observe(0.5)
	}
	r, tmp := newRegistry(t)
	b, err := prombridge.Register(r, pr, nil)
	require.NoError(t, err)
	pcptest.NeedFileLayer(t)
	require.NoError(t, r.Start())
	require.NoError(t, b.Refresh())
	ms := read(t, r, tmp)
	instance(t, find(t, ms, "requests"), "code=500")
	instance(t, find(t, ms, "latency_seconds.bucket"), "code=500,le=1")

	requests.DeleteLabelValues("500")
	latency.DeleteLabelValues("500")
	require.NoError(t, b.Refresh())
	assert.Equal(t, 2, b.Stats().Series, "requests and latency of code 200")
	ms = read(t, r, tmp)
	assert.Nil(t, find(t, ms, "requests").Instance("code=500"))
	instance(t, find(t, ms, "requests"), "code=200")
	for _, name := range []string{"latency_seconds.bucket", "latency_seconds.sum", "latency_seconds.count"} {
		for _, in := range find(t, ms, name).Instances {
			assert.NotContains(t, in.Name, "code=500", name)
		}
	}
	assert.Equal(t, uint64(2), b.Stats().Deleted)

	requests.WithLabelValues("500").Inc()
	require.NoError(t, b.Refresh())
	assert.Equal(t, "1", instance(t, find(t, read(t, r, tmp), "requests"), "code=500").Value)
}

// TestLimit: a family holds at most Options.Limit series; the others are
// refused, counted by the bridge and in PCP's mmv.dropped.
func TestLimit(t *testing.T) {
	pcptest.MustHavePCP(t)
	pr := prometheus.NewRegistry()
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "requests_total", Help: "r"}, []string{"code"})
	pr.MustRegister(requests)
	for _, code := range []string{"200", "404", "500"} {
		requests.WithLabelValues(code).Inc()
	}
	r, tmp := newRegistry(t)
	b, err := prombridge.Register(r, pr, &prombridge.Options{Limit: 2, Interval: time.Hour})
	require.NoError(t, err)
	// Before Start: Start's refreshes, which retry nothing, may have
	// replaced its error by the time Err is read.
	err = b.Refresh()
	pcptest.NeedFileLayer(t)
	require.NoError(t, r.Start())
	// Start's refresh, then the one of the poll it begins: none other
	// runs in the test.
	require.Eventually(t, func() bool { return b.Stats().Refreshes >= 3 }, 10*time.Second, time.Millisecond)
	assert.ErrorIs(t, err, mmv.ErrTooMany)
	assert.ErrorContains(t, err, `family requests_total: series ["500"] refused`)
	assert.ErrorContains(t, b.Refresh(), `family requests_total: series ["500"] refused`, "named at every refresh")
	st := b.Stats()
	assert.Equal(t, uint64(1), st.DroppedSeries, "not retried while present")
	assert.Equal(t, 2, st.Series)

	ms := read(t, r, tmp)
	assert.Len(t, find(t, ms, "requests").Instances, 2)
	assert.Equal(t, "1", instance(t, find(t, ms, "mmv.dropped"), "limit").Value, "the registry counts its refusal once")
	assert.Equal(t, strconv.FormatUint(b.Stats().Refreshes, 10), instance(t, find(t, ms, "prombridge.dropped"), "reason=series").Value,
		"the bridge counts the sample at every refresh")
}

// TestAbsentSeriesLeaveAfterCleanGather: a series the source removed
// (DeleteLabelValues, Unregister, a collector no longer emitting it)
// leaves PCP at the first refresh whose Gather succeeded without it, and
// a singular family shows no value (Sentinel): Grace keeps only the
// series absent from a Gather that reported an error, the collector that
// failed having maybe omitted them. PCP showed a value nobody held as
// current for Grace (a minute), with Err nil and nothing counted. A
// series absent from failed Gathers leaves once absent for longer than
// Grace.
func TestAbsentSeriesLeaveAfterCleanGather(t *testing.T) {
	pcptest.MustHavePCP(t)
	reg := prometheus.NewRegistry()
	conns := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "conns", Help: "open connections"}, []string{"peer"})
	temp := prometheus.NewGauge(prometheus.GaugeOpts{Name: "temp", Help: "t"})
	reg.MustRegister(conns, temp)
	for peer, n := range map[string]float64{"a": 3, "b": 7, "c": 9} {
		conns.WithLabelValues(peer).Set(n)
	}
	temp.Set(20)
	var failing atomic.Bool
	g := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		mfs, err := reg.Gather()
		if failing.Load() {
			err = errors.New("collector db: connection refused")
		}
		return mfs, err
	})
	r, tmp := newRegistry(t, mmv.Sentinel)
	const grace = time.Second
	b := started(t, r, g, &prombridge.Options{Interval: time.Hour, Grace: grace})

	// A Gather that reported an error: what it lacks stays for Grace.
	require.True(t, conns.DeleteLabelValues("c"))
	failing.Store(true)
	require.ErrorContains(t, b.Refresh(), "connection refused")
	assert.Equal(t, "9", instance(t, find(t, read(t, r, tmp), "conns"), "peer=c").Value, "absent from a Gather that failed: kept for Grace")
	assert.Zero(t, b.Stats().Deleted)
	time.Sleep(grace + grace/4)
	require.ErrorContains(t, b.Refresh(), "connection refused")
	assert.Nil(t, find(t, read(t, r, tmp), "conns").Instance("peer=c"), "absent from failed Gathers for longer than Grace")

	// An error-free one: what it lacks leaves at once.
	failing.Store(false)
	require.True(t, conns.DeleteLabelValues("b"))
	reg.Unregister(temp)
	require.NoError(t, b.Refresh())
	ms := read(t, r, tmp)
	assert.Equal(t, []string{"peer=a"}, instanceNames(find(t, ms, "conns")))
	assert.True(t, find(t, ms, "temp").Value == "" || find(t, ms, "temp").Value == "nan", "temp shows %s, unregistered", find(t, ms, "temp").Value)
	assert.Equal(t, uint64(2), b.Stats().Deleted, "peer=c, then peer=b")
	assert.Equal(t, 1, b.Stats().Series)
}
