package otelexporter

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
)

// TestGrowthThroughPCP: an instrument and an attribute set that appear
// after the first export appear in PCP at the next one, with the values
// recorded, beside the old ones.
func TestGrowthThroughPCP(t *testing.T) {
	pcptest.MustHavePCP(t)
	p := newProvider(t, Options{})
	ctx := context.Background()
	m := p.Meter("shop")
	reqs, err := m.Int64Counter("requests")
	require.NoError(t, err)
	reqs.Add(ctx, 2, metric.WithAttributes(attribute.String("route", "/a")))
	ms, _ := p.flush(t)
	require.NotNil(t, pcptest.Find(ms, "mmv.shop_test.shop.requests"))
	assert.Nil(t, pcptest.Find(ms, "mmv.shop_test.shop.queue"))

	reqs.Add(ctx, 5, metric.WithAttributes(attribute.String("route", "/b c")))
	reqs.Add(ctx, 1, metric.WithAttributes(attribute.String("route", "/a")))
	queue, err := m.Int64UpDownCounter("queue")
	require.NoError(t, err)
	queue.Add(ctx, -4)
	ms, _ = p.flush(t)
	r := pcptest.Find(ms, "mmv.shop_test.shop.requests")
	require.NotNil(t, r)
	for inst, want := range map[string]string{"route=/a": "3", "route=/b%20c": "5"} {
		if in := r.Instance(inst); assert.NotNil(t, in, inst) {
			assert.Equal(t, want, in.Value, inst)
		}
	}
	q := pcptest.Find(ms, "mmv.shop_test.shop.queue")
	require.NotNil(t, q)
	assert.Equal(t, "-4", q.Value)
	require.NoError(t, p.exp.Err())
}

// TestShutdown: Shutdown exports the last values; without the Process
// flag the file stays with them, with it the file is removed; Export
// after Shutdown is refused.
func TestShutdown(t *testing.T) {
	pcptest.MustHavePCP(t)
	for _, flags := range []mmv.Flags{0, mmv.Process} {
		p := newProvider(t, Options{Registry: mmv.Options{Flags: flags}})
		c, err := p.Meter("shop").Int64Counter("orders")
		require.NoError(t, err)
		c.Add(context.Background(), 1)
		p.flush(t)
		c.Add(context.Background(), 41) // exported by Shutdown alone
		path := p.exp.Registry().Path()
		require.NoError(t, p.Shutdown(context.Background()))

		ms := pcptest.Info(t, p.tmp)
		o := pcptest.Find(ms, "mmv.shop_test.shop.orders")
		_, statErr := os.Stat(path)
		if flags == 0 {
			require.NotNil(t, o, "without Process the file stays")
			assert.Equal(t, "42", o.Value)
			assert.NoError(t, statErr)
		} else {
			assert.Nil(t, o, "with Process the file goes")
			assert.ErrorIs(t, statErr, os.ErrNotExist)
		}
		err = p.exp.Export(context.Background(), &metricdata.ResourceMetrics{})
		assert.ErrorIs(t, err, sdkmetric.ErrExporterShutdown)
		assert.NoError(t, p.exp.Shutdown(context.Background()), "a second Shutdown")
		assert.Equal(t, filepath.Join(p.tmp, "mmv", "shop_test"), path)
	}
}
