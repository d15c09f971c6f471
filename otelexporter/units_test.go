package otelexporter

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/sdk/instrumentation"

	"github.com/gopcp/mmv/internal/bridge"
	"github.com/gopcp/mmv/internal/pcptest"
)

// TestUnits: the UCUM table of the package doc, and the fine units of
// float totals.
func TestUnits(t *testing.T) {
	for _, c := range []struct {
		ucum, pcp string
		known     bool
		fine      string
		factor    float64
	}{
		{"", "", true, "x 10^-3", 1e3},
		{"1", "", true, "x 10^-3", 1e3},
		{"%", "", true, "x 10^-3", 1e3},
		{"ns", "nanosec", true, "nanosec", 1},
		{"us", "microsec", true, "nanosec", 1e3},
		{"ms", "millisec", true, "nanosec", 1e6},
		{"s", "sec", true, "nanosec", 1e9},
		{"min", "min", true, "nanosec", 60e9},
		{"h", "hour", true, "nanosec", 3600e9},
		{"By", "byte", true, "byte", 1},
		{"KiBy", "Kbyte", true, "byte", 1024},
		{"MiBy", "Mbyte", true, "byte", 1 << 20},
		{"GiBy", "Gbyte", true, "byte", 1 << 30},
		{"TiBy", "Tbyte", true, "byte", 1 << 40},
		{"{request}", "count", true, "count x 10^-3", 1e3},
		{"By/s", "byte / sec", true, "byte / sec", 1},
		{"{packet}/s", "count / sec", true, "count / sec", 1},
		{"kBy", "", false, "x 10^-3", 1e3},
		{"Cel", "", false, "x 10^-3", 1e3},
		{"By/", "", false, "x 10^-3", 1e3},
		{"By/s/s", "", false, "x 10^-3", 1e3},
		{"s/s", "", true, "x 10^-3", 1e3},
		{"By/By", "", true, "x 10^-3", 1e3},
		{"ms/s", "", false, "x 10^-3", 1e3},
		{"min/h", "", false, "x 10^-3", 1e3},
		{"KiBy/By", "", false, "x 10^-3", 1e3},
		{"By/ms", "byte / millisec", true, "byte / millisec", 1},
	} {
		u, known := unitsOf(c.ucum)
		f, factor := bridge.Fine(u)
		assert.Equal(t, c.pcp, u.String(), c.ucum)
		assert.Equal(t, c.known, known, c.ucum)
		assert.Equal(t, c.fine, f.String(), c.ucum)
		assert.Equal(t, c.factor, factor, c.ucum)
	}
}

// TestSameDimensionQuotientUnit: a UCUM quotient of two scales of one
// dimension (ms/s, min/h, KiBy/By) is a unit PCP has none for: shown as
// none, the value as recorded, and the help says which unit it was. The
// dimension cancelled to PCP's none with its scale lost, unnamed: a gauge
// of 500 ms/s (half a second per second) showed 500 [none], a ratio of
// 500.
func TestSameDimensionQuotientUnit(t *testing.T) {
	pcptest.NeedFileLayer(t) // Export starts the service's registry
	pcptest.MustHavePCP(t)
	p := newProvider(t, Options{})
	busy, err := p.Meter("gc").Float64Gauge("busy", metric.WithUnit("ms/s"))
	require.NoError(t, err)
	busy.Record(context.Background(), 500)
	ms, _ := p.flush(t)
	m := pcptest.Find(ms, "mmv.shop_test.gc.busy")
	require.NotNil(t, m)
	assert.Equal(t, "none", m.Units)
	assert.Equal(t, "500", m.Value)
	assert.Contains(t, m.LongHelp, `"ms/s"`, "PCP shows gc.busy = %s [none], a ratio of %s for half a second per second, and its help does not name ms/s", m.Value, m.Value)
}

// TestNames: metric names from scope and instrument; label names;
// the file name and cluster of a service.
func TestNames(t *testing.T) {
	for _, c := range []struct{ scope, inst, want string }{
		{"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp", "http.server.duration", "otelhttp.http.server.duration"},
		{"", "requests", "requests"},
		{"shop", "a-b/c..2d", "shop.a_b_c.x.x2d"},
	} {
		assert.Equal(t, c.want, metricName(instrumentation.Scope{Name: c.scope}, c.inst))
	}
	assert.Equal(t, "http_request_method", labelName("http.request.method"))
	assert.Equal(t, "shop_test", fileName("shop test"))
	assert.Equal(t, "otel_1shop", fileName("1shop"))
	assert.Equal(t, "otel", fileName(""))
	assert.Equal(t, "api_2", fileName("api.2"), "a registry's name cannot end in '.' and digits, an overflow file's")
}
