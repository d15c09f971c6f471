package prombridge

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/bridge"
	"github.com/gopcp/mmv/internal/pcpname"
)

// family is one gathered metric family and its metrics in PCP.
type family struct {
	prom   string // the Prometheus name
	typ    dto.MetricType
	name   string    // the PCP name, below the file
	labels []string  // the label names as gathered
	err    error     // why the family is not published; nil when it is
	reason reason    // and its reason
	retry  bool      // err may pass: declared again at the next refresh that gathers it
	tried  uint64    // Stats.Refreshes when last declared: once per refresh
	stale  bool      // its singular metrics keep an old value (no Sentinel flag): Err names it
	units  mmv.Units // the family's, as declared (Options.Units)
	scale  float64   // from the family's units to its integer counter's (a counter's value, a sum)
	limit  int       // series in a vector
	per    int       // the most buckets or quantiles of a series: the vector's limit is limit*per

	value     bridge.Metric[mmv.Counter] // a counter's, a histogram's or summary's sum
	gauge     bridge.Metric[mmv.Gauge]   // a gauge's or untyped's
	count     bridge.Metric[mmv.Counter] // a histogram's or summary's
	buckets   *mmv.Vec[mmv.Counter]      // a histogram's, labels and le
	quantiles *mmv.Vec[mmv.Gauge]        // a summary's, labels and quantile

	series seriesTable
}

// Help texts of the metrics a family is split into; the short help is the
// family's.
const (
	bucketHelp   = "Observations at most le, cumulative (Prometheus _bucket), by the family's labels and le; le=+Inf counts all."
	sumHelp      = "Sum of the observations (Prometheus _sum)."
	countHelp    = "Number of observations (Prometheus _count)."
	quantileHelp = "Quantiles of the observations, by the family's labels and quantile."
)

// declare declares the family's metrics on r, of a type bridged, each
// vector holding at most limit series, all of them or, when the registry refuses one, none: it
// returns the refusal.
func (f *family) declare(r *mmv.Registry, text string, units mmv.Units, limit int, m *dto.Metric) error {
	err := bridge.Transact(r, func(tx *mmv.Tx, taken []string) error {
		f.undeclared() // tried again: on the registry's labels added meanwhile
		return f.declareOn(tx, text, units, limit, m, taken)
	})
	if err != nil {
		f.undeclared()
	}
	return err
}

// undeclared forgets the metrics of f a transaction undid: a retry
// starts afresh (raiseLimit sets a new vector's limit only above per).
func (f *family) undeclared() {
	f.value, f.gauge, f.count, f.buckets, f.quantiles, f.per = bridge.Metric[mmv.Counter]{}, bridge.Metric[mmv.Gauge]{}, bridge.Metric[mmv.Counter]{}, nil, nil, 0
}

// declareOn is declare within the transaction d, on a registry whose
// labels are named taken.
func (f *family) declareOn(d mmv.Declarer, text string, units mmv.Units, limit int, m *dto.Metric, taken []string) (err error) {
	// A histogram's buckets and a summary's quantiles are a vector of the
	// family's labels and one more, renamed alike: a registry labelled
	// quantile refused every summary (TestFamilyLabelNamedAsRegistrysExported).
	// AddLabel refuses le.
	extra := ""
	switch f.typ {
	case dto.MetricType_HISTOGRAM:
		extra = "le"
	case dto.MetricType_SUMMARY:
		extra = "quantile"
	}
	all := pcpLabels(f.labels, extra, taken)
	labels := all[:len(f.labels):len(f.labels)]
	f.units, f.limit = units, limit
	switch f.typ {
	case dto.MetricType_COUNTER:
		var intUnits mmv.Units
		intUnits, f.scale = integral(units)
		f.value, err = bridge.Declare[mmv.Counter](d, f.name, help(text, ""), intUnits, labels, limit)
	case dto.MetricType_GAUGE, dto.MetricType_UNTYPED:
		f.gauge, err = bridge.Declare[mmv.Gauge](d, f.name, help(text, ""), units, labels, limit)
	case dto.MetricType_HISTOGRAM:
		if f.buckets, err = mmv.DeclareVec[mmv.Counter](d, f.name+".bucket", help(text, bucketHelp), mmv.Count, all...); err != nil {
			return err
		}
		// The names carry le: a label per bucket would spend the file's
		// label budget (255 records) on one histogram.
		f.buckets.SetInstanceLabels(false)
		f.raiseLimit(f.buckets, len(bounds(m)))
		err = f.declareTotals(d, text, units, labels, limit)
	case dto.MetricType_SUMMARY:
		if f.quantiles, err = mmv.DeclareVec[mmv.Gauge](d, f.name+".quantile", help(text, quantileHelp), units, all...); err != nil {
			return err
		}
		f.raiseLimit(f.quantiles, max(1, len(m.GetSummary().GetQuantile())))
		err = f.declareTotals(d, text, units, labels, limit)
	default:
		return fmt.Errorf("type %s is not bridged", f.typ)
	}
	return err
}

