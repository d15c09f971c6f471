package mmv

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMergeInterleavings: the updates that race a growth step at each of
// its points (growthHook) are all kept, every run: a value only added to
// ends on the sum of its adds, a value set on its last Set, whether the
// update landed in the old file after the snapshot, in the new file
// before the merge, or between the merge's load of the word and its
// compare-and-swap (where a plain store would lose it). A Set waits for
// the step's end: it is made from another goroutine, in order, and lands
// after the step.
func TestMergeInterleavings(t *testing.T) {
	for _, pad := range []bool{false, true} {
		t.Run(fmt.Sprint("padded=", pad), func(t *testing.T) { testMergeInterleavings(t, pad) })
	}
}

func testMergeInterleavings(t *testing.T, pad bool) {
	r := NewRegistry("merge", &Options{Dir: filepath.Join(t.TempDir(), "mmv"), PadValues: pad, PublishDelay: time.Hour})
	defer r.Close()
	// Each instrument as a model: update(n) changes it, want is what it
	// must hold, set whether it is set (keeps the last) or added to.
	type instrument struct {
		name   string
		set    bool
		update func(n int)
		get    func() float64
		want   float64
	}
	fset, fadd := NewGauge(r, "fset", "", Count), NewGauge(r, "fadd", "", Count)
	iset, iadd := NewIntGauge(r, "iset", "", Count), NewIntGauge(r, "iadd", "", Count)
	c := NewCounter(r, "counter", "", Count)
	insts := []*instrument{
		{name: "Gauge.Set", set: true, update: func(n int) { fset.Set(float64(n)) }, get: fset.Get},
		{name: "Gauge.Add", update: func(n int) { fadd.Add(float64(n)) }, get: fadd.Get},
		{name: "IntGauge.Set", set: true, update: func(n int) { iset.Set(int64(n)) }, get: func() float64 { return float64(iset.Get()) }},
		{name: "IntGauge.Add", update: func(n int) { iadd.Add(int64(n)) }, get: func() float64 { return float64(iadd.Get()) }},
		{name: "Counter.Add", update: func(n int) { c.Add(uint64(n)) }, get: func() float64 { return float64(c.Get()) }},
	}
	startOrSkip(t, r)
	n := 0
	update := func(in *instrument) {
		n++
		in.update(n)
		if in.set {
			in.want = float64(n)
		} else {
			in.want += float64(n)
		}
	}
	for _, in := range insts {
		update(in)
	}
	step := 0
	for _, in := range insts {
		for _, racing := range [][]growthPoint{
			{afterSnapshot},
			{afterSnapshot, afterRemap},
			{afterSnapshot, beforeMergeCAS},
			{afterSnapshot, afterRemap, beforeMergeCAS},
		} {
			// Sets wait: merge has nothing to swap.
			if in.set && slices.Contains(racing, beforeMergeCAS) {
				continue
			}
			reached := map[growthPoint]int{}
			landed := make(chan struct{})
			close(landed)
			hookGrowth(t, r, func(p growthPoint) {
				reached[p]++
				// Once per point: at the compare-and-swap, the retry
				// must then succeed.
				if reached[p] != 1 || !slices.Contains(racing, p) {
					return
				}
				if !in.set {
					update(in)
					return
				}
				n++
				k, before, done := n, landed, make(chan struct{})
				in.want, landed = float64(k), done
				go func() {
					<-before
					in.update(k)
					close(done)
				}()
				select { // it lands now, or waits for the step's end
				case <-done:
				case <-time.After(20 * time.Millisecond):
				}
			})
			step++
			NewCounter(r, fmt.Sprint("grow", step), "", Count) // a declaration to publish
			require.NoError(t, r.Flush())
			growthHook = nil
			<-landed
			for _, p := range racing {
				require.NotZero(t, reached[p], "%s: point %d of the growth step not reached", in.name, p)
			}
			for _, other := range insts {
				assert.Equal(t, other.want, other.get(), "%s, after %s raced points %v", other.name, in.name, racing)
			}
		}
	}
}

// TestSnapshotLaysOutAsPart: a publication lays out and encodes its
// snapshot of a part without the lock (publishPartUnlocking); the file is
// the one the part itself gives, byte for byte: vectors' shared names,
// removed instances, labels, the low-level API's indoms and String
// values, histograms, and an overflow file.
func TestSnapshotLaysOutAsPart(t *testing.T) {
	needFileLayer(t)
	r := NewRegistry("snaplayout", &Options{Dir: filepath.Join(t.TempDir(), "mmv"), MaxFileValues: 64})
	defer r.Close()
	require.NoError(t, r.AddIndom(Indom{Serial: 7, Instances: []Instance{{ID: 3, Name: "three"}, {ID: 9, Name: "nine"}}}))
	require.NoError(t, r.AddMetric(Metric{Name: "low", Type: Uint64, Semantics: SemCounter, Indom: 7}))
	require.NoError(t, r.AddMetric(Metric{Name: "text", Type: String, Semantics: SemDiscrete, Indom: 7}))
	require.NoError(t, r.AddInstanceLabel(7, 9, Label{Name: "kind", Value: map[string]any{"odd": true}}))
	require.NoError(t, r.Start())
	a := NewCounterVec(r, "a", "", Count, "route")
	b := NewCounterVec(r, "b", "", Count, "route")
	h := NewHistogramVec(r, "h", "", Second, &HistogramOptions{Buckets: []float64{1, 2}}, "op")
	for i := range 40 {
		a.With(fmt.Sprint("/", i)).Inc()
		b.With(fmt.Sprint("/", i%7)).Inc()
		h.With(fmt.Sprint("op", i%3)).Observe(1.5)
	}
	for i := range 10 {
		a.Delete(fmt.Sprint("/", 3*i))
	}
	require.NoError(t, r.AddInstance(7, Instance{ID: 11, Name: "eleven"}))
	require.NoError(t, r.Flush()) // every part has its file, the overflow files made after Start too
	require.NoError(t, r.AddInstance(7, Instance{ID: 12, Name: "twelve"}))
	r.mu.Lock()
	defer r.mu.Unlock()
	require.Greater(t, len(r.parts), 1, "the budget should have made an overflow file")
	for _, p := range r.parts {
		gr, err := r.growthLocked(p)
		require.NoError(t, err)
		require.Equal(t, encodedLocked(r, p, gr), encodedLocked(r, p.snapshotLocked(), gr), "file %s from its snapshot", p.name)
		p.endSnapshot()
		require.Equal(t, encodedLocked(r, p, gr), encodedLocked(r, p.snapshotLocked(), gr), "file %s from a snapshot in the last one's arrays", p.name)
		p.endSnapshot()
	}
}

