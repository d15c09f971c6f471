package otelexporter

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
)

// TestScopeConflicts: instruments of scopes that map to one PCP name (the
// same scope name with another version or other attributes, or another
// scope name with the same last element, or the same instrument with
// another unit) never write the same metric: one wins, the same whatever
// order the SDK hands the scopes in, and every point of the others is
// counted as a conflict at every export and named by Err.
func TestScopeConflicts(t *testing.T) {
	pcptest.NeedFileLayer(t) // Export starts the service's registry
	pcptest.MustHavePCP(t)
	cum := metricdata.CumulativeTemporality
	scopes := []instrumentation.Scope{
		{Name: "example.com/lib", Version: "2"},
		{Name: "example.com/lib", Version: "1", Attributes: attribute.NewSet(attribute.String("tenant", "b"))},
		{Name: "example.com/lib", Version: "1", Attributes: attribute.NewSet(attribute.String("tenant", "a"))},
		{Name: "example.org/lib", Version: "1"},
	}
	values := []int64{5, 100, 7, 42}
	// winner sorts first: scope name, version, schema URL, attributes.
	const winner = 2
	for _, order := range [][]int{{0, 1, 2, 3}, {3, 2, 1, 0}, {1, 3, 0, 2}} {
		tmp := t.TempDir()
		exp := New(&Options{Registry: mmv.Options{Dir: filepath.Join(tmp, "mmv")}})
		var rm metricdata.ResourceMetrics
		rm.Resource = testResource
		for _, i := range order {
			rm.ScopeMetrics = append(rm.ScopeMetrics, metricdata.ScopeMetrics{Scope: scopes[i], Metrics: []metricdata.Metrics{
				sum("hits", cum, point(values[i], attribute.String("k", "v"))),
			}})
		}
		// The same instrument name and scope as the winner, in another unit.
		ms := rm.ScopeMetrics[slices.Index(order, winner)].Metrics
		unit := sum("hits", cum, point(9, attribute.String("k", "v")))
		unit.Unit = "ms"
		rm.ScopeMetrics[slices.Index(order, winner)].Metrics = append([]metricdata.Metrics{unit}, ms...)

		ctx := context.Background()
		for range 3 {
			require.NoError(t, exp.Export(ctx, &rm))
			err := exp.Err()
			require.Error(t, err)
			for i, s := range scopes {
				if i != winner {
					assert.ErrorContains(t, err, owner(s, "hits"), "order %v", order)
				}
			}
			assert.ErrorContains(t, err, `unit "ms"`)
		}
		require.NoError(t, exp.ForceFlush(ctx))
		got := pcptest.Info(t, tmp)
		h := pcptest.Find(got, "mmv.shop_test.lib.hits")
		require.NotNil(t, h)
		if in := h.Instance("k=v"); assert.NotNil(t, in) {
			assert.Equal(t, "7", in.Value, "order %v: the scope that sorts first writes lib.hits", order)
		}
		d := pcptest.Find(got, "mmv.shop_test.otelexporter.dropped")
		require.NotNil(t, d)
		if in := d.Instance("reason=conflict"); assert.NotNil(t, in, "%+v", d.Instances) {
			assert.Equal(t, "12", in.Value, "4 losers, 3 exports")
		}
		require.NoError(t, exp.Shutdown(ctx))
	}
}

// TestScopeOrderTellsTypesApart: two scopes whose attributes differ in
// type alone (tenant=1, tenant="1") are ordered apart, so which gets a
// PCP name does not follow the SDK's order: as attribute.DefaultEncoder
// wrote them they compared equal, and the other order showed the other
// instrument's value under the name.
func TestScopeOrderTellsTypesApart(t *testing.T) {
	pcptest.NeedFileLayer(t)
	pcptest.MustHavePCP(t)
	scopes := []instrumentation.Scope{
		{Name: "example.com/lib", Attributes: attribute.NewSet(attribute.Int("tenant", 1))},
		{Name: "example.com/lib", Attributes: attribute.NewSet(attribute.String("tenant", "1"))},
	}
	values := []int64{10, 20}
	shown := map[string]bool{}
	for _, order := range [][]int{{0, 1}, {1, 0}} {
		tmp := t.TempDir()
		exp := New(&Options{Registry: mmv.Options{Dir: filepath.Join(tmp, "mmv")}})
		rm := &metricdata.ResourceMetrics{Resource: testResource}
		for _, i := range order {
			rm.ScopeMetrics = append(rm.ScopeMetrics, metricdata.ScopeMetrics{Scope: scopes[i], Metrics: []metricdata.Metrics{
				sum("hits", metricdata.CumulativeTemporality, point(values[i])),
			}})
		}
		ctx := context.Background()
		require.NoError(t, exp.Export(ctx, rm))
		require.Error(t, exp.Err(), "one of them is a conflict")
		require.NoError(t, exp.ForceFlush(ctx))
		h := pcptest.Find(pcptest.Info(t, tmp), "mmv.shop_test.lib.hits")
		require.NotNil(t, h)
		shown[h.Value] = true
		require.NoError(t, exp.Shutdown(ctx))
	}
	assert.Equal(t, map[string]bool{"10": true}, shown, "the int's scope sorts first, in either order")
}
