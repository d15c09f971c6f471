package mmv

import (
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestChurnIsBounded: what a vector keeps follows the instances it holds,
// not every label value it ever had: its indoms' instances, the slots of
// its metrics and the ids it remembers stay within twice its live
// instances, 64, and what was deleted since the last publication. They
// grew by one for every value ever used.
func TestChurnIsBounded(t *testing.T) {
	r := NewRegistry("churn", &Options{Dir: t.TempDir(), PublishDelay: time.Hour})
	t.Cleanup(func() { r.Close() })
	v := NewCounterVec(r, "hits", "", Count, "k")
	h := NewHistogramVec(r, "lat", "", Second, &HistogramOptions{Buckets: []float64{1, 2}}, "k")
	require.NoError(t, r.Start())
	const live, every = 100, 50
	// 20 times the live instances: kept unbounded, they would pass the
	// bounds 6 times over.
	for i := range 2000 {
		v.With("r" + strconv.Itoa(i)).Inc()
		h.With("r" + strconv.Itoa(i)).Observe(1)
		if i >= live {
			v.Delete("r" + strconv.Itoa(i-live))
			h.Delete("r" + strconv.Itoa(i-live))
		}
		if i%every == 0 {
			require.NoError(t, r.Flush())
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	bound := func(perInstance int) int { return perInstance * (2*live + 64 + every) }
	for _, in := range r.indoms {
		perInstance := max(1, in.live/live)
		assert.LessOrEqual(t, len(in.Instances), bound(perInstance), "instances of indom %d (%s)", in.Serial, in.ShortHelp)
		assert.LessOrEqual(t, in.names.n, bound(perInstance), "names of indom %d", in.Serial)
	}
	for _, m := range r.metrics {
		assert.LessOrEqual(t, len(m.slots), bound(3), "slots of %s", m.Name)
	}
	assert.LessOrEqual(t, len(v.ids), 2*bound(1), "ids the counter vector remembers")
	assert.LessOrEqual(t, len(v.order), 2*live+64+1, "the counter vector's order of first use")
	assert.LessOrEqual(t, len(h.ids), 2*bound(1), "ids the histogram vector remembers")
}

// TestHistogramVecIDsRunOut: a histogram vector whose instances' bucket
// ids would pass the largest int32 refuses new values, counted as drops,
// where the ids wrapped onto other instances' buckets.
func TestHistogramVecIDsRunOut(t *testing.T) {
	r := NewRegistry("ids", &Options{Dir: t.TempDir()})
	t.Cleanup(func() { r.Close() })
	h := NewHistogramVec(r, "lat", "", Second, &HistogramOptions{Buckets: []float64{1, 2}}, "k")
	require.NoError(t, r.Start())
	first := h.With("first")
	require.NotNil(t, first)
	n := len(h.kind.(*histGroup).bounds)
	r.mu.Lock()
	h.nextID = int32((math.MaxInt32+1)/n - 1) // the last id whose buckets fit
	r.mu.Unlock()
	last := h.With("last")
	require.NotNil(t, last, "%v", h.Err())
	assert.Nil(t, h.With("over"))
	require.ErrorIs(t, h.Err(), ErrTooMany)
	assert.ErrorContains(t, h.Err(), "at most")
	r.mu.Lock()
	h.nextID = int32((1 << 32) / n) // its buckets' ids would wrap onto first's
	r.mu.Unlock()
	assert.Nil(t, h.With("wrapped"))
	require.ErrorIs(t, h.Err(), ErrTooMany)
	require.NoError(t, r.Flush())
	at := map[uintptr]string{}
	for _, inst := range []string{"k=first,le=1", "k=first,le=2", "k=last,le=1", "k=last,le=2"} {
		v, err := r.Value("lat.bucket", inst)
		require.NoError(t, err, inst)
		p := uintptr(v.ptr())
		assert.Empty(t, at[p], "%s shares its value with %s", inst, at[p])
		at[p] = inst
	}
}
