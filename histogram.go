package mmv

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Histogram counts observations, such as request latencies or response
// sizes, in log-linear buckets, and publishes their distribution.
//
// # Buckets
//
// The range [Min, Max) of HistogramOptions is widened to powers of two,
// [2^a, 2^b), and every power of two [2^e, 2^(e+1)) in it is split into
// SubBuckets equal buckets (a power of two, 8 by default), as HDR
// histograms do. A bucket is found from the bits of the float64: its
// exponent and the top log2(SubBuckets) bits of its mantissa, with no
// logarithm, loop or lock. Values below 2^a (zero and negatives too) count
// in one underflow bucket, values from 2^b up in one overflow bucket (NaN
// is ignored). The defaults, [2^-10, 2^20) with 8 sub-buckets, give 242
// buckets for values from about 0.001 to a million.
//
// # Error bound
//
// A bucket [L, L+w) has w = 2^e/SubBuckets <= L/SubBuckets. A quantile is
// estimated as the middle of the bucket holding it (narrowed to the
// observed min and max), so for a quantile in range the estimate is within
// w/2 of the exact sample quantile: a relative error of at most
// 1/(2*SubBuckets), 6.25% with 8 sub-buckets, 1.6% with 32. The quantile of
// n samples is the sample of rank ceil(q*n). In the underflow and overflow
// buckets the estimate is only bounded by the observed min and max.
//
// # In PCP
//
// A histogram named h publishes, refreshed at Start, every Interval and at
// Close, off the hot path:
//
//   - h.bucket: the count of each bucket, a Uint64 counter (units Count)
//     over an instance domain whose instance names are the buckets' upper
//     bounds, as "0.00109863" ("+Inf" for overflow): observations v with
//     previous bound <= v < bound. Counts are per bucket, not cumulative.
//   - h.count: the number of observations (Uint64 counter), and h.sum their
//     sum (Double counter), in the histogram's units.
//   - h.min, h.max, h.mean and one metric per quantile (h.p50, h.p90,
//     h.p99, h.p999 by default): Double instant values in the histogram's
//     units, over every observation since Start; 0 before the first.
//
// Observe is lock-free and allocation-free: an atomic add on the bucket,
// a compare-and-swap on the sum, and two loads for min and max. A nil
// *Histogram ignores observations.
type Histogram struct {
	l        *buckets
	counts   []atomic.Uint64 // per bucket
	sum      atomic.Uint64   // float64 bits
	min, max atomic.Uint64   // float64 bits
	perNs    float64         // the histogram's units in a nanosecond
	snap     []uint64        // refresh's scratch copy of counts
}

// HistogramOptions configures a histogram; the zero value of each field
// means its default.
type HistogramOptions struct {
	// Min and Max are the range of values counted in buckets of bounded
	// error, widened to powers of two. Defaults: 2^-10 and 2^20.
	Min, Max float64
	// SubBuckets is the number of buckets per power of two: a power of
	// two up to 1024, 8 by default. The error bound is 1/(2*SubBuckets).
	SubBuckets int
	// Quantiles are the quantiles published, each in (0, 1]: metric
	// "p" followed by the digits after "0." (at least two), so 0.5 is p50,
	// 0.999 p999 and 1 p100. Default: 0.5, 0.9, 0.99, 0.999.
	Quantiles []float64
	// Interval is how often the statistics are refreshed in the file;
	// DefaultInterval by default.
	Interval time.Duration
}

// DefaultQuantiles are the quantiles a histogram publishes by default.
var DefaultQuantiles = []float64{0.5, 0.9, 0.99, 0.999}

// buckets is the bucket scheme of a histogram: bucket 0 is underflow, then
// the log-linear buckets of [lo, hi), then overflow.
type buckets struct {
	shift  uint   // 52 - log2(sub-buckets): drops the mantissa bits not used
	lo, hi uint64 // float64 bits of the range's bounds, powers of two
	base   uint64 // lo >> shift
	n      int    // buckets, with underflow and overflow
}

const maxBuckets = 1 << 14

func newBuckets(o *HistogramOptions) (*buckets, error) {
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
		return nil, fmt.Errorf("histogram range [%g, %g): need 2^-1022 <= Min < Max <= 2^1023", lo, hi)
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
	b := math.Float64bits(x)
	if int64(b) < int64(l.lo) { // below the range, zero and negatives
		return 0
	}
	if b >= l.hi {
		return l.n - 1
	}
	return int(b>>l.shift-l.base) + 1
}

