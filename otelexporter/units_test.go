package otelexporter

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/otel/sdk/instrumentation"
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
	} {
		u, known := unitsOf(c.ucum)
		f, factor := fine(u)
		assert.Equal(t, c.pcp, u.String(), c.ucum)
		assert.Equal(t, c.known, known, c.ucum)
		assert.Equal(t, c.fine, f.String(), c.ucum)
		assert.Equal(t, c.factor, factor, c.ucum)
	}
}

// TestCount: what a counter can hold of a float total.
func TestCount(t *testing.T) {
	n, ok := count(1.25, 1e9)
	assert.True(t, ok)
	assert.Equal(t, uint64(1250000000), n)
	for _, f := range []float64{-1, 1 << 64, nan()} {
		_, ok := count(f, 1)
		assert.False(t, ok, f)
	}
}

func nan() float64 { var z float64; return z / z }

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
}
