package mmv

import (
	"slices"
	"sync/atomic"
)

// recentTable holds a vector's entries added since its fast map was last
// rebuilt, for lock-free readers: a hash table of fixed size whose
// buckets are atomic pointers to chains of entries. An entry is added by
// setting its next to its bucket's head and storing it as the new head,
// so a reader sees a chain whole, with or without it; nothing else of a
// chain ever changes but the entries' dead flags. Adding one costs O(1),
// where a copy of an immutable map with the entry added cost O(√n), and
// the rebuilds of fast that kept that copy small O(√n) more: 100,000 new
// values on one vector spent two thirds of their time there.
type recentTable[T any] struct {
	buckets []atomic.Pointer[vecEntry[T]]
	n       int // entries, under the registry's lock
}

// newRecentTable returns an empty table that takes n entries, one per
// bucket on average, before the vector rebuilds (insertLocked).
func newRecentTable[T any](n int) *recentTable[T] {
	size := 8
	for size < n {
		size *= 2
	}
	return &recentTable[T]{buckets: make([]atomic.Pointer[vecEntry[T]], size)}
}

// full reports whether the table holds as many entries as buckets.
func (t *recentTable[T]) full() bool { return t.n >= len(t.buckets) }

func (t *recentTable[T]) bucket(h uint64) *atomic.Pointer[vecEntry[T]] {
	return &t.buckets[h&uint64(len(t.buckets)-1)]
}

// find returns the instrument of values, of hash h, nil when t has none.
func (t *recentTable[T]) find(h uint64, values []string) *T {
	for e := t.bucket(h).Load(); e != nil; e = e.next {
		if e.h == h && !e.dead.Load() && slices.Equal(e.values, values) {
			return e.t
		}
	}
	return nil
}

// add makes e, of hash h (e.h), found; the caller holds the registry's
// lock.
func (t *recentTable[T]) add(h uint64, e *vecEntry[T]) {
	b := t.bucket(h)
	e.next = b.Load()
	b.Store(e)
	t.n++
}

// bury marks the entries of values, of hash h, dead.
func (t *recentTable[T]) bury(h uint64, values []string) {
	for e := t.bucket(h).Load(); e != nil; e = e.next {
		if e.h == h && slices.Equal(e.values, values) {
			e.dead.Store(true)
		}
	}
}
