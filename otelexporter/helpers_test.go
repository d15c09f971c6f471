package otelexporter

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"

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

// scopeExport is an export of scope "s" holding the metrics ms.
func scopeExport(ms ...metricdata.Metrics) *metricdata.ResourceMetrics {
	return &metricdata.ResourceMetrics{Resource: testResource, ScopeMetrics: []metricdata.ScopeMetrics{{
		Scope: instrumentation.Scope{Name: "s"}, Metrics: ms}}}
}

// stamped exports to an exporter writing into a temporary PCP_TMP_DIR,
// the points stamped with the end Time of its running collection.
type stamped struct {
	t   *testing.T
	exp *Exporter
	tmp string
	at  time.Time
}

// newStamped returns a stamped exporter of options o (pcpExporter).
func newStamped(t *testing.T, o Options) *stamped {
	exp, tmp := pcpExporter(t, o)
	return &stamped{t: t, exp: exp, tmp: tmp, at: time.Now()}
}

// next starts the next collection.
func (s *stamped) next() *stamped {
	s.at = s.at.Add(time.Second)
	return s
}

// counters exports the cumulative int64 counter "requests" of scope "s"
// of points pts.
func (s *stamped) counters(pts ...metricdata.DataPoint[int64]) {
	for i := range pts {
		pts[i].Time = s.at
	}
	require.NoError(s.t, s.exp.Export(context.Background(), scopeExport(sum("requests", metricdata.CumulativeTemporality, pts...))))
}

// histograms exports the cumulative float64 histogram "lat" of scope "s"
// of points pts.
func (s *stamped) histograms(pts ...metricdata.HistogramDataPoint[float64]) {
	for i := range pts {
		pts[i].Time = s.at
	}
	require.NoError(s.t, s.exp.Export(context.Background(), scopeExport(metricdata.Metrics{Name: "lat", Data: metricdata.Histogram[float64]{
		Temporality: metricdata.CumulativeTemporality, DataPoints: pts}})))
}

// shown returns what PCP shows, once the exporter published it.
func (s *stamped) shown() []pcptest.Metric {
	require.NoError(s.t, s.exp.ForceFlush(context.Background()))
	return pcptest.Info(s.t, s.tmp)
}

// hpoint is a histogram point of bounds and bucket counts counts, its
// count their sum, of sum, min lo and max hi.
func hpoint(bounds []float64, counts []uint64, sum, lo, hi float64, kvs ...attribute.KeyValue) metricdata.HistogramDataPoint[float64] {
	p := metricdata.HistogramDataPoint[float64]{Attributes: attribute.NewSet(kvs...), Bounds: bounds, BucketCounts: counts, Sum: sum,
		Min: metricdata.NewExtrema(lo), Max: metricdata.NewExtrema(hi)}
	for _, n := range counts {
		p.Count += n
	}
	return p
}

// add is an addition to a counter: n, with attributes kvs.
type add struct {
	n   int64
	kvs []attribute.KeyValue
}

// clashing exports, through PCP, the additions adds to counter s.<name>
// and 5 recorded with attributes hist in the histogram s.sizes (bounds
// 10), Err nil, and returns what PCP shows of the counter and of the
// histogram's count, by instance: the labels their keys make are what
// the tests of renamed labels check.
func clashing(t *testing.T, name string, adds []add, hist ...attribute.KeyValue) (counter, sizes map[string]string) {
	pcptest.NeedFileLayer(t)
	pcptest.MustHavePCP(t)
	p := newProvider(t, Options{})
	ctx := context.Background()
	c, err := p.Meter("s").Int64Counter(name)
	require.NoError(t, err)
	for _, a := range adds {
		c.Add(ctx, a.n, metric.WithAttributes(a.kvs...))
	}
	h, err := p.Meter("s").Int64Histogram("sizes", metric.WithExplicitBucketBoundaries(10))
	require.NoError(t, err)
	h.Record(ctx, 5, metric.WithAttributes(hist...))
	ms, _ := p.flush(t)
	require.NoError(t, p.exp.Err())
	return shownValues(t, ms, "mmv.shop_test.s."+name), shownValues(t, ms, "mmv.shop_test.s.sizes.count")
}

// exportResource has a new exporter publish resource keys service.name
// (shop) and key as labels (Options.ResourceKeys), and export one sum, s.n,
// under that resource, with no error and no panic.
func exportResource(t *testing.T, key, value string) *Exporter {
	pcptest.NeedFileLayer(t) // Export starts the service's registry
	exp := New(&Options{Registry: mmv.Options{Dir: filepath.Join(t.TempDir(), "mmv")},
		ResourceKeys: []attribute.Key{"service.name", attribute.Key(key)}})
	res := resource.NewSchemaless(attribute.String("service.name", "shop"), attribute.String(key, value))
	rm := &metricdata.ResourceMetrics{Resource: res, ScopeMetrics: []metricdata.ScopeMetrics{{
		Scope: instrumentation.Scope{Name: "s"}, Metrics: []metricdata.Metrics{sum("n", metricdata.CumulativeTemporality, point(1))}}}}
	require.NotPanics(t, func() { require.NoError(t, exp.Export(context.Background(), rm)) })
	return exp
}

// singulars is an export at Time at, in scope "s", of the counter other
// (total n) and, when all, of the singular instruments requests (a
// counter, total n), workers (an int64 gauge, n), temp (a float64 gauge,
// n) and lat (a float64 histogram of bound 1, n observations of 0.5,
// with min and max 0.5).
func singulars(at time.Time, n int64, all bool) *metricdata.ResourceMetrics {
	ms := []metricdata.Metrics{sum("other", metricdata.CumulativeTemporality, metricdata.DataPoint[int64]{Time: at, Value: n})}
	if all {
		h := hpoint([]float64{1}, []uint64{uint64(n), 0}, 0.5*float64(n), 0.5, 0.5)
		h.Time = at
		ms = append(ms,
			sum("requests", metricdata.CumulativeTemporality, metricdata.DataPoint[int64]{Time: at, Value: n}),
			gauge("workers", metricdata.DataPoint[int64]{Time: at, Value: n}),
			metricdata.Metrics{Name: "temp", Data: metricdata.Gauge[float64]{DataPoints: []metricdata.DataPoint[float64]{{Time: at, Value: float64(n)}}}},
			metricdata.Metrics{Name: "lat", Data: metricdata.Histogram[float64]{Temporality: metricdata.CumulativeTemporality,
				DataPoints: []metricdata.HistogramDataPoint[float64]{h}}})
	}
	return scopeExport(ms...)
}

// requireNoValue requires PCP to show no value for each singular metric
// of names, of scope s of file shop_test: a double's NaN, which PCP 6.0.3
// prints as nan, or nothing; and, with lat.count, no instance of
// lat.bucket.
func requireNoValue(t *testing.T, ms []pcptest.Metric, names ...string) {
	t.Helper()
	for _, name := range names {
		m := pcptest.Find(ms, "mmv.shop_test.s."+name)
		require.NotNil(t, m, name)
		require.True(t, m.Value == "" || m.Value == "nan", "%s shows %q", name, m.Value)
		if b := pcptest.Find(ms, "mmv.shop_test.s.lat.bucket"); name == "lat.count" && b != nil {
			require.Empty(t, b.Instances, "lat's buckets")
		}
	}
}
