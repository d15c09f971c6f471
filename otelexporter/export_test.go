package otelexporter

import (
	"context"
	"math"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/bridge"
	"github.com/gopcp/mmv/internal/canon"
	"github.com/gopcp/mmv/internal/pcptest"
)

// testResource is the resource of the tests' providers: file "shop_test".
var testResource = resource.NewSchemaless(
	attribute.String("service.name", "shop test"),
	attribute.String("service.version", "1.2.3"),
	attribute.String("host.name", "web-1"),
	attribute.String("deployment.environment", "test"),
)

// provider is a MeterProvider whose periodic reader exports to an
// exporter writing in tmp/mmv (interval an hour: the tests flush), and a
// manual reader collecting the same data.
type provider struct {
	*sdkmetric.MeterProvider
	exp    *Exporter
	manual *sdkmetric.ManualReader
	tmp    string
}

func newProvider(t *testing.T, o Options) *provider {
	t.Helper()
	p := &provider{tmp: t.TempDir(), manual: sdkmetric.NewManualReader()}
	o.Registry.Dir = filepath.Join(p.tmp, "mmv")
	p.exp = New(&o)
	p.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithResource(testResource),
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(p.exp, sdkmetric.WithInterval(time.Hour))),
		sdkmetric.WithReader(p.manual))
	t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	return p
}

// pcpExporter returns an exporter of options o writing into a temporary
// PCP_TMP_DIR, shut down at the test's end, and that directory, for
// pcptest.Info; the test skips without the file layer or PCP.
func pcpExporter(t *testing.T, o Options) (*Exporter, string) {
	pcptest.NeedFileLayer(t)
	pcptest.MustHavePCP(t)
	tmp := t.TempDir()
	o.Registry.Dir = filepath.Join(tmp, "mmv")
	exp := New(&o)
	t.Cleanup(func() { _ = exp.Shutdown(context.Background()) })
	return exp, tmp
}

// flush exports through the periodic reader and returns what PCP's reader
// shows, with the manual reader's collect of the same data.
func (p *provider) flush(t *testing.T) ([]pcptest.Metric, metricdata.ResourceMetrics) {
	t.Helper()
	require.NoError(t, p.ForceFlush(context.Background()))
	var rm metricdata.ResourceMetrics
	require.NoError(t, p.manual.Collect(context.Background(), &rm))
	return pcptest.Info(t, p.tmp), rm
}

// record records on every kind of instrument, with attribute values
// holding spaces, non-ASCII and the canonical form's separators.
func record(t *testing.T, m metric.Meter) {
	t.Helper()
	ctx := context.Background()
	get := metric.WithAttributes(attribute.String("http.request.method", "GET"), attribute.String("region", "Zürich Nord"))
	post := metric.WithAttributes(attribute.String("http.request.method", "POST"), attribute.String("region", "a,b=c%d"))

	checkouts, err := m.Int64Counter("checkouts", metric.WithUnit("{checkout}"), metric.WithDescription("Checkouts completed"))
	require.NoError(t, err)
	checkouts.Add(ctx, 3, get)
	checkouts.Add(ctx, 4, get)
	checkouts.Add(ctx, 1, post)

	busy, err := m.Float64Counter("busy.time", metric.WithUnit("s"))
	require.NoError(t, err)
	busy.Add(ctx, 1.25, get)
	busy.Add(ctx, 0.000000123, post)

	ratio, err := m.Float64Counter("score", metric.WithUnit("1"))
	require.NoError(t, err)
	ratio.Add(ctx, 2.5)

	open, err := m.Int64UpDownCounter("carts.open", metric.WithUnit("{cart}"))
	require.NoError(t, err)
	open.Add(ctx, 5, get)
	open.Add(ctx, -7, post)

	temp, err := m.Float64Gauge("temperature", metric.WithUnit("Cel"))
	require.NoError(t, err)
	temp.Record(ctx, -3.5, get)

	items, err := m.Int64Gauge("items", metric.WithUnit("By"))
	require.NoError(t, err)
	items.Record(ctx, 1<<40)

	latency, err := m.Float64Histogram("latency", metric.WithUnit("ms"))
	require.NoError(t, err)
	for _, v := range []float64{3, 30, 3000, 0.5} {
		latency.Record(ctx, v, get)
	}
	latency.Record(ctx, 12000, post)

	size, err := m.Int64Histogram("size", metric.WithUnit("KiBy"), metric.WithExplicitBucketBoundaries(1, 10))
	require.NoError(t, err)
	size.Record(ctx, 4)
	size.Record(ctx, 40)
}