// bounds returns bucket i's range [lower, upper); underflow starts at
// -Inf and overflow ends at +Inf.
func (l *buckets) bounds(i int) (lower, upper float64) {
	switch i {
	case 0:
		return math.Inf(-1), math.Float64frombits(l.lo)
	case l.n - 1:
		return math.Float64frombits(l.hi), math.Inf(1)
	}
	return math.Float64frombits((l.base + uint64(i) - 1) << l.shift), math.Float64frombits((l.base + uint64(i)) << l.shift)
}

// names returns the buckets' instance names: their upper bounds, with
// enough digits to tell neighbours apart.
func (l *buckets) names() []string {
	names := make([]string, l.n)
	for i := range names {
		_, up := l.bounds(i)
		names[i] = formatBound(up)
	}
	return names
}

func formatBound(f float64) string {
	if math.IsInf(f, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(f, 'g', 6, 64)
}

func newHistogram(l *buckets, units Units) *Histogram {
	h := &Histogram{l: l, counts: make([]atomic.Uint64, l.n), snap: make([]uint64, l.n), perNs: 1e-9}
	h.min.Store(math.Float64bits(math.Inf(1)))
	h.max.Store(math.Float64bits(math.Inf(-1)))
	if units.DimTime() == 1 && units.DimSpace() == 0 && units.DimCount() == 0 {
		scale := [...]float64{1, 1e3, 1e6, 1e9, 60e9, 3600e9}
		if s := units.ScaleTime(); s < len(scale) {
			h.perNs = 1 / scale[s]
		}
	}
	return h
}

// Observe counts x.
func (h *Histogram) Observe(x float64) {
	if h == nil || x != x {
		return
	}
	h.counts[h.l.index(x)].Add(1)
	for {
		old := h.sum.Load()
		if h.sum.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+x)) {
			break
		}
	}
	for {
		old := h.min.Load()
		if x >= math.Float64frombits(old) || h.min.CompareAndSwap(old, math.Float64bits(x)) {
			break
		}
	}
	for {
		old := h.max.Load()
		if x <= math.Float64frombits(old) || h.max.CompareAndSwap(old, math.Float64bits(x)) {
			break
		}
	}
}

// ObserveDuration counts d in the histogram's units of time: d in seconds
// for a histogram in Second, in microseconds for one in Microsecond; in
// seconds when its units are not a time.
func (h *Histogram) ObserveDuration(d time.Duration) {
	if h != nil {
		h.Observe(float64(d) * h.perNs)
	}
}

// Since counts the time since start; `defer h.Since(time.Now())` times a
// function.
func (h *Histogram) Since(start time.Time) { h.ObserveDuration(time.Since(start)) }

// HistogramStats is a histogram's state as it publishes it.
type HistogramStats struct {
	Count          uint64
	Sum            float64
	Min, Max, Mean float64 // 0 when Count is 0
}

// Stats returns the count, sum, min, max and mean of the observations.
func (h *Histogram) Stats() HistogramStats {
	if h == nil {
		return HistogramStats{}
	}
	var s HistogramStats
	for i := range h.counts {
		s.Count += h.counts[i].Load()
	}
	s.Sum = math.Float64frombits(h.sum.Load())
	if s.Count > 0 {
		s.Min = math.Float64frombits(h.min.Load())
		s.Max = math.Float64frombits(h.max.Load())
		s.Mean = s.Sum / float64(s.Count)
	}
	return s
}

// Quantile returns the estimate of quantile q (0 < q <= 1) that the
// histogram publishes, 0 when nothing was observed. Its error is bounded as
// the type's documentation says.
func (h *Histogram) Quantile(q float64) float64 {
	if h == nil {
		return 0
	}
	counts := make([]uint64, len(h.counts))
	var total uint64
	for i := range counts {
		counts[i] = h.counts[i].Load()
		total += counts[i]
	}
	return h.quantile(counts, total, q, math.Float64frombits(h.min.Load()), math.Float64frombits(h.max.Load()))
}

// quantile estimates quantile q from a snapshot of the counts: the middle
// of the bucket holding the sample of rank ceil(q*total), narrowed to the
// observed [min, max].
func (h *Histogram) quantile(counts []uint64, total uint64, q, least, most float64) float64 {
	if total == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(total)))
	rank = max(1, min(rank, total))
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
		return math.Max(least, math.Min(most, (lower+upper)/2))
	}
	return lower + (upper-lower)/2
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
	r         *Registry
	name      string
	units     Units
	l         *buckets
	bounds    []string // the buckets' names
	stats     []string // the statistics' metric parts, in histOut.stats order
	vec       bool
	bucketIn  *indom    // the buckets' indom
	statIndom *indom    // the vector's instances; nil for a single histogram
	bucketM   *metric   // name.bucket
	statM     []*metric // in stats order

	mu        sync.Mutex // serialises refresh and guards hs
	quantiles []float64
	hs        []*histOut
}