// TestSnapshotLetsItsListsGo: a publication without the lock shares the
// part's slots and handles with its snapshot, and the part copies an
// array before writing it while the snapshot lasts (segList.share); once
// the publication is done, its lists let the snapshot go, and write in
// place again. Whether the timer's publications ran during the first uses
// depends on when they ran: what a snapshot shared is counted while its
// file is written (growthHook).
func TestSnapshotLetsItsListsGo(t *testing.T) {
	needFileLayer(t)
	var r *Registry
	shared := 0 // the most handles a snapshot shared, by the publication's goroutine
	growthHook = func(growthPoint) { shared = max(shared, r.parts[0].metrics[0].values.sharedLen()) }
	defer func() { growthHook = nil }()
	r = NewRegistry("snaplists", &Options{Dir: t.TempDir(), PublishDelay: time.Millisecond})
	defer r.Close()
	v := NewCounterVec(r, "requests", "", Count, "route")
	require.NoError(t, r.Start())
	published := func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return !r.parts[0].dirty && r.inFlight == nil
	}
	// The second publication's snapshot shares the handles the values of
	// the first got when they were bound, the third's those of the first
	// two.
	for round, n := range []int{100, 100, 1} {
		for i := range n {
			v.With(fmt.Sprint("/", round, "/", i)).Inc()
		}
		require.Eventually(t, published, 5*time.Second, time.Millisecond, "no publication by the timer")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	require.NotZero(t, shared, "no snapshot shared a handle")
	p := r.parts[0]
	assert.Zero(t, p.slots.sharedLen(), "the slots still keep a snapshot")
	for _, m := range p.metrics {
		assert.Zero(t, m.values.sharedLen(), "the handles of %s still keep a snapshot", m.Name)
	}
}

// TestSnapshotReservedUnlocked: a publication makes the arrays its
// snapshot and the values it shows are copied into with the lock let go
// (reserveSnapshotUnlocking), so the copies with the lock held grow none:
// a registry's first publication of 20,000 values waiting had no arrays
// yet and made them with the lock held (6-8 ms at 70,000).
func TestSnapshotReservedUnlocked(t *testing.T) {
	r, v := uncappedVec(t, "reserved", 1<<20)
	startOrSkip(t, r)
	const n = 20000
	for i := range n {
		v.With("/r/" + strconv.Itoa(i)).Inc()
	}
	caps := func(a *snapArrays) [2]int { return [2]int{cap(a.removed), cap(a.waiting)} }
	r.mu.Lock()
	p := r.parts[0]
	live := min(p.slots.len(), p.file.capacity)
	lacked := !p.snap.fits(p.snapshotInstances(), p.slots.len()-live)
	r.reserveSnapshotUnlocking(p)
	reserved := caps(&p.snap)
	p.snapshotLocked()
	p.snap.waiting = listed(r.shownLocked(p, live))
	shown := len(p.snap.waiting)
	copied := caps(&p.snap)
	inFlight := r.inFlight != nil
	p.endSnapshot()
	r.mu.Unlock()
	require.True(t, lacked, "the first publication's arrays had room: nothing to reserve")
	assert.False(t, inFlight, "the reservation left a publication in flight")
	assert.Equal(t, reserved, copied, "the copies grew the arrays with the lock held")
	assert.Equal(t, n-live, shown, "values shown")
}

// TestShownListFitsItsReservation: the values a publication lists as
// shown are those past the file's live slots, as many as its reservation
// made room for, whatever else waits: a vector listing its waiting values
// grew the list by all of them, with the lock held, those still waiting
// to be bound a chunk at a time after the last publication included
// (5-7 ms at 100,000 values).
func TestShownListFitsItsReservation(t *testing.T) {
	const n = 20000
	r, v, p := grownWithWaiting(t, "shownfits", n)
	r.mu.Lock()
	room := p.file.capacity
	r.mu.Unlock()
	// More values than wait, past the file's room, to be shown: fewer
	// than the list has room for, but not with those waiting.
	useRoutes(v, n, room+n*5/4)
	r.mu.Lock()
	waiting := v.kind.(*cellVec[Counter]).waiting.len()
	live := min(p.slots.len(), p.file.capacity)
	r.reserveSnapshotUnlocking(p)
	reserved := cap(p.snap.waiting)
	p.snap.waiting = listed(r.shownLocked(p, live))
	shown, made := len(p.snap.waiting), cap(p.snap.waiting)
	p.snap.done()
	r.mu.Unlock()
	require.Greater(t, waiting, reserved, "the list has room for every value waiting: nothing to show")
	assert.Equal(t, n*5/4, shown, "values shown past the live slots")
	assert.Equal(t, reserved, made, "the list grew past its reservation")
}

// TestQuietRegistryLetsItsReservationGo: once a registry has nothing
// left to publish, its parts keep no room for the values a next
// publication would show: one that showed 10,000 histograms' 280,000
// values reserved 13 MB for the next, kept for the registry's life.
func TestQuietRegistryLetsItsReservationGo(t *testing.T) {
	const n = 20000
	r, v := uncappedVec(t, "quiet", 1<<20)
	startOrSkip(t, r)
	useRoutes(v, 0, n)
	require.NoError(t, r.Flush())
	r.mu.Lock()
	p := r.parts[0]
	reserved := cap(p.snap.waiting)
	r.mu.Unlock()
	require.Positive(t, reserved, "the publication showed no value: nothing reserved")
	flushUntilQuiet(t, r)
	r.mu.Lock()
	defer r.mu.Unlock()
	assert.Zero(t, cap(p.snap.waiting), "room kept for values shown")
}

