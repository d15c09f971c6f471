package otelexporter

import (
	"context"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
)

// shownValues returns the instances PCP shows of metric, name to value.
func shownValues(t *testing.T, ms []pcptest.Metric, metric string) map[string]string {
	t.Helper()
	m := pcptest.Find(ms, metric)
	require.NotNil(t, m, metric)
	got := map[string]string{}
	for _, in := range m.Instances {
		got[in.Name] = in.Value
	}
	return got
}

// TestCollidingSetsNotCopied: attribute sets that make one instance (a key
// missing and "", values of two types printed alike) are distinct series
// in the SDK: PCP shows neither, and each point is counted and named,
// where the last written showed under the instance, which one the SDK's
// order decided, with nothing counted.
func TestCollidingSetsNotCopied(t *testing.T) {
	pcptest.NeedFileLayer(t)
	pcptest.MustHavePCP(t)
	p := newProvider(t, Options{})
	ctx := context.Background()
	m := p.Meter("shop")
	orders, err := m.Int64Counter("orders")
	require.NoError(t, err)
	orders.Add(ctx, 5)
	orders.Add(ctx, 7, metric.WithAttributes(attribute.String("k", "")))
	orders.Add(ctx, 1, metric.WithAttributes(attribute.String("k", "paid")))
	codes, err := m.Int64Counter("responses")
	require.NoError(t, err)
	codes.Add(ctx, 10, metric.WithAttributes(attribute.Int("code", 200)))
	codes.Add(ctx, 20, metric.WithAttributes(attribute.String("code", "200")))
	codes.Add(ctx, 30, metric.WithAttributes(attribute.String("code", "500")))
	for range 2 {
		ms, _ := p.flush(t)
		assert.Equal(t, map[string]string{"k=paid": "1"}, shownValues(t, ms, "mmv.shop_test.shop.orders"))
		assert.Equal(t, map[string]string{"code=500": "30"}, shownValues(t, ms, "mmv.shop_test.shop.responses"))
		err := p.exp.Err()
		assert.ErrorContains(t, err, `instrument "orders" of scope "shop": 2 attribute sets`)
		assert.ErrorContains(t, err, `instrument "responses" of scope "shop": 2 attribute sets`)
		assert.ErrorContains(t, err, `make one instance, of label values ["200"]`)
	}
	ms, _ := p.flush(t)
	assert.Equal(t, "12", shownValues(t, ms, "mmv.shop_test."+droppedMetric)["reason=attributes"], "4 points, 3 exports")
}

// TestCollidingSetsAcrossBatchesNotCopied: sets that make one instance
// in two batches of one collection (the SDK splits it, of one Time) are
// refused as those of one export are: the second batch's wrote over the
// first's, unnamed, a counter then moving between the two series' values
// at each collection.
func TestCollidingSetsAcrossBatchesNotCopied(t *testing.T) {
	exp, tmp := pcpExporter(t, Options{})
	ctx := context.Background()
	sum := func(v attribute.KeyValue, n int64, at time.Time) *metricdata.ResourceMetrics {
		return &metricdata.ResourceMetrics{Resource: testResource, ScopeMetrics: []metricdata.ScopeMetrics{{
			Scope: instrumentation.Scope{Name: "s"},
			Metrics: []metricdata.Metrics{{Name: "responses", Data: metricdata.Sum[int64]{Temporality: metricdata.CumulativeTemporality, IsMonotonic: true,
				DataPoints: []metricdata.DataPoint[int64]{{Attributes: attribute.NewSet(v), Time: at, Value: n}}}}},
		}}}
	}
	for i := range 2 {
		at := time.Now()
		require.NoError(t, exp.Export(ctx, sum(attribute.Int("code", 200), 10+int64(i), at)))      // its first batch
		require.NoError(t, exp.Export(ctx, sum(attribute.String("code", "200"), 20+int64(i), at))) // its second
		require.NoError(t, exp.ForceFlush(ctx))
		ms := pcptest.Info(t, tmp)
		assert.Empty(t, shownValues(t, ms, "mmv.shop_test.s.responses"), "collection %d", i)
		assert.ErrorContains(t, exp.Err(), `2 attribute sets, such as {code=200}, make one instance, of label values ["200"]`, "collection %d", i)
		assert.Equal(t, strconv.Itoa(2*(i+1)), shownValues(t, ms, "mmv.shop_test."+droppedMetric)["reason=attributes"], "both points of each collection")
	}
}

// TestAbsentSetsLeave: an attribute set an export no longer holds (an
// observable instrument's callback no longer observing it) leaves PCP,
// where PCP showed its last value for good; one observed again comes
// back. A singular metric cannot leave: Err names it.
func TestAbsentSetsLeave(t *testing.T) {
	pcptest.NeedFileLayer(t)
	pcptest.MustHavePCP(t)
	p := newProvider(t, Options{})
	var gone atomic.Bool
	m := p.Meter("shop")
	_, err := m.Int64ObservableGauge("queue.depth", metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
		o.Observe(3, metric.WithAttributes(attribute.String("queue", "a")))
		if !gone.Load() {
			o.Observe(40, metric.WithAttributes(attribute.String("queue", "b")))
		}
		return nil
	}))
	require.NoError(t, err)
	_, err = m.Int64ObservableGauge("workers", metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
		if !gone.Load() {
			o.Observe(8)
		}
		return nil
	}))
	require.NoError(t, err)
	ms, _ := p.flush(t)
	assert.Equal(t, map[string]string{"queue=a": "3", "queue=b": "40"}, shownValues(t, ms, "mmv.shop_test.shop.queue.depth"))
	require.NoError(t, p.exp.Err())

	gone.Store(true)
	ms, _ = p.flush(t)
	assert.Equal(t, map[string]string{"queue=a": "3"}, shownValues(t, ms, "mmv.shop_test.shop.queue.depth"))
	assert.Equal(t, "8", pcptest.Find(ms, "mmv.shop_test.shop.workers").Value)
	assert.ErrorContains(t, p.exp.Err(), `instrument "workers" of scope "shop": no point in this collection`)

	gone.Store(false)
	ms, _ = p.flush(t)
	assert.Equal(t, map[string]string{"queue=a": "3", "queue=b": "40"}, shownValues(t, ms, "mmv.shop_test.shop.queue.depth"))
	assert.NoError(t, p.exp.Err())
}

