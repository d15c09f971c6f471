package otelexporter

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
)

// TestBatchedExportsAreOneCollection: a periodic reader given
// sdkmetric.WithMaxExportBatchSize splits one collection into several
// exports, of one end Time: PCP shows every attribute set the SDK
// collected, where each batch removed the sets of the batches before it,
// leaving the last batch's only, with Err nil and nothing counted.
func TestBatchedExportsAreOneCollection(t *testing.T) {
	pcptest.NeedFileLayer(t)
	pcptest.MustHavePCP(t)
	tmp := t.TempDir()
	exp := New(&Options{Registry: mmv.Options{Dir: filepath.Join(tmp, "mmv")}})
	manual := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(testResource), sdkmetric.WithReader(manual),
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(time.Hour), sdkmetric.WithMaxExportBatchSize(2))))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	ctx := context.Background()
	m := mp.Meter("shop")
	orders, err := m.Int64Counter("orders")
	require.NoError(t, err)
	for _, region := range []string{"a", "b", "c"} {
		orders.Add(ctx, 5, metric.WithAttributes(attribute.String("region", region)))
	}
	workers, err := m.Int64Gauge("workers")
	require.NoError(t, err)
	workers.Record(ctx, 8)

	for range 2 {
		require.NoError(t, mp.ForceFlush(ctx))
		var rm metricdata.ResourceMetrics
		require.NoError(t, manual.Collect(ctx, &rm))
		require.Len(t, rm.ScopeMetrics, 1)
		require.Len(t, rm.ScopeMetrics[0].Metrics[0].Data.(metricdata.Sum[int64]).DataPoints, 3, "the SDK holds three sets")

		ms := pcptest.Info(t, tmp)
		assert.Equal(t, map[string]string{"region=a": "5", "region=b": "5", "region=c": "5"},
			shownValues(t, ms, "mmv.shop_test.shop.orders"), "PCP shows every set of the collection")
		assert.Equal(t, "8", pcptest.Find(ms, "mmv.shop_test.shop.workers").Value)
		assert.NoError(t, exp.Err())
	}
}

// TestBatchedErrNamesTheCollection: with sdkmetric.WithMaxExportBatchSize
// a collection is several exports, and Err names the drops of all of
// them: a point dropped in the first batch (an exponential histogram a
// View chose), counted in otelexporter.dropped, is named by Err read
// after the collection, where Err named the last batch's drops only,
// nil. The next collection, dropping nothing, clears it.
func TestBatchedErrNamesTheCollection(t *testing.T) {
	pcptest.NeedFileLayer(t)
	pcptest.MustHavePCP(t)
	tmp := t.TempDir()
	exp := New(&Options{Registry: mmv.Options{Dir: filepath.Join(tmp, "mmv")}})
	view := sdkmetric.NewView(sdkmetric.Instrument{Name: "latency"},
		sdkmetric.Stream{Aggregation: sdkmetric.AggregationBase2ExponentialHistogram{MaxSize: 160, MaxScale: 20}})
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(testResource), sdkmetric.WithView(view),
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(time.Hour), sdkmetric.WithMaxExportBatchSize(2))))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	ctx := context.Background()
	m := mp.Meter("shop")
	latency, err := m.Float64Histogram("latency", metric.WithUnit("s"))
	require.NoError(t, err)
	latency.Record(ctx, 1.5)
	orders, err := m.Int64Counter("orders")
	require.NoError(t, err)
	for _, region := range []string{"a", "b", "c", "d"} {
		orders.Add(ctx, 5, metric.WithAttributes(attribute.String("region", region)))
	}
	require.NoError(t, mp.ForceFlush(ctx))
	ms := pcptest.Info(t, tmp)
	require.Equal(t, "1", droppedOf(t, ms, "shop_test", "aggregation"), "the exponential histogram's point is counted")
	assert.ErrorContains(t, exp.Err(), `instrument "latency" of scope "shop": an exponential histogram is not exported`,
		"otelexporter.dropped{aggregation} counted the exponential histogram of this collection, and Err, read after it, says nothing: the last batch dropped nothing")

	// The same by hand, and the next collection, dropping nothing.
	exp2, _ := pcpExporter(t, Options{Name: "batched"})
	t0 := time.Now()
	first := gaugeAt("queue", "a", t0)
	first.ScopeMetrics[0].Metrics = append(first.ScopeMetrics[0].Metrics, metricdata.Metrics{Name: "lat",
		Data: metricdata.ExponentialHistogram[float64]{Temporality: metricdata.CumulativeTemporality,
			DataPoints: []metricdata.ExponentialHistogramDataPoint[float64]{{Time: t0}}}})
	require.NoError(t, exp2.Export(ctx, first))
	require.NoError(t, exp2.Export(ctx, gaugeAt("disk", "b", t0)))
	assert.ErrorContains(t, exp2.Err(), `instrument "lat" of scope "s"`, "the first batch's drop")
	require.NoError(t, exp2.Export(ctx, gaugeAt("queue", "a", t0.Add(time.Second))))
	require.NoError(t, exp2.Export(ctx, gaugeAt("disk", "b", t0.Add(time.Second))))
	assert.NoError(t, exp2.Err(), "the next collection dropped nothing")
}

