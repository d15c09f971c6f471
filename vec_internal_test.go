package mmv

import (
	"runtime"
	"strconv"
	"testing"
	"unsafe"

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
	const n = 5000
	_, v := uncappedVec(t, "vectable", 2*n)
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
			if used > 0 { // not the first, empty table
				require.NotNil(t, after.old.Load(), "a table that replaces a full one takes its entries later")
			}
			used = 0
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

// TestVecTableFirstDeletionUnmoved: the first deletion of a vector, of
// an entry its old table still holds, unmoved, keeps that entry out of the
// table that replaces it, as deletions after others do: moveLocked reads
// whether an entry was deleted only when one of the old table's was.
func TestVecTableFirstDeletionUnmoved(t *testing.T) {
	_, v := uncappedVec(t, "firstdeletion", 10000)
	var names []string
	insert := func() {
		t.Helper()
		name := strconv.Itoa(len(names))
		require.NotNil(t, v.With(name))
		names = append(names, name)
	}
	for insert(); v.table.Load().old.Load() == nil || len(names) < 100; insert() {
	}
	tb := v.table.Load()
	gone := ""
	for _, name := range names {
		h := canon.Hash([]string{name})
		if e := tb.old.Load().findHere(h, []string{name}); e != nil && !tb.holds(e, h) {
			gone = name
			break
		}
	}
	require.NotEmpty(t, gone, "an entry the old table holds, not moved yet")
	require.True(t, v.Delete(gone))
	for v.table.Load() == tb && tb.old.Load() != nil {
		insert()
	}
	require.Nil(t, tb.old.Load(), "the old table's entries all moved")
	dead := 0
	for i := range tb.slots {
		if e := tb.slots[i].e.Load(); e != nil && e.deleted() {
			dead++
		}
	}
	assert.Zero(t, dead, "the deleted entry was not moved")
	assert.Nil(t, tb.find(canon.Hash([]string{gone}), []string{gone}))
}

// TestVecLabelledEnd: a publication walks a vector's entries only up to
// the last one labelled (labelledEnd), and finds every live entry with
// labels there: with labels turned off and on again between first uses,
// past the file's label budget, and after deletions that tidy the entries
// away and move the others down.
func TestVecLabelledEnd(t *testing.T) {
	r, v := uncappedVec(t, "labelledend", 2000)
	route := func(i int) string { return "/r/" + strconv.Itoa(i) }
	check := func(when string) {
		t.Helper()
		r.mu.Lock()
		defer r.mu.Unlock()
		var want, got []int32
		for _, e := range v.order.all() { // every entry
			if e.labelRecords() > 0 && !e.deleted() {
				want = append(want, e.id)
			}
		}
		v.eachLabelledLocked(func(id int32, _ []string) { got = append(got, id) })
		require.NotEmpty(t, want, when)
		require.Equal(t, want, got, when)
		assert.Less(t, v.labelledEnd, v.order.len(), "%s: the walk stops short of the unlabelled entries", when)
	}
	for i := range 40 {
		v.With(route(i)).Inc()
	}
	v.SetInstanceLabels(false)
	for i := 40; i < 80; i++ {
		v.With(route(i)).Inc()
	}
	v.SetInstanceLabels(true)
	for i := 80; i < 120; i++ {
		v.With(route(i)).Inc()
	}
	v.SetInstanceLabels(false)
	for i := 120; i < 160; i++ {
		v.With(route(i)).Inc()
	}
	check("labels off and on")
	v.SetInstanceLabels(true)
	for i := 160; i < 1000; i++ {
		v.With(route(i)).Inc()
	}
	check("past the label budget")
	for i := 0; i < 1000; i += 3 {
		require.True(t, v.Delete(route(i)))
	}
	for i := 1; i < 1000; i += 3 {
		require.True(t, v.Delete(route(i)))
	}
	r.mu.Lock()
	tidied := v.order.len() < 1000
	r.mu.Unlock()
	require.True(t, tidied, "deletions tidied the entries")
	check("after deletions")
}

// TestVecTableMadeAhead: a vector's table near its growth (nearGrowth)
// has the array of the table to replace it made by a goroutine (spare),
// and takes that array when it is full, not one allocated by the first
// use that fills it. On one processor, which the first uses keep busy:
// the first use that asked for it yields once it lets the lock go
// (door.leave). The goroutine waited for the scheduler to preempt them,
// and the first use that filled the table made the array itself, with
// the lock held.
func TestVecTableMadeAhead(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	_, v := uncappedVec(t, "vecahead", 1<<20)
	i := 0
	add := func() {
		v.With("/r/" + strconv.Itoa(i)).Inc()
		i++
	}
	for len(v.table.Load().slots) < spareMin {
		add()
	}
	for range 3 { // growths
		tb := v.table.Load()
		for !nearGrowth(tb.used, len(tb.slots)) {
			add()
		}
		v.r.r.mu.Lock()
		asked := v.next.asked
		v.r.r.mu.Unlock()
		require.NotNil(t, asked, "no table asked for at %d entries", i)
		for v.table.Load() == tb {
			add()
		}
		made := asked.made.Load()
		require.NotNil(t, made, "no table made ahead at %d entries", i)
		require.Same(t, &(*made)[0], &v.table.Load().slots[0], "the table at %d entries is not the one made ahead", i)
	}
}

// TestVecTableDoubles: a vector's full table, past its first of one
// slot, is replaced by one twice as large, at most four slots a live
// entry, not four times as large (its 65,537th value made it 8 MB, one
// eighth full; under spareMin slots tables grew so until f68066b).
func TestVecTableDoubles(t *testing.T) {
	_, v := uncappedVec(t, "vecdoubles", 1<<20)
	grown := 0
	last := len(v.table.Load().slots)
	for i := range 40000 {
		v.With("/r/" + strconv.Itoa(i)).Inc()
		if n := len(v.table.Load().slots); n != last {
			if last > 1 {
				grown++
				assert.Equal(t, 2*last, n, "the table of %d slots replaced at %d values", last, i+1)
				assert.LessOrEqual(t, n, 4*(i+1), "slots at %d values", i+1)
			}
			last = n
		}
	}
	assert.GreaterOrEqual(t, grown, 12, "growths checked")
}

// TestVecTableSpareOnlyNearGrowth: a vector's table stopped short of the
// last sixteenth of its slots before it grows holds no table made ahead.
// A table asked for one three eighths full and grew half full, so that a
// vector of 12,289 to 16,383 values kept 1 MB no growth took.
func TestVecTableSpareOnlyNearGrowth(t *testing.T) {
	_, v := uncappedVec(t, "vecspare", 1<<20)
	for i := 0; ; i++ {
		tb := v.table.Load()
		if len(tb.slots) >= 4*spareMin && nearGrowth(tb.used, len(tb.slots)) {
			break
		}
		if len(tb.slots) >= spareMin && !nearGrowth(tb.used, len(tb.slots)) {
			require.Nil(t, v.next.asked, "a table made ahead at %d entries of %d slots", tb.used, len(tb.slots))
		}
		v.With("/r/" + strconv.Itoa(i)).Inc()
	}
}

// TestVecTableSpareWithinLimit: a vector filled to its limit holds no
// table made ahead for a growth its limit forbids: at the default limit,
// 1,000 values in a table of 2,048 slots (half of them its room then)
// asked for one of 8,192 (128 kB, four times the table) and kept it. Its
// limit raised, it asks again.
func TestVecTableSpareWithinLimit(t *testing.T) {
	limit := tableRoom(2*spareMin) - 1 // a table near its growth, one value short of it
	_, v := uncappedVec(t, "sparelimit", limit)
	for i := range limit {
		require.NotNil(t, v.With("/r/"+strconv.Itoa(i)))
	}
	require.True(t, nearGrowth(limit, len(v.table.Load().slots)), "the table is near its growth")
	assert.Nil(t, v.next.asked, "a table made ahead at the vector's limit")
	v.SetLimit(2 * limit)
	v.With("/r/more")
	assert.NotNil(t, v.next.asked, "none asked for once the limit allows a growth")
}

// TestEntrySizeClass: a counter's, gauge's or timer's entry with its
// instrument is one allocation of the 128-byte size class, which a
// field more would take to 144 (vecEntry.j took the place of a hash the
// table's slots hold; the entry keeps no slice of its values, and a
// Value is 24 bytes). A histogram's entry, with its histogram, window and
// histOut, is one of 320 bytes (448 as the entry and its histOut were
// apart, 384 while histOut kept two slices of handles and the index of
// its first bucket, 352 while the tally kept its first stripe as a slice
// and its stride and shift in words); each of the marks of its window
// (up to 6, made as they are taken) 64 bytes, where a time.Time made
// them 80.
func TestEntrySizeClass(t *testing.T) {
	assert.LessOrEqual(t, unsafe.Sizeof(histEntry{}), uintptr(320))
	assert.LessOrEqual(t, unsafe.Sizeof(mark{}), uintptr(64))
	assert.LessOrEqual(t, unsafe.Sizeof(cellEntry[Counter]{}), uintptr(128))
	assert.LessOrEqual(t, unsafe.Sizeof(cellEntry[Gauge]{}), uintptr(128))
	assert.LessOrEqual(t, unsafe.Sizeof(cellEntry[Timer]{}), uintptr(128))
	assert.LessOrEqual(t, unsafe.Sizeof(cellEntry[IntGauge]{}), uintptr(128))
}

// TestVecNamesIndexedOnDemand: a vector's new values add their instances
// unindexed by name (indom.addFresh); a lookup by name indexes them then,
// and finds each, and values used again after deletion and after their
// indom forgot them keep one id each, no name added twice.
func TestVecNamesIndexedOnDemand(t *testing.T) {
	r, v := uncappedVec(t, "ondemand", 1<<20)
	startOrSkip(t, r)
	for i := range 1000 {
		v.With("/r/" + strconv.Itoa(i)).Inc()
	}
	in := r.serials[v.Indom()]
	r.mu.Lock()
	named, count := in.named, in.count()
	r.mu.Unlock()
	require.Zero(t, named, "names indexed by first uses")
	require.Equal(t, 1000, count)
	_, err := vecLookup(r, "requests", "route=/r/999")
	require.NoError(t, err)
	checkNames := func() {
		t.Helper()
		r.mu.Lock()
		defer r.mu.Unlock()
		ids := map[int32]bool{}
		names := map[string]bool{}
		for j := range in.count() {
			inst := in.instance(j)
			i, ok := in.byName(inst.Name)
			assert.True(t, ok && i == j, "instance %d, %s, found at %d", j, inst.Name, i)
			assert.False(t, ids[inst.ID] || names[inst.Name], "instance %d, %s, id %d, added twice", j, inst.Name, inst.ID)
			ids[inst.ID], names[inst.Name] = true, true
		}
		assert.Equal(t, in.count(), in.named)
	}
	checkNames()
	for i := range 1000 {
		v.Delete("/r/" + strconv.Itoa(i))
	}
	for i := range 1200 { // revived, then new
		v.With("/r/" + strconv.Itoa(i)).Inc()
	}
	checkNames()
	for i := range 1200 {
		v.Delete("/r/" + strconv.Itoa(i))
	}
	require.NoError(t, r.Flush()) // forgets them
	r.mu.Lock()
	forgot := in.count() == 0
	r.mu.Unlock()
	require.True(t, forgot, "the deleted values forgotten")
	for i := range 1200 {
		v.With("/r/" + strconv.Itoa(i)).Inc()
	}
	checkNames()
}

// TestVecTableRoomLeavesAFreeSlot: a table filled to its room keeps a
// free slot, where a lookup's probe for values it does not hold ends (a
// room of size-size/4 filled a vector's first table, of one slot, and a
// miss probed it forever).
func TestVecTableRoomLeavesAFreeSlot(t *testing.T) {
	for size := 1; size <= 1<<20; size *= 2 {
		assert.Less(t, tableRoom(size), size, "a table of %d slots", size)
	}
	_, v := uncappedVec(t, "vecroom", 1<<20)
	for i := range 100 {
		v.With("/r/" + strconv.Itoa(i)).Inc()
		tb := v.table.Load()
		require.Less(t, tb.used, len(tb.slots), "no free slot at %d values", i+1)
		require.Nil(t, tb.findHere(canon.Hash([]string{"/absent"}), []string{"/absent"}))
	}
}
