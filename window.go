package mmv

import (
	"fmt"
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// DefaultWindow is the span a histogram's quantiles, min, max and mean
// cover unless HistogramOptions.Window says otherwise.
const DefaultWindow = time.Minute

// SinceStart, as HistogramOptions.Window, makes the quantiles, min, max
// and mean cover every observation since the histogram was made.
const SinceStart time.Duration = -1

// windowSteps is how many steps a window slides by: the window covers
// between 5/6 of its span (less one Interval) and its span.
const windowSteps = 6

// tally is what a histogram counts, lock-free, for its window to read, in
// stripes of memory, each on cache lines of its own: every goroutine adds
// to the first stripe until two collide in it, then Observe adds to the
// stripe its goroutine picks (stripe), so that goroutines observing at
// once on different cores each write their own lines, and the readers add
// the stripes up. A stripe holds the sum, min and max (float64 bits), then
// the count of each bucket; counts and sum are cumulative, min and max of
// the window's current step.
type tally struct {
	words  []atomic.Uint64 // stripes of stride words each, from a 64-byte boundary
	stride uintptr         // bytes
	shift  uint            // 64 - log2(stripes)
	// mult is 0 until goroutines collide in the first stripe, then odd,
	// and changed at each collision, so that they pick again.
	mult atomic.Uint64
}

// The words of a stripe.
const (
	tallySum, tallyMin, tallyMax, tallyCounts = 0, 1, 2, 3
)

// minBias and maxBias are xored into the bits of a stripe's min and max,
// so that the zero word is +Inf and -Inf, the min and max of nothing: a
// new histogram's stripes, as allocated, need no store (the 8 stores of
// 4 stripes were a twentieth of a vector's new label value), and a new
// step resets them to 0.
const (
	minBias = 0x7FF0000000000000 // math.Inf(1)'s bits
	maxBias = 0xFFF0000000000000 // math.Inf(-1)'s
)

// maxStripes bounds a histogram's stripes: beyond, goroutines share them.
const maxStripes = 8

// init makes t the tally of n buckets in the given number of stripes, a
// power of two (see stripesFor).
func (t *tally) init(n, stripes int) {
	stride := (tallyCounts + n + 7) &^ 7 // whole cache lines of 8 words
	words := make([]atomic.Uint64, stripes*stride+7)
	skip := int(-uintptr(unsafe.Pointer(&words[0])) / 8 & 7) // to the first 64-byte boundary
	t.words, t.stride, t.shift = words[skip:skip+stripes*stride], uintptr(stride)*8, uint(64-bits.Len(uint(stripes-1)))
}

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

// stripe returns the first word of the stripe of the calling goroutine:
// the first stripe until goroutines collide in it, then one picked by the
// address of its stack, in units of the smallest stack (2 KiB), which no
// other goroutine's stack shares, times mult, whose high bits, over the
// stripes, spread neighbouring stacks apart (Fibonacci hashing).
func (t *tally) stripe() unsafe.Pointer {
	first := unsafe.Pointer(unsafe.SliceData(t.words))
	m := t.mult.Load()
	if m == 0 { // one goroutine at a time so far: no pick
		return first
	}
	var anchor byte
	k := uint64(uintptr(unsafe.Pointer(&anchor))>>11) * m >> t.shift
	return unsafe.Add(first, uintptr(k)*t.stride)
}

// collided changes the multiplier after a goroutine found its stripe's
// sum changed by another between its load and its compare-and-swap: every
// goroutine picks its stripe again, until none share one; the first
// collision starts the picking. A new multiplier, not a key changed alike
// for all (added or xored), for two keys a distance apart would keep that
// distance, and mostly their stripes.
func (t *tally) collided() {
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
	for k := 0; k < len(t.words); k += n {
		f(t.words[k : k+n])
	}
}

// count returns the count of bucket i, over the stripes.
func (t *tally) count(i int) uint64 {
	var c uint64
	t.stripes(func(w []atomic.Uint64) { c += w[tallyCounts+i].Load() })
	return c
}

// sum returns the sum of the observations, over the stripes.
func (t *tally) sum() float64 {
	var sum float64
	t.stripes(func(w []atomic.Uint64) { sum += math.Float64frombits(w[tallySum].Load()) })
	return sum
}

// minMax returns the min and max of the current step, over the stripes;
// with reset, it starts a new step.
func (t *tally) minMax(reset bool) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	t.stripes(func(w []atomic.Uint64) {
		a, b := w[tallyMin].Load(), w[tallyMax].Load()
		if reset {
			a, b = w[tallyMin].Swap(0), w[tallyMax].Swap(0)
		}
		lo, hi = math.Min(lo, math.Float64frombits(a^minBias)), math.Max(hi, math.Float64frombits(b^maxBias))
	})
	return lo, hi
}

