package otelexporter

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
)

// sum is a cumulative monotonic int64 sum of points with attributes.
func sum(name string, t metricdata.Temporality, pts ...metricdata.DataPoint[int64]) metricdata.Metrics {
	return metricdata.Metrics{Name: name, Data: metricdata.Sum[int64]{Temporality: t, IsMonotonic: true, DataPoints: pts}}
}

// gauge is an int64 gauge of points.
func gauge(name string, pts ...metricdata.DataPoint[int64]) metricdata.Metrics {
	return metricdata.Metrics{Name: name, Data: metricdata.Gauge[int64]{DataPoints: pts}}
}

func point(v int64, kvs ...attribute.KeyValue) metricdata.DataPoint[int64] {
	return metricdata.DataPoint[int64]{Value: v, Attributes: attribute.NewSet(kvs...)}
}

// TestDropsCounted: every point the exporter cannot store is counted in
// otelexporter.dropped by reason, at each export, and Err says why; points
// past an instrument's Limit are counted by the registry in mmv.dropped.
func TestDropsCounted(t *testing.T) {
	pcptest.NeedFileLayer(t) // Export starts the service's registry
	pcptest.MustHavePCP(t)
	tmp := t.TempDir()
	exp := New(&Options{Limit: 2, Registry: mmv.Options{Dir: filepath.Join(tmp, "mmv")}})
	cum := metricdata.CumulativeTemporality
	a1 := attribute.Int("a", 1)
	scope := instrumentation.Scope{Name: "example.com/s"}
	metrics := []metricdata.Metrics{
		{Name: "exp", Data: metricdata.ExponentialHistogram[float64]{Temporality: cum, DataPoints: make([]metricdata.ExponentialHistogramDataPoint[float64], 2)}},
		sum("delta", metricdata.DeltaTemporality, point(1)),
		sum("negative", cum, point(-1)),
		sum("t", cum, point(1)),
		sum("t.u", cum, point(1)), // t is a leaf: PCP's namespace refuses it
		sum("limited", cum, point(1, a1), point(2, attribute.Int("a", 2)), point(3, attribute.Int("a", 3))),
		gauge("keyed", point(1, a1)), // keys: a
	}
	other := metricdata.ScopeMetrics{Scope: instrumentation.Scope{Name: "example.org/s"}, Metrics: []metricdata.Metrics{sum("t", cum, point(5))}}
	rm := &metricdata.ResourceMetrics{Resource: testResource, ScopeMetrics: []metricdata.ScopeMetrics{other, {Scope: scope, Metrics: metrics}}}
	ctx := context.Background()
	require.NoError(t, exp.Export(ctx, rm))
	require.Error(t, exp.Err())
	metrics[6] = gauge("keyed", point(1, a1), point(2, attribute.Int("b", 2))) // b: not in the first export, and a gauge's levels do not add up
	require.NoError(t, exp.Export(ctx, rm))
	assert.ErrorContains(t, exp.Err(), `attribute keys ["b"]`)
	require.NoError(t, exp.ForceFlush(ctx))

	ms := pcptest.Info(t, tmp)
	d := pcptest.Find(ms, "mmv.shop_test.otelexporter.dropped")
	require.NotNil(t, d)
	got := map[string]string{}
	for _, in := range d.Instances {
		got[in.Name] = in.Value
	}
	assert.Equal(t, map[string]string{
		"reason=aggregation": "4", // 2 points, 2 exports
		"reason=temporality": "2",
		"reason=declaration": "2", // s.t.u, twice
		"reason=conflict":    "2", // example.org's s.t, twice: example.com sorts first
		"reason=attributes":  "1",
		"reason=value":       "2",
	}, got)
	md := pcptest.Find(ms, "mmv.shop_test.mmv.dropped")
	require.NotNil(t, md)
	if in := md.Instance("limit"); assert.NotNil(t, in, "%+v", md.Instances) {
		assert.Equal(t, "2", in.Value, "a=3 of limited, twice")
	}
	l := pcptest.Find(ms, "mmv.shop_test.s.limited")
	require.NotNil(t, l)
	assert.Len(t, l.Instances, 2)
	assert.Equal(t, "1", pcptest.Find(ms, "mmv.shop_test.s.t").Value, "example.com's s.t has the metric, though example.org's came first")
}