// TestEveryPointThroughPCP records on every kind of instrument and checks,
// point by point, that what a manual reader collects of the same provider
// is what PCP's reader shows: metric, instance, value, semantics, units
// and labels.
func TestEveryPointThroughPCP(t *testing.T) {
	pcptest.NeedFileLayer(t) // Export starts the service's registry
	pcptest.MustHavePCP(t)
	p := newProvider(t, Options{})
	record(t, p.Meter("example.com/shop/cart"))
	ms, rm := p.flush(t)
	require.NoError(t, p.exp.Err())

	points := 0
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			name := "mmv.shop_test." + metricName(sm.Scope, m.Name)
			each := func(part string, attrs attribute.Set, le string, sem string, want float64) {
				t.Helper()
				points++
				pm := pcptest.Find(ms, name+part)
				require.NotNil(t, pm, "PCP does not show %s", name+part)
				assert.Equal(t, sem, pm.Semantics, name+part)
				for _, l := range []string{`"service_name":"shop test"`, `"service_version":"1.2.3"`, `"host_name":"web-1"`} {
					assert.Contains(t, pm.Labels, l, name+part)
				}
				assert.NotContains(t, pm.Labels, "deployment", name+part)
				got := pm.Value
				if !pm.Singular() {
					names, values := instanceOf(attrs)
					if le != "" {
						names, values = append(names, "le"), append(values, le)
					}
					inst, _ := canon.Name(names, values)
					in := pm.Instance(inst)
					require.NotNil(t, in, "%s has no instance %q: %+v", name+part, inst, pm.Instances)
					got = in.Value
					if le == "" {
						for i, n := range names {
							v, _ := in.Label(n)
							assert.Equal(t, strconv.Quote(values[i]), v, "%s[%s] label %s", name+part, inst, n)
						}
					}
				}
				f, err := strconv.ParseFloat(got, 64)
				require.NoError(t, err, "%s value %q", name+part, got)
				assert.InDelta(t, want, f, math.Abs(want)*1e-9, "%s %v", name+part, attrs)
			}
			switch a := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range a.DataPoints {
					each("", dp.Attributes, "", map[bool]string{true: "counter", false: "instant"}[a.IsMonotonic], float64(dp.Value))
				}
			case metricdata.Sum[float64]: // monotonic: in thousandths or nanoseconds
				_, f := bridge.Fine(mustUnits(t, m.Unit))
				for _, dp := range a.DataPoints {
					each("", dp.Attributes, "", "counter", math.Round(dp.Value*f))
				}
			case metricdata.Gauge[int64]:
				for _, dp := range a.DataPoints {
					each("", dp.Attributes, "", "instant", float64(dp.Value))
				}
			case metricdata.Gauge[float64]:
				for _, dp := range a.DataPoints {
					each("", dp.Attributes, "", "instant", dp.Value)
				}
			case metricdata.Histogram[float64]:
				_, f := bridge.Fine(mustUnits(t, m.Unit))
				checkHistograms(a.DataPoints, f, each)
			case metricdata.Histogram[int64]:
				checkHistograms(a.DataPoints, 1, each)
			default:
				t.Errorf("%s: unexpected data %T", m.Name, m.Data)
			}
		}
	}
	assert.Equal(t, 9+2*20+7, points, "values checked: 9 sums and gauges, 2 latency points of 20, 1 size point of 7")

	// The mapping, spelled out.
	for name, want := range map[string][2]string{
		"cart.checkouts":       {"counter", "count"},
		"cart.busy.time":       {"counter", "nanosec"},
		"cart.score":           {"counter", "x 10^-3"},
		"cart.carts.open":      {"instant", "count"},
		"cart.temperature":     {"instant", "none"},
		"cart.items":           {"instant", "byte"},
		"cart.latency.bucket":  {"counter", "count"},
		"cart.latency.sum":     {"counter", "nanosec"},
		"cart.latency.count":   {"counter", "count"},
		"cart.latency.max":     {"instant", "millisec"},
		"cart.size.sum":        {"counter", "Kbyte"},
		"otelexporter.dropped": {"counter", "count"},
	} {
		if name == "cart.score" && pcptest.AtLeast(7, 2) {
			// 7.2 prints a count scale with no count dimension as a count.
			want[1] = "count x 10^-3"
		}
		pm := pcptest.Find(ms, "mmv.shop_test."+name)
		if assert.NotNil(t, pm, name) {
			assert.Equal(t, want, [2]string{pm.Semantics, pm.Units}, name)
		}
	}
	assert.Contains(t, pcptest.Find(ms, "mmv.shop_test.cart.temperature").LongHelp, `Unit "Cel" is not one PCP has`)
	in := pcptest.Find(ms, "mmv.shop_test.cart.checkouts").Instance("http_request_method=GET,region=Zürich%20Nord")
	if assert.NotNil(t, in) {
		assert.Equal(t, "7", in.Value)
	}
}

