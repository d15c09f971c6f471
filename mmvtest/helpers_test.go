package mmvtest_test

import (
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/mmvtest"
)

// service declares what a small service publishes on r, updated by use.
type service struct {
	requests *mmv.Vec[mmv.Counter]
	inFlight *mmv.IntGauge
	temp     *mmv.Gauge
	latency  *mmv.Histogram
	busy     *mmv.Timer
}

func newService(r *mmv.Registry) *service {
	s := &service{
		requests: mmv.NewCounterVec(r, "requests", "Requests served", mmv.Count, "route", "status"),
		inFlight: mmv.NewIntGauge(r, "in_flight", "Requests being served", mmv.Count),
		temp:     mmv.NewGauge(r, "temp", "Temperature", 0),
		latency: mmv.NewHistogram(r, "latency", "Latency", mmv.Second,
			&mmv.HistogramOptions{Buckets: []float64{0.1, 1}, Quantiles: []float64{0.5}}),
		busy: mmv.NewTimer(r, "busy", "Time spent serving"),
	}
	mmv.NewIntGaugeFunc(r, "answer", "The answer", mmv.Count, func() int64 { return 42 })
	return s
}

// serve is one request.
func (s *service) serve(route, status string, took time.Duration) {
	s.inFlight.Inc()
	s.requests.With(route, status).Inc()
	s.latency.ObserveDuration(took)
	s.busy.Observe(took)
	s.temp.Set(21.5)
}

// tmpDir is where PCP_TMP_DIR must point for PCP's tools to see r's file.
func tmpDir(t *testing.T, r *mmv.Registry) string {
	t.Helper()
	require.NotEmpty(t, r.Path(), "the registry is not started")
	return filepath.Dir(filepath.Dir(r.Path()))
}

// assertSame checks that a snapshot's value is PCP's, as printed.
func assertSame(t *testing.T, what string, v any, printed string) {
	t.Helper()
	if s, ok := v.(string); ok {
		assert.Equal(t, strconv.Quote(s), printed, what)
		return
	}
	f, err := strconv.ParseFloat(printed, 64)
	require.NoError(t, err, what)
	assert.InEpsilon(t, mmvtest.ToFloat64(v)+1, f+1, 1e-6, "%s: snapshot %v, PCP %s", what, v, printed)
}