// TestSharedExporterNamed: one Exporter given to two readers (two
// MeterProviders of one service writing one file), against the SDK's
// contract of one exporter per reader, which the package doc states: the
// exporter takes each export for a whole collection, so that each
// provider's export takes the other's attribute sets out of PCP, by
// design. Err names it, where it was nil with nothing counted: when the
// two providers' scopes differ, a collection sharing no scope with the
// one before; when their resources differ, every export of the second.
func TestSharedExporterNamed(t *testing.T) {
	pcptest.NeedFileLayer(t)
	pcptest.MustHavePCP(t)
	ctx := context.Background()
	shared := func(resA, resB *resource.Resource) (*Exporter, string, [2]*sdkmetric.MeterProvider) {
		tmp := t.TempDir()
		exp := New(&Options{Registry: mmv.Options{Dir: filepath.Join(tmp, "mmv")}})
		var mps [2]*sdkmetric.MeterProvider
		for i, res := range []*resource.Resource{resA, resB} {
			mps[i] = sdkmetric.NewMeterProvider(sdkmetric.WithResource(res),
				sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(time.Hour))))
			t.Cleanup(func() { _ = mps[i].Shutdown(ctx) })
		}
		return exp, tmp, mps
	}

	exp, tmp, mps := shared(testResource, testResource)
	app, db := mps[0], mps[1]
	requests, err := app.Meter("app").Int64Counter("requests")
	require.NoError(t, err)
	queries, err := db.Meter("db").Int64Counter("queries")
	require.NoError(t, err)
	requests.Add(ctx, 4, metric.WithAttributes(attribute.String("route", "/a")))
	queries.Add(ctx, 9, metric.WithAttributes(attribute.String("table", "t")))
	require.NoError(t, app.ForceFlush(ctx))
	require.NoError(t, exp.Err())
	require.NoError(t, db.ForceFlush(ctx))
	ms := pcptest.Info(t, tmp)
	if got := shownValues(t, ms, "mmv.shop_test.app.requests"); got["route=/a"] != "4" {
		assert.ErrorContains(t, exp.Err(), "One Exporter serves one reader", "PCP shows app.requests %v (the SDK holds route=/a = 4) after the other provider's export, with Err nil", got)
	}
	require.NoError(t, app.ForceFlush(ctx))
	assert.ErrorContains(t, exp.Err(), `share none with the 1 of the collection before (such as "db")`, "and back")

	// Two resources, one meter and instrument: no scope tells them apart.
	other, err := resource.Merge(testResource, resource.NewSchemaless(attribute.String("service.instance.id", "b")))
	require.NoError(t, err)
	exp, _, mps = shared(testResource, other)
	for i, mp := range mps {
		c, err := mp.Meter("app").Int64Counter("requests")
		require.NoError(t, err)
		c.Add(ctx, 1, metric.WithAttributes(attribute.Int("provider", i)))
	}
	require.NoError(t, mps[0].ForceFlush(ctx))
	require.NoError(t, exp.Err())
	require.NoError(t, mps[1].ForceFlush(ctx))
	assert.ErrorContains(t, exp.Err(), `an export of resource {`, "the second provider's export")
	assert.ErrorContains(t, exp.Err(), `service.instance.id=b`)
}

