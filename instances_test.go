package mmv

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestInstanceIndex: an indom whose ids are their indexes keeps no id
// index; the first other id makes one, and lookups and duplicates work the same
// before and after, and after a truncation.
func TestInstanceIndex(t *testing.T) {
	r := newTestRegistry(t, "ids")
	require.NoError(t, r.AddIndom(Indom{Serial: 1, Instances: []Instance{{ID: 0, Name: "a"}, {ID: 1, Name: "b"}}}))
	in := r.serials[1]
	assert.False(t, in.sparse, "ids numbered from 0 in order need no index")
	assert.Zero(t, in.ids.n)
	check := func(id int32, want int, ok bool) {
		t.Helper()
		i, found := in.index(id)
		assert.Equal(t, ok, found, "id %d found", id)
		if ok {
			assert.Equal(t, want, i, "index of id %d", id)
		}
	}
	check(1, 1, true)
	check(2, 0, false)
	check(-1, 0, false)
	require.ErrorIs(t, r.AddInstance(1, Instance{ID: 1, Name: "c"}), ErrDuplicate)
	require.NoError(t, r.AddInstance(1, Instance{ID: 2, Name: "c"}))
	assert.False(t, in.sparse)

	require.NoError(t, r.AddInstance(1, Instance{ID: 7, Name: "d"}))
	require.True(t, in.sparse, "an id that is not its index")
	require.Equal(t, 4, in.ids.n)
	check(0, 0, true)
	check(2, 2, true)
	check(7, 3, true)
	check(3, 0, false)
	require.ErrorIs(t, r.AddInstance(1, Instance{ID: 2, Name: "e"}), ErrDuplicate)
	r.mu.Lock()
	err := r.addInstanceLocked(r.serials[1], Instance{ID: 8, Name: "c"}, undoDeclared, false)
	r.mu.Unlock()
	require.ErrorIs(t, err, ErrDuplicate)
	check(8, 0, false) // the refused instance is not added
}

// TestInstanceRuns: an indom whose instances come in runs (indom.tails, a
// histogram vector's buckets') indexes each run's first id alone, and
// finds every id of a run, and no other, through it: before and after
// the first run whose ids are not their indexes, after a truncation of
// the last run, and after its removed runs are forgotten; a run added
// fresh (addFresh) as one added with lookups (add).
func TestInstanceRuns(t *testing.T) {
	const runs = 3
	in := &indom{tails: []string{",k=0", ",k=1", ",k=2"}}
	var want map[int32]int
	add := func(head int32) { // an odd head's run fresh, as a vector adds a new value's buckets
		t.Helper()
		first := Instance{ID: head * runs, Name: "i" + strconv.Itoa(int(head))}
		if head%2 == 0 {
			require.NoError(t, in.add(first))
			return
		}
		require.NoError(t, in.addFresh(first))
	}
	check := func() {
		t.Helper()
		want = map[int32]int{}
		for j, inst := range in.all() {
			want[inst.id] = j
		}
		for id := int32(-1); id < 40*runs; id++ {
			j, ok := in.index(id)
			wantJ, wantOK := want[id]
			require.Equal(t, wantOK, ok, "id %d found", id)
			if ok {
				require.Equal(t, wantJ, j, "index of id %d", id)
			}
		}
		if in.sparse {
			assert.Equal(t, in.count()/runs, in.ids.n, "one id indexed a run")
		}
	}
	add(0)
	add(1)
	check()
	require.False(t, in.sparse, "ids that are their indexes")
	add(7)
	add(3)
	require.True(t, in.sparse)
	check()
	require.Error(t, in.add(Instance{ID: 3*runs + 1, Name: "again"}), "an id of a run held")
	n := in.count()
	require.Error(t, in.addFresh(Instance{ID: 20 * runs, Name: " b"}), "a name PCP cannot read")
	require.Equal(t, n, in.count(), "a run refused adds none of its instances")
	in.truncate(3 * runs)
	check()
	for j := range runs {
		in.removed[j], in.removed[2*runs+j] = true, true
	}
	in.forget()
	check()
	add(12)
	check()
}

