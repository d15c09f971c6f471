package mmv

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNameIndex runs random additions and removals against a map: every
// name is found at its position, or not at all, after each of them, through
// growth and the clusters a small table probes through. Five seeds of
// 3,000 operations (each run also hashes with a seed of its own): an
// off-by-one in remove's backward shift fails within the first seed's
// first 130 operations in every run we tried; 20 seeds took 3.8 s under
// -race and found nothing more. TestIDIndex does the same with instance
// ids.
func TestNameIndex(t *testing.T) {
	names := make([]string, 300)
	for i := range names {
		names[i] = "n" + strconv.Itoa(i)
	}
	testKeyIndex(t, names, "")
}

// TestIDIndex is TestNameIndex with instance ids: small ones, ones a power
// of two apart (whose low bits are the same) and a vector's (FNV-1a).
func TestIDIndex(t *testing.T) {
	var ids []int32
	for i := range int32(100) {
		ids = append(ids, i, i<<12, int32(fnv32("/route/"+strconv.Itoa(int(i)))%(vecIDSpace/2)))
	}
	testKeyIndex(t, ids, -1)
}

// testKeyIndex is TestNameIndex's run over keys, of which none is the
// zero value given (the key of a position removed).
func testKeyIndex[K string | int32](t *testing.T, keys []K, none K) {
	for seed := range uint64(5) {
		rng := rand.New(rand.NewPCG(seed, 1))
		var x keyIndex[K]
		var byPos []K // position to key; none once removed
		want := map[K]int{}
		key := func(pos int) K { return byPos[pos] }
		for op := range 3000 {
			k := keys[rng.IntN(len(keys))]
			if pos, held := want[k]; held && rng.IntN(3) == 0 {
				x.remove(k, key)
				byPos[pos] = none
				delete(want, k)
			} else {
				got, added := x.add(k, len(byPos), key)
				if held {
					require.False(t, added, "seed %d op %d: %v added twice", seed, op, k)
					require.Equal(t, pos, got, "seed %d op %d: %v", seed, op, k)
				} else {
					require.True(t, added, "seed %d op %d: %v", seed, op, k)
					want[k] = len(byPos)
					byPos = append(byPos, k)
				}
			}
			require.Equal(t, len(want), x.n)
			for _, k := range keys {
				pos, ok := x.find(k, key)
				if wantPos, wantOK := want[k]; ok != wantOK || ok && pos != wantPos {
					require.Failf(t, "index differs from the map", "seed %d op %d: %v found at %d, %v; want %d, %v", seed, op, k, pos, ok, wantPos, wantOK)
				}
			}
		}
		assert.LessOrEqual(t, x.n*4, len(x.slots)*3, "at most 3/4 full")
	}
}

// TestNameIndexGrowsByParts: a full table is replaced by one that takes
// its entries 4 slots at every add, not all at once, every name found
// meanwhile through either table; the old table is gone before the new
// one is half full. It fails when reserve rehashes at once.
func TestNameIndexGrowsByParts(t *testing.T) {
	var x nameIndex
	var byPos []string
	key := func(pos int) string { return byPos[pos] }
	grown := 0
	for i := range 5000 {
		size := len(x.slots)
		name := "n" + strconv.Itoa(i)
		_, added := x.add(name, len(byPos), key)
		require.True(t, added, name)
		byPos = append(byPos, name)
		if len(x.slots) > size && size > 0 {
			grown++
			require.NotNil(t, x.old, "add %d: the old table moved at once", i)
			require.Equal(t, 4, x.moved, "add %d: slots moved by the add that grew", i)
		}
		if x.old != nil {
			require.Less(t, x.n*2, len(x.slots), "add %d: a move outlived half the new table", i)
		}
		if i%97 == 0 || x.old != nil && i%7 == 0 {
			for j, n := range byPos {
				pos, ok := x.find(n, key)
				require.True(t, ok && pos == j, "add %d: %s found at %d, %v", i, n, pos, ok)
			}
		}
	}
	require.Greater(t, grown, 5)
	x.remove("n0", key)
	require.Nil(t, x.old, "a removal moves what is left first")
	_, ok := x.find("n0", key)
	require.False(t, ok)
}