// checkHistograms checks the metrics of histogram points with each, the
// sum in units factor times finer than recorded.
func checkHistograms[N int64 | float64](pts []metricdata.HistogramDataPoint[N], factor float64, each func(string, attribute.Set, string, string, float64)) {
	for _, dp := range pts {
		each(".count", dp.Attributes, "", "counter", float64(dp.Count))
		each(".sum", dp.Attributes, "", "counter", math.Round(float64(dp.Sum)*factor))
		lo, _ := dp.Min.Value()
		hi, _ := dp.Max.Value()
		each(".min", dp.Attributes, "", "instant", float64(lo))
		each(".max", dp.Attributes, "", "instant", float64(hi))
		for i, c := range dp.BucketCounts {
			le := "+Inf"
			if i < len(dp.Bounds) {
				le = strconv.FormatFloat(dp.Bounds[i], 'g', -1, 64)
			}
			each(".bucket", dp.Attributes, le, "counter", float64(c))
		}
	}
}

// instanceOf returns the label names and values of a point: the
// instruments record with two keys on every point, or with none.
func instanceOf(attrs attribute.Set) (names, values []string) {
	if attrs.Len() == 0 {
		return nil, nil
	}
	for _, k := range []attribute.Key{"http.request.method", "region"} {
		v, _ := attrs.Value(k)
		names, values = append(names, labelName(k)), append(values, v.Emit())
	}
	return names, values
}

func mustUnits(t *testing.T, ucum string) mmv.Units {
	u, ok := unitsOf(ucum)
	require.True(t, ok, ucum)
	return u
}

// TestDescriptionWithNULPublished: the SDK takes any description, a NUL
// byte included, which mmv refuses in a metric's help: the instrument was
// refused, every point of it counted as declaration at every export, for
// a text PCP only shows. Its help is published with the NUL made a space,
// and its values with it.
func TestDescriptionWithNULPublished(t *testing.T) {
	pcptest.NeedFileLayer(t)
	pcptest.MustHavePCP(t)
	p := newProvider(t, Options{})
	ctx := context.Background()
	m := p.Meter("shop")
	c, err := m.Int64Counter("checkouts", metric.WithDescription("Checkouts\x00completed"))
	require.NoError(t, err)
	c.Add(ctx, 3)
	h, err := m.Float64Histogram("latency", metric.WithUnit("s"), metric.WithDescription("Request\x00latency"))
	require.NoError(t, err)
	h.Record(ctx, 0.5)
	ms, _ := p.flush(t)
	require.NoError(t, p.exp.Err())
	checkouts := pcptest.Find(ms, "mmv.shop_test.shop.checkouts")
	require.NotNil(t, checkouts)
	assert.Equal(t, "3", checkouts.Value)
	assert.Equal(t, "Checkouts completed", checkouts.ShortHelp)
	count := pcptest.Find(ms, "mmv.shop_test.shop.latency.count")
	require.NotNil(t, count)
	assert.Equal(t, "1", count.Value)
	assert.Equal(t, "Request latency, count", count.ShortHelp)
}