// TestDerivedInstances: an indom that derives its runs' instances from
// their first (indom.tails, a histogram vector's buckets') holds what one
// storing each, named, holds, through runs added fresh and not, a run
// refused, truncated, removed and forgotten: the same instances at the
// same indexes, found by id and by name, yielded by all as instance
// returns them, and the same indexes after forget.
func TestDerivedInstances(t *testing.T) {
	tails := []string{",le=1", ",le=2", ",le=+Inf"}
	runs := int32(len(tails))
	derived, stored := &indom{tails: tails}, &indom{}
	add := func(head int32, fresh bool) {
		t.Helper()
		name := "k=v" + strconv.Itoa(int(head))
		run := make([]Instance, runs)
		for k, tail := range tails {
			run[k] = Instance{ID: head*runs + int32(k), Name: name + tail}
		}
		first := Instance{ID: head * runs, Name: name}
		if fresh {
			require.NoError(t, derived.addFresh(first))
			for _, inst := range run {
				require.NoError(t, stored.addFresh(inst))
			}
			return
		}
		require.NoError(t, derived.add(first))
		for _, inst := range run {
			require.NoError(t, stored.add(inst))
		}
	}
	same := func() {
		t.Helper()
		require.Equal(t, stored.count(), derived.count())
		require.Equal(t, stored.live, derived.live)
		require.Equal(t, stored.removed, derived.removed)
		for j, inst := range derived.all() {
			want := stored.instance(j)
			require.Equal(t, want, derived.instance(j), "instance %d", j)
			require.Equal(t, want, Instance{ID: inst.id, Name: inst.head + inst.tail}, "all's instance %d", j)
			i, ok := derived.index(want.ID)
			require.True(t, ok, "id %d found", want.ID)
			require.Equal(t, j, i, "index of id %d", want.ID)
			i, ok = derived.byName(want.Name)
			require.True(t, ok, "%s found", want.Name)
			require.Equal(t, j, i, "index of %s", want.Name)
		}
		for id := int32(-1); id < 40*runs; id++ {
			i, ok := derived.index(id)
			wantI, wantOK := stored.index(id)
			require.Equal(t, wantOK, ok, "id %d found", id)
			require.Equal(t, wantI, i, "index of id %d", id)
		}
		_, ok := derived.byName("k=v1")
		assert.False(t, ok, "a run's first is named as the run, not found by it")
	}
	add(0, true)
	add(1, false)
	same()
	add(7, true)
	add(3, false)
	require.True(t, derived.sparse)
	same()
	require.ErrorIs(t, derived.add(Instance{ID: 3 * runs, Name: "k=again"}), ErrDuplicate, "a run's first id held")
	n := derived.count()
	require.Error(t, derived.addFresh(Instance{ID: 20 * runs, Name: " k"}), "a name PCP cannot read")
	require.Equal(t, n, derived.count(), "a run refused adds none of its instances")
	add(9, true)
	derived.truncate(4 * int(runs))
	stored.truncate(4 * int(runs))
	same()
	for _, in := range []*indom{derived, stored} {
		for j := range int(runs) {
			in.removed[runs+int32(j)], in.removed[3*runs+int32(j)] = true, true
		}
		in.addLive(-2 * int(runs))
	}
	same()
	require.Equal(t, stored.forget(), derived.forget(), "indexes after forget")
	same()
	add(12, true)
	add(1, false)
	same()
}