// TestExportCopies: the values are in the file when Export returns; the
// SDK's data, changed afterwards as the SDK reuses it, changes nothing.
func TestExportCopies(t *testing.T) {
	pcptest.NeedFileLayer(t) // Export starts the service's registry
	pcptest.MustHavePCP(t)
	tmp := t.TempDir()
	exp := New(&Options{Registry: mmv.Options{Dir: filepath.Join(tmp, "mmv")}})
	pts := []metricdata.DataPoint[int64]{point(7, attribute.String("k", "v"))}
	rm := &metricdata.ResourceMetrics{Resource: testResource, ScopeMetrics: []metricdata.ScopeMetrics{{
		Metrics: []metricdata.Metrics{sum("n", metricdata.CumulativeTemporality, pts...)}}}}
	require.NoError(t, exp.Export(context.Background(), rm))
	pts[0].Value, pts[0].Attributes = 99, attribute.NewSet(attribute.String("k", "w"))
	require.NoError(t, exp.ForceFlush(context.Background()))

	n := pcptest.Find(pcptest.Info(t, tmp), "mmv.shop_test.n")
	require.NotNil(t, n)
	require.Len(t, n.Instances, 1)
	assert.Equal(t, "k=v", n.Instances[0].Name)
	assert.Equal(t, "7", n.Instances[0].Value)
}

// TestPointWholeOrNot: a point is in PCP whole or not at all. A histogram
// point whose bucket instances the registry refuses (an attribute value
// that leaves no room for le) publishes no count or sum either; a point
// whose value turns into one a counter cannot hold takes its old value out
// of PCP. Both are counted and Err names the instrument.
func TestPointWholeOrNot(t *testing.T) {
	pcptest.NeedFileLayer(t) // Export starts the service's registry
	pcptest.MustHavePCP(t)
	tmp := t.TempDir()
	exp := New(&Options{Registry: mmv.Options{Dir: filepath.Join(tmp, "mmv")}})
	cum := metricdata.CumulativeTemporality
	long := attribute.String("k", strings.Repeat("v", 250)) // k=v...: 252 bytes; with ",le=+Inf" too long
	hist := metricdata.Metrics{Name: "lat", Data: metricdata.Histogram[int64]{Temporality: cum, DataPoints: []metricdata.HistogramDataPoint[int64]{
		{Attributes: attribute.NewSet(long), Count: 1, Sum: 3, BucketCounts: []uint64{1}},
		{Attributes: attribute.NewSet(attribute.String("k", "short")), Count: 2, Sum: 4, BucketCounts: []uint64{2}},
	}}}
	fsum := func(v float64) metricdata.Metrics {
		return metricdata.Metrics{Name: "busy", Unit: "s", Data: metricdata.Sum[float64]{Temporality: cum, IsMonotonic: true,
			DataPoints: []metricdata.DataPoint[float64]{{Attributes: attribute.NewSet(attribute.String("k", "a")), Value: v}}}}
	}
	scope := instrumentation.Scope{Name: "s"}
	rm := &metricdata.ResourceMetrics{Resource: testResource, ScopeMetrics: []metricdata.ScopeMetrics{{Scope: scope, Metrics: []metricdata.Metrics{hist, fsum(1)}}}}
	ctx := context.Background()
	require.NoError(t, exp.Export(ctx, rm))
	rm.ScopeMetrics[0].Metrics[1] = fsum(math.NaN())
	require.NoError(t, exp.Export(ctx, rm))
	require.NoError(t, exp.ForceFlush(ctx))
	err := exp.Err()
	assert.ErrorContains(t, err, `instrument "lat" of scope "s": mmv: vector "s.lat.bucket"`)
	assert.ErrorContains(t, err, `instrument "busy" of scope "s": value NaN is not a counter's`)

	ms := pcptest.Info(t, tmp)
	for _, name := range []string{"s.lat.count", "s.lat.sum", "s.lat.bucket"} {
		m := pcptest.Find(ms, "mmv.shop_test."+name)
		require.NotNil(t, m, name)
		var names []string
		for _, in := range m.Instances {
			names = append(names, in.Name)
		}
		assert.NotContains(t, strings.Join(names, " "), "vvv", "%s: nothing of the refused point", name)
		assert.NotEmpty(t, names, "%s: the other point is there", name)
	}
	assert.Empty(t, pcptest.Find(ms, "mmv.shop_test.s.busy").Instances, "the value dropped takes the old one out")
}

