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
// instances, 64, and what was deleted since the last publication, and the
// ids of forgotten values it keeps from others within its limit. They
// grew by one for every value ever used.
func TestChurnIsBounded(t *testing.T) {
	r := NewRegistry("churn", &Options{Dir: t.TempDir(), PublishDelay: time.Hour})
	t.Cleanup(func() { r.Close() })
	v := NewCounterVec(r, "hits", "", Count, "k")
	h := NewHistogramVec(r, "lat", "", Second, &HistogramOptions{Buckets: []float64{1, 2}}, "k")
	startOrSkip(t, r)
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
	assertChurnBoundedLocked(t, r, live, every)
	assert.LessOrEqual(t, v.order.len(), 2*live+64+1, "the counter vector's order of first use")
	// The ids of forgotten values kept from others (idLocked).
	assert.LessOrEqual(t, len(v.forgotten), max(v.Limit(), 64), "ids the counter vector keeps")
	assert.LessOrEqual(t, len(h.forgotten), max(h.Limit(), 64), "ids the histogram vector keeps")
}

// TestHistogramVecIDsRunOut: a histogram vector whose instances' bucket
// ids would pass the largest int32 refuses new values, counted as drops,
// where the ids wrapped onto other instances' buckets. Its counted ids run
// out first: derived ones stay below them.
func TestHistogramVecIDsRunOut(t *testing.T) {
	r := NewRegistry("ids", &Options{Dir: t.TempDir()})
	t.Cleanup(func() { r.Close() })
	h := NewHistogramVec(r, "lat", "", Second, &HistogramOptions{Buckets: []float64{1, 2}}, "k")
	startOrSkip(t, r)
	first := h.With("first")
	require.NotNil(t, first)
	n := int64(len(h.kind.(*histGroup).bounds))
	space := (math.MaxInt32 + 1) / n
	r.mu.Lock()
	assert.Less(t, int64(vecIDLocked(h, "k=first")), space/2, "a derived id")
	h.counting, h.counted = true, space-space/2-1 // the last id whose buckets fit
	r.mu.Unlock()
	last := h.With("last")
	require.NotNil(t, last, "%v", h.Err())
	r.mu.Lock()
	assert.EqualValues(t, space-1, vecIDLocked(h, "k=last"))
	r.mu.Unlock()
	assert.Nil(t, h.With("over"))
	require.ErrorIs(t, h.Err(), ErrTooMany)
	assert.ErrorContains(t, h.Err(), "counted all its ids")
	require.NoError(t, r.Flush())
	at := map[uintptr]string{}
	for _, inst := range []string{"k=first,le=1", "k=first,le=2", "k=first,le=+Inf", "k=last,le=1", "k=last,le=2", "k=last,le=+Inf"} {
		v, err := vecLookup(r, "lat.bucket", inst)
		require.NoError(t, err, inst)
		p := uintptr(v.ptr())
		assert.Empty(t, at[p], "%s shares its value with %s", inst, at[p])
		at[p] = inst
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, inst := range h.kind.(*histGroup).bucketIn.all() {
		assert.GreaterOrEqual(t, inst.id, int32(0), "bucket %s%s", inst.head, inst.tail)
	}
}
