package otelexporter

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
)

// allSingulars are the metrics of singulars' singular instruments.
var allSingulars = []string{"requests", "workers", "temp", "lat.count", "lat.sum", "lat.min", "lat.max"}

// TestAbsentSingularShowsNoValueWithSentinel: on a registry with the
// mmv.Sentinel flag, a singular instrument absent from a collection (an
// observable callback no longer observing) shows no value, as prombridge
// shows a singular family no longer gathered, and as a set of a vector
// leaves; exported again, it shows its values. PCP showed its last values
// as current.
func TestAbsentSingularShowsNoValueWithSentinel(t *testing.T) {
	exp, tmp := pcpExporter(t, Options{Registry: mmv.Options{Flags: mmv.Sentinel}})
	ctx := context.Background()
	t0 := time.Now()
	require.NoError(t, exp.Export(ctx, singulars(t0, 8, true)))
	require.NoError(t, exp.Export(ctx, singulars(t0.Add(time.Second), 9, false)))
	require.NoError(t, exp.ForceFlush(ctx))
	ms := pcptest.Info(t, tmp)
	assert.Equal(t, "9", pcptest.Find(ms, "mmv.shop_test.s.other").Value)
	requireNoValue(t, ms, allSingulars...)
	assert.NoError(t, exp.Err(), "nothing shown stale to name")

	require.NoError(t, exp.Export(ctx, singulars(t0.Add(2*time.Second), 10, true)))
	require.NoError(t, exp.ForceFlush(ctx))
	ms = pcptest.Info(t, tmp)
	for name, want := range map[string]string{"requests": "10", "workers": "10", "temp": "10", "lat.count": "10", "lat.min": "0.5"} {
		assert.Equal(t, want, pcptest.Find(ms, "mmv.shop_test.s."+name).Value, name)
	}
	assert.Equal(t, map[string]string{"le=1": "10", "le=+Inf": "0"}, shownValues(t, ms, "mmv.shop_test.s.lat.bucket"))
	assert.NoError(t, exp.Err())
}

// TestDroppedSingularShowsNoValueWithSentinel: on a registry with the
// mmv.Sentinel flag, a singular metric whose point is dropped (a value no
// counter holds, a malformed histogram point, a gauge's point with a key
// it has no label for) shows no value, as a vector's set leaves, and Err
// names the drop without saying the old value stays; where PCP showed the
// last value stored.
func TestDroppedSingularShowsNoValueWithSentinel(t *testing.T) {
	s := newStamped(t, Options{Registry: mmv.Options{Flags: mmv.Sentinel}})
	workers := func(kvs ...attribute.KeyValue) {
		p := point(8, kvs...)
		p.Time = s.at
		require.NoError(t, s.exp.Export(context.Background(), scopeExport(gauge("workers", p))))
	}
	s.counters(point(5))
	s.histograms(hpoint([]float64{1}, []uint64{1, 1}, 3, 0.5, 2.5))
	workers()
	s.next()
	workers(attribute.String("k", "a")) // the collection's first export: in a later one, the sweep of the first withdrew it
	s.counters(point(-1))
	bad := hpoint([]float64{1}, []uint64{1, 1}, 3, 0.5, 2.5)
	bad.Count = 7 // not the sum of its bucket counts
	s.histograms(bad)
	ms := s.shown()
	requireNoValue(t, ms, "requests", "lat.count", "lat.sum", "lat.min", "lat.max", "workers")
	err := s.exp.Err()
	require.ErrorContains(t, err, "value -1 is not a counter's")
	require.ErrorContains(t, err, "whose bucket counts sum to 2")
	require.ErrorContains(t, err, `instrument "workers" of scope "s": attribute keys ["k"]`)
	assert.NotContains(t, err.Error(), "PCP cannot withdraw")

	s.next().counters(point(6))
	s.histograms(hpoint([]float64{1}, []uint64{2, 1}, 4, 0.25, 2.5))
	ms = s.shown()
	assert.Equal(t, "6", pcptest.Find(ms, "mmv.shop_test.s.requests").Value)
	assert.Equal(t, "3", pcptest.Find(ms, "mmv.shop_test.s.lat.count").Value)
	assert.Equal(t, "0.25", pcptest.Find(ms, "mmv.shop_test.s.lat.min").Value)
}

