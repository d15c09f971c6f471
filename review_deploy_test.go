package mmv_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
)

// TestReviewChangedMetricTakesNewPMID: a new version of a program that
// declares a name of the last run's file with another descriptor (type,
// semantics, units, singular or a vector) gives it another PMID. It kept
// the last run's: a client holding the PMID reads the new values by the
// old descriptor, and PCP 6.0.3 showed it so through a pmcd: pmlogger,
// started before the deploy, wrote a Double gauge of 2.25 Kbyte under a
// Uint64 byte counter's descriptor (pmdumplog: "value
// 4612248968380809216"), and exited ("pmGetInDom(...): Unknown or
// illegal instance domain identifier") at a vector turned singular; pmval
// stopped with "pmExtractValue: Impossible value or scale conversion". A
// name declared with its descriptor unchanged keeps its PMID, declared
// before Start or after (a placeholder's).
func TestReviewChangedMetricTakesNewPMID(t *testing.T) {
	needFileLayer(t)
	tmp, dir := pcpDir(t)
	const name = "chg"
	first := func(r *mmv.Registry) {
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "m", Type: mmv.Uint32, Semantics: mmv.SemInstant}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "s", Type: mmv.Uint64, Semantics: mmv.SemCounter, Units: mmv.Byte}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "str", Type: mmv.String, Semantics: mmv.SemDiscrete}))
		mmv.NewCounter(r, "sing", "", mmv.Count).Inc()
		mmv.NewCounterVec(r, "vec", "", mmv.Count, "a").With("x").Inc()
		mmv.NewCounter(r, "same", "", mmv.Count).Inc()
	}
	r := newRegistry(t, name, dir, mmv.Options{})
	first(r)
	startOrSkip(t, r)
	mmv.NewCounter(r, "late", "", mmv.Count).Inc()
	mmv.NewCounter(r, "latesame", "", mmv.Count).Inc()
	require.NoError(t, r.Flush())
	require.NoError(t, r.Close())
	before := pcptest.Info(t, tmp)

	r = newRegistry(t, name, dir, mmv.Options{})
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "m", Type: mmv.Float, Semantics: mmv.SemInstant}))
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "s", Type: mmv.Double, Semantics: mmv.SemInstant, Units: mmv.Kbyte}))
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "str", Type: mmv.Uint64, Semantics: mmv.SemDiscrete}))
	mmv.NewCounterVec(r, "sing", "", mmv.Count, "a").With("y").Inc()
	mmv.NewCounter(r, "vec", "", mmv.Count).Inc()
	mmv.NewCounter(r, "same", "", mmv.Count).Inc()
	startOrSkip(t, r)
	mmv.NewGauge(r, "late", "", mmv.Byte).Set(1.5)
	mmv.NewCounter(r, "latesame", "", mmv.Count).Inc()
	require.NoError(t, r.Flush())
	after := pcptest.Info(t, tmp)
	for _, n := range []string{"m", "s", "str", "sing", "vec", "late"} {
		b, a := get(t, before, "mmv."+name+"."+n), get(t, after, "mmv."+name+"."+n)
		assert.NotEqual(t, b.PMID, a.PMID, "%s: %s %s %s %s, then %s %s %s %s, under one PMID", n,
			b.Type, b.Semantics, b.Units, b.Indom, a.Type, a.Semantics, a.Units, a.Indom)
	}
	for _, n := range []string{"same", "latesame"} {
		assert.Equal(t, get(t, before, "mmv."+name+"."+n).PMID, get(t, after, "mmv."+name+"."+n).PMID, "%s's PMID", n)
	}
	require.NoError(t, r.Close())
}