// TestIndexMadeAhead: an index near its growth (nearGrowth), from
// spareMin slots, has the table to replace it made by a goroutine
// (spare), and takes it when three quarters full, not one allocated by
// the add that fills it.
func TestIndexMadeAhead(t *testing.T) {
	var x idIndex
	key := func(pos int) int32 { return int32(pos) * 7 }
	n := 0
	add := func() {
		_, added := x.add(key(n), n, key)
		require.True(t, added)
		n++
	}
	for len(x.slots) < spareMin {
		add()
	}
	for range 3 { // growths
		size := len(x.slots)
		for !nearGrowth(x.n, size) {
			add()
		}
		var made []uint64
		require.Eventually(t, func() bool {
			if a := x.next.asked; a != nil && a.made.Load() != nil {
				made = *a.made.Load()
			}
			return made != nil
		}, 10*time.Second, time.Millisecond, "no table made ahead at %d ids", n)
		for len(x.slots) == size {
			add()
		}
		require.Same(t, &made[0], &x.slots[0], "the table at %d ids is not the one made ahead", n)
	}
	for i := range n {
		pos, ok := x.find(key(i), key)
		require.True(t, ok && pos == i, "id %d", key(i))
	}
}

// TestNameIndexEmpty: the zero index finds nothing and removes nothing.
func TestNameIndexEmpty(t *testing.T) {
	var x nameIndex
	_, ok := x.find("a", nil)
	assert.False(t, ok)
	x.remove("a", nil)
	x.reserve(100)
	assert.GreaterOrEqual(t, len(x.slots)*3, 400)
	_, ok = x.find("a", nil)
	assert.False(t, ok)
}

// TestRefusedNameKeepsTheFirst: a name refused as a duplicate leaves the
// first holder found by it, and the message names that holder.
func TestRefusedNameKeepsTheFirst(t *testing.T) {
	r := newTestRegistry(t, "dup")
	require.NoError(t, r.AddIndom(Indom{Serial: 1, Instances: []Instance{{ID: 0, Name: "sda one"}}}))
	err := r.AddInstance(1, Instance{ID: 1, Name: "sda two"})
	require.ErrorIs(t, err, ErrDuplicate)
	assert.ErrorContains(t, err, `instance "sda one"`)
	require.NoError(t, r.AddMetric(Metric{Name: "a", Type: Double, Semantics: SemInstant, Indom: 1}))
	require.ErrorIs(t, r.AddMetric(Metric{Name: "a", Type: Uint64, Semantics: SemCounter}), ErrDuplicate)
	startOrSkip(t, r)
	v, err := r.Value("a", "sda one")
	require.NoError(t, err)
	assert.Equal(t, Double, v.Type(), "the first declaration of a")
}

// TestIndexSpareOnlyNearGrowth: an index stopped short of the last
// sixteenth of its slots before it grows holds no table made ahead. An
// index asked for one half full and grew three quarters full, so that one
// of 10,000 ids (16,384 slots, 61% full) kept 256 kB no growth took.
func TestIndexSpareOnlyNearGrowth(t *testing.T) {
	var x idIndex
	key := func(pos int) int32 { return int32(pos) * 7 }
	for n := 0; len(x.slots) < 4*spareMin || 16*(3*len(x.slots)/4-x.n) > len(x.slots); n++ {
		if len(x.slots) >= spareMin && 16*(3*len(x.slots)/4-x.n) > len(x.slots) {
			require.Nil(t, x.next.asked, "a table made ahead at %d ids of %d slots", x.n, len(x.slots))
		}
		_, added := x.add(key(n), n, key)
		require.True(t, added)
	}
}