// TestSkippedExportsNamed: the SDK's periodic reader exports nothing when
// its collect fails, and one observable callback returning an error (a
// queue backend down) fails it: every instrument of the provider stops
// reaching the exporter, and PCP, whose values carry no time stamp,
// shows them all as current, frozen at the last export (a counter at 1
// while the program counted 101). Err names the gap once it passes
// several intervals, learned from the exports' spacing, where it said
// nothing; once exports resume it names none.
func TestSkippedExportsNamed(t *testing.T) {
	pcptest.NeedFileLayer(t)
	pcptest.MustHavePCP(t)
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(error) {})) // the SDK's report of the failing callback
	t.Cleanup(func() { otel.SetErrorHandler(otel.ErrorHandlerFunc(func(error) {})) })
	tmp := t.TempDir()
	exp := New(&Options{Registry: mmv.Options{Dir: filepath.Join(tmp, "mmv")}})
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(testResource),
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(20*time.Millisecond))))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	ctx := context.Background()
	m := mp.Meter("shop")
	requests, err := m.Int64Counter("requests")
	require.NoError(t, err)
	var down atomic.Bool
	_, err = m.Int64ObservableGauge("queue.depth", metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
		if down.Load() {
			return errors.New("queue backend down")
		}
		o.Observe(3)
		return nil
	}))
	require.NoError(t, err)
	requests.Add(ctx, 1)
	require.Eventually(t, func() bool {
		m := pcptest.Find(pcptest.Info(t, tmp), "mmv.shop_test.shop.requests")
		return m != nil && m.Value == "1"
	}, 10*time.Second, 50*time.Millisecond)
	require.NoError(t, exp.Err())
	// The interval learned (two collections): else a gap is three of the
	// SDK's default intervals (TestCadence).
	require.Eventually(t, func() bool { return exp.cadence.interval.Load() != 0 }, 10*time.Second, 10*time.Millisecond)

	down.Store(true)
	requests.Add(ctx, 100)
	// A gap is more than three intervals and a second since the last
	// export: a sleep of a second, the export before it up to an interval
	// and a pminfo earlier, was past it in some runs only.
	named := func() bool {
		err := exp.Err()
		return err != nil && strings.Contains(err.Error(), "otelexporter: no export for")
	}
	assert.Eventually(t, named, 10*time.Second, 10*time.Millisecond, "no export came for ten seconds, and Err says nothing")
	ms := pcptest.Info(t, tmp)
	shown := pcptest.Find(ms, "mmv.shop_test.shop.requests")
	require.NotNil(t, shown)
	require.Equal(t, "1", shown.Value, "no export: PCP shows the last one's value")
	require.Equal(t, "3", pcptest.Find(ms, "mmv.shop_test.shop.queue.depth").Value)

	down.Store(false)
	require.Eventually(t, func() bool {
		m := pcptest.Find(pcptest.Info(t, tmp), "mmv.shop_test.shop.requests")
		return m != nil && m.Value == "101"
	}, 10*time.Second, 50*time.Millisecond)
	assert.NoError(t, exp.Err(), "exports resumed")
}

