package mmv

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
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

// tally is what a histogram counts, lock-free, for its window to read.
type tally struct {
	counts   []atomic.Uint64 // per bucket, cumulative
	sum      atomic.Uint64   // float64 bits, cumulative
	min, max atomic.Uint64   // float64 bits, of the window's current step
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
	marks      []mark        // oldest first, at most windowSteps+2
	live, diff []uint64      // scratch: the counts now, and in the window
}

// mark is a histogram's state at a step's end.
type mark struct {
	at       time.Time
	counts   []uint64 // cumulative
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
	w := &window{span: span, step: max(span/windowSteps, interval), live: make([]uint64, n), diff: make([]uint64, n)}
	marks := 1
	if span > 0 {
		marks = windowSteps + 2
	}
	w.marks = make([]mark, 1, marks)
	for i := range cap(w.marks) {
		w.marks[:cap(w.marks)][i].counts = make([]uint64, n)
	}
	w.marks[0].at, w.marks[0].min, w.marks[0].max = now, math.Inf(1), math.Inf(-1)
	return w, nil
}

// state reads the tally h at now, with w.mu held: marks a step's end first when one
// has passed. The slices are w's scratch, valid until w.mu is released.
func (w *window) state(h *tally, now time.Time) windowState {
	s := windowState{counts: w.live, in: w.diff}
	for i := range h.counts {
		s.counts[i] = h.counts[i].Load()
		s.total += s.counts[i]
	}
	s.sum = math.Float64frombits(h.sum.Load())
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
		m.at, m.total, m.sum = now, s.total, s.sum
		copy(m.counts, s.counts)
		m.min = math.Float64frombits(h.min.Swap(math.Float64bits(math.Inf(1))))
		m.max = math.Float64frombits(h.max.Swap(math.Float64bits(math.Inf(-1))))
	}
	base := len(w.marks) - 1 // the oldest mark within the span
	for base > 0 && now.Sub(w.marks[base-1].at) <= w.span {
		base--
	}
	b := &w.marks[base]
	s.min, s.max = math.Float64frombits(h.min.Load()), math.Float64frombits(h.max.Load())
	for _, m := range w.marks[base+1:] {
		s.min, s.max = math.Min(s.min, m.min), math.Max(s.max, m.max)
	}
	for i, c := range s.counts {
		s.in[i] = c - min(c, b.counts[i]) // a count read before the mark's, at worst
		s.n += s.in[i]
	}
	s.inSum = s.sum - b.sum
	return s
}
