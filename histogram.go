package mmv

import (
	"fmt"
	"iter"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gopcp/mmv/internal/pcpname"
)

// Histogram counts observations, such as request latencies or response
// sizes, in buckets, and publishes their distribution.
//
// # Buckets
//
// By default the buckets are DefaultBuckets, bounds for latencies in
// seconds: 18 upper bounds from 100µs to 50s, 1-2.5-5 in each decade, and
// "+Inf", 19 buckets. A histogram whose units are another time
// (Millisecond, Microsecond...) gets them in its units (0.1 to 50000 for
// Millisecond); one whose units are not a time gets the same numbers, so
// give it Buckets of its own.
//
// HistogramOptions.Buckets gives the upper bounds, as client_golang does: a
// bucket counts the observations v with previous bound < v <= bound, and
// the last, "+Inf", those above every bound. Observe finds the bucket from
// the float64's exponent, through a table, then steps over the bounds of
// that power of two: one or two with the default buckets.
//
// Setting Min, Max or SubBuckets chooses the log-linear layout instead, for
// a bounded relative error: (Min, Max] is widened to powers of two, (2^a,
// 2^b], and every power of two (2^e, 2^(e+1)] in it is split into
// SubBuckets equal buckets (a power of two, 8 by default), as HDR
// histograms do; a bucket counts lower < v <= upper, as an explicit one,
// so that its upper bound, its name and Prometheus's le, holds what it
// says. A bucket is found from the bits of the float64 just below v: its
// exponent and the top log2(SubBuckets) bits of its mantissa. Values up to
// 2^a count in an underflow bucket, above 2^b in an overflow bucket. Min
// and Max default to 2^-10 and 2^20, 242
// buckets: too many for a vector of many instances (see NewHistogramVec).
// NaN is ignored in both layouts. ±Inf counts in the outer bucket and
// makes the cumulative sum infinite for good; the window's mean is
// infinite (NaN after both) while the window holds it: the window keeps
// the sum of each of its steps apart.
//
// # Window and error bound
//
// The quantiles, min, max and mean cover the observations of a sliding
// window (HistogramOptions.Window, DefaultWindow by default), so that they
// move when the distribution does; count, sum and the buckets stay
// cumulative, for rates. The window slides by steps of a sixth of its span
// (at least Interval): it covers between 5/6 of its span, less one
// Interval, and its span (50 s to 60 s by default). Read less often than
// its span (a registry never started, read by Stats or Snapshot alone),
// it covers back to the read before, never nothing while observations
// come. Window SinceStart covers everything since the histogram was made
// instead.
//
// A quantile is estimated as the middle of the bucket holding it, narrowed
// to the window's min and max: the estimate is in the same bucket as the
// exact sample quantile (the sample of rank ceil(q*n)), so within half the
// bucket's width of it. Relatively, for a bucket (L, U] that is at most
// (U/L-1)/2: 75% with the default buckets, whose ratios are 2 and 2.5
// (use finer Buckets where it matters), and 1/(2*SubBuckets) in the
// log-linear layout, 6.25% with 8 sub-buckets, 1.6% with 32. Below the
// first bound and above the last the estimate is only bounded by the
// window's min and max. The quantile of the highest rank, p100 and any
// whose rank is the window's count, is its max, and that of rank 1 its
// min: exact.
//
// # In PCP
//
// A histogram named h publishes, refreshed at Start, every Interval and at
// Close, off the hot path:
//
//   - h.bucket: the count of each bucket, a Uint64 counter (units Count)
//     over an instance domain whose instance names are the buckets' upper
//     bounds, as "0.0025" ("+Inf" for the last). Counts are per bucket,
//     not cumulative over bounds, and cumulative over time.
//   - h.count: the number of observations (Uint64 counter), and h.sum their
//     sum (Double counter), in the histogram's units.
//   - h.min, h.max, h.mean and one metric per quantile (h.p50, h.p90,
//     h.p99, h.p999 by default): Double instant values in the histogram's
//     units, over the window; 0 when the window holds no observation.
//
// A refresh publishes what it reads whole: an observation being made as
// it reads may be in h.count and h.bucket a refresh before it is in
// h.sum and the window's statistics, which always hold together (a min
// and max of the observations counted, never ±Inf unless observed, the
// mean and quantiles between them).
//
// Each of these names holds at most 255 bytes, as every metric name: h
// itself at most 248 (255 less ".bucket", with the default quantiles).
// Its help is refused as a Counter's is (ErrTooLong, the New functions'
// panic) when its first line, or the lines after it, pass 255 bytes;
// help texts the histogram makes from h and its help ("mean of <help>",
// of h when the help is empty) are cut to fit. The
// lines of its help after the first, its long help, are each metric's long
// help (h.bucket's followed by what its instances are, cut to fit), and
// the long help of its Family in Gather.
//
// Observe is lock-free and allocation-free: an atomic add on the bucket,
// a compare-and-swap on the sum, and two loads for min and max; the window
// costs it nothing. Goroutines observing at once on different cores do not
// share those words for long: a histogram keeps them in stripes, twice as
// many as GOMAXPROCS when it, or its vector, was made (at most 8), each
// goroutine writing the first until two collide in it, then the stripe
// its stack picks, and the statistics add the stripes up, so the counts
// stay exact. A vector's histogram has the first stripe alone until that
// collision, when it takes the others from memory its vector made ahead
// (until that is made again, at the next new value or refresh, when all
// are taken, its goroutines share the first). No method panics: a nil
// *Histogram, and a zero Histogram (a Histogram{} no New function made,
// declared nowhere), ignore observations and read zero (Stats all 0,
// Quantile 0).
type Histogram struct {
	tally
	l     *buckets
	nsPer float64 // nanoseconds in one of the histogram's units
	w     *window
}

