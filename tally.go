package mmv

import (
	"math"
	"math/bits"
	"sync/atomic"
	"unsafe"
)

// tally is what a histogram counts, lock-free, for its window to read, in
// stripes of memory, each on cache lines of its own: every goroutine adds
// to the first stripe until two collide in it, then Observe adds to the
// stripe its goroutine picks (stripe), so that goroutines observing at
// once on different cores each write their own lines, and the readers add
// the stripes up. A stripe holds the sum, min and max (float64 bits), a
// word for the sums of the steps ended (the first stripe's alone), then
// the count of each bucket; counts are cumulative, sum, min and max of
// the window's current step (of everything for a window since the start,
// which ends no step). The window ends a step by moving the stripes' sums
// into the first's carried word (step): a window's sum is its steps'
// own, which an outlier long gone (1e17, absorbing every 1 added to it;
// an infinity, absorbing everything) no longer spoils, as it did the
// cumulative sum less the window's base's.
//
// The stripes after the first (rest) are made with a histogram alone, and
// taken from spares by a vector's histogram at its first collision: most
// of a vector's histograms are observed from one goroutine at a time, and
// never need them.
//
// A tally's fields are as small as they go (a pointer to the first
// stripe, not a slice; 32-bit stride and shift): a vector's histogram is
// one allocation with its entry, window and histOut (histEntry), of the
// 320-byte size class, where a slice and words made it 352.
type tally struct {
	first  *atomic.Uint64                // the first stripe's first word: stride bytes from a 64-byte boundary
	rest   atomic.Pointer[atomic.Uint64] // the others' first word, nil until made or taken
	spares *spareStripes                 // where rest is taken from; nil when made with first
	stride uint32                        // bytes
	shift  uint32                        // 64 - log2(stripes)
	// mult is 0 until goroutines collide in the first stripe, then odd,
	// and changed at each collision, so that they pick again.
	mult atomic.Uint64
}

// The words of a stripe.
const (
	tallySum, tallyMin, tallyMax, tallyCarried, tallyCounts = 0, 1, 2, 3, 4
)

// posInf and negInf are the bits of +Inf and -Inf, the min and max of no
// observation.
var posInf, negInf = math.Float64bits(math.Inf(1)), math.Float64bits(math.Inf(-1))

// maxStripes bounds a histogram's stripes: beyond, goroutines share them.
const maxStripes = 8

// stripesFor is the number of stripes of a histogram when procs
// goroutines can run at once: twice as many, at most maxStripes, for
// goroutines pick a stripe by chance, and with as many free as taken a
// collision is soon undone (see collided); one when only one goroutine
// runs at a time.
func stripesFor(procs int) int {
	stripes := 1
	for procs > 1 && stripes < min(2*procs, maxStripes) {
		stripes *= 2
	}
	return stripes
}

// strideOf is the words of a stripe of n buckets: whole cache lines.
func strideOf(n int) int { return (tallyCounts + n + 7) &^ 7 }

// emptyStripes returns n words from a 64-byte boundary, stripes of stride
// words each holding no observation: zero but the min and max, +Inf and
// -Inf, stored plainly, for no other goroutine has the words yet (atomic
// stores, 8 for a histogram's 4 stripes, were a twentieth of a vector's
// new label value). They compare as they are in Observe, which a biased
// encoding that left the words zero made 3% slower.
//
// Go's allocator puts an object of whole cache lines, as n words are, on
// a 64-byte boundary (its size classes of whole lines start at multiples
// of their size in page-aligned spans); it does not promise to, so seven
// words more are allocated, and skipped up to a boundary, when it did not.
// Allocating those every time made a vector's new label value 64 bytes
// larger, of 1,400.
func emptyStripes(n, stride int) []atomic.Uint64 {
	words := make([]atomic.Uint64, n)
	if uintptr(unsafe.Pointer(&words[0]))%64 != 0 {
		words = make([]atomic.Uint64, n+7)
		skip := int(-uintptr(unsafe.Pointer(&words[0])) / 8 & 7)
		words = words[skip : skip+n]
	}
	for k := 0; k < n; k += stride {
		*(*uint64)(unsafe.Pointer(&words[k+tallyMin])) = posInf
		*(*uint64)(unsafe.Pointer(&words[k+tallyMax])) = negInf
	}
	return words
}