// TestShownWalksNothingWithRoom: a publication whose file has room for
// every slot shows no waiting value past its live ones, and lists none
// without a walk of the values waiting: such are the publications of new
// label values the last growth made room for, and the walk held the lock
// 1 ms at 50,000 values waiting, every first use meanwhile waiting for it.
func TestShownWalksNothingWithRoom(t *testing.T) {
	const n = 2000
	r, v, p := grownWithWaiting(t, "shownroom", n)
	useRoutes(v, n, n+100) // within the room, bound at once: the part is dirty, nothing is past the live slots
	walked := 0
	listed := func(live int) int {
		r.mu.Lock()
		defer r.mu.Unlock()
		defer duringListingsLocked(r, func() { walked++ })()
		return len(listed(r.shownLocked(p, live)))
	}
	r.mu.Lock()
	live, waiting := min(p.slots.len(), p.file.capacity), v.kind.(*cellVec[Counter]).waiting.len()
	r.mu.Unlock()
	require.Greater(t, waiting, 0, "no value waits")
	assert.Equal(t, 0, listed(live), "values shown with room for every slot")
	assert.Zero(t, walked, "the waiting values walked with room for every slot")
	assert.Equal(t, 100, listed(n-100), "waiting values shown past a lower live slot")
	assert.NotZero(t, walked, "the waiting values were not walked for those past the live slots")
}

// TestShownListedWithoutTheLock: a publication lists the vectors' cells
// its grown file shows with the lock let go, and first uses go on
// meanwhile: 80,000 listed with it held took 0.8-1 ms, every first use
// waiting. The listing reads a copy of each vector's queue, which those
// first uses add to; their values wait for the next file, and every
// value listed shows its count in this one.
func TestShownListedWithoutTheLock(t *testing.T) {
	const n = 2000
	r, v := uncappedVec(t, "shownunlocked", 1<<20)
	startOrSkip(t, r)
	useRoutes(v, 0, n) // past the file's room: the next file shows them
	var listings, locked int
	r.mu.Lock()
	p := r.parts[0]
	restore := duringListingsLocked(r, func() {
		listings++
		if !r.mu.TryLock() {
			locked++
			return
		}
		r.mu.Unlock()
		useRoutes(v, n, n+100)
	})
	err := r.publishPartUnlocking(p)
	restore()
	cv := v.kind.(*cellVec[Counter])
	waiting := cv.waiting.len()
	var words []uint64
	for _, e := range v.order.all() {
		if e.j < n {
			words = append(words, fileWordLocked(cv.m, e.id))
		}
	}
	r.mu.Unlock()
	require.NoError(t, err)
	require.Equal(t, 1, listings, "listings run")
	assert.Zero(t, locked, "the listing ran with the lock held")
	assert.Equal(t, n+100, waiting, "values waiting: those listed, and those made during the listing")
	assert.Equal(t, slices.Repeat([]uint64{1}, n), words, "the counts of the values listed, in the file")
	require.NoError(t, r.Flush())
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range v.order.all() {
		require.Equal(t, uint64(1), fileWordLocked(cv.m, e.id), "value %d in the file", e.j)
	}
}

// TestSnapshotKeepsItsInstances: a publication's snapshot shares its
// indoms' instances rather than copying them (7-17 ms under the lock at
// 100,000 instances), and its slots and handles (segList.share), so
// nothing done to the part after it is taken may change what it holds:
// new instances, a refused transaction's declarations undone, and
// instances removed, their slots written dead, and forgotten, which
// forget no longer compacts in place.
func TestSnapshotKeepsItsInstances(t *testing.T) {
	needFileLayer(t)
	r := newTestRegistry(t, "snapkeep")
	v := NewCounterVec(r, "requests", "", Count, "route")
	for i := range 200 {
		v.With(fmt.Sprint("/", i)).Inc()
	}
	require.NoError(t, r.Start())
	r.mu.Lock()
	p := r.parts[0]
	gr, err := r.growthLocked(p)
	require.NoError(t, err)
	sp := p.snapshotLocked()
	before := encodedLocked(r, sp, gr)
	r.mu.Unlock()

	// Removals first: before new values grow the part's slots and
	// handles into new arrays, they write those the snapshot shares.
	for i := range 180 {
		v.Delete(fmt.Sprint("/", i))
	}
	for i := 200; i < 210; i++ {
		v.With(fmt.Sprint("/", i)).Inc()
	}
	require.Error(t, r.Transact(func(tx *Tx) error {
		_, err := DeclareVec[Counter](tx, "more", "", Count, "route")
		require.NoError(t, err)
		return errors.New("refused")
	}))
	r.mu.Lock()
	defer r.mu.Unlock()
	in := r.serials[v.Indom()]
	require.True(t, in.forgetsRemoved())
	r.forgetRemovedLocked()
	require.Equal(t, 30, in.count(), "the removed instances forgotten")
	require.Equal(t, before, encodedLocked(r, sp, gr), "the snapshot's file after the part changed")
}

// TestWakeInChunks: the values first used while the file had no room for
// them are bound a chunk at a time once a publication gives them
// storage: a wake binds wakeChunk of them and says more wait, the timer
// stays armed for the rest, Registry.Value binds them before it gives a
// handle, and the timer's publication binds them all, the lock let go
// between chunks, every count then in the file.
func TestWakeInChunks(t *testing.T) {
	n := 3*wakeChunk + 10
	r, v := waitingVec(t, "chunks", n, n, false)
	cv := v.kind.(*cellVec[Counter])
	r.mu.Lock()
	require.True(t, r.bindLocked(wakeChunk), "a chunk binds them all")
	require.Equal(t, n-wakeChunk, cv.waiting.len(), "a chunk binds more or less than wakeChunk")
	require.True(t, r.unpublishedLocked(), "the rest would wait for good")
	last := cv.waiting.at(cv.waiting.len() - 1).o
	r.mu.Unlock()
	// A handle on a value whose instrument still waits: the instrument is
	// bound first, so that the two count in one place.
	name, _ := cv.nameOfLocked(last.id)
	h, err := vecLookup(r, "requests", name)
	require.NoError(t, err)
	require.Same(t, h, last.own.cell.v.Load(), "the instrument of %s not bound to its handle", name)
	r.mu.Lock()
	require.NoError(t, r.publishPartsLocked(byTimer))
	require.Zero(t, cv.waiting.len())
	require.False(t, r.wakeRest)
	r.mu.Unlock()
	for i, e := range v.order.all() {
		c := &e.t.cell
		fv := c.v.Load()
		require.NotSame(t, &c.heap, fv, "value %d not bound", i)
		require.Equal(t, uint64(i), atomic.LoadUint64(fv.u64()), "value %d in the file", i)
	}
}