// pcpLabels returns the PCP label names of the Prometheus label names
// ls, then of extra (le, quantile) when not "", on a registry whose
// labels are named taken (pcpname.Labels): each made a PCP name part,
// but one that taken has made exported_<name>, as a Prometheus scrape
// renames a series' label that a target label has (exported_exported_
// when that is taken, and so on), as is one of two that make one label
// (UTF-8 names a.b and a_b; _a and x_a), but the one spelt as it. mmv
// refuses a vector labelled as its registry, or given a label twice, and
// the family was skipped at every refresh: go_info's label version on a
// registry labelled with the program's version, a.b beside a_b
// (TestFamilyLabelNamedAsRegistrysExported). extra is renamed for taken
// alone: a family label le (a const histogram's) stays beside it, and
// mmv refuses the family, whose buckets would have le twice.
func pcpLabels(ls []string, extra string, taken []string) []string {
	out := pcpname.Labels(ls, taken)
	if extra == "" {
		return out
	}
	if slices.Contains(taken, extra) {
		extra = pcpname.Unclash(pcpname.Exported+extra, func(n string) bool { return slices.Contains(taken, n) || slices.Contains(out, n) })
	}
	return append(out, extra)
}

// fits returns nil when old, a closed bridge's family declared under
// f's PCP name, is f as this bridge would declare it: the same family
// (Prometheus name and type), label names and units. Otherwise it
// returns why, wrapping mmv.ErrDuplicate: mmv cannot undeclare old's
// metrics to declare f's, and PCP would show another source's values
// under old's help.
func (f *family) fits(old *family, units mmv.Units) error {
	if old.prom == f.prom && old.typ == f.typ && slices.Equal(old.labels, f.labels) && old.units == units {
		return nil
	}
	return fmt.Errorf("%w: a closed bridge of this registry and prefix declared it for %s, where this is %s, and mmv cannot undeclare a metric",
		mmv.ErrDuplicate, old.describe(old.units), f.describe(units))
}

// describe names f's family, type and label names, in units: both sides
// of a mismatch, for an error that named the closed bridge's alone read
// like a match.
func (f *family) describe(units mmv.Units) string {
	return fmt.Sprintf("family %s, a %s of labels %q in %s", f.prom, strings.ToLower(f.typ.String()), f.labels, unitsName(units))
}

// adopt makes f, not declared, publish through the metrics of old, a
// closed bridge's family that fits it, each vector holding at most limit
// series (m is f's first metric, as declare's).
func (f *family) adopt(old *family, limit int, m *dto.Metric) {
	f.units, f.scale, f.limit, f.per = old.units, old.scale, limit, 0
	f.value, f.gauge, f.count, f.buckets, f.quantiles = old.value, old.gauge, old.count, old.buckets, old.quantiles
	f.value.SetLimit(limit)
	f.gauge.SetLimit(limit)
	f.count.SetLimit(limit)
	switch f.typ {
	case dto.MetricType_HISTOGRAM:
		f.raiseLimit(f.buckets, len(bounds(m)))
	case dto.MetricType_SUMMARY:
		f.raiseLimit(f.quantiles, max(1, len(m.GetSummary().GetQuantile())))
	}
}