// init makes t the tally of n buckets in the given number of stripes, a
// power of two (see stripesFor), all of them at once.
func (t *tally) init(n, stripes int) {
	stride := strideOf(n)
	t.shape(stride, stripes)
	words := emptyStripes(stripes*stride, stride)
	t.first = &words[0]
	if stripes > 1 {
		t.rest.Store(&words[stride])
	}
}

// initFrom makes t a tally of the histograms spares serves: its first
// stripe now, the others taken from spares at its first collision.
func (t *tally) initFrom(spares *spareStripes) {
	t.shape(spares.stride, spares.stripes)
	t.first, t.spares = &emptyStripes(spares.stride, spares.stride)[0], spares
}

// shape sets the size of t's stripes, in words, and how many it has.
func (t *tally) shape(stride, stripes int) {
	t.stride, t.shift = uint32(stride)*8, uint32(64-bits.Len(uint(stripes-1)))
}

// stripe returns the first word of the stripe of the calling goroutine:
// the first stripe until goroutines collide in it, then one picked by the
// address of its stack, in units of the smallest stack (2 KiB), which no
// other goroutine's stack shares, times mult, whose high bits, over the
// stripes, spread neighbouring stacks apart (Fibonacci hashing). Until t
// has the others, every pick is the first.
func (t *tally) stripe() unsafe.Pointer {
	first := unsafe.Pointer(t.first)
	m := t.mult.Load()
	if m == 0 { // one goroutine at a time so far: no pick
		return first
	}
	var anchor byte
	k := uintptr(uint64(uintptr(unsafe.Pointer(&anchor))>>11) * m >> t.shift)
	rest := t.rest.Load()
	if k == 0 || rest == nil {
		return first
	}
	return unsafe.Add(unsafe.Pointer(rest), (k-1)*uintptr(t.stride))
}

// collided changes the multiplier after a goroutine found its stripe's
// sum changed by another between its load and its compare-and-swap: every
// goroutine picks its stripe again, until none share one; the first
// collision starts the picking, and takes the stripes after the first
// from spares while t has none. A new multiplier, not a key changed alike
// for all (added or xored), for two keys a distance apart would keep that
// distance, and mostly their stripes.
func (t *tally) collided() {
	if t.spares != nil && t.rest.Load() == nil {
		if p := t.spares.take(); p != nil {
			t.rest.CompareAndSwap(nil, p) // lost to another goroutine's: p is not used
		}
	}
	m := t.mult.Load()
	next := m*0xbf58476d1ce4e5b9 | 1
	if m == 0 {
		next = 0x9e3779b97f4a7c15
	}
	t.mult.CompareAndSwap(m, next)
}

// stripes calls f with the words of each stripe.
func (t *tally) stripes(f func(w []atomic.Uint64)) {
	n := int(t.stride / 8)
	f(unsafe.Slice(t.first, n))
	rest := t.rest.Load()
	if rest == nil {
		return
	}
	words := unsafe.Slice(rest, (1<<(64-t.shift)-1)*n)
	for k := 0; k < len(words); k += n {
		f(words[k : k+n])
	}
}

// count returns the count of bucket i, over the stripes.
func (t *tally) count(i int) uint64 {
	var c uint64
	t.stripes(func(w []atomic.Uint64) { c += w[tallyCounts+i].Load() })
	return c
}

// sum returns the sum of the observations: of the steps ended, and of
// the current one over the stripes. With the window's lock held, under
// which step moves the one into the other.
func (t *tally) sum() float64 {
	sum := math.Float64frombits(t.carried().Load())
	t.stripes(func(w []atomic.Uint64) { sum += math.Float64frombits(w[tallySum].Load()) })
	return sum
}

// carried is the word of the sums of the steps ended.
func (t *tally) carried() *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Add(unsafe.Pointer(t.first), tallyCarried*8))
}