// TestFileShowsWaitingValues: a file shows the values of the instruments
// waiting for their storage in it as their own memory held them when it
// was written, not 0 until the timer hands them over: PCP read 0 for a
// counter already counted after each publication, until its chunk was
// bound (the httpserver example's test saw it).
func TestFileShowsWaitingValues(t *testing.T) {
	for _, unlocked := range []bool{false, true} {
		t.Run(fmt.Sprint("unlocked=", unlocked), func(t *testing.T) {
			n := 3*wakeChunk + 10
			r, v := waitingVec(t, "shown", n, n, unlocked)
			cv := v.kind.(*cellVec[Counter])
			r.mu.Lock()
			words := make([]uint64, 0, n)
			for _, e := range v.order.all() {
				words = append(words, fileWordLocked(cv.m, e.id))
			}
			r.mu.Unlock()
			for i, w := range words {
				require.Equal(t, uint64(i), w, "value %d in the file", i)
			}
			if read, ok := pcpValues(t, r, "requests"); ok {
				require.Len(t, read, n)
				for name, value := range read {
					assert.Equal(t, strings.TrimPrefix(name, "route=/"), strconv.FormatInt(value, 10), "PCP reads %s", name)
				}
			}
		})
	}
}

// TestWaitingAcrossForget: the instruments waiting for storage when their
// indom forgets its removed instances, which renumbers the live ones, are
// shown and bound at their instances' new indexes: each live value then
// holds its own count, in the file and as PCP reads it.
func TestWaitingAcrossForget(t *testing.T) {
	r, v := uncappedVec(t, "forgetwait", 1000)
	startOrSkip(t, r)
	n, kept := 100, map[string]int64{}
	for i := range n {
		v.With("/" + strconv.Itoa(i)).Add(uint64(i + 1))
	}
	for i := range n {
		if i%10 != 7 {
			require.True(t, v.Delete("/"+strconv.Itoa(i)))
		} else {
			kept["route=/"+strconv.Itoa(i)] = int64(i + 1)
		}
	}
	cv := v.kind.(*cellVec[Counter])
	r.mu.Lock()
	require.True(t, cv.in.forgetsRemoved(), "the indom would not forget")
	waiting := cv.waiting.len()
	r.mu.Unlock()
	require.NotZero(t, waiting, "no value waits")
	require.NoError(t, r.Flush())
	r.mu.Lock()
	got := map[string]int64{}
	for j, inst := range cv.in.insts.all() {
		got[inst.Name] = int64(fileWordLocked(cv.m, inst.ID))
		require.False(t, cv.in.isRemoved(j), "%s not forgotten", inst.Name)
	}
	r.mu.Unlock()
	assert.Equal(t, kept, got, "the file's values")
	if read, ok := pcpValues(t, r, "requests"); ok {
		assert.Equal(t, kept, read, "PCP reads")
	}
}

// TestHistogramsWaitingAcrossForget is TestWaitingAcrossForget for a
// histogram vector, whose values wait in its group and are bound by
// instance id (histGroup.bindLocked), the indexes they were made at
// (histOut.at) no longer theirs after the forget: once refreshed, each
// live histogram's count and buckets in the file are its own, observed
// after the publication too (which only refresh then shows).
func TestHistogramsWaitingAcrossForget(t *testing.T) {
	r, hv, g := uncappedHistVec(t, "histforget", 1000)
	n, kept := 100, map[string]int64{}
	for i := range n {
		h := hv.With("/" + strconv.Itoa(i))
		for range i + 1 {
			h.Observe(5)
		}
	}
	for i := range n {
		if i%10 != 7 {
			require.True(t, hv.Delete("/"+strconv.Itoa(i)))
		} else {
			kept["route=/"+strconv.Itoa(i)] = int64(i + 1)
		}
	}
	r.mu.Lock()
	require.True(t, g.statIndom.forgetsRemoved(), "the indom would not forget")
	r.mu.Unlock()
	g.mu.Lock()
	waiting := len(g.waiting)
	g.mu.Unlock()
	require.NotZero(t, waiting, "no histogram waits")
	require.NoError(t, r.Flush())
	for i := 7; i < n; i += 10 { // counts in the file from now on only by refresh
		hv.With("/" + strconv.Itoa(i)).Observe(5)
		kept["route=/"+strconv.Itoa(i)]++
	}
	g.refresh()
	counts, buckets := map[string]int64{}, map[string]int64{}
	for name := range kept {
		counts[name] = vecValue(t, r, "size.count", name).Int()
		buckets[name] = vecValue(t, r, "size.bucket", name+",le=10").Int()
	}
	assert.Equal(t, kept, counts, "the file's counts")
	assert.Equal(t, kept, buckets, "the file's first buckets")
	if read, ok := pcpValues(t, r, "size.count"); ok {
		assert.Equal(t, kept, read, "the counts PCP reads")
		read, _ = pcpValues(t, r, "size.bucket")
		for name, n := range kept {
			assert.Equal(t, n, read[name+",le=10"], "the first bucket PCP reads of %s", name)
		}
		assert.Len(t, read, 2*len(kept), "the buckets PCP shows")
	}
}

