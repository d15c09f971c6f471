package mmv

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestExpirySweep: an instance expires at the first sweep at least the
// expiry after the sweep that first saw its current state, and not
// before; an update keeps it; one through an instrument kept past its
// expiry is counted late and stays in the instrument; the same values
// back get their id of before and a new instrument from zero. Sweeps are
// run at chosen times: deterministic.
func TestExpirySweep(t *testing.T) {
	r := NewRegistry("expiry_sweep", &Options{Dir: t.TempDir()})
	t.Cleanup(func() { r.Close() })
	c := NewCounterVec(r, "hits", "", Count, "k")
	g := NewGaugeVec(r, "level", "", Count, "k")
	h := NewHistogramVec(r, "lat", "", Second, &HistogramOptions{Buckets: []float64{1}}, "k")
	startOrSkip(t, r)
	const d = time.Minute
	c.SetExpiry(d)
	g.SetExpiry(d)
	h.SetExpiry(d)
	assert.Equal(t, d, c.Expiry())
	busy, idle := c.With("busy"), c.With("idle")
	idle.Inc()
	h.With("idle").Observe(1)
	g.With("same").Set(3)
	r.mu.Lock()
	idleID := vecIDLocked(c, "k=idle")
	r.mu.Unlock()

	t0 := time.Unix(1e6, 0)
	sweepAll := func(at time.Time) { sweepAt(c, at); sweepAt(g, at); sweepAt(h, at) }
	sweepAll(t0)
	busy.Inc()
	g.With("same").Set(3) // no change
	sweepAll(t0.Add(d / 2))
	sweepAll(t0.Add(d - time.Nanosecond))
	assert.Equal(t, []string{"k=busy", "k=idle"}, c.Instances(), "not yet")
	sweepAll(t0.Add(d))
	assert.Equal(t, []string{"k=busy"}, c.Instances(), "idle expired, busy not: updated since t0")
	assert.Empty(t, g.Instances(), "a gauge set to the same value is unchanged")
	assert.Empty(t, h.Instances())
	expired, late := expiredCount(r)
	assert.EqualValues(t, 3, expired)
	assert.Zero(t, late)

	idle.Inc() // kept past its expiry
	sweepAll(t0.Add(d + d/4))
	_, late = expiredCount(r)
	assert.EqualValues(t, 1, late, "the late update is counted")
	assert.EqualValues(t, 2, idle.Get(), "and kept in the instrument")
	idle.Inc()
	sweepAll(t0.Add(d + d/2))
	_, late = expiredCount(r)
	assert.EqualValues(t, 1, late, "watched one sweep only")

	back := c.With("idle")
	assert.NotSame(t, idle, back)
	assert.Zero(t, back.Get(), "a new instrument, from zero")
	r.mu.Lock()
	assert.Equal(t, idleID, vecIDLocked(c, "k=idle"), "its id of before")
	r.mu.Unlock()
	sweepAll(t0.Add(3 * d))
	assert.Equal(t, []string{"k=idle"}, c.Instances(), "busy expired now; idle's state is new to the sweep")

	c.SetExpiry(0)
	sweepAll(t0.Add(10 * d))
	assert.Equal(t, []string{"k=idle"}, c.Instances(), "no expiry: kept")
}

// TestExpiryChurn: a vector whose values churn, with an expiry instead of
// Delete, keeps what TestChurnIsBounded allows: expiry forgets as Delete.
func TestExpiryChurn(t *testing.T) {
	r := NewRegistry("expiry_churn", &Options{Dir: t.TempDir(), PublishDelay: time.Hour})
	t.Cleanup(func() { r.Close() })
	v := NewCounterVec(r, "hits", "", Count, "k")
	h := NewHistogramVec(r, "lat", "", Second, &HistogramOptions{Buckets: []float64{1, 2}}, "k")
	v.SetExpiry(time.Hour)
	h.SetExpiry(time.Hour)
	startOrSkip(t, r)
	const every = 50
	now := time.Unix(1e6, 0)
	for i := range 2000 {
		v.With("r" + strconv.Itoa(i)).Inc()
		h.With("r" + strconv.Itoa(i)).Observe(1)
		if i%every == 0 {
			now = now.Add(time.Hour / 2) // each value lives two to three sweeps
			sweepAt(v, now)
			sweepAt(h, now)
			require.NoError(t, r.Flush())
		}
	}
	assert.LessOrEqual(t, len(v.Instances()), 3*every)
	r.mu.Lock()
	defer r.mu.Unlock()
	live := 3 * every
	assertChurnBoundedLocked(t, r, live, every)
	assert.LessOrEqual(t, len(v.forgotten), max(v.Limit(), 64), "ids the counter vector keeps")
	assert.LessOrEqual(t, v.order.len(), 2*live+64+1, "the counter vector's order of first use")
	assert.Greater(t, r.expired[0].state(), uint64(1800))
}

// BenchmarkExpiry: an update of a vector's instrument with and without an
// expiry, sweeps running (the ratio is the hot path's cost: none), and a
// sweep in which every instance stays, of 1,000 instances: of a counter
// vector, and of a histogram vector of the default 19 buckets (caps and
// budgets lifted); ns/op is per sweep.
func BenchmarkExpiry(b *testing.B) {
	for _, d := range []time.Duration{0, time.Millisecond} {
		b.Run("inc/expiry="+d.String(), func(b *testing.B) {
			r := NewRegistry("expiry_bench", &Options{Dir: b.TempDir()})
			defer r.Close()
			v := NewCounterVec(r, "hits", "", Count, "k")
			v.SetExpiry(d)
			startOrSkip(b, r)
			for b.Loop() {
				v.With("a").Inc()
			}
		})
	}
	for _, kind := range []string{"counter", "histogram"} {
		b.Run("sweep/"+kind, func(b *testing.B) {
			// Uncapped, for 1,000 histograms of 19 buckets.
			r := NewRegistry("expiry_bench", &Options{Dir: b.TempDir(), MaxIndomInstances: -1, MaxInstances: -1, MaxFileValues: -1, MaxValues: -1})
			defer r.Close()
			startOrSkip(b, r)
			var sweep func(now time.Time)
			var held func() int
			if kind == "counter" {
				v := NewCounterVec(r, "hits", "", Count, "k")
				v.SetExpiry(time.Hour)
				for i := range 1000 {
					v.With(strconv.Itoa(i)).Inc()
				}
				sweep, held = func(now time.Time) { sweepAt(v, now) }, func() int { return len(v.Instances()) }
			} else {
				v := NewHistogramVec(r, "lat", "", Second, nil, "k")
				v.SetLimit(1000)
				v.SetExpiry(time.Hour)
				for i := range 1000 {
					v.With(strconv.Itoa(i)).Observe(1)
				}
				sweep, held = func(now time.Time) { sweepAt(v, now) }, func() int { return len(v.Instances()) }
			}
			require.Equal(b, 1000, held())
			now := time.Unix(1e6, 0)
			for b.Loop() {
				now = now.Add(time.Nanosecond) // nothing expires
				sweep(now)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/instance")
		})
	}
}