// unitsName names u as pminfo does: "none" for dimensionless.
func unitsName(u mmv.Units) string {
	if s := u.String(); s != "" {
		return s
	}
	return "none"
}

// raiseLimit makes room in v, a vector of buckets or quantiles, for n of
// them per series, when no series had that many.
func (f *family) raiseLimit(v interface{ SetLimit(int) }, n int) {
	if n > f.per {
		f.per = n
		v.SetLimit(f.limit * n)
	}
}

// bridged reports whether the bridge publishes families of type t.
func bridged(t dto.MetricType) bool {
	switch t {
	case dto.MetricType_COUNTER, dto.MetricType_GAUGE, dto.MetricType_UNTYPED, dto.MetricType_HISTOGRAM, dto.MetricType_SUMMARY:
		return true
	}
	return false
}

// declareTotals declares the sum and count of a histogram or summary of
// units, the sum in fine units.
func (f *family) declareTotals(d mmv.Declarer, text string, units mmv.Units, labels []string, limit int) (err error) {
	sumUnits, scale := fine(units)
	f.scale = scale
	long := sumHelp
	if sumUnits != units {
		long += fmt.Sprintf(" Kept as an integer counter of %q.", sumUnits.String())
	}
	if f.value, err = bridge.Declare[mmv.Counter](d, f.name+".sum", help(text, long), sumUnits, labels, limit); err != nil {
		return err
	}
	f.count, err = bridge.Declare[mmv.Counter](d, f.name+".count", help(text, countHelp), mmv.Count, labels, limit)
	return err
}

// labelValues appends the label values of m to values, in the family's
// order; ok is false when m's label names are not the family's.
func (f *family) labelValues(m *dto.Metric, values []string) (_ []string, ok bool) {
	if len(m.Label) != len(f.labels) {
		return values, false
	}
	for i, l := range m.Label {
		if l.GetName() != f.labels[i] {
			return values, false
		}
		values = append(values, l.GetValue())
	}
	return values, true
}

// update copies m into the instruments of s, binding them first when s is
// new or its buckets or quantiles changed.
func (f *family) update(s *series, m *dto.Metric) error {
	if err := holds(f.typ, m); err != nil {
		return err
	}
	total, ok := f.total(m)
	if !ok {
		return fmt.Errorf("%w: %v", errValue, total)
	}
	switch f.typ {
	case dto.MetricType_COUNTER:
		if s.counter == nil {
			var err error
			if s.counter, err = f.value.Get(s.values); err != nil {
				return err
			}
		}
		s.counter.Set(uint64(total))
	case dto.MetricType_GAUGE, dto.MetricType_UNTYPED:
		if s.gauge == nil {
			var err error
			if s.gauge, err = f.gauge.Get(s.values); err != nil {
				return err
			}
		}
		if f.typ == dto.MetricType_GAUGE {
			s.gauge.Set(m.GetGauge().GetValue())
		} else {
			s.gauge.Set(m.GetUntyped().GetValue())
		}
	case dto.MetricType_HISTOGRAM:
		h := m.GetHistogram()
		count, ok := countOf(h.GetSampleCount(), h.GetSampleCountFloat())
		for _, b := range h.Bucket {
			if _, bok := countOf(b.GetCumulativeCount(), b.GetCumulativeCountFloat()); !bok {
				ok = false
			}
		}
		if !ok {
			return fmt.Errorf("%w: a count of a histogram of float counts", errValue)
		}
		if err := f.bindTotals(s); err != nil {
			return err
		}
		if !sameBounds(s.bounds, h) {
			if err := f.bindBuckets(s, bounds(m)); err != nil {
				return err
			}
		}
		for i, b := range h.Bucket {
			n, _ := countOf(b.GetCumulativeCount(), b.GetCumulativeCountFloat())
			s.buckets[i].Set(n)
		}
		if len(s.buckets) > len(h.Bucket) {
			s.buckets[len(h.Bucket)].Set(count)
		}
		s.counter.Set(uint64(total))
		s.count.Set(count)
	case dto.MetricType_SUMMARY:
		q := m.GetSummary()
		if err := f.bindTotals(s); err != nil {
			return err
		}
		if !sameQuantiles(s.bounds, q) {
			if err := f.bindQuantiles(s, q); err != nil {
				return err
			}
		}
		for i, x := range q.Quantile {
			s.quantiles[i].Set(x.GetValue())
		}
		s.counter.Set(uint64(total))
		s.count.Set(q.GetSampleCount())
	}
	return nil
}