// HistogramOptions configures a histogram; the zero value of each field
// means its default.
type HistogramOptions struct {
	// Buckets are the buckets' upper bounds, increasing, as client_golang's
	// (a trailing +Inf is implied). Default: DefaultBuckets, in the
	// histogram's time units, unless Min, Max or SubBuckets is set.
	Buckets []float64
	// Min, Max and SubBuckets choose the log-linear layout: (Min, Max],
	// widened to powers of two, in SubBuckets buckets per power of two (a
	// power of two up to 1024), for a relative error of at most
	// 1/(2*SubBuckets). Defaults once one is set: 2^-10, 2^20 and 8.
	Min, Max   float64
	SubBuckets int
	// Quantiles are the quantiles published, each in (0, 1]: metric
	// "p" followed by the digits after "0." (at least two), so 0.5 is p50,
	// 0.999 p999 and 1 p100. Default: 0.5, 0.9, 0.99, 0.999.
	Quantiles []float64
	// Window is the span the quantiles, min, max and mean cover:
	// DefaultWindow by default, at least twice Interval, or SinceStart.
	Window time.Duration
	// Interval is how often the statistics are refreshed in the file;
	// DefaultInterval by default.
	Interval time.Duration
}

// DefaultQuantiles are the quantiles a histogram publishes by default.
var DefaultQuantiles = []float64{0.5, 0.9, 0.99, 0.999}

// DefaultBuckets are the default buckets' upper bounds, for latencies in
// seconds (see Histogram).
var DefaultBuckets = []float64{
	0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
	0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50,
}

// buckets is the bucket layout of a histogram: explicit upper bounds, or
// log-linear, where bucket 0 is underflow, then the buckets of (lo, hi],
// then overflow. Every bucket counts lower < x <= upper.
type buckets struct {
	upper  []float64 // explicit bounds; nil when log-linear
	first  []uint16  // explicit: per float64 exponent from e0, the first bucket it can be in
	e0     int
	padded []float64 // explicit: upper, then +Inf as many times as steps
	steps  int       // explicit: the most bounds index steps over from first
	shift  uint      // 52 - log2(sub-buckets): drops the mantissa bits not used
	lo, hi uint64    // float64 bits of the range's bounds, powers of two
	base   uint64    // lo >> shift
	n      int       // buckets, with underflow and overflow
}

const maxBuckets = 1 << 14

// newBuckets returns the layout o asks for, for a histogram in units.
func newBuckets(o *HistogramOptions, units Units) (*buckets, error) {
	if o.Min == 0 && o.Max == 0 && o.SubBuckets == 0 {
		upper := o.Buckets
		if upper == nil {
			// Each bound as ObserveDuration observes its duration, so
			// that the duration counts in the bucket the bound names.
			upper = slices.Clone(DefaultBuckets)
			for i, b := range upper {
				upper[i] = math.Round(b*1e9) / nsPer(units)
			}
		}
		return explicitBuckets(upper)
	}
	if o.Buckets != nil {
		return nil, fmt.Errorf("histogram Buckets and Min, Max or SubBuckets: choose one layout")
	}
	return logLinearBuckets(o)
}

func explicitBuckets(upper []float64) (*buckets, error) {
	if n := len(upper); n > 0 && math.IsInf(upper[n-1], 1) {
		upper = upper[:n-1]
	}
	if len(upper) == 0 || len(upper) >= maxBuckets {
		return nil, fmt.Errorf("histogram of %d bucket bounds: need 1 to %d", len(upper), maxBuckets-1)
	}
	for i, b := range upper {
		if b != b || math.IsInf(b, 0) || i > 0 && b <= upper[i-1] {
			return nil, fmt.Errorf("histogram bucket bound %g at %d: need finite bounds, increasing", b, i)
		}
	}
	l := &buckets{upper: slices.Clone(upper), n: len(upper) + 1}
	var lo, hi int // the exponents of the positive bounds
	for _, b := range upper {
		if b > 0 {
			e := int(math.Float64bits(b) >> 52)
			if lo == 0 {
				lo = e
			}
			hi = e
		}
	}
	l.e0 = lo
	l.steps = len(upper) // from 0, without the table
	if lo > 0 {
		l.first = make([]uint16, hi-lo+2)
		for i := range l.first { // bounds below 2^(exponent), which x of that exponent passes
			least := math.Float64frombits(uint64(lo+i) << 52)
			for int(l.first[i]) < len(upper) && upper[l.first[i]] < least {
				l.first[i]++
			}
		}
		// Steps from first[e] for x of exponent e, or from first[0] (for
		// exponents below, 0) and the last entry (for those above).
		l.steps = int(l.first[0])
		for i := range l.first {
			next := len(upper)
			if i+1 < len(l.first)-1 {
				next = int(l.first[i+1])
			}
			l.steps = max(l.steps, next-int(l.first[i]))
		}
	}
	l.padded = append(slices.Clone(upper), make([]float64, l.steps)...)
	for i := len(upper); i < len(l.padded); i++ {
		l.padded[i] = math.Inf(1)
	}
	return l, nil
}

func logLinearBuckets(o *HistogramOptions) (*buckets, error) {
	lo, hi, sub := o.Min, o.Max, o.SubBuckets
	if lo == 0 {
		lo = 1.0 / 1024
	}
	if hi == 0 {
		hi = 1 << 20
	}
	if sub == 0 {
		sub = 8
	}
	if !(lo >= 0x1p-1022 && hi > lo && hi <= 0x1p1023) {
		return nil, fmt.Errorf("histogram range (%g, %g]: need 2^-1022 <= Min < Max <= 2^1023", lo, hi)
	}
	if sub < 1 || sub > 1024 || sub&(sub-1) != 0 {
		return nil, fmt.Errorf("histogram sub-buckets %d: need a power of two, 1 to 1024", sub)
	}
	if frac, exp := math.Frexp(lo); frac != 0.5 {
		lo = math.Ldexp(1, exp-1)
	}
	if frac, exp := math.Frexp(hi); frac != 0.5 {
		hi = math.Ldexp(1, exp)
	}
	k := uint(0)
	for 1<<k < sub {
		k++
	}
	l := &buckets{shift: 52 - k, lo: math.Float64bits(lo), hi: math.Float64bits(hi)}
	l.base = l.lo >> l.shift
	l.n = int(l.hi>>l.shift-l.base) + 2
	if l.n > maxBuckets {
		return nil, fmt.Errorf("histogram of %d buckets: at most %d", l.n, maxBuckets)
	}
	return l, nil
}