// TestCadenceReadWhileLearned: Err reads the cadence without the
// exporter's lock while an Export learns it, under the race detector:
// gap read the count of spacings that begin wrote (CI's race report on
// TestSkippedExportsNamed).
func TestCadenceReadWhileLearned(t *testing.T) {
	var c cadence
	var mu sync.Mutex // Exporter.mu, which begin runs under
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 2000 {
			mu.Lock()
			c.begin(time.Hour + time.Duration(i)*time.Second)
			mu.Unlock()
		}
	}()
	for {
		select {
		case <-done:
			assert.ErrorContains(t, c.gap(time.Hour+time.Duration(1999+181)*time.Second), "the median of the last 8")
			return
		default:
			_ = c.gap(10 * time.Hour) // a gap: its message counts the spacings
		}
	}
}

// TestCadence: the interval is the median spacing of the last
// collections, so that a ForceFlush's collection or a gap's among the
// reader's own moves it little; a gap is more than three intervals and a
// second; none before the first collection, nor after Shutdown. After
// the first alone, the interval is the SDK's default, or the time from
// the exporter's making to the first when longer (a reader given a
// longer interval): a reader that stopped after its first export went
// unnamed for good.
func TestCadence(t *testing.T) {
	t.Setenv("OTEL_METRIC_EXPORT_INTERVAL", "")
	at := time.Hour // any time since epoch
	// Made 5 s before its first export: a ForceFlush's.
	c := cadence{made: at - 5*time.Second}
	require.NoError(t, c.gap(at))
	c.begin(at)
	require.NoError(t, c.gap(at+180*time.Second))
	require.ErrorContains(t, c.gap(at+181*time.Second), "no export for 3m1s, where collections come every 1m0s (the SDK's default: one collection came)", "one collection")
	t.Setenv("OTEL_METRIC_EXPORT_INTERVAL", "10000")
	require.ErrorContains(t, c.gap(at+31*time.Second), "every 10s (OTEL_METRIC_EXPORT_INTERVAL: one collection came)")
	long := cadence{made: at - 5*time.Minute}
	long.begin(at)
	require.NoError(t, long.gap(at+15*time.Minute), "a reader exporting every 5 minutes")
	require.ErrorContains(t, long.gap(at+15*time.Minute+time.Second), "every 5m0s (the time from the exporter's making to the first: one collection came)")
	for _, d := range []time.Duration{60, 60, 5, 55, 60, 300, 60} { // a ForceFlush, a gap
		at += d * time.Second
		c.begin(at)
	}
	assert.NoError(t, c.gap(at+180*time.Second))
	assert.ErrorContains(t, c.gap(at+181*time.Second), "no export for 3m1s, where collections come every 1m0s (the median of the last 7)")
	c.stop()
	assert.NoError(t, c.gap(at+time.Hour), "after Shutdown")

	var fast cadence
	fast.begin(time.Hour)
	fast.begin(time.Hour + 10*time.Millisecond)
	assert.NoError(t, fast.gap(time.Hour+time.Second), "a second at least")
	assert.Error(t, fast.gap(time.Hour+1100*time.Millisecond))
}

// TestLongIntervalNoGapAfterFirstExport: a periodic reader given an
// interval longer than the SDK's default (sdkmetric.WithInterval, which
// OTEL_METRIC_EXPORT_INTERVAL does not override) makes its first export
// one interval after it starts: Err names no gap before its second,
// where it named one three default intervals after the first (at 3
// minutes, of a reader exporting every 5). Here the default is made 100
// ms, the reader's interval 2 s.
func TestLongIntervalNoGapAfterFirstExport(t *testing.T) {
	pcptest.NeedFileLayer(t)
	t.Setenv("OTEL_METRIC_EXPORT_INTERVAL", "100")
	exp := New(&Options{Registry: mmv.Options{Dir: filepath.Join(t.TempDir(), "mmv")}})
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(testResource),
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(2*time.Second))))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	c, err := mp.Meter("shop").Int64Counter("requests")
	require.NoError(t, err)
	c.Add(context.Background(), 1)
	require.Eventually(t, func() bool { return exp.cadence.last.Load() != 0 }, 10*time.Second, time.Millisecond, "the first export")
	first := time.Duration(exp.cadence.last.Load())
	time.Sleep(first + 1300*time.Millisecond - monotonic()) // past a second and three default intervals, before the second export
	if exp.cadence.interval.Load() != 0 {
		t.Skip("the second export came first: the test ran late")
	}
	assert.NoError(t, exp.Err(), "a second after the first export of a reader exporting every 2 s")
}

