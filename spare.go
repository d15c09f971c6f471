package mmv

import "sync/atomic"

// spareMin is the length from which a doubling table's next array is made
// by a spare: a shorter one costs its maker less than a goroutine.
const spareMin = 4096

// spare is the next array of a hash table that doubles when full (a
// vector's table, the name and id indexes), made ahead of its need by a
// goroutine of its own: the table asks for it on its way to full, a
// sixteenth of its slots before (nearGrowth, ask), and takes it when full (take).
// The table's old entries already move into the new array a few at every
// insert; what was left on the insert that filled it was the array's
// allocation, zeroed memory of up to 8 MB at 65,536 values, its page
// faults and the garbage collector's assist for it: 0.3-10 ms of one
// first use. An array asked for and not taken stays with its table: asked
// for a quarter of the index's slots before its growth, and an eighth of
// a vector's table's, one was kept for good by more than half of the
// indexes' sizes (an index of 10,000 ids, 256 kB) and by two fifths of
// the tables' (a vector of 12,289 to 16,383 values, 1 MB).
//
// Its owner calls ask and take with its lock held. The goroutine writes
// only to the request it was started for, never to the owner's memory,
// which may be replaced meanwhile (an indom's indexes are when it forgets
// its removed instances); an array made too late is dropped with its
// request.
type spare[E any] struct {
	asked *spareArray[E] // nil once taken
}

// spareArray is an array of n elements asked for, made is set once made.
type spareArray[E any] struct {
	n    int
	made atomic.Pointer[[]E]
}

// nearGrowth reports whether a table of slots slots holding used
// entries, which grows once its room (tableRoom) is filled, asks for its
// next array: a sixteenth of its slots before, so that one is seldom made
// for a growth that never comes, and from spareMin slots the goroutine
// has hundreds of inserts' time to make it.
func nearGrowth(used, slots int) bool { return 16*(tableRoom(slots)-used) <= slots }

// tableRoom is how many of a doubling table's slots may be filled: three
// quarters, none of a vector's first table of one slot, so that a probe
// always ends at a free slot. A vector's table filled to half of them
// made a vector of 10,000 values a table of 32,768 slots, 512 kB, where
// 16,384 hold them, and the tables it grew through a quarter of its
// memory (BenchmarkDeclare); a lookup probes slots of 16 bytes, four to a
// cache line, from its hash's, and compares an entry's values only when
// the slot's hash is its own.
func tableRoom(size int) int { return 3 * size / 4 }

// ask starts making an array of n elements, unless it is asked for
// already or n is short (spareMin).
func (s *spare[E]) ask(n int) {
	if n < spareMin || s.asked != nil && s.asked.n == n {
		return
	}
	a := &spareArray[E]{n: n}
	s.asked = a
	sparesAsked.Add(1)
	go func() {
		b := make([]E, n)
		a.made.Store(&b)
		sparesAsked.Add(-1)
	}()
}

// sparesAsked counts the goroutines ask started that have not made
// their array yet. A new goroutine waits in the run queue of the
// processor that started it, behind the first uses running there, until
// the Go scheduler preempts them, 10 ms; a sixteenth of a table's slots
// is 8,192 first uses at 131,072, which took 8-12 ms on two cores, and
// the first use that filled the table then made the array itself, with
// the lock held, in 19 growths over 6 registries of 100,000 values: 1-14
// ms. So the registry's door yields once it lets the lock go while one
// has not made its array (door.leave): counted until it ran only, one
// whose allocation started a collection and waited for it let the first
// uses run on to the growth (TestVecTableMadeAhead, 5 times in 100 with
// GOGC=5).
var sparesAsked atomic.Int32

// take returns an empty array of n elements: the one asked for if it is
// made and that long, else a new one.
func (s *spare[E]) take(n int) []E {
	a := s.asked
	s.asked = nil
	if a != nil && a.n == n {
		if b := a.made.Load(); b != nil {
			return *b
		}
	}
	return make([]E, n)
}