// index returns the bucket of x, which is not NaN.
func (l *buckets) index(x float64) int {
	if u := l.padded; u != nil { // the first bound >= x, without a branch to mispredict
		i := 0
		if b := math.Float64bits(x); int64(b) > 0 && l.first != nil {
			e := min(int(b>>52)-l.e0, len(l.first)-1)
			if e >= 0 { // and below len(first), by the min above
				i = int(*(*uint16)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(l.first)), uintptr(e)*2)))
			}
		}
		// No bounds check: padded holds steps +Inf past the last bound,
		// which i never passes.
		p := unsafe.Pointer(unsafe.SliceData(u))
		for range l.steps {
			if x > *(*float64)(unsafe.Add(p, uintptr(i)*8)) {
				i++
			}
		}
		return i
	}
	// A bucket counts lower < x <= upper, as an explicit one: x's bucket is
	// that of the float64 just below it (bits b-1), which is >= lower and
	// < upper, found from its bits. Exact at the bounds, which are
	// float64s, and no branch more than lower <= x < upper took; shift is
	// at most 52, and &63 says so to the compiler, which then drops its
	// check of a shift past 63 (three instructions, for the one b-1 adds).
	b := math.Float64bits(x)
	if int64(b) <= int64(l.lo) { // up to the range, zero, -0 and negatives
		return 0
	}
	if b > l.hi {
		return l.n - 1
	}
	return int((b-1)>>(l.shift&63)-l.base) + 1
}

// bounds returns bucket i's lower and upper bounds; the first starts at
// -Inf and the last ends at +Inf.
func (l *buckets) bounds(i int) (lower, upper float64) {
	lower, upper = math.Inf(-1), math.Inf(1)
	if l.upper != nil {
		if i > 0 {
			lower = l.upper[i-1]
		}
		if i < len(l.upper) {
			upper = l.upper[i]
		}
		return lower, upper
	}
	if i > 0 {
		lower = math.Float64frombits((l.base + uint64(i) - 1) << l.shift)
	}
	if i < l.n-1 {
		upper = math.Float64frombits((l.base + uint64(i)) << l.shift)
	}
	return lower, upper
}

// names returns the buckets' instance names: their upper bounds in 6
// significant digits, and in more where two neighbours would read alike
// (1.0000001 and 1.0000002), as many as tell them apart: in 6 for all,
// such bounds made one name twice, and the histogram was refused.
func (l *buckets) names() []string {
	names := make([]string, l.n)
	digits := make([]int, l.n)
	for i := range names {
		digits[i] = 6
		names[i] = l.name(i, 6)
	}
	for clash := true; clash; {
		clash = false
		for i := 1; i < l.n; i++ {
			if names[i] == names[i-1] {
				clash = true
				for _, j := range []int{i - 1, i} {
					digits[j]++ // distinct float64s differ within 17
					names[j] = l.name(j, digits[j])
				}
			}
		}
	}
	return names
}

// name is bucket i's instance name in that many significant digits, or
// fewer past 6: the fewest that read back as the bound, once those do
// (0.1, not 0.10000000000000001).
func (l *buckets) name(i, digits int) string {
	_, up := l.bounds(i)
	if math.IsInf(up, 1) {
		return "+Inf"
	}
	s := strconv.FormatFloat(up, 'g', digits, 64)
	if back, _ := strconv.ParseFloat(s, 64); digits > 6 && back == up {
		return strconv.FormatFloat(up, 'g', -1, 64)
	}
	return s
}

// nsPer is how many nanoseconds one of units is: 1e9 when units are not
// a time, as for seconds. A duration is divided by it, correctly rounded
// (both exact), where multiplying by its inverse made 100µs
// 0.09999999999999999 ms, and passed a default bound in minutes or hours.
func nsPer(units Units) float64 {
	if s, ok := units.Time(); ok {
		scale := [...]float64{1, 1e3, 1e6, 1e9, 60e9, 3600e9}
		if s := int(s); s < len(scale) {
			return scale[s]
		}
	}
	return 1e9
}

// newHistogram returns a histogram with its stripes, or with the first
// and the others taken from spares at its first collision.
func newHistogram(l *buckets, units Units, w *window, spares *spareStripes) *Histogram {
	h := new(Histogram)
	h.init(l, units, w, spares)
	return h
}

// init makes h, zero, newHistogram's histogram.
func (h *Histogram) init(l *buckets, units Units, w *window, spares *spareStripes) {
	h.l, h.nsPer, h.w = l, nsPer(units), w
	if spares != nil {
		h.tally.initFrom(spares)
	} else {
		h.tally.init(l.n, stripesFor(runtime.GOMAXPROCS(0)))
	}
}

// Observe counts x.
func (h *Histogram) Observe(x float64) {
	if h == nil || x != x {
		return
	}
	// The stores, the bucket's count, then the sum, min and max, are in
	// the order the readers rely on (tally.step).
	s := h.stripe()
	if s == nil { // a zero Histogram's: no stripes
		return
	}
	// No bounds check: index is within the buckets by construction (the
	// last one takes everything above the range, and NaN returned above).
	(*atomic.Uint64)(unsafe.Add(s, uintptr(tallyCounts+h.l.index(x))*8)).Add(1)
	sum := (*atomic.Uint64)(unsafe.Add(s, tallySum*8))
	for old := sum.Load(); !sum.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+x)); {
		// Another goroutine's add, unless a step's end set the sum to 0
		// (tally.step): taken for a collision, it striped a histogram one
		// goroutine observes (TestStepEndIsNoCollision).
		if old = sum.Load(); old != 0 {
			h.collided()
		}
	}
	lo := (*atomic.Uint64)(unsafe.Add(s, tallyMin*8))
	for {
		old := lo.Load()
		if x >= math.Float64frombits(old) || lo.CompareAndSwap(old, math.Float64bits(x)) {
			break
		}
	}
	hi := (*atomic.Uint64)(unsafe.Add(s, tallyMax*8))
	for {
		old := hi.Load()
		if x <= math.Float64frombits(old) || hi.CompareAndSwap(old, math.Float64bits(x)) {
			break
		}
	}
}