// TestAttributeValueNotUTF8: an attribute value that is not UTF-8 (OTel
// allows any bytes in a string) makes label values a vector refuses, as
// client_golang's do: PCP's JSON labels and a Prometheus scrape would show
// "/caf\xe9" and "/caf\xe8" as one value. Its point is dropped, whole,
// counted by the registry in mmv.dropped and named by Err; the export
// goes on, and no method panics on the instruments refused.
func TestAttributeValueNotUTF8(t *testing.T) {
	pcptest.NeedFileLayer(t) // Export starts the service's registry
	exp := New(&Options{Registry: mmv.Options{Dir: filepath.Join(t.TempDir(), "mmv")}})
	cum := metricdata.CumulativeTemporality
	bad, good := attribute.String("k", "/caf\xe9"), attribute.String("k", "ok")
	hist := metricdata.Metrics{Name: "lat", Data: metricdata.Histogram[int64]{Temporality: cum, DataPoints: []metricdata.HistogramDataPoint[int64]{
		{Attributes: attribute.NewSet(attribute.String("k", "/caf\xe8")), Count: 1, Sum: 3, BucketCounts: []uint64{1}},
		{Attributes: attribute.NewSet(good), Count: 2, Sum: 4, BucketCounts: []uint64{2}},
	}}}
	rm := &metricdata.ResourceMetrics{Resource: testResource, ScopeMetrics: []metricdata.ScopeMetrics{{
		Scope: instrumentation.Scope{Name: "s"}, Metrics: []metricdata.Metrics{sum("n", cum, point(1, bad), point(2, good)), hist}}}}
	require.NotPanics(t, func() { require.NoError(t, exp.Export(context.Background(), rm)) })
	assert.ErrorIs(t, exp.Err(), mmv.ErrLabel)
	assert.ErrorContains(t, exp.Err(), "not UTF-8")

	snap, err := exp.Registry().Snapshot()
	require.NoError(t, err)
	instances := map[string][]string{}
	var refused any
	for _, m := range snap {
		for _, v := range m.Values {
			instances[m.Name] = append(instances[m.Name], v.Instance)
			if m.Name == "mmv.dropped" && v.Instance == "refused" {
				refused = v.Value
			}
		}
	}
	assert.Equal(t, []string{"k=ok"}, instances["s.n"], "the point that is UTF-8 alone")
	assert.Equal(t, []string{"k=ok"}, instances["s.lat.count"], "the histogram point that is UTF-8 alone, whole")
	assert.Equal(t, []string{"k=ok"}, instances["s.lat.sum"])
	assert.NotContains(t, strings.Join(instances["s.lat.bucket"], " "), "caf", "no bucket of the point refused")
	assert.NotZero(t, refused, "mmv.dropped{refused}")
}

