package mmv

import (
	"iter"
	"slices"
)

// segShift and segLen size a segList's segments.
const (
	segShift = 10
	segLen   = 1 << segShift
)

// segList is a list grown one element at a time that never copies what it
// holds past its first segLen elements: those are a slice grown as
// appendGrown grows one, the next are in arrays of segLen each, allocated
// as the list reaches them. The lists that a first use of a label value
// appends to (an indom's instances, a part's and a metric's slots, a
// vector's entries) were slices: at 65,536 instances one append copied
// each whole into an array twice as large, and the allocation, its page
// faults and the garbage collector's assist for it made that first use
// wait 1-20 ms. A segment costs every segLen-th element the same small
// allocation.
//
// A copy of a segList is a snapshot of it: it shares the elements and
// keeps its own length, so it sees those below that length as long as
// the list only grows (truncate and writes through at go below it).
// share makes one that stays what the list was while it changes: until
// unshare, the list copies an array before it writes below the
// snapshot's length in it (set, and every write of the list's own).
type segList[E any] struct {
	head []E   // elements 0..segLen-1
	tail [][]E // then segLen each: every one segLen long, the last filled up to n
	n    int   // the length
	// cow is the state of share's snapshot, nil until the list is first
	// shared: few lists ever are (of a metric's two, only the handles'),
	// and inline it was 32 of the 280 bytes of each of a metric's lists.
	cow *segShare
}

// segShare is the state of a segList's snapshot: shared is the length
// of the snapshot share made, 0 once unshared; owned says, per array
// (the head first), whether the list copied it since, in first up to
// 8 arrays: a first share allocates once, as when owned was inline.
type segShare struct {
	shared int
	owned  []bool
	first  [8]bool
}

// segListOf returns the list of the elements of s, sharing them (its last
// segment may be shorter than segLen, until push copies it into a full
// one).
func segListOf[E any](s []E) segList[E] {
	l := segList[E]{head: s[:min(len(s), segLen):min(len(s), segLen)], n: len(s)}
	if len(s) > segLen {
		l.tail = make([][]E, 0, (len(s)-1)>>segShift)
		for i := segLen; i < len(s); i += segLen {
			l.tail = append(l.tail, s[i:min(i+segLen, len(s)):min(i+segLen, len(s))])
		}
	}
	return l
}

// len returns the number of elements.
func (l *segList[E]) len() int { return l.n }

// at returns a pointer to element i, which panics unless 0 <= i < len.
func (l *segList[E]) at(i int) *E {
	if i < segLen {
		return &l.head[i]
	}
	if i >= l.n {
		panic("mmv: segList index out of range")
	}
	return &l.tail[i>>segShift-1][i&(segLen-1)]
}

// share returns a snapshot of the list that stays what the list is now,
// to read without the lock while the list changes with it held, until
// unshare: in O(arrays), where a copy of 100,000 slots and handles held
// a publication's lock 0.15-0.43 ms, and 1.5-4.5 ms when the collector
// was marking (the handles' write barriers).
func (l *segList[E]) share() segList[E] {
	if l.cow == nil {
		l.cow = new(segShare)
		l.cow.owned = l.cow.first[:0]
	}
	l.cow.shared = l.n
	l.cow.owned = growBy(l.cow.owned[:0], 1+len(l.tail))
	return segList[E]{head: l.head[:len(l.head):len(l.head)], tail: slices.Clone(l.tail), n: l.n}
}

// unshare ends share's snapshot: its reader is done.
func (l *segList[E]) unshare() {
	if l.cow != nil {
		l.cow.shared = 0
	}
}

// set returns a pointer to element i to write it, which panics unless
// 0 <= i < len.
func (l *segList[E]) set(i int) *E {
	l.write(i, i+1)
	return l.at(i)
}

// write copies the arrays holding elements from up to end that a
// snapshot shares (share), before the list writes them.
func (l *segList[E]) write(from, end int) {
	if l.cow == nil {
		return
	}
	for i := from; i < min(end, l.cow.shared); i = (i | (segLen - 1)) + 1 {
		k := i >> segShift // the head is array 0, tail[k-1] array k
		if l.cow.owned[k] {
			continue
		}
		l.cow.owned[k] = true
		if k == 0 {
			l.head = append(make([]E, 0, cap(l.head)), l.head...)
		} else {
			l.tail[k-1] = append(make([]E, 0, segLen), l.tail[k-1]...)
		}
	}
}

// push appends x.
func (l *segList[E]) push(x E) {
	i := l.n
	l.write(i, i+1)
	l.n++
	if i < segLen {
		l.head = appendGrown(l.head, x)
		return
	}
	l.segment(i)[i&(segLen-1)] = x
}

// segment returns the tail array that element i, past the head, is in,
// allocating it when i is the first element past the last one, and
// copying segListOf's last, short, into a whole one.
func (l *segList[E]) segment(i int) []E {
	k := i>>segShift - 1
	switch {
	case k == len(l.tail):
		l.tail = append(l.tail, make([]E, segLen))
	case len(l.tail[k]) < segLen:
		l.tail[k] = append(make([]E, 0, segLen), l.tail[k]...)[:segLen]
	}
	return l.tail[k]
}

// extend appends n zero elements, for the caller to write in runs
// (span): a run of new instances' slots (part.newInstanceSlots), which
// push one at a time cost a histogram's first use after Start a fifth of
// its time. (An iterator over the runs was not inlined where it was
// ranged over, and its state was allocated: 77 allocations a histogram's
// first use where 7 were.)
func (l *segList[E]) extend(n int) {
	from, end := l.n, l.n+n
	l.write(from, end)
	if from < segLen {
		l.head = growBy(l.head, min(end, segLen)-from)
	}
	for i := max(from, segLen); i < end; i = (i | (segLen - 1)) + 1 {
		l.segment(i)
	}
	l.n = end
}

