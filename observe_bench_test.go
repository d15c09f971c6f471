package mmv

import (
	"testing"

	"github.com/gopcp/mmv/internal/floor"
)

// Observe is two atomic operations (the bucket's add, the sum's
// compare-and-swap) and the bucket's index, which on one goroutine waits
// for the last observation's atomics: 2.6x a raw atomic add on a word in
// its own cache line on a processor where that add took 6 ns, 4-5x on
// one where it takes 2.4 ns (compare/README.md). Compare
// BenchmarkHistogramObserveDefault and BenchmarkHistogramObserve
// (log-linear) with BenchmarkAtomicAddOwnLine in one run:
//
//	go test -run '^$' -bench 'HistogramObserve(Default)?$|AtomicAddOwnLine' -count 5

// BenchmarkHistogramObserveDefault is Observe with the default buckets.
func BenchmarkHistogramObserveDefault(b *testing.B) {
	h := NewHistogram(newTestRegistry(b, "bench"), "h", "", Second, nil)
	xs := benchInputs()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		h.Observe(xs[i&1023])
		i++
	}
}

// BenchmarkAtomicAddOwnLine is the floor: an atomic add on a word alone in
// its cache line, the input loaded as Observe loads it.
func BenchmarkAtomicAddOwnLine(b *testing.B) {
	l := floor.New()
	xs := benchInputs()
	i := 0
	for b.Loop() {
		sinkF = xs[i&1023]
		l.N.Add(1)
		i++
	}
}