// TestWithdrawnSingularForgetsMembersWithSentinel: a singular counter
// adding up late members (merge.go), withdrawn on a registry with the
// mmv.Sentinel flag when a member's value is dropped, starts anew from
// its next point, as a vector's set that left does (its own withdrawn
// value, all ones, is no member's); PCP showed 16 throughout.
func TestWithdrawnSingularForgetsMembersWithSentinel(t *testing.T) {
	s := newStamped(t, Options{Registry: mmv.Options{Flags: mmv.Sentinel}})
	shown := func() string { return pcptest.Find(s.shown(), "mmv.shop_test.s.requests").Value }
	s.counters(point(10))
	s.next().counters(point(11), point(5, attribute.String("error.type", "x")))
	assert.Equal(t, "16", shown())
	s.next().counters(point(12), point(-1, attribute.String("error.type", "x")))
	assert.Equal(t, "", shown(), "withdrawn")
	s.next().counters(point(13), point(6, attribute.String("error.type", "x")))
	assert.Equal(t, "19", shown(), "anew")
}

// keptText is what Err says of a singular metric whose point is dropped
// on a registry without the mmv.Sentinel flag (instrument.kept).
const keptText = "PCP cannot withdraw a singular metric from a registry without the mmv.Sentinel flag: it shows the last value stored"

// TestDroppedGaugeKeyNamesKeptValue: on a registry without the
// mmv.Sentinel flag, a singular gauge whose every point of a collection
// has a key it has no label for keeps its last value, and Err says so
// with the drop, as it says of its other drops; it named the key only.
func TestDroppedGaugeKeyNamesKeptValue(t *testing.T) {
	s := newStamped(t, Options{})
	workers := func(kvs ...attribute.KeyValue) {
		p := point(8, kvs...)
		p.Time = s.at
		require.NoError(t, s.exp.Export(context.Background(), scopeExport(gauge("workers", p))))
	}
	workers()
	s.next()
	p := point(9, attribute.String("k", "a"))
	p.Time = s.at
	require.NoError(t, s.exp.Export(context.Background(), scopeExport(gauge("workers", p))))
	assert.Equal(t, "8", pcptest.Find(s.shown(), "mmv.shop_test.s.workers").Value)
	err := s.exp.Err()
	require.ErrorContains(t, err, `instrument "workers" of scope "s": attribute keys ["k"]`)
	assert.ErrorContains(t, err, keptText)
}

// TestRefusedSingularHistogramNamesKeptValue: on a registry without the
// mmv.Sentinel flag, a singular histogram whose buckets the registry
// refuses (past its cap on an indom's instances) shows none of them, and
// its count, sum, min and max the last values stored, this point's; Err
// says so with the refusal, where it named the refusal only.
func TestRefusedSingularHistogramNamesKeptValue(t *testing.T) {
	// The exporter's own counter takes six instances of its own indom.
	s := newStamped(t, Options{Registry: mmv.Options{MaxIndomInstances: 6}})
	s.histograms(hpoint([]float64{1}, []uint64{1, 1}, 3, 0.5, 2.5))
	ms := s.shown()
	assert.Equal(t, map[string]string{"le=1": "1", "le=+Inf": "1"}, shownValues(t, ms, "mmv.shop_test.s.lat.bucket"))
	require.NoError(t, s.exp.Err())

	s.next().histograms(hpoint([]float64{1, 2, 3, 4, 5, 6, 7}, []uint64{1, 1, 1, 1, 1, 1, 1, 1}, 20, 0.25, 9))
	ms = s.shown()
	// A float sum is kept in thousandths (fineNote).
	for name, want := range map[string]string{"lat.count": "8", "lat.sum": "20000", "lat.min": "0.25", "lat.max": "9"} {
		assert.Equal(t, want, pcptest.Find(ms, "mmv.shop_test.s."+name).Value, name)
	}
	assert.Empty(t, shownValues(t, ms, "mmv.shop_test.s.lat.bucket"))
	err := s.exp.Err()
	require.ErrorIs(t, err, mmv.ErrTooMany)
	assert.ErrorContains(t, err, keptText)
}