// ObserveDuration counts d in the histogram's units of time: d in seconds
// for a histogram in Second, in microseconds for one in Microsecond; in
// seconds when its units are not a time. Its nanoseconds are divided by
// the unit's, correctly rounded: a duration equal to a default bound
// counts in the bucket that bound names.
func (h *Histogram) ObserveDuration(d time.Duration) {
	if h != nil {
		h.Observe(float64(d) / h.nsPer)
	}
}

// Since counts the time since start; `defer h.Since(time.Now())` times a
// function.
func (h *Histogram) Since(start time.Time) { h.ObserveDuration(time.Since(start)) }

// HistogramStats is a histogram's state as it publishes it.
type HistogramStats struct {
	Count uint64  // observations, cumulative
	Sum   float64 // their sum, cumulative
	// Min, Max and Mean are over the window; 0 when it holds no
	// observation.
	Min, Max, Mean float64
}

// Stats returns the count and sum of the observations, and the min, max
// and mean of those in the window.
func (h *Histogram) Stats() HistogramStats {
	if h == nil || h.w == nil { // nil or zero
		return HistogramStats{}
	}
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	var buf [readScratch]uint64
	s := h.w.state(&h.tally, clock(), scratchFor(buf[:], int(h.w.n)))
	st := HistogramStats{Count: s.total, Sum: s.sum}
	_, st.Min, st.Max, st.Mean = s.published()
	return st
}

// Quantile returns the estimate of quantile q (0 < q <= 1) over the window
// that the histogram publishes, 0 when the window holds no observation. Its
// error is bounded as the type's documentation says.
func (h *Histogram) Quantile(q float64) float64 {
	if h == nil || h.w == nil { // nil or zero
		return 0
	}
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	var buf [readScratch]uint64
	s := h.w.state(&h.tally, clock(), scratchFor(buf[:], int(h.w.n)))
	n, lo, hi, _ := s.published()
	return h.quantile(s.in, n, q, lo, hi)
}

// readScratch is the scratch Stats and Quantile read a window with on
// their stack (window.state): two arrays of counts of up to 32 buckets,
// the default layout's 19 included.
const readScratch = 64

// scratchFor returns buf when it holds two arrays of n counts, else a new
// scratch: a read's on its stack, or a group's kept for the next.
func scratchFor(buf []uint64, n int) []uint64 {
	if 2*n <= len(buf) {
		return buf
	}
	return make([]uint64, 2*n)
}

// quantile estimates quantile q from counts per bucket: the middle of the
// bucket holding the sample of rank ceil(q*total), narrowed to [least,
// most], the observed min and max; of rank total or 1, the max or the
// min itself, which the window knows exactly: the middle put p100 below
// the max (37.5 for 5 and 50 in the bucket (25, 50]).
func (h *Histogram) quantile(counts []uint64, total uint64, q, least, most float64) float64 {
	if total == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(total)))
	switch rank = max(1, min(rank, total)); rank {
	case total:
		return most
	case 1:
		return least
	}
	var seen uint64
	i := 0
	for ; i < len(counts)-1; i++ {
		if seen += counts[i]; seen >= rank {
			break
		}
	}
	lower, upper := h.l.bounds(i)
	lower, upper = math.Max(lower, least), math.Min(upper, most)
	if lower > upper { // counts and min/max read at slightly different times
		return math.Max(least, math.Min(most, middle(upper, lower)))
	}
	return middle(lower, upper)
}

// middle is the middle of [lower, upper], within it: lower+(upper-lower)/2
// but where the width overflows (±1.6e308) or an end is infinite (an
// observation of -Inf), which made it +Inf or NaN.
func middle(lower, upper float64) float64 {
	if d := upper - lower; !math.IsInf(d, 0) {
		return lower + d/2
	}
	return lower/2 + upper/2
}

// quantileName is the metric name part of quantile q: "p" and the digits
// after "0.", at least two.
func quantileName(q float64) (string, error) {
	if !(q > 0 && q <= 1) {
		return "", fmt.Errorf("quantile %g: need 0 < q <= 1", q)
	}
	if q == 1 {
		return "p100", nil
	}
	d := strings.TrimPrefix(strconv.FormatFloat(q, 'f', -1, 64), "0.")
	for len(d) < 2 {
		d += "0"
	}
	return "p" + d, nil
}

// histGroup publishes the statistics of one histogram, or of each of a
// vector's: the values are bound at Start, or when a vector's histogram is
// made after it; refresh runs off the hot path, in Start, every interval
// and in Close.
type histGroup struct {
	r          door
	name       string
	help, long string // the Family's help (gather): the short from its count's, the long as given
	units      Units
	l          *buckets
	bounds     []string        // the buckets' names
	tails      []string        // a vector's: what its buckets' names add to its instances' (indom.tails)
	stats      []string        // the statistics' metric parts, in the order of their handles in histOut.vals
	labels     []string        // the vector's label names; nil for a single histogram
	v          *Vec[Histogram] // the vector; nil for a single histogram
	limit      int             // the vector's default limit (NewHistogramVec)
	bucketIn   *indom          // the buckets' indom
	statIndom  *indom          // the vector's instances; nil for a single histogram
	statSerial uint32          // its serial
	bucketM    *metric         // name.bucket
	statM      []*metric       // in stats order
	spares     *spareStripes   // its histograms' stripes after the first; nil for a single histogram

	window, interval time.Duration // of each histogram's window

	mu        sync.Mutex // serialises refresh and guards hs and waiting
	quantiles []float64
	// hs are the histograms, in the order made; removed ones (removeLocked)
	// stay, with no entry, until they are as many as the others.
	hs      []*histOut
	removed int        // of hs
	waiting []*histOut // those of hs some of whose values have no storage yet (bindLocked)
	buf     []float64  // readLocked's statistics
	scratch []uint64   // readLocked's counts (window.state)
}