// TestHistogramBucketsForgetWithStatistics: a histogram vector's buckets'
// indom forgets its removed instances when its statistics' does, and only
// then. On its own it forgot them at a publication where the statistics'
// did not (twice as many removed instances here: 126 against 124 live,
// where the statistics keep 63 against 62), and so kept, at a later one
// where the statistics' forgot theirs, the buckets of values the
// statistics no longer had. Once the vector counts ids, such a value used
// again takes a new id, and its buckets' names were those kept: the
// vector refused it (ErrDuplicate, "same name up to the first space").
func TestHistogramBucketsForgetWithStatistics(t *testing.T) {
	r, hv, g := uncappedHistVec(t, "histforgetwith", 200)
	inLockstep := func(stats int) {
		t.Helper()
		r.mu.Lock()
		defer r.mu.Unlock()
		require.Equal(t, stats, g.statIndom.count(), "the statistics' instances")
		require.Equal(t, 2*stats, g.bucketIn.count(), "the buckets' instances")
	}
	route := func(i int) string { return "/" + strconv.Itoa(i) }
	n := 0 // routes used
	use := func(k int) {
		for range k {
			hv.With(route(n)).Observe(5)
			n++
		}
		require.NoError(t, r.Flush())
	}
	for range 2 { // 260 values forgotten: the vector counts ids from then on
		use(130)
		for i := n - 130; i < n; i++ {
			require.True(t, hv.Delete(route(i)))
		}
		require.NoError(t, r.Flush())
		inLockstep(0)
	}
	require.True(t, hv.counting, "the vector counts ids")
	first := n
	use(125)
	for i := first; i < first+63; i++ {
		require.True(t, hv.Delete(route(i)))
	}
	require.NoError(t, r.Flush())
	inLockstep(125)
	for i := first + 63; i < first+65; i++ {
		require.True(t, hv.Delete(route(i)))
	}
	require.NoError(t, r.Flush())
	inLockstep(60)

	again := route(first + 64)
	hv.With(again).Observe(5)
	require.NoError(t, hv.Err())
	require.NoError(t, r.Flush())
	g.refresh()
	inLockstep(61)
	assert.EqualValues(t, 1, vecValue(t, r, "size.bucket", "route="+again+",le=10").Int())
	assert.EqualValues(t, 1, vecValue(t, r, "size.count", "route="+again).Int())
	if read, ok := pcpValues(t, r, "size.count"); ok {
		assert.Len(t, read, 61, "the counts PCP shows")
		assert.EqualValues(t, 1, read["route="+again], "the count PCP reads")
		read, _ = pcpValues(t, r, "size.bucket")
		assert.Len(t, read, 2*61, "the buckets PCP shows")
		assert.EqualValues(t, 1, read["route="+again+",le=10"], "the bucket PCP reads")
	}
}

// TestNoBindingDuringStep: no waiting cell is bound while a publication's
// step carries its value, which holds the copy an earlier file showed: the
// binding's store into the old file after the step's snapshot was merged
// as an update, against an Add in the new file since, a gauge shown at
// 1e17, set to 1 and added 0.5 ending at ((1e17 + 0.5) + 1) - 1e17 = 0,
// or 1. A binding waits for the step's end.
func TestNoBindingDuringStep(t *testing.T) {
	needFileLayer(t)
	r := NewRegistry("bindstep", &Options{Dir: filepath.Join(t.TempDir(), "mmv"), PublishDelay: time.Hour,
		MaxIndomInstances: -1, MaxInstances: -1, MaxFileValues: -1, MaxValues: -1})
	t.Cleanup(func() { r.Close() })
	v := NewGaugeVec(r, "g", "", Count, "k")
	startOrSkip(t, r)
	n := 64
	for i := range n {
		v.With(strconv.Itoa(i)).Set(1e17)
	}
	r.mu.Lock()
	p := r.parts[0]
	require.NoError(t, r.publishPartLocked(p, new(*claims), byDeclaration)) // storage, 1e17 shown, none bound (p has its file: no claim)
	r.boundLocked(r.parts)
	r.mu.Unlock()
	for i := range n {
		v.With(strconv.Itoa(i)).Set(1) // in the memory still
	}
	v.With("new").Set(1) // something to publish
	var once sync.Once
	var added sync.Once
	hookGrowth(t, r, func(at growthPoint) {
		switch at {
		case afterSnapshot:
			once.Do(func() {
				r.mu.Lock()
				r.bindLocked(0)
				r.mu.Unlock()
			})
		case afterRemap:
			added.Do(func() {
				for i := range n {
					v.With(strconv.Itoa(i)).Add(0.5)
				}
			})
		}
	})
	r.mu.Lock()
	require.NoError(t, r.publishPartUnlocking(p))
	growthHook = nil
	r.bindLocked(0)
	cv := v.kind.(*cellVec[Gauge])
	got := map[string]float64{}
	for _, e := range v.order.all() {
		name, _ := cv.nameOfLocked(e.id)
		got[name] = math.Float64frombits(fileWordLocked(cv.m, e.id))
	}
	r.mu.Unlock()
	for name, g := range got {
		want := 1.5
		if name == "k=new" {
			want = 1
		}
		assert.Equal(t, want, g, "%s in the file", name)
	}
}

// TestStartShowsCounted: Start's files show what the instruments counted
// before it, while it binds them: PCP read 0 until their binding.
func TestStartShowsCounted(t *testing.T) {
	needFileLayer(t)
	r := NewRegistry("counted", &Options{Dir: filepath.Join(t.TempDir(), "mmv"), PublishDelay: time.Hour})
	t.Cleanup(func() { r.Close() })
	c, g, ig := NewCounter(r, "c", "", Count), NewGauge(r, "g", "", Count), NewIntGauge(r, "ig", "", Count)
	cv := NewCounterVec(r, "cv", "", Count, "k")
	c.Add(3)
	g.Set(2.5)
	ig.Set(-4)
	cv.With("a").Add(7)
	var words map[string]uint64
	moveHook = func() { // the first binding, the lock held: the files are made
		if words != nil {
			return
		}
		words = map[string]uint64{}
		for _, m := range r.parts[0].metrics {
			if !slices.Contains([]string{"c", "g", "ig", "cv"}, m.Name) {
				continue // mmv's own
			}
			id := int32(0)
			if m.indom != nil {
				id = m.indom.insts.at(0).ID
			}
			words[m.Name] = fileWordLocked(m, id)
		}
	}
	t.Cleanup(func() { moveHook = nil })
	require.NoError(t, r.Start())
	moveHook = nil
	assert.Equal(t, map[string]uint64{"c": 3, "g": math.Float64bits(2.5), "ig": uint64(1<<64 - 4), "cv": 7}, words)
}

// TestFirstUseHandsNoneOver: a first use after Start takes the file's
// room for its own value, and leaves the values waiting for storage to
// the timer: binding a chunk of them made each first use after a
// publication wait 0.3-26 ms.
func TestFirstUseHandsNoneOver(t *testing.T) {
	n := 3 * wakeChunk
	r, v := waitingVec(t, "nonehanded", n, 2*n, false)
	cv := v.kind.(*cellVec[Counter])
	c := v.With("/new")
	r.mu.Lock()
	defer r.mu.Unlock()
	require.Equal(t, n, cv.waiting.len(), "a first use handed waiting values over")
	require.NotSame(t, &c.cell.heap, c.cell.v.Load(), "the first use's own value has no storage")
	require.True(t, r.unpublishedLocked(), "the waiting values would wait for good")
}