// TestBoundsGrowWithinLimit: a histogram whose bounds change between
// exports (a producer's: TestBoundsChangeRetiresBuckets) to more buckets
// keeps every attribute set under Options.Limit, its buckets' limit
// raised as prombridge raises its own: it was Limit times the buckets of
// the first export, and the sets past it were refused, counted as the
// vector's limit.
func TestBoundsGrowWithinLimit(t *testing.T) {
	exp, tmp := pcpExporter(t, Options{Limit: 2})
	hist := func(bounds []float64) *metricdata.ResourceMetrics {
		counts := make([]uint64, len(bounds)+1)
		counts[0] = 1
		var pts []metricdata.HistogramDataPoint[int64]
		for _, k := range []string{"a", "b"} {
			pts = append(pts, metricdata.HistogramDataPoint[int64]{Attributes: attribute.NewSet(attribute.String("k", k)),
				Bounds: bounds, BucketCounts: counts, Count: 1, Sum: 1})
		}
		return &metricdata.ResourceMetrics{Resource: testResource, ScopeMetrics: []metricdata.ScopeMetrics{{
			Scope: instrumentation.Scope{Name: "s"},
			Metrics: []metricdata.Metrics{{Name: "lat", Unit: "ms", Data: metricdata.Histogram[int64]{
				Temporality: metricdata.CumulativeTemporality, DataPoints: pts}}},
		}}}
	}
	ctx := context.Background()
	require.NoError(t, exp.Export(ctx, hist([]float64{1})))
	require.NoError(t, exp.Err())
	require.NoError(t, exp.Export(ctx, hist([]float64{1, 2, 3, 4})))
	require.NoError(t, exp.ForceFlush(ctx))
	assert.NoError(t, exp.Err(), "two sets, Limit 2")
	ms := pcptest.Info(t, tmp)
	assert.Equal(t, map[string]string{"k=a": "1", "k=b": "1"}, shownValues(t, ms, "mmv.shop_test.s.lat.count"))
	assert.Len(t, shownValues(t, ms, "mmv.shop_test.s.lat.bucket"), 10, "5 buckets of each set")
}

// TestEmptyMetricIsAbsent: a metric of an export with no data point (a
// producer's, sdkmetric.WithProducer) is an instrument not exported: its
// singular metric keeps its last value, which Err names, as when the
// metric is missing from the export (it was taken as exported, unnamed).
func TestEmptyMetricIsAbsent(t *testing.T) {
	exp, tmp := pcpExporter(t, Options{})
	gauge := func(pts ...metricdata.DataPoint[int64]) *metricdata.ResourceMetrics {
		return &metricdata.ResourceMetrics{Resource: testResource, ScopeMetrics: []metricdata.ScopeMetrics{{
			Scope:   instrumentation.Scope{Name: "s"},
			Metrics: []metricdata.Metrics{{Name: "workers", Data: metricdata.Gauge[int64]{DataPoints: pts}}},
		}}}
	}
	ctx := context.Background()
	require.NoError(t, exp.Export(ctx, gauge(metricdata.DataPoint[int64]{Value: 8})))
	require.NoError(t, exp.Err())
	require.NoError(t, exp.Export(ctx, &metricdata.ResourceMetrics{Resource: testResource}))
	require.ErrorContains(t, exp.Err(), `instrument "workers" of scope "s": no point in this collection`, "missing: named")
	require.NoError(t, exp.Export(ctx, gauge(metricdata.DataPoint[int64]{Value: 8})))
	require.NoError(t, exp.Export(ctx, gauge()))
	require.NoError(t, exp.ForceFlush(ctx))
	assert.Equal(t, "8", pcptest.Find(pcptest.Info(t, tmp), "mmv.shop_test.s.workers").Value, "PCP shows the last value")
	assert.ErrorContains(t, exp.Err(), `instrument "workers" of scope "s": no point in this collection`, "present with no point: the old value must be named")
}