// histOut is one histogram and its values in the file, each nil until
// bound (a nil *Value ignores updates).
type histOut struct {
	h      *Histogram
	inst   string   // instance in the statistics' indom, "" when single
	bucket []*Value // per bucket
	stats  []*Value // count, sum, min, max, mean, then the quantiles
}

// declareHistograms declares the metrics of histograms named name: over no
// indom for a single one (instances nil), over the vector's instances
// otherwise, whose histograms the group then makes (see makeLocked).
func declareHistograms(r *Registry, name, help string, units Units, o *HistogramOptions, instances []string) *histGroup {
	r = registry(r)
	var opts HistogramOptions
	if o != nil {
		opts = *o
	}
	l, err := newBuckets(&opts)
	if err != nil {
		panic(errorf(ErrRange, "metric "+quote(name), "%v", err))
	}
	qs := opts.Quantiles
	if qs == nil {
		qs = DefaultQuantiles
	}
	qnames := make([]string, len(qs))
	for i, q := range qs {
		if qnames[i], err = quantileName(q); err != nil {
			panic(errorf(ErrRange, "metric "+quote(name), "%v", err))
		}
	}
	g := &histGroup{r: r, name: name, units: units, l: l, bounds: l.names(), vec: instances != nil, quantiles: qs}

	short, _ := splitHelp(help)
	bucketInsts := g.bounds
	if g.vec {
		bucketInsts = make([]string, 0, len(instances)*l.n)
		for _, in := range instances {
			bucketInsts = append(bucketInsts, g.bucketNames(in)...)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if g.bucketIn, err = r.addAutoIndomLocked("Buckets of "+name+", by upper bound", bucketInsts); err != nil {
		panic(err)
	}
	statIndom := uint32(0)
	if g.vec {
		if g.statIndom, err = r.addAutoIndomLocked("Instances of "+name, instances); err != nil {
			panic(err)
		}
		statIndom = g.statIndom.Serial
	}
	type stat struct {
		part  string
		typ   Type
		sem   Semantics
		units Units
		help  string
	}
	stats := []stat{
		{"count", Uint64, SemCounter, Count, "observations of " + short},
		{"sum", Double, SemCounter, units, "sum of observations of " + short},
		{"min", Double, SemInstant, units, "smallest observation of " + short},
		{"max", Double, SemInstant, units, "largest observation of " + short},
		{"mean", Double, SemInstant, units, "mean of " + short},
	}
	for i := range qs {
		stats = append(stats, stat{qnames[i], Double, SemInstant, units,
			fmt.Sprintf("%g quantile of %s (estimate)", qs[i], short)})
	}
	add := func(m Metric) *metric {
		if len(m.ShortHelp) > MaxStringLen {
			m.ShortHelp = m.ShortHelp[:MaxStringLen]
		}
		mt, err := r.addMetricLocked(m, true)
		if err != nil {
			panic(err)
		}
		return mt
	}
	g.bucketM = add(Metric{Name: name + ".bucket", Type: Uint64, Semantics: SemCounter, Units: Count, Indom: g.bucketIn.Serial,
		ShortHelp: "observations by bucket of " + short, LongHelp: "Instances are the buckets' upper bounds; counts are per bucket, not cumulative."})
	for _, s := range stats {
		g.statM = append(g.statM, add(Metric{Name: name + "." + s.part, Type: s.typ, Semantics: s.sem, Units: s.units, Indom: statIndom, ShortHelp: s.help}))
		g.stats = append(g.stats, s.part)
	}
	if !g.vec {
		g.makeLocked("", 0)
	}
	r.onStart = append(r.onStart, g.refresh)
	r.onClose = append(r.onClose, g.refresh)
	if r.state == started {
		g.refresh()
	}
	r.pollLocked(opts.Interval, g.refresh)
	return g
}

// bucketNames are the bucket instances of a vector's instance.
func (g *histGroup) bucketNames(inst string) []string {
	names := make([]string, len(g.bounds))
	for i, b := range g.bounds {
		names[i] = inst + ":" + b
	}
	return names
}

// declareLocked adds a vector's instance id: to the statistics' indom, and its
// buckets, ids id*buckets and up, to the buckets' indom. Called with the
// registry's lock held.
func (g *histGroup) declareLocked(name string, id int32) (bool, error) {
	subject := "vector " + quote(g.name) + " instance " + quote(name)
	for i := 0; i < len(name); i++ {
		if name[i] == ' ' {
			return false, errorf(ErrName, subject, "a histogram vector's instance has no space: its buckets, told apart up to the first space, would be alike")
		}
	}
	buckets := make([]Instance, len(g.bounds))
	for i, b := range g.bucketNames(name) {
		if err := checkInstanceName(subject+" bucket "+quote(b), b); err != nil {
			return false, err
		}
		buckets[i] = Instance{ID: id*int32(len(g.bounds)) + int32(i), Name: b}
	}
	added, err := declareInstancesLocked(g.r, g.statIndom, Instance{ID: id, Name: name})
	if err != nil {
		return added, err
	}
	_, err = declareInstancesLocked(g.r, g.bucketIn, buckets...)
	return true, err
}

// makeLocked makes the histogram of an instance, whose values are bound as soon
// as they have storage. Called with the registry's lock held.
func (g *histGroup) makeLocked(name string, id int32) (*Histogram, error) {
	o := &histOut{h: newHistogram(g.l, g.units), inst: name, bucket: make([]*Value, len(g.bounds)), stats: make([]*Value, len(g.stats))}
	stat, firstBucket := 0, 0
	if g.vec {
		stat, firstBucket = g.statIndom.ids[id], g.bucketIn.ids[id*int32(len(g.bounds))]
	}
	bind := func(to *[]*Value, i int) func(*Value) {
		return func(v *Value) {
			g.mu.Lock()
			(*to)[i] = v
			g.mu.Unlock()
		}
	}
	for i := range o.bucket {
		g.r.bindValueLocked(g.bucketM, firstBucket+i, bind(&o.bucket, i))
	}
	for i, m := range g.statM {
		g.r.bindValueLocked(m, stat, bind(&o.stats, i))
	}
	g.mu.Lock()
	g.hs = append(g.hs, o)
	g.mu.Unlock()
	return o.h, nil
}

// refresh copies the histograms' state into the file.
func (g *histGroup) refresh() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, o := range g.hs {
		h := o.h
		var total uint64
		for j := range h.counts {
			c := h.counts[j].Load()
			h.snap[j] = c
			total += c
		}
		for j, c := range h.snap {
			o.bucket[j].Set(int64(c))
		}
		o.stats[0].Set(int64(total))
		sum := math.Float64frombits(h.sum.Load())
		o.stats[1].SetFloat(sum)
		if total == 0 {
			continue
		}
		lo, hi := math.Float64frombits(h.min.Load()), math.Float64frombits(h.max.Load())
		o.stats[2].SetFloat(lo)
		o.stats[3].SetFloat(hi)
		o.stats[4].SetFloat(sum / float64(total))
		for k, q := range g.quantiles {
			o.stats[5+k].SetFloat(h.quantile(h.snap, total, q, lo, hi))
		}
	}
}

// NewHistogram declares a histogram on r (Default when nil), observing
// values in units; o may be nil for the defaults. See Histogram for the
// metrics it publishes.
// It panics if the registry refuses the declaration: invalid options, an invalid
// or duplicate name, or a closed registry (the panic value wraps the sentinel,
// such as ErrName). A full disk is no refusal (see the package doc).
func NewHistogram(r *Registry, name, help string, units Units, o *HistogramOptions) *Histogram {
	return declareHistograms(r, name, help, units, o, nil).hs[0].h
}

// NewHistogramVec declares a vector of histograms on r (Default when nil),
// one per instance, sharing options o (nil for the defaults); more are
// added on first use (see Vec). The statistics (name.count, name.p99...)
// are over the vector's instances; name.bucket is over an indom of
// instance:bound pairs, such as "/api:0.00109863", to which a new instance
// adds one pair per bucket. As those pairs are told apart up to the first
// space, the instance names of a histogram vector have no space.
// It panics if the registry refuses the declaration: invalid options, an invalid
// or duplicate name or instance, or a closed registry (the panic value wraps
// the sentinel, such as ErrName).
func NewHistogramVec(r *Registry, name, help string, units Units, o *HistogramOptions, instances ...string) *Vec[Histogram] {
	if instances == nil {
		instances = []string{}
	}
	g := declareHistograms(registry(r), name, help, units, o, instances)
	g.r.mu.Lock()
	defer g.r.mu.Unlock()
	return newVec(g.r, name, vecKind[Histogram](g), instances)
}