// TestFirstUseBoundInEveryFile: a first use after Start takes its file's
// room for its value at once in whichever file holds its vector, the
// first or an overflow one: the first use marks bound the files it grew,
// not every file of the registry (boundLocked).
func TestFirstUseBoundInEveryFile(t *testing.T) {
	needFileLayer(t)
	r := NewRegistry("boundeach", &Options{Dir: filepath.Join(t.TempDir(), "mmv"), PublishDelay: time.Hour})
	t.Cleanup(func() { r.Close() })
	vs := make([]*Vec[Counter], 5) // two default vectors' reservations a file: three files
	for i := range vs {
		vs[i] = NewCounterVec(r, "requests"+strconv.Itoa(i), "", Count, "route")
	}
	startOrSkip(t, r)
	require.Len(t, r.parts, 3)
	for _, v := range vs {
		v.With("/").Inc() // a growth step for each file, which leaves room in it
	}
	require.NoError(t, r.Flush())
	for i, v := range vs {
		c := v.With("/after")
		require.NotNil(t, c)
		require.NotSame(t, &c.cell.heap, c.cell.v.Load(), "vector %d: a first use after Start waits for storage its file has", i)
	}
}

// TestHistogramFirstUseBindsWhatHasStorage: a histogram vector's first use
// after Start binds its values at once when its file has room for them,
// as a cell's does, and leaves them waiting when it has none: the
// binding is skipped only when no value can have storage
// (bindableLocked), never for one that has it. Its next wake binds them.
func TestHistogramFirstUseBindsWhatHasStorage(t *testing.T) {
	r, hv, g := uncappedHistVec(t, "histroom", 100)
	bound := func(route string) (n int) {
		h := hv.With(route)
		g.mu.Lock()
		defer g.mu.Unlock()
		for _, o := range g.hs {
			if o.e != nil && o.e.t == h {
				for i := range o.vals {
					if o.vals[i].Load() != nil {
						n++
					}
				}
			}
		}
		return n
	}
	values := len(g.bounds) + len(g.stats)
	require.Equal(t, 0, bound("/nowhere"), "a first use with no room in its file (Start's, as libpcp_mmv's, has none)")
	require.NoError(t, r.Flush()) // a growth step, which leaves room
	require.Equal(t, values, bound("/nowhere"), "bound by the wake")
	hv.With("/room")
	r.mu.Lock()
	bindable := door{r}.bindableLocked()
	r.mu.Unlock()
	require.True(t, bindable, "the first use took room in its file")
	assert.Equal(t, values, bound("/room"), "a first use with room in its file, bound at once")
}

// TestChurnKeepsSlotsBounded: label values deleted and used again, half
// of them while a publication is in flight, take the slots their removals
// freed, so a part's slots stay within a few rounds' churn. A value made
// during a flight took a new slot, and every publication grew the file by
// the values made meanwhile, without bound: 1,000 Delete and With a second
// of one histogram's value grew its file by 400 slots a second, and each
// publication took longer as it grew.
func TestChurnKeepsSlotsBounded(t *testing.T) {
	r, hv, g := uncappedHistVec(t, "churnslots", 100)
	churn := func() {
		for range 10 {
			hv.With("x").Observe(1)
			hv.Delete("x")
		}
	}
	hv.With("keep").Observe(2)
	hookGrowth(t, r, func(at growthPoint) {
		if at == afterSnapshot {
			churn()
		}
	})
	values := len(g.bounds) + len(g.stats)
	p := g.bucketM.part
	for round := range 50 {
		churn()
		r.mu.Lock()
		require.NoError(t, r.publishPartUnlocking(p))
		slots := p.slots.len()
		r.mu.Unlock()
		require.LessOrEqual(t, slots, 4*20*values, "round %d: the slots of four rounds' churn", round)
	}
	growthHook = nil
	hv.With("x").Observe(3)
	require.NoError(t, r.Flush())
	g.refresh()
	assert.Equal(t, int64(1), vecValue(t, r, "size.count", "route=x").Int())
	assert.Equal(t, int64(1), vecValue(t, r, "size.count", "route=keep").Int())
	assert.Equal(t, 2.0, vecValue(t, r, "size.sum", "route=keep").Float())
}

// TestChurnSlotsCapped: at the default values budget, label values
// deleted and used again as fast as a loop goes keep every file within
// twice its budget of slots, a histogram's values more: a first use past
// it publishes, or waits for the publication in flight, to take the slots
// removals freed (roomLocked). Publications freed them at their pace,
// and the loop took 8.8 million new slots in 4 s.
func TestChurnSlotsCapped(t *testing.T) {
	needFileLayer(t)
	r := NewRegistry("churncap", &Options{Dir: filepath.Join(t.TempDir(), "mmv")})
	t.Cleanup(func() { r.Close() })
	cv := NewCounterVec(r, "requests", "", Count, "route")
	hv := NewHistogramVec(r, "latency", "", Second, nil, "route")
	cv.With("keep").Add(3)
	startOrSkip(t, r)
	most := 2*DefaultMaxFileValues + 2*(len(hv.kind.(*histGroup).bounds)+len(hv.kind.(*histGroup).stats))
	for i := range 30000 {
		hv.With("x").Observe(1)
		hv.Delete("x")
		cv.With("x").Inc()
		cv.Delete("x")
		if i%1000 == 999 {
			r.mu.Lock()
			slots := 0
			for _, p := range r.parts {
				slots = max(slots, p.slots.len())
			}
			r.mu.Unlock()
			require.LessOrEqual(t, slots, most, "after %d rounds", i+1)
		}
	}
	require.NoError(t, r.Flush())
	assert.Equal(t, int64(3), vecValue(t, r, "requests", "route=keep").Int())
}

