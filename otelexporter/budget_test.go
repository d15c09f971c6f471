package otelexporter

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
)

// TestValuesCapRefuses: points past the registry's cap on values
// (mmv.Options.MaxValues) are refused, and Err says so with an error
// wrapping mmv.ErrTooMany that names the option.
func TestValuesCapRefuses(t *testing.T) {
	pcptest.NeedFileLayer(t) // Export starts the service's registry
	exp := New(&Options{Registry: mmv.Options{Dir: filepath.Join(t.TempDir(), "mmv"), MaxValues: 5}})
	defer exp.Shutdown(context.Background())
	var pts []metricdata.DataPoint[int64]
	for i := range 10 {
		pts = append(pts, point(int64(i), attribute.Int("a", i)))
	}
	rm := &metricdata.ResourceMetrics{Resource: testResource, ScopeMetrics: []metricdata.ScopeMetrics{{
		Metrics: []metricdata.Metrics{sum("n", metricdata.CumulativeTemporality, pts...)}}}}
	require.NoError(t, exp.Export(context.Background(), rm))
	err := exp.Err()
	require.ErrorIs(t, err, mmv.ErrTooMany)
	assert.ErrorContains(t, err, "Options.MaxValues")
}
