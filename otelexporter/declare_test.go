package otelexporter

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
)

// TestRefusedInstrumentDeclaresNothing: a histogram that mmv refuses at
// its last metric (its max's name is taken) leaves none of its metrics
// behind, neither the buckets nor the count, sum or min, before or after
// Start.
func TestRefusedInstrumentDeclaresNothing(t *testing.T) {
	for _, started := range []bool{false, true} {
		for _, keys := range [][]attribute.Key{nil, {"route"}} {
			r := mmv.NewRegistry("oteltx", &mmv.Options{Dir: t.TempDir()})
			mmv.NewGauge(r, "lat.max", "taken", mmv.NoUnits)
			if started {
				pcptest.NeedFileLayer(t)
				require.NoError(t, r.Start())
			}
			m := &metricdata.Metrics{Name: "lat", Unit: "s"}
			in := declare(r, "lat", identOf(instrumentation.Scope{Name: "lib"}, m, kindFloatHistogram), m, shape{keys: keys, minmax: true, buckets: 3}, 10)
			assert.ErrorIs(t, in.err, mmv.ErrDuplicate)
			for _, name := range []string{"lat.bucket", "lat.count", "lat.sum", "lat.min"} {
				_, err := mmv.Declare[mmv.Counter](r, name, "", mmv.Count)
				assert.NoError(t, err, "%s is free (started %v, keys %v)", name, started, keys)
			}
			r.Close()
		}
	}
}