// TestSlotTakenInFlightZeroed: a free slot taken while a publication is in
// flight keeps the removed value's record until the publication is done,
// which carries it, then is zeroed before its new value is bound: read
// before a refresh, a new histogram's count is 0, not its slot's last
// owner's.
func TestSlotTakenInFlightZeroed(t *testing.T) {
	r, hv, g := uncappedHistVec(t, "inflightzero", 100)
	for range 5 {
		hv.With("a").Observe(1)
	}
	hv.With("d")
	require.NoError(t, r.Flush())
	g.refresh()
	require.Equal(t, int64(5), vecValue(t, r, "size.count", "route=a").Int())
	require.True(t, hv.Delete("a"))
	p := g.bucketM.part
	r.mu.Lock()
	require.NoError(t, r.publishPartUnlocking(p)) // a's slots written dead, then free
	freed := len(p.free)
	r.mu.Unlock()
	require.NotZero(t, freed)
	require.True(t, hv.Delete("d")) // something to publish
	var taken int
	hookGrowth(t, r, func(at growthPoint) {
		if at == afterSnapshot {
			hv.With("b")
			r.mu.Lock()
			taken = len(p.landing)
			r.mu.Unlock()
		}
	})
	r.mu.Lock()
	require.NoError(t, r.publishPartUnlocking(p))
	growthHook = nil
	r.bindLocked(0)
	id, ok := g.idOfLocked("route=b")
	require.True(t, ok)
	words := map[string]uint64{}
	for i := range g.bounds {
		words["bucket "+g.bounds[i]] = fileWordLocked(g.bucketM, g.bucketID(id, i))
	}
	for i, m := range g.statM {
		words[g.stats[i]] = fileWordLocked(m, id)
	}
	r.mu.Unlock()
	require.Equal(t, freed, taken, "b, made in flight, took a's free slots")
	for name, w := range words {
		assert.Zero(t, w, "b's %s before a refresh: its slot's last owner's", name)
	}
}

// TestCounterMadeInFlightExact: a counter made while a publication is in
// flight, on a free slot, counts in its memory until the publication is
// done, not in the old file's record, which the step merges and which is
// zeroed once it lands, and so is exact once bound.
func TestCounterMadeInFlightExact(t *testing.T) {
	r, v := uncappedVec(t, "inflightcount", 100)
	startOrSkip(t, r)
	v.With("a").Add(5)
	v.With("d")
	require.NoError(t, r.Flush())
	require.True(t, v.Delete("a"))
	p := v.kind.(*cellVec[Counter]).m.part
	r.mu.Lock()
	require.NoError(t, r.publishPartUnlocking(p)) // a's slot written dead, then free
	free := slices.Clone(p.free)
	r.mu.Unlock()
	require.Len(t, free, 1)
	require.True(t, v.Delete("d")) // something to publish
	hookGrowth(t, r, func(at growthPoint) {
		switch at {
		case afterSnapshot:
			v.With("b").Add(7)
		case afterRemap:
			v.With("b").Add(1)
		}
	})
	r.mu.Lock()
	err := r.publishPartUnlocking(p)
	growthHook = nil
	r.bindLocked(0)
	m := v.kind.(*cellVec[Counter]).m
	id, _ := v.kind.idOfLocked("route=b")
	slot := *m.slots.at(indexOf(m, id))
	r.mu.Unlock()
	require.NoError(t, err)
	require.Equal(t, int32(free[0]), slot, "b took a's free slot")
	v.With("b").Add(2)
	require.NoError(t, r.Flush())
	assert.Equal(t, int64(10), vecValue(t, r, "requests", "route=b").Int())
}

// TestEnteringCounted: an instrument waiting for the registry's lock is
// counted (entering) until it has it, so that the timer binding chunks
// lets it in between two.
func TestEnteringCounted(t *testing.T) {
	r := NewRegistry("entering", &Options{Dir: t.TempDir()})
	t.Cleanup(func() { r.Close() })
	v := NewCounterVec(r, "requests", "", Count, "route")
	r.mu.Lock()
	done := make(chan struct{})
	go func() {
		v.With("/a").Inc()
		close(done)
	}()
	require.Eventually(t, func() bool { return r.entering.Load() == 1 }, 5*time.Second, time.Millisecond,
		"a first use waiting for the lock not counted")
	r.mu.Unlock()
	<-done
	require.Zero(t, r.entering.Load(), "a first use that had the lock still counted")
}