// TestMalformedHistogramDropped: a histogram point the exporter cannot
// store as it is (a Producer's, such as a bridge converting another
// library's histograms): more or fewer bucket counts than its bounds and
// +Inf, bounds that do not increase, a count that is not the sum of its
// bucket counts. Each is dropped, counted as value and named by Err; the
// well-formed point beside it is in PCP. The first indexed past its le
// names and panicked, on the periodic reader's goroutine, killing the
// service.
func TestMalformedHistogramDropped(t *testing.T) {
	exp, tmp := pcpExporter(t, Options{})
	at := func(k string) attribute.Set { return attribute.NewSet(attribute.String("k", k)) }
	rm := &metricdata.ResourceMetrics{Resource: testResource, ScopeMetrics: []metricdata.ScopeMetrics{{
		Scope: instrumentation.Scope{Name: "bridge"},
		Metrics: []metricdata.Metrics{{Name: "wait", Unit: "s", Data: metricdata.Histogram[float64]{Temporality: metricdata.CumulativeTemporality,
			DataPoints: []metricdata.HistogramDataPoint[float64]{
				{Attributes: at("more"), Time: time.Now(), Count: 3, Sum: 3, Bounds: []float64{1}, BucketCounts: []uint64{1, 1, 1}},
				{Attributes: at("fewer"), Time: time.Now(), Count: 1, Sum: 3, Bounds: []float64{1, 2}, BucketCounts: []uint64{1}},
				{Attributes: at("unsorted"), Time: time.Now(), Count: 3, Sum: 3, Bounds: []float64{2, 1}, BucketCounts: []uint64{1, 1, 1}},
				{Attributes: at("nan"), Time: time.Now(), Count: 2, Sum: 3, Bounds: []float64{math.NaN()}, BucketCounts: []uint64{1, 1}},
				{Attributes: at("count"), Time: time.Now(), Count: 5, Sum: 3, Bounds: []float64{1}, BucketCounts: []uint64{1, 1}},
				{Attributes: at("good"), Time: time.Now(), Count: 2, Sum: 3, Bounds: []float64{1}, BucketCounts: []uint64{1, 1}},
			}}}},
	}}}
	var panicked any
	func() {
		defer func() { panicked = recover() }()
		_ = exp.Export(context.Background(), rm)
	}()
	require.Nil(t, panicked, "Export panicked on a histogram point of 3 bucket counts for 1 bound: on the reader's goroutine this kills the service")
	err := exp.Err()
	require.Error(t, err)
	assert.Contains(t, err.Error(), `instrument "wait" of scope "bridge"`)
	assert.Contains(t, err.Error(), "(5 points)", "every malformed point counted")
	ms := pcptest.Info(t, tmp)
	assert.Equal(t, "5", droppedOf(t, ms, "shop_test", "value"), "the malformed points are counted")
	assert.Equal(t, map[string]string{"k=good": "2"}, shownValues(t, ms, "mmv.shop_test.bridge.wait.count"), "only the well-formed point is in PCP")
	assert.Equal(t, map[string]string{"k=good,le=1": "1", "k=good,le=+Inf": "1"}, shownValues(t, ms, "mmv.shop_test.bridge.wait.bucket"))
}

