package mmv

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv/internal/canon"
)

// TestVecTableGrowsByParts: a vector's lookup table, when full, is
// replaced by a larger one that takes the old one's entries a few at
// every insert, not all at the insert that fills it (which made one first
// use in 65,536 wait 10 ms); lookups without the lock find every live
// entry meanwhile, in either table, and none deleted, whether it was
// moved before its deletion or not; a deletion counts against the table
// that holds it only.
func TestVecTableGrowsByParts(t *testing.T) {
	r := NewRegistry("vectable", &Options{Dir: t.TempDir(), MaxIndomInstances: -1, MaxInstances: -1, MaxFileValues: -1, MaxValues: -1})
	defer r.Close()
	v := NewCounterVec(r, "requests", "", Count, "route")
	const n = 5000
	v.SetLimit(2 * n)
	live := map[string]bool{}
	check := func(at int) {
		t.Helper()
		for name, ok := range live {
			got := v.table.Load().find(canon.Hash([]string{name}), []string{name}) // known's, then add's before the lock
			if ok {
				require.NotNil(t, got, "%s after %d inserts", name, at)
				require.Same(t, got.t, v.With(name), "With(%s) after %d inserts", name, at)
			} else {
				require.Nil(t, got, "deleted %s after %d inserts", name, at)
			}
		}
		tb := v.table.Load()
		var dead int
		for i := range tb.slots {
			if e := tb.slots[i].e.Load(); e != nil && e.deleted() {
				dead++
			}
		}
		require.Equal(t, dead, tb.dead, "the table's dead entries after %d inserts", at)
	}
	grew := 0
	for i := range n {
		before := v.table.Load()
		used := before.used
		name := strconv.Itoa(i)
		require.NotNil(t, v.With(name))
		live[name] = true
		after := v.table.Load()
		if after != before {
			grew++
			used = 0
			require.NotNil(t, after.old.Load(), "a table that replaces a full one takes its entries later")
		}
		require.LessOrEqual(t, after.used-used, 5, "entries an insert put in the table: its own and those of 4 slots of the old")
		if i%7 == 3 && i > 100 { // deletions, of moved entries and of entries not moved yet
			del := strconv.Itoa(i - 50)
			require.True(t, v.Delete(del))
			live[del] = false
		}
		if i%97 == 0 || after != before {
			check(i)
		}
	}
	check(n)
	assert.GreaterOrEqual(t, grew, 8, "growth steps")
	for v.table.Load().old.Load() != nil { // the last growth's moves, by more inserts
		require.NotNil(t, v.With("more"+strconv.Itoa(len(live))))
		live["more"+strconv.Itoa(len(live))] = true
	}
	check(len(live))
}