// TestMergeSetAndAdded: a value both set and added to (an in-flight gauge
// set once, then Inc and Dec) loses no add to a growth step. merge kept
// the new file's word of a value ever set, so an Inc in the old file and
// a Dec in the new one left it one lower for good. A Set during a step
// now waits for its end, so merge adds both files' changes, and the Set
// lands last.
func TestMergeSetAndAdded(t *testing.T) {
	needFileLayer(t)
	r := NewRegistry("mixed", &Options{Dir: filepath.Join(t.TempDir(), "mmv"), PublishDelay: time.Hour})
	defer r.Close()
	g := NewIntGauge(r, "inflight", "", Count)
	f := NewGauge(r, "level", "", Count)
	require.NoError(t, r.Start())
	g.Set(10)
	f.Set(10)
	step := 0
	grow := func(hook func(growthPoint)) {
		hookGrowth(t, r, hook)
		step++
		NewCounter(r, fmt.Sprint("grow", step), "", Count) // a declaration to publish
		require.NoError(t, r.Flush())
		growthHook = nil
	}
	check := func(want int64, when string) {
		assert.EqualValues(t, want, g.Get(), "IntGauge %s", when)
		assert.EqualValues(t, want, f.Get(), "Gauge %s", when)
		assert.EqualValues(t, want, mustValue(t, r, "inflight", "").Int(), "IntGauge's file value %s", when)
		assert.EqualValues(t, want, mustValue(t, r, "level", "").Float(), "Gauge's file value %s", when)
	}
	grow(func(p growthPoint) {
		switch p {
		case afterSnapshot: // in the old file
			g.Inc()
			f.Add(1)
		case afterRemap: // in the new one
			g.Dec()
			f.Add(-1)
		}
	})
	check(10, "after an add in each file")
	done := make(chan struct{})
	grow(func(p growthPoint) {
		switch p {
		case afterSnapshot:
			g.Inc()
			f.Add(1)
		case afterRemap:
			go func() { g.Set(3); f.Set(3); close(done) }()
			select { // it lands now, or waits for the step's end
			case <-done:
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
	<-done
	check(3, "after a Set during the step")
}

// TestHandleMadeDuringGrowthHeld: a handle made during a publication
// (handleOf needs the registry's lock, which the publication lets go) has
// its Sets held as those made before, from the step's copy of the values
// to its end, whether made before that copy or after; else a Set into the
// new file would take the old file's adds as well.
func TestHandleMadeDuringGrowthHeld(t *testing.T) {
	needFileLayer(t)
	r := NewRegistry("late", &Options{Dir: filepath.Join(t.TempDir(), "mmv"), PublishDelay: time.Hour})
	defer r.Close()
	for _, name := range []string{"early", "later", "after"} {
		require.NoError(t, r.AddMetric(Metric{Name: name, Type: Int64, Semantics: SemInstant}))
	}
	require.NoError(t, r.Start())
	handle := func(name string) *Value {
		m, i, err := r.valueOf(name, "")
		require.NoError(t, err)
		return r.handleLocked(m, i)
	}
	r.mu.Lock()
	p := r.parts[0]
	p.hold.track() // as a publication does before it lets the lock go
	early := handle("early")
	p.hold.begin(p.handles(0)) // the copy of the values: of the snapshot's handles, here none
	later := handle("later")
	r.mu.Unlock()
	done := make(chan struct{})
	go func() {
		early.Set(5)
		later.Set(6)
		close(done)
	}()
	select {
	case <-done:
		t.Fatal("Sets on handles made during a growth step did not wait for its end")
	case <-time.After(20 * time.Millisecond):
	}
	p.hold.end()
	<-done
	assert.EqualValues(t, 5, early.Int())
	assert.EqualValues(t, 6, later.Int())
	early.Set(7) // not held any more
	assert.EqualValues(t, 7, early.Int())
	r.mu.Lock()
	after := handle("after") // with no publication in flight: not tracked
	r.mu.Unlock()
	assert.Empty(t, p.hold.late, "a handle made after the step is tracked")
	after.Set(8)
	assert.EqualValues(t, 8, after.Int())
}

// TestIntervalAcrossGrowth: an Elapsed value's interval opened in the old
// file and closed in the new one during a growth step stays closed. The
// close found the new file's copy of the value, made before the open,
// with no interval, and merge then added the open to it: PCP's reader
// counted an interval the program had closed as open for good, and not
// its time. Opening an interval stores into the record as a Set does, and
// waits for the step as a Set does; a close is then exact in either file.
func TestIntervalAcrossGrowth(t *testing.T) {
	needFileLayer(t)
	r := NewRegistry("interval", &Options{Dir: filepath.Join(t.TempDir(), "mmv"), PublishDelay: time.Hour})
	defer r.Close()
	require.NoError(t, r.AddMetric(Metric{Name: "busy", Type: Elapsed, Semantics: SemCounter, Units: Microsecond}))
	require.NoError(t, r.Start())
	v := mustValue(t, r, "busy", "")
	landed := make(chan struct{})
	close(landed)
	op := func(f func()) { // in order, from another goroutine: it may wait for the step
		before, done := landed, make(chan struct{})
		landed = done
		go func() {
			<-before
			f()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(20 * time.Millisecond):
		}
	}
	hookGrowth(t, r, func(p growthPoint) {
		switch p {
		case afterSnapshot:
			op(v.StartInterval)
		case afterRemap:
			op(func() {
				time.Sleep(time.Millisecond)
				v.EndInterval()
			})
		}
	})
	NewCounter(r, "grow", "", Count)
	require.NoError(t, r.Flush())
	growthHook = nil
	<-landed
	assert.Zero(t, atomic.LoadInt64(v.extra()), "the interval is closed")
	assert.Positive(t, v.Int(), "the interval's time is counted")
}

// TestTimerRunOfAnEarlierArming: the registry has one timer, armed again
// for each burst of declarations after Start. A run of it that fired for
// an arming since stopped or replaced (it waited for the lock meanwhile)
// publishes nothing before the arming in force is due, and the run that
// is due publishes.
func TestTimerRunOfAnEarlierArming(t *testing.T) {
	needFileLayer(t)
	r := NewRegistry("stalerun", &Options{Dir: filepath.Join(t.TempDir(), "mmv"), PublishDelay: time.Hour})
	defer r.Close()
	v := NewCounterVec(r, "c", "", Count, "k")
	v.With("a").Inc()
	require.NoError(t, r.Start())
	timer := r.timer
	for _, k := range []string{"b", "c"} { // two bursts, a Flush between
		v.With(k).Inc()
		r.mu.Lock()
		armed, due := r.timer.armed, r.timer.due
		r.mu.Unlock()
		require.True(t, armed, "a new value after Start arms the timer")
		assert.Same(t, timer, r.timer, "the same timer at every burst")

		r.publishDue() // an earlier arming's run
		r.mu.Lock()
		assert.True(t, r.timer.armed, "a run before the arming is due leaves it armed")
		dirty := r.parts[0].dirty
		now := time.Now()
		r.timer.due = now // as if an hour had passed
		r.mu.Unlock()
		assert.True(t, dirty, "a run before the arming is due publishes nothing")

		r.publishDue()
		r.mu.Lock()
		assert.False(t, r.parts[0].dirty, "the run that is due publishes")
		assert.True(t, !r.timer.armed || r.timer.due.After(now), "the run that is due disarms, or arms anew to carry what it bound")
		r.mu.Unlock()
		assert.True(t, due.After(time.Now().Add(50*time.Minute)), "due after PublishDelay")
	}
	assert.EqualValues(t, 1, vecValue(t, r, "c", "k=c").Int())
}

// TestPacesForgottenAtClose: registries started and closed at once
// in one directory, from many goroutines, leave no pace of it behind
// (paces), under the race detector too.
func TestPacesForgottenAtClose(t *testing.T) {
	needFileLayer(t)
	dir := filepath.Join(t.TempDir(), "mmv")
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 20 {
				r := NewRegistry(fmt.Sprintf("cycle%d_%d", g, i), &Options{Dir: dir})
				v := NewCounterVec(r, "requests", "", Count, "id")
				if err := r.Start(); err != nil {
					t.Error(err)
					return
				}
				for k := range 3 {
					v.With(strconv.Itoa(k)).Inc()
				}
				r.Close()
			}
		})
	}
	wg.Wait()
	d, err := openDir(dir)
	require.NoError(t, err)
	defer d.Close()
	id, _ := d.ID()
	paces.Lock()
	defer paces.Unlock()
	assert.NotContains(t, paces.of, paceKey{id: id})
}