// countOf returns a histogram's count, given as an integer n or, when n
// is 0, as a float f (a histogram of float counts), rounded; ok is false
// for a float count no PCP counter holds, as for totals.
func countOf(n uint64, f float64) (count uint64, ok bool) {
	if n != 0 || f == 0 {
		return n, true
	}
	f = math.Round(f)
	if !(f >= 0 && f < math.MaxUint64) {
		return 0, false
	}
	return uint64(f), true
}

// errType is the error of a metric without the value of its family's
// type: a Gatherer's own families (client_golang's Registry checks them,
// a GathererFunc does not), which promhttp's encoder refuses too.
var errType = errors.New("not of its family's type")

// holds returns nil when m holds the value of type t, a type bridged, and
// errType saying what m holds otherwise. Only that value is read: another
// one beside it is ignored, as the exposition formats do.
func holds(t dto.MetricType, m *dto.Metric) error {
	var ok bool
	switch t {
	case dto.MetricType_COUNTER:
		ok = m.Counter != nil
	case dto.MetricType_GAUGE:
		ok = m.Gauge != nil
	case dto.MetricType_UNTYPED:
		ok = m.Untyped != nil
	case dto.MetricType_HISTOGRAM:
		ok = m.Histogram != nil
	case dto.MetricType_SUMMARY:
		ok = m.Summary != nil
	}
	if ok {
		return nil
	}
	var held []string
	for _, v := range []struct {
		set  bool
		name string
	}{{m.Counter != nil, "counter"}, {m.Gauge != nil, "gauge"}, {m.Untyped != nil, "untyped"}, {m.Histogram != nil, "histogram"}, {m.Summary != nil, "summary"}} {
		if v.set {
			held = append(held, v.name)
		}
	}
	if len(held) == 0 {
		held = append(held, "no value")
	}
	kind := strings.ToLower(t.String())
	return fmt.Errorf("%w: a %s family's metric holds no %s value (it holds %s)", errType, kind, kind, strings.Join(held, ", "))
}

// errValue is the error of a series whose total no PCP counter holds.
var errValue = errors.New("not a value a PCP counter holds (negative, not finite, or 2^64 and beyond)")

// total returns the total of m in the family's integer counter units,
// rounded (a counter's value, a histogram's or summary's sum), and whether
// a PCP counter holds it: not negative, finite, below 2^64, whose all-ones
// value PCP reads as no value. ok is true for gauges, copied as they are.
func (f *family) total(m *dto.Metric) (v float64, ok bool) {
	switch f.typ {
	case dto.MetricType_COUNTER:
		v = m.GetCounter().GetValue()
	case dto.MetricType_HISTOGRAM:
		v = m.GetHistogram().GetSampleSum()
	case dto.MetricType_SUMMARY:
		v = m.GetSummary().GetSampleSum()
	default:
		return 0, true
	}
	v = math.Round(v * f.scale)
	return v, v >= 0 && v < math.MaxUint64
}

// bindTotals binds the sum and count of a histogram or summary series.
func (f *family) bindTotals(s *series) error {
	if s.count != nil {
		return nil
	}
	sum, err := f.value.Get(s.values)
	if err != nil {
		return err
	}
	count, err := f.count.Get(s.values)
	if err != nil {
		return err
	}
	s.counter, s.count = sum, count
	return nil
}

// bounds returns the upper bounds of a histogram's buckets, +Inf last as
// the exposition formats add it when the gathered buckets lack it.
func bounds(m *dto.Metric) []float64 {
	bs := m.GetHistogram().GetBucket()
	out := make([]float64, 0, len(bs)+1)
	for _, b := range bs {
		out = append(out, b.GetUpperBound())
	}
	if len(out) == 0 || !math.IsInf(out[len(out)-1], 1) {
		out = append(out, math.Inf(1))
	}
	return out
}