// TestBoundsChangeRetiresBuckets: a histogram whose bucket bounds change
// between exports (a producer's, a bridge's) shows the buckets of its
// last bounds only, where those of the old bounds stayed beside them,
// their counts summing past the count.
func TestBoundsChangeRetiresBuckets(t *testing.T) {
	exp, tmp := pcpExporter(t, Options{})
	hist := func(bounds []float64, counts []uint64) *metricdata.ResourceMetrics {
		var n uint64
		for _, c := range counts {
			n += c
		}
		pt := func(attrs ...attribute.KeyValue) metricdata.HistogramDataPoint[int64] {
			return metricdata.HistogramDataPoint[int64]{Attributes: attribute.NewSet(attrs...), Bounds: bounds, BucketCounts: counts, Count: n, Sum: int64(n)}
		}
		return &metricdata.ResourceMetrics{Resource: testResource, ScopeMetrics: []metricdata.ScopeMetrics{{
			Scope: instrumentation.Scope{Name: "s"},
			Metrics: []metricdata.Metrics{
				{Name: "lat", Unit: "ms", Data: metricdata.Histogram[int64]{Temporality: metricdata.CumulativeTemporality,
					DataPoints: []metricdata.HistogramDataPoint[int64]{pt(attribute.String("k", "v"))}}},
				{Name: "one", Unit: "ms", Data: metricdata.Histogram[int64]{Temporality: metricdata.CumulativeTemporality,
					DataPoints: []metricdata.HistogramDataPoint[int64]{pt()}}},
			},
		}}}
	}
	ctx := context.Background()
	require.NoError(t, exp.Export(ctx, hist([]float64{1, 10}, []uint64{5, 6, 7})))
	require.NoError(t, exp.Export(ctx, hist([]float64{5, 10}, []uint64{1, 2, 3})))
	require.NoError(t, exp.ForceFlush(ctx))
	require.NoError(t, exp.Err())
	ms := pcptest.Info(t, tmp)
	assert.Equal(t, map[string]string{"k=v,le=5": "1", "k=v,le=10": "2", "k=v,le=+Inf": "3"}, shownValues(t, ms, "mmv.shop_test.s.lat.bucket"))
	assert.Equal(t, map[string]string{"le=5": "1", "le=10": "2", "le=+Inf": "3"}, shownValues(t, ms, "mmv.shop_test.s.one.bucket"), "a singular histogram's")
	assert.Equal(t, "6", shownValues(t, ms, "mmv.shop_test.s.lat.count")["k=v"])
}

// TestAbsentSetsMakeRoomAtTheirExport: the sets an export does not hold
// leave before its points are written, so that its new sets take their
// room under the Limit, where they were refused at the limit.
func TestAbsentSetsMakeRoomAtTheirExport(t *testing.T) {
	pcptest.NeedFileLayer(t) // Export starts the registry
	exp := New(&Options{Limit: 2, Registry: mmv.Options{Dir: filepath.Join(t.TempDir(), "mmv")}})
	t.Cleanup(func() { _ = exp.Shutdown(context.Background()) })
	gauge := func(queues ...string) *metricdata.ResourceMetrics {
		var pts []metricdata.DataPoint[int64]
		for i, q := range queues {
			pts = append(pts, metricdata.DataPoint[int64]{Attributes: attribute.NewSet(attribute.String("queue", q)), Value: int64(i + 1)})
		}
		return &metricdata.ResourceMetrics{Resource: testResource, ScopeMetrics: []metricdata.ScopeMetrics{{
			Scope:   instrumentation.Scope{Name: "s"},
			Metrics: []metricdata.Metrics{{Name: "depth", Data: metricdata.Gauge[int64]{DataPoints: pts}}},
		}}}
	}
	shown := func() map[string]any {
		snap, err := exp.Registry().Snapshot()
		require.NoError(t, err)
		got := map[string]any{}
		for _, ms := range snap {
			if ms.Name == "s.depth" {
				for _, iv := range ms.Values {
					got[iv.Instance] = iv.Value
				}
			}
		}
		return got
	}
	ctx := context.Background()
	require.NoError(t, exp.Export(ctx, gauge("a", "b")))
	require.NoError(t, exp.Err())
	assert.Equal(t, map[string]any{"queue=a": int64(1), "queue=b": int64(2)}, shown())

	require.NoError(t, exp.Export(ctx, gauge("c", "d")))
	assert.NoError(t, exp.Err(), "an export of 2 sets at a Limit of 2")
	assert.Equal(t, map[string]any{"queue=c": int64(1), "queue=d": int64(2)}, shown(),
		"the export's 2 sets, refused for the limit while the 2 it no longer holds were still in PCP")
}