// TestAddIndomAsAddInstance: AddIndom, which copies its instances in at
// once (indom.addAll) and admits them in batches (addBatch), refuses what
// adding them one at a time refuses, with the same error, and finds what
// it adds by id and by name alike.
func TestAddIndomAsAddInstance(t *testing.T) {
	// many is n instances, ids from 0, named i0, i1, ..., with the changes
	// given by index: what crosses a batch, or ends one early.
	many := func(n int, changes map[int]Instance) []Instance {
		insts := make([]Instance, n)
		for i := range insts {
			insts[i] = Instance{int32(i), "i" + strconv.Itoa(i)}
			if c, ok := changes[i]; ok {
				insts[i] = c
			}
		}
		return insts
	}
	for name, insts := range map[string][]Instance{
		"batches":                     many(3*addBatch+5, nil),
		"name of an earlier batch":    many(3*addBatch+5, map[int]Instance{addBatch + 2: {1000, "i3 x"}}),
		"id of an earlier batch":      many(3*addBatch+5, map[int]Instance{2*addBatch + 1: {5, "x"}}),
		"duplicate within the batch":  many(3*addBatch+5, map[int]Instance{2*addBatch - 1: {1000, "i" + strconv.Itoa(addBatch)}}),
		"bad name before a duplicate": many(3*addBatch+5, map[int]Instance{addBatch + 1: {1000, "x "}, addBatch + 3: {1001, "i0"}}),
		"duplicate before a bad name": many(3*addBatch+5, map[int]Instance{addBatch + 1: {1000, "i0"}, addBatch + 3: {-4, "y"}}),
		"negative id in the last":     many(3*addBatch+5, map[int]Instance{3*addBatch + 4: {-1, "y"}}),
		"sparse across batches":       many(3*addBatch+5, map[int]Instance{addBatch: {900, "x"}}),
		"dense":                       {{0, "a"}, {1, "b"}, {2, "c"}},
		"sparse":                      {{10, "a"}, {3, "b"}, {7, "c d"}},
		"sparse later":                {{0, "a"}, {1, "b"}, {9, "c"}, {3, "d"}},
		"dense duplicate id":          {{0, "a"}, {1, "b"}, {1, "c"}},
		"duplicate below dense":       {{0, "a"}, {5, "b"}, {0, "c"}},
		"sparse duplicate id":         {{5, "a"}, {9, "b"}, {5, "c"}},
		"duplicate name":              {{0, "a x"}, {1, "b"}, {2, "a y"}},
		"duplicate first name":        {{4, "a"}, {4, "a"}},
		"empty name":                  {{0, "a"}, {1, "b"}, {2, ""}},
		"negative id":                 {{0, "a"}, {-1, "b"}},
		"space around":                {{0, "a"}, {1, " b"}},
	} {
		t.Run(name, func(t *testing.T) {
			all, each := newTestRegistry(t, "all"), newTestRegistry(t, "each")
			errAll := all.AddIndom(Indom{Serial: 1, Instances: insts})
			require.NoError(t, each.AddIndom(Indom{Serial: 1}))
			var errEach error
			for _, inst := range insts {
				if errEach = each.AddInstance(1, inst); errEach != nil {
					break
				}
			}
			if errEach != nil {
				require.Error(t, errAll)
				assert.Equal(t, errEach.Error(), errAll.Error())
				assert.Nil(t, all.serials[1], "a refused indom is not declared")
				return
			}
			require.NoError(t, errAll)
			a, e := all.serials[1], each.serials[1]
			assert.Equal(t, e.sparse, a.sparse)
			assert.Equal(t, e.live, a.live)
			assert.Equal(t, e.count(), a.count())
			for i, inst := range insts {
				j, ok := a.index(inst.ID)
				assert.True(t, ok, "id %d", inst.ID)
				assert.Equal(t, i, j, "index of id %d", inst.ID)
				j, ok = a.names.find(nameKey(inst.Name), a.instanceKey)
				assert.True(t, ok, "name %q", inst.Name)
				assert.Equal(t, i, j, "index of name %q", inst.Name)
				assert.Equal(t, inst, a.instance(i))
			}
			_, ok := a.index(100)
			assert.False(t, ok)
			require.ErrorIs(t, all.AddInstance(1, insts[0]), ErrDuplicate, "then AddInstance sees them")
			require.NoError(t, all.AddInstance(1, Instance{ID: 100, Name: "new"}))
		})
	}
}