// sameBounds reports whether bound, the bounds a series is bound to, are
// those of h as bounds returns them: +Inf last, added when h lacks it (a
// histogram of no classic bucket has +Inf alone).
func sameBounds(bound []float64, h *dto.Histogram) bool {
	n := len(h.Bucket)
	if n == 0 || !math.IsInf(h.Bucket[n-1].GetUpperBound(), 1) {
		n++
	}
	if len(bound) != n || !math.IsInf(bound[n-1], 1) {
		return false
	}
	for i, b := range h.Bucket {
		if b.GetUpperBound() != bound[i] {
			return false
		}
	}
	return true
}

// sameQuantiles reports whether the quantiles s is bound to are q's.
func sameQuantiles(bound []float64, q *dto.Summary) bool {
	if len(bound) != len(q.Quantile) {
		return false
	}
	for i, x := range q.Quantile {
		if x.GetQuantile() != bound[i] {
			return false
		}
	}
	return true
}

// bindBuckets binds s to the buckets of upper bounds bs; its buckets of
// other bounds (a family registered again with other buckets) leave PCP.
func (f *family) bindBuckets(s *series, bs []float64) error {
	f.raiseLimit(f.buckets, len(bs))
	cs, err := rebind(f.buckets, s.values, s.bounds, bs)
	if err != nil {
		return err
	}
	s.bounds, s.buckets = bs, cs
	return nil
}

// bindQuantiles binds s to the quantiles of q; its other quantiles leave
// PCP.
func (f *family) bindQuantiles(s *series, q *dto.Summary) error {
	qs := make([]float64, len(q.Quantile))
	for i, x := range q.Quantile {
		qs[i] = x.GetQuantile()
	}
	f.raiseLimit(f.quantiles, len(qs))
	gs, err := rebind(f.quantiles, s.values, s.bounds, qs)
	if err != nil {
		return err
	}
	s.bounds, s.quantiles = qs, gs
	return nil
}

// rebind returns the instruments of v for the label values followed by
// each of bs, as the exposition formats write le and quantile, after
// deleting the instances of the bounds of old not in bs (first, so that
// they leave room under the vector's limit). On an error, none of bs's
// instances stays either.
func rebind[T any](v *mmv.Vec[T], values []string, old, bs []float64) ([]*T, error) {
	vs := append(values[:len(values):len(values)], "")
	for _, b := range old {
		if !slices.ContainsFunc(bs, func(x float64) bool { return formatBound(x) == formatBound(b) }) {
			vs[len(values)] = formatBound(b)
			v.Delete(vs...)
		}
	}
	out := make([]*T, len(bs))
	for i, b := range bs {
		vs[len(values)] = formatBound(b)
		t, err := v.Get(vs...)
		if err != nil {
			for _, b := range bs[:i] {
				vs[len(values)] = formatBound(b)
				v.Delete(vs...)
			}
			return nil, err
		}
		out[i] = t
	}
	return out, nil
}

// formatBound writes a bucket bound or quantile as Prometheus's text
// format does.
func formatBound(b float64) string {
	if math.IsInf(b, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(b, 'g', -1, 64)
}

// withdraw shows the singular metrics of f as no value, on a registry with
// the Sentinel flag (bridge.Metric.Withdraw).
func (f *family) withdraw() {
	f.value.Withdraw()
	f.count.Withdraw()
	f.gauge.Withdraw()
}

// removeSeries takes s out of PCP, and reports whether it was in a vector.
func (f *family) removeSeries(s *series) bool {
	removed := f.value.Remove(s.values)
	removed = f.gauge.Remove(s.values) || removed
	removed = f.count.Remove(s.values) || removed
	vs := append(s.values[:len(s.values):len(s.values)], "")
	for _, b := range s.bounds {
		vs[len(s.values)] = formatBound(b)
		if f.buckets != nil {
			removed = f.buckets.Delete(vs...) || removed
		}
		if f.quantiles != nil {
			removed = f.quantiles.Delete(vs...) || removed
		}
	}
	return removed
}
