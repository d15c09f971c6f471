package otelexporter

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/gopcp/mmv/internal/pcptest"
)

// TestLateKeyAddsIntoTotals: a key that an instrument's first export did
// not have (the semantic conventions' error.type, on failed requests
// only) no longer loses its points: a counter's and a histogram's points
// carrying it are added into the instance of their other attributes, as
// a View dropping the key would add them, so the totals count the failed
// requests; Err names the key. A gauge's are dropped, counted, as
// before: levels do not add up. The points were dropped, the failed
// requests missing from every total until the process restarted.
func TestLateKeyAddsIntoTotals(t *testing.T) {
	p := newProvider(t, Options{})
	ctx := context.Background()
	m := p.Meter("web")
	reqs, err := m.Int64Counter("requests")
	require.NoError(t, err)
	lat, err := m.Float64Histogram("latency", metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(0.1, 1))
	require.NoError(t, err)
	inflight, err := m.Int64Gauge("inflight")
	require.NoError(t, err)
	get := metric.WithAttributes(attribute.String("http.request.method", "GET"))
	failed := metric.WithAttributes(attribute.String("http.request.method", "GET"), attribute.String("error.type", "timeout"))
	reqs.Add(ctx, 10, get)
	lat.Record(ctx, 0.05, get)
	inflight.Record(ctx, 3, get)
	_, _ = p.flush(t)
	require.NoError(t, p.exp.Err())

	reqs.Add(ctx, 2, get)
	reqs.Add(ctx, 3, failed)
	lat.Record(ctx, 0.5, failed)
	lat.Record(ctx, 2, failed)
	inflight.Record(ctx, 4, failed)
	for i := range 2 {
		ms, _ := p.flush(t)
		const inst = "http_request_method=GET"
		assert.Equal(t, map[string]string{inst: "15"}, shownValues(t, ms, "mmv.shop_test.web.requests"), "flush %d", i)
		assert.Equal(t, map[string]string{inst: "3"}, shownValues(t, ms, "mmv.shop_test.web.latency.count"), "flush %d", i)
		assert.Equal(t, map[string]string{inst: "2550000000"}, shownValues(t, ms, "mmv.shop_test.web.latency.sum"), "flush %d: nanoseconds", i)
		assert.Equal(t, map[string]string{inst + ",le=0.1": "1", inst + ",le=1": "1", inst + ",le=+Inf": "1"},
			shownValues(t, ms, "mmv.shop_test.web.latency.bucket"), "flush %d", i)
		assert.Equal(t, map[string]string{inst: "0.05"}, shownValues(t, ms, "mmv.shop_test.web.latency.min"), "flush %d", i)
		assert.Equal(t, map[string]string{inst: "2"}, shownValues(t, ms, "mmv.shop_test.web.latency.max"), "flush %d", i)
		assert.Equal(t, map[string]string{inst: "3"}, shownValues(t, ms, "mmv.shop_test.web.inflight"), "flush %d: the gauge's point with the key is dropped", i)
		assert.Equal(t, fmt.Sprint(i+1), droppedOf(t, ms, "shop_test", "attributes"), "flush %d: the gauge's point, at each export", i)
		err := p.exp.Err()
		require.Error(t, err)
		assert.ErrorContains(t, err, `instrument "requests" of scope "web": attribute keys ["error.type"]`)
		assert.ErrorContains(t, err, `instrument "latency" of scope "web": attribute keys ["error.type"]`)
		assert.ErrorContains(t, err, `instrument "inflight" of scope "web": attribute keys ["error.type" "http.request.method"]`)
	}
}

// TestLateKeyAcrossBatches: an export that continues a collection (the
// SDK's batches) and carries a late key's point adds it to the value its
// instance got from the collection's earlier batch, and the next
// collection's first batch keeps it: a counter never goes down. The
// late point's value alone, then the first batch's alone, would read in
// PCP as two counter wraps.
func TestLateKeyAcrossBatches(t *testing.T) {
	exp, tmp := pcpExporter(t, Options{})
	counter := func(at time.Time, pts ...metricdata.DataPoint[int64]) *metricdata.ResourceMetrics {
		for i := range pts {
			pts[i].Time = at
		}
		return &metricdata.ResourceMetrics{Resource: testResource, ScopeMetrics: []metricdata.ScopeMetrics{{
			Scope: instrumentation.Scope{Name: "s"},
			Metrics: []metricdata.Metrics{{Name: "requests", Data: metricdata.Sum[int64]{
				Temporality: metricdata.CumulativeTemporality, IsMonotonic: true, DataPoints: pts}}},
		}}}
	}
	get := attribute.String("method", "GET")
	ctx := context.Background()
	shown := func(what string) string {
		require.NoError(t, exp.ForceFlush(ctx))
		return shownValues(t, pcptest.Info(t, tmp), "mmv.shop_test.s.requests")["method=GET"] + " " + what
	}
	at := time.Now()
	require.NoError(t, exp.Export(ctx, counter(at, point(10, get))))
	assert.Equal(t, "10 first", shown("first"))
	at = at.Add(time.Second)
	require.NoError(t, exp.Export(ctx, counter(at, point(11, get))))
	require.NoError(t, exp.Export(ctx, counter(at, point(3, get, attribute.String("error.type", "timeout")))))
	assert.Equal(t, "14 batches", shown("batches"))
	at = at.Add(time.Second)
	require.NoError(t, exp.Export(ctx, counter(at, point(12, get))))
	assert.Equal(t, "15 next", shown("next"))
	require.NoError(t, exp.Export(ctx, counter(at, point(4, get, attribute.String("error.type", "timeout")))))
	assert.Equal(t, "16 next batch", shown("next batch"))
}

// TestKeysOfOneLabel: two attribute keys that make one PCP label name
// (a.b and a_b: '.' is made '_') are two labels, the second in key order
// renamed as a scrape renames a label that clashes (exported_a_b): the
// vector, given a label twice, was refused, and every point of the
// instrument dropped for the registry's life.
func TestKeysOfOneLabel(t *testing.T) {
	p := newProvider(t, Options{})
	ctx := context.Background()
	c, err := p.Meter("s").Int64Counter("requests")
	require.NoError(t, err)
	c.Add(ctx, 1, metric.WithAttributes(attribute.String("a.b", "x"), attribute.String("a_b", "y")))
	c.Add(ctx, 2, metric.WithAttributes(attribute.String("a.b", "x")))
	h, err := p.Meter("s").Int64Histogram("sizes", metric.WithExplicitBucketBoundaries(10))
	require.NoError(t, err)
	h.Record(ctx, 5, metric.WithAttributes(attribute.String("le", "x"), attribute.String("exported_le", "y")))
	ms, _ := p.flush(t)
	require.NoError(t, p.exp.Err())
	assert.Equal(t, map[string]string{"a_b=x,exported_a_b=y": "1", "a_b=x,exported_a_b=": "2"}, shownValues(t, ms, "mmv.shop_test.s.requests"))
	assert.Equal(t, map[string]string{"exported_le=y,exported_exported_le=x": "1"}, shownValues(t, ms, "mmv.shop_test.s.sizes.count"))
}