// step returns the current step's min, max and sum, over the stripes;
// with reset it starts a new step, the sum carried into the sums of the
// steps ended. With the window's lock held.
//
// Observe stores an observation's count, then its sum, min and max, and
// step reads a stripe's max, min and sum in the reverse order, its caller
// the counts after (counts): so what a read's max shows its min shows,
// its min its sum, and its sum its counts. A step's end takes them before
// it reads the counts it marks, so that an observation is counted in the
// step its sum, min and max are in, or in the one before, never in a
// later one: every window holds the steps from its base to the current
// one, and so the sum, min and max of what it counts. The counts read
// first, an Observe between the read and the reset was counted in the
// next step and held in this one, and the window based on this step
// counted it and held nothing of it: a min of +Inf
// (TestObservationAtStepEndWholeInWindow). An Observe whose
// compare-and-swap a reset fails tries again, and takes it for no
// collision (the sum it finds is 0).
func (t *tally) step(reset bool) (lo, hi, sum float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	t.stripes(func(w []atomic.Uint64) {
		var mx, mn, sm uint64 // in this order
		if reset {
			mx = w[tallyMax].Swap(negInf)
			mn = w[tallyMin].Swap(posInf)
			sm = w[tallySum].Swap(0)
		} else {
			mx = w[tallyMax].Load()
			mn = w[tallyMin].Load()
			sm = w[tallySum].Load()
		}
		lo, hi = math.Min(lo, math.Float64frombits(mn)), math.Max(hi, math.Float64frombits(mx))
		sum += math.Float64frombits(sm)
	})
	if reset {
		c := t.carried()
		c.Store(math.Float64bits(math.Float64frombits(c.Load()) + sum))
	}
	return lo, hi, sum
}

// counts sets counts to the count of each bucket, over the stripes, and
// returns their total: read after step (see there).
func (t *tally) counts(counts []uint64) (total uint64) {
	clear(counts)
	t.stripes(func(w []atomic.Uint64) {
		for i := range counts {
			counts[i] += w[tallyCounts+i].Load()
		}
	})
	for _, c := range counts {
		total += c
	}
	return total
}

// spareStripes are the stripes after the first of a vector's histograms,
// made ahead, off the hot path (refill, with the group's lock held), and
// taken at a histogram's first collision with an atomic add (take): a
// collision neither allocates nor locks. Made with each histogram, they
// were two fifths of the time and memory of a vector's new label value.
type spareStripes struct {
	stripes int // a histogram's, the first included
	stride  int // words of a stripe
	batch   atomic.Pointer[stripeBatch]
}

// setWords is the words of one histogram's spares: stripes-1 of a stride.
func (s *spareStripes) setWords() int { return (s.stripes - 1) * s.stride }

// stripeBatch is spares made at once, taken in order.
type stripeBatch struct {
	words []atomic.Uint64 // len(words)/spareStripes.setWords() sets
	next  atomic.Int64    // the next set to take; past the last, none left
}

// Spares made at once: the first batch's, and at most, for a batch
// taken up before the next refill is followed by one twice as large.
const (
	firstSpareBatch = 4
	maxSpareBatch   = 64
)

// newSpareStripes returns the spares of the histograms of n buckets in
// the given number of stripes; nil when they have one.
func newSpareStripes(n, stripes int) *spareStripes {
	if stripes < 2 {
		return nil
	}
	s := &spareStripes{stripes: stripes, stride: strideOf(n)}
	s.refill()
	return s
}

// take returns the first word of a set of spares, nil when none is left
// until the next refill.
func (s *spareStripes) take() *atomic.Uint64 {
	b, n := s.batch.Load(), s.setWords()
	i := b.next.Add(1) - 1
	if i >= int64(len(b.words)/n) {
		return nil
	}
	return &b.words[int(i)*n]
}

// refill makes a new batch once the last is taken up, twice as large.
// Called with the group's lock held (histGroup.mu), off the hot path; nil
// makes none.
func (s *spareStripes) refill() {
	if s == nil {
		return
	}
	sets := firstSpareBatch
	if b := s.batch.Load(); b != nil {
		have := int64(len(b.words) / s.setWords())
		if b.next.Load() < have {
			return
		}
		sets = min(2*int(have), maxSpareBatch)
	}
	s.batch.Store(&stripeBatch{words: emptyStripes(sets*s.setWords(), s.stride)})
}