// span returns elements i up to end, or to the end of the array i is in
// when that comes first, to read or write in place; i < end <= len.
func (l *segList[E]) span(i, end int) []E {
	if i < segLen {
		return l.head[i:min(end, segLen)]
	}
	off := i & (segLen - 1)
	return l.tail[i>>segShift-1][off:min(segLen, off+end-i)]
}

// truncate drops the elements from n on, clearing them, 0 <= n <= len.
func (l *segList[E]) truncate(n int) {
	l.write(n, l.n)
	for s, i := range l.segments() {
		if i+len(s) > n {
			clear(s[max(n-i, 0):])
		}
	}
	keep := max(n-1, segLen-1) >> segShift // tail arrays holding elements below n
	clear(l.tail[keep:])
	l.tail = l.tail[:keep]
	l.head = l.head[:min(n, len(l.head))]
	l.n = n
}

// segments yields the elements in runs, each with the index of its
// first; the caller may write the elements, not append to the runs. The
// arrays a segQueue let go (nil) have none.
func (l *segList[E]) segments() iter.Seq2[[]E, int] {
	return func(yield func([]E, int) bool) {
		if len(l.head) > 0 && !yield(l.head, 0) {
			return
		}
		for k, a := range l.tail {
			i := (k + 1) << segShift
			if a != nil && !yield(a[:min(segLen, l.n-i)], i) {
				return
			}
		}
	}
}

// all yields the elements with their indexes, in order.
func (l *segList[E]) all() iter.Seq2[int, E] {
	return func(yield func(int, E) bool) {
		for s, i := range l.segments() {
			for j, x := range s {
				if !yield(i+j, x) {
					return
				}
			}
		}
	}
}

// appendTo appends the elements to dst and returns it.
func (l *segList[E]) appendTo(dst []E) []E {
	dst = slices.Grow(dst, l.n)
	for s := range l.segments() {
		dst = append(dst, s...)
	}
	return dst
}

// appendGrown appends x to s, growing s to twice its length, and at least
// 8, when full: append grows a short slice one size at a time and a long
// one by a quarter, so a list grown one element at a time would be
// allocated many times over.
func appendGrown[E any](s []E, x E) []E {
	if len(s) == cap(s) {
		s = slices.Grow(s, max(len(s), 8))
	}
	return append(s, x)
}

// growBy returns s longer by n zero elements, grown as appendGrown grows
// it: a run's removed flags, appended at once (indom.addFresh).
func growBy[E any](s []E, n int) []E {
	if len(s)+n > cap(s) {
		s = slices.Grow(s, max(len(s), n, 8))
	}
	s = s[:len(s)+n]
	clear(s[len(s)-n:])
	return s
}

// segQueue is a segList taken from its front too: a vector's values
// waiting for storage, appended by first uses and bound from the front, a
// chunk at a time, by publications. As a slice it grew by copying into an
// array twice as large, in a first use: 1 MB at 100,000 values waiting,
// and the collector's assist for it.
type segQueue[E any] struct {
	l    segList[E]
	from int // elements taken from the front, cleared, their arrays let go
}

// len returns the number of elements.
func (q *segQueue[E]) len() int { return q.l.n - q.from }

// at returns a pointer to element i, 0 <= i < len.
func (q *segQueue[E]) at(i int) *E { return q.l.at(q.from + i) }

// push appends x.
func (q *segQueue[E]) push(x E) { q.l.push(x) }

// all yields the elements, in order.
func (q *segQueue[E]) all() iter.Seq[E] {
	return func(yield func(E) bool) {
		for run := range q.runs() {
			for _, x := range run {
				if !yield(x) {
					return
				}
			}
		}
	}
}

// runs yields the elements in runs, in order.
func (q *segQueue[E]) runs() iter.Seq[[]E] {
	return func(yield func([]E) bool) {
		for s, i := range q.l.segments() {
			if !yield(s[max(q.from-i, 0):]) {
				return
			}
		}
	}
}

// drop takes the first n elements away, 0 <= n <= len.
func (q *segQueue[E]) drop(n int) {
	if n == q.len() {
		*q = segQueue[E]{}
		return
	}
	for s, i := range q.l.segments() {
		if i >= q.from+n {
			break
		}
		clear(s[max(q.from-i, 0):min(q.from+n-i, len(s))])
	}
	q.from += n
	if q.from >= segLen {
		q.l.head = nil
	}
	clear(q.l.tail[:max(q.from>>segShift-1, 0)]) // the arrays wholly taken
}

// retain keeps, in order, the elements keep reports to keep, from the
// front up to the one where it reports stop: that one and those after it
// stay, and are not moved when none before them was kept, so that binding
// a chunk at the front does not copy the rest.
func (q *segQueue[E]) retain(keep func(E) (keep, stop bool)) {
	n := q.len()
	kept, rest := 0, n
	for i := range n {
		x := *q.at(i)
		k, stop := keep(x)
		if stop {
			rest = i
			break
		}
		if k {
			*q.at(kept) = x
			kept++
		}
	}
	if kept == 0 {
		q.drop(rest)
		return
	}
	for i := rest; i < n; i++ {
		*q.at(kept + i - rest) = *q.at(i)
	}
	q.truncate(kept + n - rest)
}

// truncate drops the elements from n on, 0 <= n <= len.
func (q *segQueue[E]) truncate(n int) {
	if n == 0 {
		*q = segQueue[E]{}
		return
	}
	q.l.truncate(q.from + n)
}