// histOut is one histogram and its values in the file, each nil until
// bound (a nil *Value ignores updates).
type histOut struct {
	// e is the histogram's entry (e.t the histogram), nil once removed;
	// e.j is the index of its histOut in the group's hs, where
	// removeLocked finds it: a scan of hs for it made a Delete cost 125 µs
	// at 50,000 values, under the registry's lock.
	e    *vecEntry[Histogram]
	inst string // instance in the statistics' indom, "" when single
	id   int32  // its id, 0 when single
	// at is the index of the instance when declared, where bindOutLocked
	// looks for it first, and for its buckets at at*len(bounds) on: the
	// buckets of an instance are consecutive in their indom, added,
	// removed and revived together, and forgotten in order, so no lookup
	// by id (a thirtieth of a vector's new label value). A hint, which
	// handleOfLocked checks against the id, in 32 bits beside id.
	at int32
	// vals are the handles of the buckets, then of the statistics (count,
	// sum, min, max, mean, then the quantiles), bound under the registry's
	// lock (bindOutLocked) and read by refresh under the group's alone;
	// nil until one of the values has storage: a first use, whose values
	// have none before Start and seldom have after it, does not make
	// them (224 bytes with the default buckets, a fifth of a first use's
	// before Start). One slice, not two, and no index of the first bucket
	// kept: the entry (histEntry) fits 320 bytes (TestEntrySizeClass).
	vals []atomic.Pointer[Value]
}

