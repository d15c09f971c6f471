package mmv

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPaddedAddresses: with PadValues every handle points at the start of
// a 128-byte block of the mapping that no other value shares, and keeps
// its address while the file grows and is republished, and in an overflow
// file too.
func TestPaddedAddresses(t *testing.T) {
	r := NewRegistry("pad", &Options{Dir: t.TempDir(), PadValues: true})
	t.Cleanup(func() { r.Close() })
	require.NoError(t, r.AddIndom(Indom{Serial: 1}))
	require.NoError(t, r.AddMetric(Metric{Name: "a", Type: Uint64, Semantics: SemCounter, Indom: 1}))
	require.NoError(t, r.AddMetric(Metric{Name: "b", Type: Uint32, Semantics: SemCounter, Indom: 1}))
	require.NoError(t, r.AddMetric(Metric{Name: "one", Type: Double, Semantics: SemInstant}))
	startOrSkip(t, r)
	at := map[*Value]uintptr{}
	check := func() {
		t.Helper()
		blocks := map[uintptr]bool{}
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, m := range r.metrics {
			for j := range m.slots.len() {
				v := r.handleLocked(m, j)
				if v == nil {
					continue
				}
				p := uintptr(v.ptr())
				assert.Zero(t, p%uintptr(paddedStride), "%s[%d] at %#x", m.Name, j, p)
				assert.False(t, blocks[p/uintptr(paddedStride)], "%s[%d] shares its block", m.Name, j)
				blocks[p/uintptr(paddedStride)] = true
				if was, ok := at[v]; ok {
					assert.Equal(t, was, p, "%s[%d] moved", m.Name, j)
				}
				at[v] = p
			}
		}
	}
	for i := range 300 {
		require.NoError(t, r.AddInstance(1, Instance{ID: int32(i), Name: "i" + strconv.Itoa(i)}))
		if i%50 == 0 {
			require.NoError(t, r.Flush())
			check()
		}
	}
	require.NoError(t, r.Flush())
	check()
	for i := range MaxMetrics {
		require.NoError(t, r.AddMetric(Metric{Name: "more" + strconv.Itoa(i), Type: Uint64, Semantics: SemCounter}))
		mustValue(t, r, "more"+strconv.Itoa(i), "").Inc()
	}
	require.NoError(t, r.Flush())
	require.Len(t, r.parts, 2, "an overflow file")
	check()
	assert.Len(t, at, 2*300+1+MaxMetrics, "handles checked")
}