// TestHistogramAttributeLe: a histogram's attribute le is its label
// exported_le, in every metric of the instrument, as the scrape (package
// expose) and Prometheus rename a label that clashes with a histogram's
// buckets' le (exported_exported_le when a key makes exported_le too); an
// attribute le of another instrument is its label le. Its bucket vector
// had le twice, which the registry refused: every point of the
// instrument dropped, for good, counted as declaration.
func TestHistogramAttributeLe(t *testing.T) {
	exp, tmp := pcpExporter(t, Options{})
	hist := func(name string, kvs ...attribute.KeyValue) metricdata.Metrics {
		return metricdata.Metrics{Name: name, Data: metricdata.Histogram[int64]{Temporality: metricdata.CumulativeTemporality,
			DataPoints: []metricdata.HistogramDataPoint[int64]{{Attributes: attribute.NewSet(kvs...), Count: 2, Sum: 3, Bounds: []float64{1}, BucketCounts: []uint64{1, 1}}}}}
	}
	le := attribute.String("le", "x")
	rm := &metricdata.ResourceMetrics{Resource: testResource, ScopeMetrics: []metricdata.ScopeMetrics{{
		Scope: instrumentation.Scope{Name: "s"},
		Metrics: []metricdata.Metrics{
			hist("lat", le, attribute.String("k", "v")),
			hist("again", le, attribute.String("exported.le", "y")),
			sum("hits", metricdata.CumulativeTemporality, point(4, le)),
		},
	}}}
	require.NoError(t, exp.Export(context.Background(), rm))
	require.NoError(t, exp.ForceFlush(context.Background()))
	require.NoError(t, exp.Err())
	ms := pcptest.Info(t, tmp)
	assert.Equal(t, "0", droppedOf(t, ms, "shop_test", "declaration"))
	assert.Equal(t, map[string]string{"k=v,exported_le=x,le=1": "1", "k=v,exported_le=x,le=+Inf": "1"}, shownValues(t, ms, "mmv.shop_test.s.lat.bucket"))
	for _, part := range []string{"count", "sum"} {
		m := pcptest.Find(ms, "mmv.shop_test.s.lat."+part)
		require.NotNil(t, m, part)
		in := m.Instance("k=v,exported_le=x")
		require.NotNil(t, in, "%s: %+v", part, m.Instances)
		l, _ := in.Label("exported_le")
		assert.Equal(t, `"x"`, l, "%s: PCP's instance label", part)
	}
	assert.Equal(t, map[string]string{"exported_le=y,exported_exported_le=x": "2"}, shownValues(t, ms, "mmv.shop_test.s.again.count"))
	assert.Equal(t, map[string]string{"le=x": "4"}, shownValues(t, ms, "mmv.shop_test.s.hits"))
}

// TestResourceKeyNamedAsDropsLabel: a resource key making the label of the
// exporter's own counter, otelexporter.dropped{reason}, is refused as a
// registry label and named by Err: the counter is declared first. Added
// first, mmv refused the counter (a vector labelled as its registry), and
// the first Export panicked, taking the program down.
func TestResourceKeyNamedAsDropsLabel(t *testing.T) {
	exp := exportResource(t, "reason", "batch")
	assert.ErrorIs(t, exp.Err(), mmv.ErrDuplicate)
	assert.ErrorContains(t, exp.Err(), `resource attribute "reason" as a label`)
	snap, err := exp.Registry().Snapshot()
	require.NoError(t, err)
	var names []string
	for _, m := range snap {
		names = append(names, m.Name)
	}
	assert.Contains(t, names, droppedMetric)
	assert.Contains(t, names, "s.n")
}

// TestResourceKeyNamedAsPCPsRenamed: a resource key making a label PCP
// puts on every metric itself (hostname) is published as
// exported_hostname, as an attribute key is: mmv refuses the label, which
// PCP would show in place of the host's own on every metric.
func TestResourceKeyNamedAsPCPsRenamed(t *testing.T) {
	exp := exportResource(t, "hostname", "pod-7")
	require.NoError(t, exp.Err())
	assert.ElementsMatch(t, []mmv.Label{{Name: "service_name", Value: "shop"}, {Name: "exported_hostname", Value: "pod-7"}}, exp.Registry().Labels())
}

// TestClusterWithoutIndomsFailsExport: a cluster PCP takes for a file
// without instance domains alone (2048..4095), or none, given in
// Options.Registry, fails Export, named by Err, as a registry that cannot
// start does: mmv refused the exporter's own counter, a vector, and the
// first Export panicked, taking the program down.
func TestClusterWithoutIndomsFailsExport(t *testing.T) {
	for _, cluster := range []uint32{3000, 5000} {
		exp := New(&Options{Name: "shop", Registry: mmv.Options{Dir: filepath.Join(t.TempDir(), "mmv"), Cluster: cluster}})
		require.NotPanics(t, func() {
			for range 2 { // the same at the next
				err := exp.Export(context.Background(), sumsExport("n"))
				assert.ErrorIs(t, err, mmv.ErrRange, "cluster %d", cluster)
				assert.ErrorIs(t, exp.Err(), mmv.ErrRange, "cluster %d", cluster)
			}
		})
		require.NoError(t, exp.Shutdown(context.Background()))
	}
}