// declareHistograms declares the metrics of histograms named name, as one
// transaction: over no indom for a single one (labels nil), over the
// instances of the vector of label names labels otherwise, made with
// them (g.v), whose histograms the group then makes (see makeLocked). It
// returns the registry's refusal.
func declareHistograms(reg *Registry, name, help string, units Units, o *HistogramOptions, labels []string) (*histGroup, error) {
	r := door{registry(reg)}
	var opts HistogramOptions
	if o != nil {
		opts = *o
	}
	l, err := newBuckets(&opts, units)
	if err != nil {
		return nil, errorf(ErrRange, subject("metric", name), "%v", err)
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if _, err := newWindow(opts.Window, opts.Interval, 0, 0); err != nil {
		return nil, errorf(ErrRange, subject("metric", name), "%v", err)
	}
	qs := opts.Quantiles
	if qs == nil {
		qs = DefaultQuantiles
	}
	qnames := make([]string, len(qs))
	for i, q := range qs {
		if qnames[i], err = quantileName(q); err != nil {
			return nil, errorf(ErrRange, subject("metric", name), "%v", err)
		}
	}
	g := &histGroup{r: r, name: name, units: units, l: l, bounds: l.names(), labels: slices.Clone(labels), quantiles: qs,
		window: opts.Window, interval: opts.Interval}
	if g.isVec() {
		g.spares = newSpareStripes(l.n, stripesFor(runtime.GOMAXPROCS(0)))
		// The buckets' names, as Prometheus names them: one more label,
		// le, the bucket's upper bound.
		g.tails = make([]string, len(g.bounds))
		for i, b := range g.bounds {
			g.tails[i] = "," + bucketLabel + "=" + b
		}
	}

	short, long := splitHelp(help)
	// The help as given is refused past 255 bytes, each line as a
	// Counter's (checkHelp), naming the histogram; only the texts made
	// from it are cut to fit. Checked before anything: the statistics'
	// metrics refused a long help naming h.count, and h.bucket's was cut.
	if err := checkHelp(subject("metric", name), short, long); err != nil {
		return nil, err
	}
	g.long = long
	// The statistics' help texts say what of the histogram each is: of its
	// help, or of its name when it has none ("mean of lat", not "mean of ").
	// Its Family's help is its own, none when none, as an instrument's.
	of := short
	if of == "" {
		of = name
	}
	type stat struct {
		part  string
		typ   Type
		sem   Semantics
		units Units
		help  string
	}
	stats := []stat{
		{"count", Uint64, SemCounter, Count, "observations of " + of},
		{"sum", Double, SemCounter, units, "sum of observations of " + of},
		{"min", Double, SemInstant, units, "smallest observation of " + of},
		{"max", Double, SemInstant, units, "largest observation of " + of},
		{"mean", Double, SemInstant, units, "mean of " + of},
	}
	g.help = short
	for i := range qs {
		stats = append(stats, stat{qnames[i], Double, SemInstant, units,
			fmt.Sprintf("%g quantile of %s (estimate)", qs[i], of)})
	}
	r.enter()
	defer r.leave()
	err = r.declareLocked(func() error {
		var bucketInsts []string
		if !g.isVec() {
			bucketInsts = g.bounds
		}
		var err error
		var bucketIndom, statIndom uint32
		kind := "metric" // of the subject the indoms' errors name
		if g.isVec() {
			kind = "vector"
		}
		if g.bucketIn, bucketIndom, err = r.addAutoIndomLocked(name+".bucket", "Buckets of "+name+", by upper bound", bucketInsts, kind, name); err != nil {
			return err
		}
		r.bucketsLocked(g.bucketIn)
		if g.isVec() {
			if g.statIndom, statIndom, err = r.addVecIndomLocked(name, "Instances of "+name, labels, name); err != nil {
				return err
			}
			g.statSerial = statIndom
			r.runsLocked(g.bucketIn, g.tails)
			g.limit = r.reserveLocked(g.bucketIn, len(g.bounds), DefaultVecLimit)
			r.reserveLocked(g.statIndom, 1, g.limit)
		}
		g.bucketM, err = r.addMetricLocked(Metric{Name: name + ".bucket", Type: Uint64, Semantics: SemCounter, Units: Count, Indom: bucketIndom,
			ShortHelp: pcpname.Help("observations by bucket of " + of), LongHelp: bucketLongHelp(long)})
		if err != nil {
			return err
		}
		for _, s := range stats {
			// The long help is the histogram's, as given (checked above).
			m, err := r.addMetricLocked(Metric{Name: name + "." + s.part, Type: s.typ, Semantics: s.sem, Units: s.units, Indom: statIndom,
				ShortHelp: pcpname.Help(s.help), LongHelp: long})
			if err != nil {
				return err
			}
			g.statM = append(g.statM, m)
			g.stats = append(g.stats, s.part)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	r.forgetRefusalLocked(name)
	if g.isVec() {
		g.makeVecLocked()
	} else {
		g.makeLocked("", 0, 0)
	}
	r.readerLocked(g)
	r.hookLocked(g.refresh, func() { g.refresh(); g.forget() })
	r.pollLocked(opts.Interval, g.refresh)
	return g, nil
}

// declareLocked adds a vector's instance id: to the statistics' indom, and its
// buckets, ids id*buckets and up, to the buckets' indom, in one
// transaction: buckets refused undo the statistics. Called with the
// registry's lock held.
func (g *histGroup) declareLocked(name string, id int32, fresh bool) (j int, added bool, err error) {
	// The buckets' names are name followed by each tail, which the
	// buckets' indom derives (runsLocked): name is a valid instance name
	// (canon.Name), as are they unless too long, which the indom does not
	// check.
	for _, tail := range g.tails {
		if len(name)+len(tail) > MaxStringLen {
			bn := name + tail
			return 0, false, checkInstanceName(inside(inside(subject("vector", g.name), "instance", name), "bucket", bn), bn)
		}
	}
	// The buckets' indom has the buckets of the instances the statistics'
	// has, live or removed, and no other (idOfLocked): a fresh instance's
	// are fresh too, added as the first of their run.
	err = g.r.declareLocked(func() error {
		var stepErr error
		if j, added, stepErr = g.r.declareInstanceLocked(g.statIndom, fresh, Instance{ID: id, Name: name}); stepErr != nil {
			return stepErr
		}
		_, _, stepErr = g.r.declareInstanceLocked(g.bucketIn, fresh, Instance{ID: g.bucketID(id, 0), Name: name})
		return stepErr
	})
	return j, added && err == nil, err
}

// isVec reports whether g's histograms are a vector's.
func (g *histGroup) isVec() bool { return g.labels != nil }

// bucketID is the id of bucket i of a vector's instance id in the buckets'
// indom (idSpace keeps it within an int32); a single histogram's, derived
// from its bound (fixedInstances), whatever id.
func (g *histGroup) bucketID(id int32, i int) int32 {
	if !g.isVec() {
		return g.r.instanceAtLocked(g.bucketIn, i)
	}
	return id*int32(len(g.bounds)) + int32(i)
}

// idSpace keeps the ids of the vector's buckets within PCP's 31 bits:
// they would wrap onto other instances' buckets.
func (g *histGroup) idSpace() int64 { return vecIDSpace / int64(len(g.bounds)) }

// idOfLocked and nameOfLocked are of the statistics' indom, whose
// instances are the vector's. The buckets' indom has the buckets of
// those, live or removed, and no other: they are added, removed and
// revived in one transaction, forgotten together (vecLink.buckets), and
// AddInstance refuses the registry's indoms (indom.auto).
func (g *histGroup) idOfLocked(name string) (int32, bool) {
	return g.r.instanceIDLocked(g.statIndom, name)
}
func (g *histGroup) nameOfLocked(id int32) (string, bool) {
	return g.r.instanceNameLocked(g.statIndom, id)
}

// removeLocked removes a vector's instance of entry e, its statistics and
// its buckets; its histogram is refreshed no more, and its histOut, its
// handles dropped, leaves hs and waiting once the removed are as many as
// the others: in O(1) amortised, and in the order made.
func (g *histGroup) removeLocked(e *vecEntry[Histogram]) {
	g.mu.Lock()
	o := g.hs[e.j]
	o.e = nil
	o.unbind()
	if g.removed++; 2*g.removed >= len(g.hs) {
		gone := func(o *histOut) bool { return o.e == nil }
		g.hs = slices.DeleteFunc(g.hs, gone)
		g.waiting = slices.DeleteFunc(g.waiting, gone)
		for i, o := range g.hs {
			o.e.j = int32(i)
		}
		g.removed = 0
	}
	g.mu.Unlock()
	g.r.removeInstrumentLocked(g.statIndom, e.id)
	for i := range g.bounds {
		g.r.removeInstrumentLocked(g.bucketIn, g.bucketID(e.id, i))
	}
}

// live yields the histograms of outs not removed.
func live(outs []*histOut) iter.Seq[*histOut] {
	return func(yield func(*histOut) bool) {
		for _, o := range outs {
			if o.e != nil && !yield(o) {
				return
			}
		}
	}
}

// unbind drops o's handles.
func (o *histOut) unbind() {
	for i := range o.vals {
		o.vals[i].Store(nil)
	}
}

// histEntry is what a vector's new label value makes, and a histogram
// alone: its entry, its histogram, the histogram's window and its
// histOut, one allocation where they were four. A histogram a program
// keeps after Delete keeps its histOut, whose handles removeLocked has
// let go: not the mapping they were in. The group's hs keeps a removed
// histogram whole until removeLocked drops it, with the others removed,
// once they are as many as the live ones.
type histEntry struct {
	e   vecEntry[Histogram]
	h   Histogram
	w   window
	out histOut
}

// makeLocked makes the histogram of an instance, whose values are bound as
// soon as they have storage. Called with the registry's lock held.
func (g *histGroup) makeLocked(name string, id int32, j int) *vecEntry[Histogram] {
	b := new(histEntry)
	b.e.t, b.e.id = &b.h, id
	_ = b.w.init(g.window, g.interval, g.l.n, clock()) // checked by declareHistograms
	b.h.init(g.l, g.units, &b.w, g.spares)
	b.out = histOut{e: &b.e, inst: name, id: id, at: int32(j)}
	o := &b.out
	g.mu.Lock()
	g.spares.refill()
	b.e.j = int32(len(g.hs))
	g.hs = append(g.hs, o)
	// Binding each of o's values looks for its storage, 28 lookups with
	// the default buckets: a sixth of a vector's new label value before
	// Start, when none has any, and an eighth after, when a new value
	// seldom has (bindableLocked).
	if !g.r.bindableLocked() || g.bindOutLocked(o, g.r.handleOfLocked) {
		g.waiting = append(g.waiting, o)
	}
	g.mu.Unlock()
	return &b.e
}

// forget drops the handles on the files, at Close after the last refresh:
// the group lives as long as its registry, and a closed file's range is
// unmapped only once no handle on it is reachable (retire_linux.go).
func (g *histGroup) forget() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for o := range live(g.hs) {
		o.unbind()
	}
}

// refresh copies the histograms' state into the file.
func (g *histGroup) refresh() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.spares.refill()
	now := clock()
	for o := range live(g.hs) {
		g.readLocked(o, now, func(counts []uint64, total uint64, stats []float64) {
			if o.vals == nil { // none of its values has storage yet
				return
			}
			for j, c := range counts {
				o.vals[j].Load().Set(int64(c))
			}
			st := o.vals[len(g.bounds):]
			st[0].Load().Set(int64(total))
			for k, f := range stats {
				st[1+k].Load().SetFloat(f)
			}
		})
	}
}

// snapshot hands put the histograms' values as refresh would store them,
// for Registry.Snapshot, whether they have storage or not.
func (g *histGroup) snapshot(put func(m *metric, id int32, v any)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := clock()
	for o := range live(g.hs) {
		g.putLocked(o, now, put)
	}
}

// waitingLocked is snapshot of the histograms some of whose values are
// not bound yet, g.waiting: a publication pays for the histograms made
// since the last, not for all.
func (g *histGroup) waitingLocked(put func(m *metric, id int32, v any)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := clock()
	for o := range live(g.waiting) {
		g.putLocked(o, now, put)
	}
}

// bindLocked binds the values of the waiting histograms that now have
// storage, and keeps those some of whose values still have none: the
// group's histograms wait in it, as a vector's cells do in theirs, not
// one waiter a value in the registry's list (28 a histogram with the
// default buckets, a fifth of a first use's time in appends to it).
func (g *histGroup) bindLocked(handle func(m *metric, id int32, at int) *Value) {
	g.mu.Lock()
	defer g.mu.Unlock()
	kept := g.waiting[:0]
	for o := range live(g.waiting) {
		if g.bindOutLocked(o, handle) {
			kept = append(kept, o)
		}
	}
	clear(g.waiting[len(kept):])
	g.waiting = kept
}

// bindOutLocked binds the values of o that have storage (handle, by
// metric, instance id and likely index), and reports whether some have
// none yet.
func (g *histGroup) bindOutLocked(o *histOut, handle func(m *metric, id int32, at int) *Value) (waiting bool) {
	bind := func(k int, m *metric, id int32, at int) {
		if o.vals != nil && o.vals[k].Load() != nil {
			return
		}
		v := handle(m, id, at)
		if v == nil {
			waiting = true
			return
		}
		if o.vals == nil {
			o.vals = make([]atomic.Pointer[Value], len(g.bounds)+len(g.statM))
		}
		o.vals[k].Store(v)
	}
	for i := range g.bounds {
		bind(i, g.bucketM, g.bucketID(o.id, i), int(o.at)*len(g.bounds)+i)
	}
	for i, m := range g.statM {
		bind(len(g.bounds)+i, m, o.id, int(o.at))
	}
	return waiting
}

// putLocked hands put the values of o as refresh would store them.
func (g *histGroup) putLocked(o *histOut, now time.Duration, put func(m *metric, id int32, v any)) {
	g.readLocked(o, now, func(counts []uint64, total uint64, stats []float64) {
		for i, c := range counts {
			put(g.bucketM, g.bucketID(o.id, i), c)
		}
		put(g.statM[0], o.id, total)
		for k, f := range stats {
			put(g.statM[1+k], o.id, f)
		}
	})
}

// family is the buckets' metric, which Gather shows as the histograms'
// Family, in place of their count's and sum's.
func (g *histGroup) family() (*metric, []*metric) {
	return g.bucketM, g.statM[:2]
}

// gather fills f, which Gather reset for the buckets' metric, with the
// histograms: their Bounds, and per Sample their Buckets, Count and Sum,
// read from the histograms themselves.
func (g *histGroup) gather(f *Family) {
	f.Metric = Metric{Name: g.name, Type: Double, Semantics: SemCounter, Units: g.units, ShortHelp: g.help, LongHelp: g.long}
	f.Bounds = make([]float64, g.l.n)
	for i := range f.Bounds {
		_, f.Bounds[i] = g.l.bounds(i)
	}
	f.LabelNames = g.labels
	g.mu.Lock()
	defer g.mu.Unlock()
	buckets := make([]uint64, len(g.hs)*g.l.n)
	for o := range live(g.hs) {
		s := f.sample(o.inst)
		s.Buckets, buckets = buckets[:g.l.n:g.l.n], buckets[g.l.n:]
		o.e.t.w.mu.Lock() // under which a step's end moves the sum (tally.step)
		s.Sum = o.e.t.sum()
		o.e.t.w.mu.Unlock()
		s.Count = o.e.t.counts(s.Buckets) // after the sum, which then holds no observation they do not (tally.step)
	}
}

// bucketLongHelp is the long help of a histogram's buckets' metric: the
// histogram's long help, then what its instances are, cut to fit (the
// histogram's own is checked by declareHistograms).
func bucketLongHelp(long string) string {
	const note = "Instances are the buckets' upper bounds; counts are per bucket, not cumulative."
	if long == "" {
		return note
	}
	return pcpname.Help(long + "\n" + note)
}

// readLocked hands f the values of o as published: the count of each
// bucket, the observations' count, then the other statistics in g.stats
// order (sum, min, max, mean, the quantiles). With g.mu held.
func (g *histGroup) readLocked(o *histOut, now time.Duration, f func(counts []uint64, total uint64, stats []float64)) {
	o.e.t.w.mu.Lock()
	defer o.e.t.w.mu.Unlock()
	h := o.e.t
	g.scratch = scratchFor(g.scratch, int(h.w.n))
	s := h.w.state(&h.tally, now, g.scratch)
	n, lo, hi, mean := s.published()
	st := append(g.buf[:0], s.sum, lo, hi, mean)
	for _, q := range g.quantiles {
		st = append(st, h.quantile(s.in, n, q, lo, hi))
	}
	g.buf = st
	f(s.counts, s.total, st)
}

// NewHistogram declares a histogram on r (Default when nil), observing
// values in units; o may be nil for the defaults. See Histogram for the
// metrics it publishes.
// It panics if the registry refuses the declaration as a programming
// error: invalid options, an invalid or duplicate name, a cap reached
// before Start (the panic value wraps the sentinel, such as ErrName). A
// cap reached after Start and a closed registry return a nil histogram,
// which ignores updates, and Registry.Err says why; a full disk is no
// refusal (see the package doc).
func NewHistogram(r *Registry, name, help string, units Units, o *HistogramOptions) *Histogram {
	if g, err := declareHistograms(r, name, help, units, o, nil); must(r, name, g, err) != nil {
		return g.hs[0].e.t
	}
	return nil
}

// bucketTail is the longest a histogram vector's bucket names carry
// beyond its instances' (",le=" and a bound), 0 for invalid options,
// which declareHistograms refuses.
func bucketTail(o *HistogramOptions, units Units) int {
	var opts HistogramOptions
	if o != nil {
		opts = *o
	}
	l, err := newBuckets(&opts, units)
	if err != nil {
		return 0
	}
	n := 0
	for _, b := range l.names() {
		n = max(n, len(","+bucketLabel+"=")+len(b))
	}
	return n
}

// NewHistogramVec declares a vector of histograms on r (Default when nil),
// one per list of values of the label names labels, sharing options o (nil
// for the defaults); see Vec. The statistics (name.count, name.p99...) are
// over the vector's instances; name.bucket is over an indom of the
// instances' buckets, named as the instances with one more label, le, the
// bucket's upper bound: "route=/api,le=0.25". So le is not one of its own
// label names, as client_golang refuses it: a bucket would be named
// "le=x,le=0.25", and the scrape (package expose) would call the
// vector's label exported_le where PCP's instance labels call it le.
// Those names hold 255 bytes, as every instance name: values whose
// instance name, with ",le=" and the longest bound, would pass it are
// refused (ErrTooLong).
//
// Its default limit is the registry's cap on an indom's instances
// (Options.MaxIndomInstances) or its values budget per file
// (Options.MaxFileValues), whichever is less, over a histogram's buckets,
// when that is less than DefaultVecLimit: 107 instances with the default
// 19 buckets and cap of 2048, 8 with the log-linear layout's 242 by
// default. SetLimit raises it, within the cap and the budget. Its buckets
// then fill a file and its statistics go to an overflow file, whose names
// carry the registry's file name: a name too long for that is refused
// (ErrTooLong) unless the first file has room for them.
//
// An instance's buckets take the ids from id*buckets on, which must fit
// PCP's 31 bits: the vector's instance ids are below 2^31/buckets (113
// million with the default buckets), derived from their names in the
// lower half. Once it counts ids in the upper half (see Vec.Delete) it
// may number 2^31/buckets/2 values in its life, and refuses new values
// after that (ErrTooMany).
//
// It panics if the registry refuses the declaration as a programming
// error: invalid options, an invalid or duplicate name or label name (le
// among them: ErrName), a cap reached before Start (the panic value wraps
// the sentinel, such as ErrName). A cap reached after Start and a closed
// registry return a nil vector, which ignores updates, and Registry.Err
// says why.
func NewHistogramVec(r *Registry, name, help string, units Units, o *HistogramOptions, labels ...string) *Vec[Histogram] {
	if err := checkVecLabels(name, labels, bucketLabel, bucketTail(o, units)); err != nil {
		panic(err)
	}
	g, err := declareHistograms(r, name, help, units, o, labels)
	g = must(r, name, g, err)
	if g == nil {
		return nil
	}
	return g.v
}

// makeVecLocked makes the vector of g and links it to its indoms, where the registry looks for its label names: under
// the lock that declared them, or an AddLabel (AddIndomLabel...) between
// found none and was accepted with the vector
// (TestHistogramVecLinkedWithItsDeclaration).
func (g *histGroup) makeVecLocked() {
	v := newVec(g.r, g.name, g.labels, g.statSerial, vecKind[Histogram](g))
	// The default limit keeps the buckets' indom within the registry's cap
	// and a file's values budget: the room the vector reserves.
	v.limit.Store(int64(g.limit))
	g.r.followLimitLocked(g.statIndom, &v.limit, 1)
	g.r.followLimitLocked(g.bucketIn, &v.limit, len(g.bounds))
	g.r.linkVecLocked(g.statIndom, vecLink{labels: v.labels, vec: v, buckets: g.bucketIn})
	g.r.linkVecLocked(g.bucketIn, vecLink{follows: true})
	g.v = v
}