// TestAbsentInstrumentLeavesWhenOnlyNewOnesExported: an observable gauge
// whose callback stops observing leaves PCP at the next collection's
// export also when that export holds only an instrument first seen in it:
// its points were collected after the export before began. A new
// collection was seen only in an instrument of the running one coming
// with a new Time, and PCP showed the gauge's last value as current, Err
// nil, for as long as the instruments alternated.
func TestAbsentInstrumentLeavesWhenOnlyNewOnesExported(t *testing.T) {
	exp, tmp := pcpExporter(t, Options{})
	ctx := context.Background()
	t0 := time.Now()
	require.NoError(t, exp.Export(ctx, gaugeAt("queue", "a", t0)))
	require.NoError(t, exp.Export(ctx, gaugeAt("disk", "b", t0.Add(10*time.Second)))) // the next collection: queue observed nothing
	require.NoError(t, exp.ForceFlush(ctx))
	ms := pcptest.Info(t, tmp)
	assert.Equal(t, map[string]string{"k=b": "7"}, shownValues(t, ms, "mmv.shop_test.s.disk"))
	if m := pcptest.Find(ms, "mmv.shop_test.s.queue"); m != nil {
		assert.Empty(t, m.Instances, "queue{k=a} is not in the export 10 s later; PCP shows its old value as current (Err: %v)", exp.Err())
	}
}

// TestFutureTimeBatchesAreOneCollection: a collection split into two
// exports whose points carry a producer's Time a minute ahead of this
// host's clock (a skewed source, or the clock stepped back after the
// collection) is one collection: the second batch's Time, the first's, is
// after the export before began but not after the collection's points
// (route), where it started a new collection and swept the first batch's
// instrument out of PCP, Err nil, at every collection.
func TestFutureTimeBatchesAreOneCollection(t *testing.T) {
	exp, tmp := pcpExporter(t, Options{})
	ctx := context.Background()
	for i := range 2 {
		at := time.Now().Add(time.Minute + time.Duration(i)*time.Second) // one collection's Time, a minute ahead
		require.NoError(t, exp.Export(ctx, gaugeAt("queue", "a", at)))   // its first batch
		require.NoError(t, exp.Export(ctx, gaugeAt("disk", "b", at)))    // its second
		require.NoError(t, exp.ForceFlush(ctx))
		ms := pcptest.Info(t, tmp)
		assert.Equal(t, map[string]string{"k=b": "7"}, shownValues(t, ms, "mmv.shop_test.s.disk"), "collection %d", i)
		assert.Equal(t, map[string]string{"k=a": "7"}, shownValues(t, ms, "mmv.shop_test.s.queue"), "collection %d: the first batch's gauge (Err: %v)", i, exp.Err())
	}
}

// gaugeAt is an export of one gauge of scope "s", name, with the point
// k=<k> of value 7 at Time at.
func gaugeAt(name, k string, at time.Time) *metricdata.ResourceMetrics {
	return &metricdata.ResourceMetrics{Resource: testResource, ScopeMetrics: []metricdata.ScopeMetrics{{
		Scope: instrumentation.Scope{Name: "s"},
		Metrics: []metricdata.Metrics{{Name: name, Data: metricdata.Gauge[int64]{DataPoints: []metricdata.DataPoint[int64]{
			{Attributes: attribute.NewSet(attribute.String("k", k)), Time: at, Value: 7}}}}},
	}}}
}
