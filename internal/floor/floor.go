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

// New returns a heap-allocated Line: not inlined, so the Line it returns
// escapes and is never on a goroutine's stack.
//
//go:noinline
func New() *Line { return new(Line) }
