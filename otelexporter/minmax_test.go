package otelexporter

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
)

// TestPointWithoutMinMaxLeavesThem: a histogram point without Min and Max
// (a Producer's) after one with them takes its set's min and max
// instances out of PCP, as the exporter takes out any value a point does
// not bring; they showed the old point's min and max as the new one's.
func TestPointWithoutMinMaxLeavesThem(t *testing.T) {
	s := newStamped(t, Options{})
	a := attribute.String("k", "a")
	s.histograms(hpoint([]float64{1}, []uint64{1, 1}, 3, 0.5, 2.5, a))
	plain := hpoint([]float64{1}, []uint64{2, 1}, 4, 0, 0, a)
	plain.Min, plain.Max = metricdata.Extrema[float64]{}, metricdata.Extrema[float64]{}
	s.next().histograms(plain)
	ms := s.shown()
	assert.Equal(t, map[string]string{"k=a": "3"}, shownValues(t, ms, "mmv.shop_test.s.lat.count"))
	assert.Empty(t, shownValues(t, ms, "mmv.shop_test.s.lat.min"))
	assert.Empty(t, shownValues(t, ms, "mmv.shop_test.s.lat.max"))

	s.next().histograms(hpoint([]float64{1}, []uint64{3, 1}, 5, 0.25, 2.5, a))
	ms = s.shown()
	assert.Equal(t, map[string]string{"k=a": "0.25"}, shownValues(t, ms, "mmv.shop_test.s.lat.min"))
	assert.Equal(t, map[string]string{"k=a": "2.5"}, shownValues(t, ms, "mmv.shop_test.s.lat.max"))
}

// TestSingularPointWithoutMinMax: a singular histogram's point without
// Min and Max shows no min and max on a registry with the mmv.Sentinel
// flag; without it they keep the last ones, which Err names. They showed
// the old point's, unnamed.
func TestSingularPointWithoutMinMax(t *testing.T) {
	for _, flags := range []mmv.Flags{mmv.Sentinel, 0} {
		t.Run(flags.String(), func(t *testing.T) {
			s := newStamped(t, Options{Registry: mmv.Options{Flags: flags}})
			s.histograms(hpoint([]float64{1}, []uint64{1, 1}, 3, 0.5, 2.5))
			plain := hpoint([]float64{1}, []uint64{2, 1}, 4, 0, 0)
			plain.Min, plain.Max = metricdata.Extrema[float64]{}, metricdata.Extrema[float64]{}
			s.next().histograms(plain)
			ms := s.shown()
			assert.Equal(t, "3", pcptest.Find(ms, "mmv.shop_test.s.lat.count").Value)
			if flags == 0 {
				assert.Equal(t, "0.5", pcptest.Find(ms, "mmv.shop_test.s.lat.min").Value)
				require.ErrorContains(t, s.exp.Err(), `instrument "lat" of scope "s": a point without min and max`)
				return
			}
			requireNoValue(t, ms, "lat.min", "lat.max")
			assert.NoError(t, s.exp.Err())
		})
	}
}
