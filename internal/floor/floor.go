// Package floor is the floor the benchmarks of mmv and of compare/
// measure every update against: an atomic on a word alone in its cache
// line, on the heap, as a value in the mapped file is.
package floor

import "sync/atomic"

// Line is a word alone in its cache line, padded by two lines either side
// so that neither a neighbour nor the adjacent-line prefetcher shares it.
type Line struct {
	_ [128]byte
	N atomic.Uint64
	_ [120]byte
}

var sink *Line

// New returns a heap-allocated Line (the sink makes it escape, so it is
// never on a goroutine's stack).
func New() *Line {
	l := new(Line)
	sink = l
	return l
}
