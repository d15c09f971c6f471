package otelexporter

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
)

// otherProgram starts, in the exporter's directory under tmp, a NoPrefix
// registry of another program holding the metric name (PCP's
// mmv.<name>), and returns it; it is closed at the test's end.
func otherProgram(t *testing.T, tmp, name string) *mmv.Registry {
	t.Helper()
	o := mmv.NewRegistry("other", &mmv.Options{Dir: filepath.Join(tmp, "mmv"), Cluster: 1999, Flags: mmv.NoPrefix | mmv.Process})
	mmv.NewGauge(o, name, "another program's", mmv.NoUnits).Set(7)
	require.NoError(t, o.Start())
	t.Cleanup(func() { o.Close() })
	return o
}

// sumsExport is an export of the cumulative sums of scope example.com/s
// named names, each of value 5.
func sumsExport(names ...string) *metricdata.ResourceMetrics {
	var ms []metricdata.Metrics
	for _, n := range names {
		ms = append(ms, sum(n, metricdata.CumulativeTemporality, point(5)))
	}
	return &metricdata.ResourceMetrics{Resource: testResource, ScopeMetrics: []metricdata.ScopeMetrics{
		{Scope: instrumentation.Scope{Name: "example.com/s"}, Metrics: ms}}}
}

// droppedOf returns otelexporter.dropped{reason} of file as PCP shows it.
func droppedOf(t *testing.T, ms []pcptest.Metric, file, reason string) string {
	t.Helper()
	return shownValues(t, ms, "mmv."+file+".otelexporter.dropped")["reason="+reason]
}
