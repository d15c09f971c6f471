package prombridge_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/prombridge"
)

// TestRefusedFamilyDeclaresNothing: a histogram or summary family that mmv
// refuses at its last metric (the program has taken its count's name)
// leaves none of its metrics behind, neither the buckets nor the sum or
// quantiles, before or after Start.
func TestRefusedFamilyDeclaresNothing(t *testing.T) {
	for _, started := range []bool{false, true} {
		pr := prometheus.NewRegistry()
		h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "lat", Help: "h"})
		s := prometheus.NewSummary(prometheus.SummaryOpts{Name: "size", Help: "s", Objectives: map[float64]float64{0.5: 0.05}})
		pr.MustRegister(h, s)
		h.Observe(1)
		s.Observe(1)
		r, _ := newRegistry(t)
		mmv.NewGauge(r, "lat.count", "the program's own", mmv.NoUnits)
		mmv.NewGauge(r, "size.count", "the program's own", mmv.NoUnits)
		if started {
			pcptest.NeedFileLayer(t)
			require.NoError(t, r.Start())
		}
		b, err := prombridge.Register(r, pr, nil)
		require.NoError(t, err)
		err = b.Refresh()
		assert.ErrorIs(t, err, mmv.ErrDuplicate)
		assert.Equal(t, 2, b.Stats().Skipped)
		for _, name := range []string{"lat.bucket", "lat.sum", "size.quantile", "size.sum"} {
			_, err := mmv.Declare[mmv.Counter](r, name, "", mmv.Count)
			assert.NoError(t, err, "%s is free (started %v)", name, started)
		}
	}
}
