package otelexporter

import (
	"context"
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

// TestNameOfAnotherFileRetried: an instrument first exported after Start
// whose PCP name clashes with another live file's is refused
// (ErrNamespace), counted and named; once that file is gone the
// instrument is published at its next export. It was refused for good,
// though the refusal depended on another program's file, not on the
// instrument.
func TestNameOfAnotherFileRetried(t *testing.T) {
	exp, tmp := pcpExporter(t, Options{})
	ctx := context.Background()
	require.NoError(t, exp.Export(ctx, sumsExport("a")))
	other := otherProgram(t, tmp, "shop_test.s.late")

	require.NoError(t, exp.Export(ctx, sumsExport("a", "late")))
	require.ErrorIs(t, exp.Err(), mmv.ErrNamespace, "refused, named")
	require.NoError(t, exp.Export(ctx, sumsExport("a", "late")))
	require.ErrorIs(t, exp.Err(), mmv.ErrNamespace, "tried again, refused again while the file lives")

	require.NoError(t, other.Close()) // its file removed: the name is free
	require.NoError(t, exp.Export(ctx, sumsExport("a", "late")))
	assert.NoError(t, exp.Err(), "still refused once the clashing file is gone")
	require.NoError(t, exp.ForceFlush(ctx))
	ms := pcptest.Info(t, tmp)
	if m := pcptest.Find(ms, "mmv.shop_test.s.late"); assert.NotNil(t, m, "PCP never shows instrument late, though its name is free") {
		assert.Equal(t, "5", m.Value)
	}
}
