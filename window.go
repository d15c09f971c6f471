package mmv

import (
	"fmt"
	"math"
	"slices"
	"sync"
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

// clockStart is where windows' clock starts: their times are durations
// since, on the monotonic clock (clock), which time.Since reads alone in
// 31 ns where time.Now reads the wall clock too in 55 (4% of a histogram
// vector's new label value), and a mark keeps one in 8 bytes where a
// time.Time takes 24. Subtracting time.Times used their monotonic
// readings already.
var clockStart = time.Now()

// clock returns the time on windows' clock.
func clock() time.Duration { return time.Since(clockStart) }

// window gives a histogram's statistics over its last span without a cost
// to Observe: it marks, every step, the cumulative counts, and takes the
// sum, min and max of the step that ended (the histogram's sum, min and
// max cover the current step only: tally). The window's counts are what
// changed since the oldest mark no older than the span, its sum, min and
// max those of the steps since. Everything is under mu, off the hot
// path.
type window struct {
	mu         sync.Mutex
	span, step time.Duration // span 0: since the start, one mark
	marks      []mark        // oldest first, markCap at most
	first      [1]mark       // marks' array until a second mark is taken
	n          int32         // buckets
	// lastMoved says the last mark was moved over idle steps since it was
	// added (mark): it holds no observation the one before it does not.
	// Beside n, in its word: a field of its own in mark took a histogram
	// vector's entry past its 320-byte size class (TestEntrySizeClass).
	lastMoved bool
}

// mark is a histogram's state at a step's end.
type mark struct {
	at       time.Duration // on windows' clock
	counts   []uint64      // cumulative; nil for the start's (zeros)
	total    uint64
	sum      float64 // of the step that ended at at, as min and max
	min, max float64
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
// every interval, starting empty at start (on windows' clock).
func newWindow(span, interval time.Duration, n int, start time.Duration) (*window, error) {
	w := new(window)
	if err := w.init(span, interval, n, start); err != nil {
		return nil, err
	}
	return w, nil
}

// init makes w, zero, newWindow's window: in memory of its caller's, as a
// vector's new label value makes its histogram and window (histEntry).
func (w *window) init(span, interval time.Duration, n int, start time.Duration) error {
	switch {
	case span == 0:
		span = DefaultWindow
	case span == SinceStart:
		span = 0
	case span < 2*interval:
		return fmt.Errorf("histogram window %v: need SinceStart or at least twice the interval (%v)", span, interval)
	}
	w.span, w.step, w.n = span, max(span/windowSteps, interval), int32(n)
	w.marks = w.first[:]
	w.marks[0].at, w.marks[0].min, w.marks[0].max = start, math.Inf(1), math.Inf(-1)
	return nil
}

// markCap is how many marks w keeps: the start's alone, or as many as a
// span has steps. Marks are a step apart at least, so when the oldest is
// dropped for a new one it is a span old, and the next is the window's
// base for a step more: 5/6 of the span, less the time between reads
// (TestWindowBusyKeepsOnlyMarksItUses). Two more, as there were, were
// older than the span, never a base again: 432 bytes a busy histogram
// with the default buckets.
func (w *window) markCap() int {
	if w.span > 0 {
		return windowSteps
	}
	return 1
}

// markedCounts reports whether counts are a mark's, nil for zeros.
func markedCounts(counts, marked []uint64) bool {
	if marked == nil {
		return !slices.ContainsFunc(counts, func(c uint64) bool { return c != 0 })
	}
	return slices.Equal(counts, marked)
}

// mark marks the end of a step at now: the step's min, max and sum, and
// the counts then (tally.step).
//
// A step with no observation moves the last mark to its end instead of
// adding one: the mark's state is the same, and its step's min and max
// those of the longer step, so a window from it holds the same
// observations as from the mark the step would have added
// (TestWindowCountsWithIdleSteps). The marks are made as they are needed,
// up to markCap, the oldest's counts reused once dropped; once the others
// are older than the span, never a base again, the moved mark is kept
// alone, in first. So a histogram idle for a span keeps one mark, in its
// window's memory, and one array of counts, where every window made 8
// marks at its first read, 7 of them with an array, 1.6 kB with the
// default buckets, kept by every value of a vector, most of them idle
// most of the time, and then two, in a slice of 128 bytes.
func (w *window) mark(lo, hi, sum float64, marked []uint64, total uint64, now time.Duration) {
	n := len(w.marks)
	last := &w.marks[n-1]
	if lo > hi && total == last.total && sum == 0 && markedCounts(marked, last.counts) {
		last.at, w.lastMoved = now, true
		if n > 1 && w.within(now) == n-1 {
			w.first[0] = *last
			w.marks = w.first[:]
		}
		return
	}
	var counts []uint64
	switch {
	case n == w.markCap():
		counts = w.marks[0].counts // nil for the start's
		w.marks = append(w.marks[:0], w.marks[1:]...)
	case n == cap(w.marks): // doubled up to markCap, not past it as append would
		w.marks = append(make([]mark, 0, min(2*n, w.markCap())), w.marks...)
	}
	if counts == nil {
		counts = make([]uint64, int(w.n))
	}
	copy(counts, marked)
	w.marks = append(w.marks, mark{at: now, counts: counts, total: total, sum: sum, min: lo, max: hi})
	w.lastMoved = false
}

// stepEndHook, when tests set it, is called in the middle of a step's
// end, between its reads of the tally.
var stepEndHook func()

// base is the index of the window's base at now: the oldest mark within
// the span (within), or the one before when only the last is and it was
// added more than a span after the one before: in a histogram read less
// often than its span (a registry never started, read on demand), or
// refreshed a little later after its tick than the refresh that marked
// last, at a Window of two Intervals. From the last mark the window was
// empty, and min, max, mean and quantiles read 0 while observations came;
// it covers back to the one before, a little more than the span, or back
// to the last read. A last mark moved over idle steps holds no
// observation the one before it does not: the window from it is empty,
// rightly, where the one before held observations older than the span.
func (w *window) base(now time.Duration) int {
	i := w.within(now)
	if n := len(w.marks); i == n-1 && n > 1 && !w.lastMoved {
		i--
	}
	return i
}

// within is the index of the oldest mark within the span at now, else
// the last.
func (w *window) within(now time.Duration) int {
	i := len(w.marks) - 1
	for i > 0 && now-w.marks[i-1].at <= w.span {
		i--
	}
	return i
}

// state reads the tally h at now, with w.mu held: marks a step's end
// first when one has passed. The slices are scratch's, 2n words at least:
// a vector's histograms share their group's (histGroup.readLocked), where
// each window kept its own, 320 bytes with the default buckets. Each
// read of the tally takes the step's min, max and sum, then the counts
// (tally.step): the window's min, max and sum hold what it counts, and
// its counts may hold more, Observes in flight.
func (w *window) state(h *tally, now time.Duration, scratch []uint64) windowState {
	n := int(w.n)
	s := windowState{counts: scratch[:n:n], in: scratch[n : 2*n]}
	if w.span > 0 && now-w.marks[len(w.marks)-1].at >= w.step {
		lo, hi, sum := h.step(true)
		if stepEndHook != nil {
			stepEndHook()
		}
		total := h.counts(s.counts)
		w.mark(lo, hi, sum, s.counts, total, now)
	}
	s.min, s.max, s.inSum = h.step(false)
	s.sum = math.Float64frombits(h.carried().Load()) + s.inSum
	s.total = h.counts(s.counts)
	base := w.base(now)
	b := &w.marks[base]
	for _, m := range w.marks[base+1:] {
		s.min, s.max = math.Min(s.min, m.min), math.Max(s.max, m.max)
		s.inSum += m.sum
	}
	for i, c := range s.counts {
		s.in[i] = c
		if b.counts != nil {
			s.in[i] -= min(c, b.counts[i]) // a count read before the mark's, at worst
		}
		s.n += s.in[i]
	}
	return s
}

// published returns the window's statistics as a histogram publishes
// them: its count, min, max and mean, 0 for a window that holds no
// observation. Those its reads found whole hold together: a min and max
// of the observations it counts, and a mean between. An Observe in
// flight at a read (or at a step's end, whose mark it straddles) may be
// counted before its sum, min and max are stored, or be in those of the
// steps after its count's: when the window has seen no min or max whole
// it publishes none (an observation counted alone had a min of +Inf and
// a max of -Inf), and its mean is held within its min and max, where the
// mean of any observations is (one counted and not summed beside others
// pulled it below their min): TestObserveInFlightPublishesConsistently.
func (s *windowState) published() (n uint64, lo, hi, mean float64) {
	if s.n == 0 || !(s.min <= s.max) {
		return 0, 0, 0, 0
	}
	mean = math.Max(s.min, math.Min(s.max, s.inSum/float64(s.n))) // NaN kept: a window of +Inf and -Inf
	return s.n, s.min, s.max, mean
}