// window gives a histogram's statistics over its last span without a cost
// to Observe: it marks, every step, the cumulative counts and sum, and
// takes the min and max of the step that ended (the histogram's min and
// max cover the current step only). The window is what changed since the
// oldest mark no older than the span. Everything is under mu, off the hot
// path.
type window struct {
	mu         sync.Mutex
	span, step time.Duration // span 0: since the start, one mark
	marks      []mark        // oldest first, markCap at most
	first      [1]mark       // marks' array until the first state makes theirs (makeCounts)
	live, diff []uint64      // scratch: the counts now, and in the window
	n          int           // buckets
}

// mark is a histogram's state at a step's end.
type mark struct {
	at       time.Time
	counts   []uint64 // cumulative; nil for zeros (the first mark's, until reused)
	total    uint64
	sum      float64
	min, max float64 // of the step that ended at at
}

// windowState is a histogram's state as it is published: cumulative
// counts, count and sum; the rest over the window.
type windowState struct {
	counts   []uint64 // cumulative, per bucket
	total    uint64
	sum      float64
	in       []uint64 // per bucket, in the window
	n        uint64
	inSum    float64
	min, max float64 // in the window; ±Inf when n is 0
}

// newWindow returns the window of a histogram of n buckets, refreshed
// every interval, starting empty at now.
func newWindow(span, interval time.Duration, n int, now time.Time) (*window, error) {
	switch {
	case span == 0:
		span = DefaultWindow
	case span == SinceStart:
		span = 0
	case span < 2*interval:
		return nil, fmt.Errorf("histogram window %v: need SinceStart or at least twice the interval (%v)", span, interval)
	}
	w := &window{span: span, step: max(span/windowSteps, interval), n: n}
	w.marks = w.first[:]
	w.marks[0].at, w.marks[0].min, w.marks[0].max = now, math.Inf(1), math.Inf(-1)
	return w, nil
}

// markCap is how many marks w keeps: the start's alone, or the ends of the
// steps of a span and two more.
func (w *window) markCap() int {
	if w.span > 0 {
		return windowSteps + 2
	}
	return 1
}

// makeCounts makes the scratch, the marks and the counts of those after
// the first, at the first state: a histogram vector's first use of a
// label value made them, 2 KiB with the default buckets, for a refresh
// an interval later to use.
func (w *window) makeCounts() {
	n, marks := w.n, w.markCap()
	counts := make([]uint64, (marks+1)*n)
	part := func(i int) []uint64 { return counts[i*n : (i+1)*n : (i+1)*n] }
	w.live, w.diff = part(0), part(1)
	w.marks = append(make([]mark, 0, marks), w.marks...)
	for i := 1; i < marks; i++ {
		w.marks[:marks][i].counts = part(i + 1)
	}
}

// state reads the tally h at now, with w.mu held: marks a step's end
// first when one has passed. The slices are w's scratch, valid until w.mu
// is released.
func (w *window) state(h *tally, now time.Time) windowState {
	if w.live == nil {
		w.makeCounts()
	}
	s := windowState{counts: w.live, in: w.diff}
	clear(s.counts)
	h.stripes(func(st []atomic.Uint64) {
		for i := range s.counts {
			s.counts[i] += st[tallyCounts+i].Load()
		}
	})
	for _, c := range s.counts {
		s.total += c
	}
	s.sum = h.sum()
	last := &w.marks[len(w.marks)-1]
	if w.span > 0 && now.Sub(last.at) >= w.step {
		if len(w.marks) == cap(w.marks) { // drop the oldest, reusing its counts
			old := w.marks[0]
			copy(w.marks, w.marks[1:])
			w.marks[len(w.marks)-1] = old
		} else {
			w.marks = w.marks[:len(w.marks)+1]
		}
		m := &w.marks[len(w.marks)-1]
		if m.counts == nil { // the first mark's, reused
			m.counts = make([]uint64, w.n)
		}
		m.at, m.total, m.sum = now, s.total, s.sum
		copy(m.counts, s.counts)
		m.min, m.max = h.minMax(true)
	}
	base := len(w.marks) - 1 // the oldest mark within the span
	for base > 0 && now.Sub(w.marks[base-1].at) <= w.span {
		base--
	}
	b := &w.marks[base]
	s.min, s.max = h.minMax(false)
	for _, m := range w.marks[base+1:] {
		s.min, s.max = math.Min(s.min, m.min), math.Max(s.max, m.max)
	}
	for i, c := range s.counts {
		s.in[i] = c
		if b.counts != nil {
			s.in[i] -= min(c, b.counts[i]) // a count read before the mark's, at worst
		}
		s.n += s.in[i]
	}
	s.inSum = s.sum - b.sum
	return s
}
