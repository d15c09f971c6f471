package otelexporter

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/bridge"
)

// Writing one export's data points into the instruments' metrics: every
// value is stored in the registry before Export returns, so nothing of the
// SDK's data, which it reuses, is kept.

// known reports whether the point of attribute set set, of shown set s
// (nil when the set has a key the instrument has no label for), is one the
// instrument writes, counting it as dropped in d when not.
func (in *instrument) known(d *drops, s *shownSet, set *attribute.Set) bool {
	if s == nil {
		in.drop(d, dropAttributes, 1, in.keysError(*set))
	}
	return s != nil
}

// valuesOf returns the label values of an attribute set, in in.values:
// each key's value as OpenTelemetry prints it, "" for a key the set lacks;
// extra is whether the set has a key the instrument has no label for.
func (in *instrument) valuesOf(set attribute.Set) (values []string, extra bool) {
	values = in.values[:len(in.keys)]
	clear(values)
	i := 0
	for it := set.Iter(); it.Next(); {
		kv := it.Attribute()
		for i < len(in.keys) && in.keys[i] < kv.Key {
			i++
		}
		if i == len(in.keys) || in.keys[i] != kv.Key {
			extra = true
			continue
		}
		values[i] = kv.Value.Emit()
	}
	return values, extra
}

// total returns a recorded total as a counter's value: an int64 as it is,
// a float64 in the instrument's fine units; ok is false when a counter
// cannot hold it.
func total[N int64 | float64](v N, factor float64) (uint64, bool) {
	switch x := any(v).(type) {
	case int64:
		return uint64(x), x >= 0
	default:
		return bridge.Count(float64(v), factor)
	}
}

// writeSums stores the points of a sum or gauge in in's metrics.
func writeSums[N int64 | float64](d *drops, in *instrument, pts []metricdata.DataPoint[N]) {
	ps := in.pointSets(in.gen, sets(pts, func(p *metricdata.DataPoint[N]) attribute.Set { return p.Attributes }))
	defer clear(ps)
	if !in.continues {
		in.leaveAbsent(in.gen)
	}
	for i := range pts {
		p, s := &pts[i], ps[i]
		if !in.known(d, s, &p.Attributes) || in.collided(d, s, &p.Attributes) {
			continue
		}
		values := s.values
		var err error
		switch in.kind {
		case kindCounter, kindFloatCounter:
			n, ok := total(p.Value, in.factor)
			var m *member
			if s.merging() {
				if m = in.memberOf(s, &p.Attributes); m == nil {
					continue
				}
			}
			if !ok {
				err := fmt.Errorf("otelexporter: %s: value %v is not a counter's", in.owner, p.Value)
				if m != nil {
					s.fail(dropValue, err)
					continue
				}
				in.removeSet(s)
				in.drop(d, dropValue, 1, err)
				continue
			}
			if m != nil {
				m.n = n
				continue
			}
			err = in.storeCounter(s, n)
		case kindIntGauge:
			g, gerr := in.ints.Get(values)
			g.Set(int64(p.Value))
			err = gerr
		case kindGauge:
			g, gerr := in.gauges.Get(values)
			g.Set(float64(p.Value))
			err = gerr
		}
		if err != nil {
			in.refused(d, err)
		}
	}
	in.writeMerged(d)
}

// storeCounter stores the total n of s, and returns the registry's
// refusal.
func (in *instrument) storeCounter(s *shownSet, n uint64) error {
	c, err := in.counters.Get(s.values)
	c.Set(n)
	s.written = err == nil
	return err
}

// writeHistograms stores the points of an explicit-bucket histogram in
// in's metrics.
func writeHistograms[N int64 | float64](d *drops, in *instrument, pts []metricdata.HistogramDataPoint[N]) {
	ps := in.pointSets(in.gen, sets(pts, func(p *metricdata.HistogramDataPoint[N]) attribute.Set { return p.Attributes }))
	defer clear(ps)
	if !in.continues {
		in.leaveAbsent(in.gen)
	}
	for i := range pts {
		p, s := &pts[i], ps[i]
		if !in.known(d, s, &p.Attributes) || in.collided(d, s, &p.Attributes) {
			continue
		}
		var m *member
		if s.merging() {
			if m = in.memberOf(s, &p.Attributes); m == nil {
				continue
			}
		}
		err := malformed(p)
		sum, ok := total(p.Sum, in.factor)
		if err == nil && !ok {
			err = fmt.Errorf("sum %v is not a counter's", p.Sum)
		}
		if err != nil {
			err = fmt.Errorf("otelexporter: %s: %w", in.owner, err)
			if m != nil {
				s.fail(dropValue, err)
				continue
			}
			in.removeSet(s)
			in.drop(d, dropValue, 1, err)
			continue
		}
		h := histValues{count: p.Count, sum: sum, counts: p.BucketCounts, les: in.lesOf(p.Bounds)}
		if in.minmax {
			lo, hasMin := p.Min.Value()
			hi, hasMax := p.Max.Value()
			h.min, h.max, h.hasMin, h.hasMax = float64(lo), float64(hi), hasMin, hasMax
		}
		if m != nil {
			m.set(h)
			s.members.les = h.les
			continue
		}
		in.storeHistogram(d, s, h)
	}
	in.writeMerged(d)
}

// histValues are the values of a histogram's instance: its count, sum
// (in counter units), bucket counts by le of les, and min and max when
// it has them.
type histValues struct {
	count, sum     uint64
	counts         []uint64
	les            []string
	min, max       float64
	hasMin, hasMax bool
}

// storeHistogram stores h, the values of s, in every metric of in: whole
// or not at all, the set leaving PCP when the registry refuses one of
// its instances (ok false).
func (in *instrument) storeHistogram(d *drops, s *shownSet, h histValues) (ok bool) {
	values := in.values[:len(in.keys)]
	copy(values, s.values) // in.values, whose next word is the le of bv below
	var errs [5]error
	var c *mmv.Counter
	c, errs[0] = in.counters.Get(values)
	c.Set(h.count)
	c, errs[1] = in.sums.Get(values)
	c.Set(h.sum)
	if in.minmax && h.hasMin {
		g, err := in.min.Get(values)
		g.Set(h.min)
		errs[2] = err
		s.hasMin = true
	}
	if in.minmax && h.hasMax {
		g, err := in.max.Get(values)
		g.Set(h.max)
		errs[3] = err
		s.hasMax = true
	}
	if in.minmax && !(h.hasMin && h.hasMax) {
		in.lackExtrema(d, s, !h.hasMin, !h.hasMax)
	}
	in.retireBuckets(s, h.les)
	in.raiseBuckets(len(h.counts))
	bv := in.values[:len(in.keys)+1]
	for j, n := range h.counts {
		bv[len(in.keys)] = h.les[j]
		b, err := in.buckets.Get(bv...)
		b.Set(n)
		if err != nil {
			errs[4] = err
		}
	}
	if s.written = errs == [5]error{}; s.written {
		return true
	}
	// A point is in PCP whole or not at all: not a count without its
	// buckets.
	in.removeSet(s)
	for _, err := range errs {
		if err != nil {
			in.refused(d, err)
		}
	}
	return false
}

// malformed says why a histogram point cannot be stored as it is, nil
// when it can: the SDK's points always can, a Producer's (a bridge
// converting another library's histograms) may not. A point has one
// bucket count per bound and one for +Inf (more indexed past the le
// names, fewer left buckets out), bounds that increase (not NaN, not
// +Inf, which is the last bucket's: two buckets of one le wrote over
// each other) and a count that is the sum of its bucket counts (PCP
// showed a count its buckets contradict).
func malformed[N int64 | float64](p *metricdata.HistogramDataPoint[N]) error {
	if len(p.BucketCounts) != len(p.Bounds)+1 {
		return fmt.Errorf("a histogram point of %d bucket counts for %d bounds (one per bound and one for +Inf): dropped", len(p.BucketCounts), len(p.Bounds))
	}
	for i, b := range p.Bounds {
		if math.IsNaN(b) || math.IsInf(b, 1) || i > 0 && !(b > p.Bounds[i-1]) {
			return fmt.Errorf("a histogram point of bounds %v, which do not increase to a finite last bound: dropped", p.Bounds)
		}
	}
	var sum uint64
	for _, n := range p.BucketCounts {
		if sum+n < sum {
			return fmt.Errorf("a histogram point whose bucket counts overflow a uint64: dropped")
		}
		sum += n
	}
	if sum != p.Count {
		return fmt.Errorf("a histogram point of count %d whose bucket counts sum to %d: dropped", p.Count, sum)
	}
	return nil
}

// lackExtrema takes the min (noMin), the max (noMax) or both of set s out
// of PCP, for a point that has none (a Producer's): kept, they showed the
// point before's as this one's. A singular metric shows no value on a
// registry with the Sentinel flag; without it, it keeps its last value,
// named for the collection.
func (in *instrument) lackExtrema(d *drops, s *shownSet, noMin, noMax bool) {
	what := "min and max"
	switch {
	case !noMax:
		what = "min"
	case !noMin:
		what = "max"
	}
	for _, m := range []struct {
		lack bool
		g    bridge.Metric[mmv.Gauge]
		has  *bool
	}{{noMin, in.min, &s.hasMin}, {noMax, in.max, &s.hasMax}} {
		switch {
		case !m.lack:
		case len(in.keys) > 0:
			m.g.Remove(s.values)
		case bridge.Withdraws(in.r):
			m.g.Withdraw()
		default:
			d.add(in.owner, "extrema", 0, fmt.Errorf("otelexporter: %s: a point without %s%s", in.owner, what, in.kept()))
		}
		if m.lack {
			*m.has = false
		}
	}
}

// withdraws reports whether a metric of in that loses its value shows
// none: a singular metric (a vector's instances leave) on a registry with
// the Sentinel flag.
func (in *instrument) withdraws() bool { return len(in.keys) == 0 && bridge.Withdraws(in.r) }

// kept says, for an instrument of singular metrics on a registry without
// the Sentinel flag, that PCP shows their last values when a point is
// dropped.
func (in *instrument) kept() string {
	if len(in.keys) > 0 || in.withdraws() {
		return ""
	}
	return "; PCP cannot withdraw a singular metric from a registry without the mmv.Sentinel flag: it shows the last value stored"
}

// drop counts n points of in dropped for why, err saying why. Every drop
// of a point of in, and every refusal (refused), goes through here, so
// that each says of a singular metric that keeps its last value that it
// does (kept): named at a few call sites only, a gauge's point of a key
// it has no label for, a histogram's buckets the registry refused and
// two points of one set were named as if PCP showed nothing.
func (in *instrument) drop(d *drops, why reason, n int, err error) {
	d.drop(why, n, in.owner, in.keep(err))
}

// refused names a point of in the registry refused (and counted), err
// its refusal.
func (in *instrument) refused(d *drops, err error) {
	d.refused(in.owner, in.keep(fmt.Errorf("otelexporter: %s: %w", in.owner, err)))
}

// keep returns err, the drop of a point of in, saying what PCP shows in
// its place (kept).
func (in *instrument) keep(err error) error {
	if k := in.kept(); k != "" {
		return fmt.Errorf("%w%s", err, k)
	}
	return err
}

// removeSet takes the instances of set s out of every metric of in, so
// that a point dropped shows neither an old value nor a part of itself. A
// set that leaves forgets its members (merge.go): back, it starts anew.
// A singular metric cannot leave: on a registry with the Sentinel flag it
// shows no value and forgets its members as a set that leaves does;
// without it, it keeps its last value, and its members, and a counter
// what it shows, so that its next value, which the last one stays in PCP
// until, counts them. Its buckets leave either way.
func (in *instrument) removeSet(s *shownSet) {
	single, withdraw := len(in.keys) == 0, in.withdraws()
	s.written = s.written && single && !withdraw && in.buckets == nil
	s.hasMin, s.hasMax = false, false
	if !single || withdraw {
		s.members = nil
	}
	if withdraw {
		for _, m := range []bridge.Metric[mmv.Counter]{in.counters, in.sums} {
			m.Withdraw()
		}
		in.ints.Withdraw()
		for _, m := range []bridge.Metric[mmv.Gauge]{in.gauges, in.min, in.max} {
			m.Withdraw()
		}
	}
	in.counters.Remove(s.values)
	in.ints.Remove(s.values)
	in.gauges.Remove(s.values)
	in.sums.Remove(s.values)
	in.min.Remove(s.values)
	in.max.Remove(s.values)
	in.deleteBuckets(s, s.les, nil)
	s.les = nil
}

// retireBuckets deletes the buckets of s written at an earlier export
// whose bounds are not those of les, the point's: kept, the buckets of
// the old bounds showed beside the new ones, their counts summing past
// the count.
func (in *instrument) retireBuckets(s *shownSet, les []string) {
	if s.les != nil && !slices.Equal(s.les, les) {
		in.deleteBuckets(s, s.les, les)
	}
	s.les = les
}

// deleteBuckets deletes the bucket instances of set s at each le of les
// but those of keep.
func (in *instrument) deleteBuckets(s *shownSet, les, keep []string) {
	if in.buckets == nil {
		return
	}
	bv := append(slices.Clone(s.values), "")
	for _, le := range les {
		if !slices.Contains(keep, le) {
			bv[len(s.values)] = le
			in.buckets.Delete(bv...)
		}
	}
}

// lesOf returns the le values of buckets with upper bounds bounds, then
// +Inf; computed again only when the bounds change.
func (in *instrument) lesOf(bounds []float64) []string {
	if in.les != nil && slices.Equal(in.bounds, bounds) {
		return in.les
	}
	in.bounds = slices.Clone(bounds)
	in.les = make([]string, len(bounds)+1)
	for i, b := range bounds {
		in.les[i] = strconv.FormatFloat(b, 'g', -1, 64)
	}
	in.les[len(bounds)] = strconv.FormatFloat(math.Inf(1), 'g', -1, 64)
	return in.les
}

// keysError says why a point of attribute set set was dropped.
func (in *instrument) keysError(set attribute.Set) error {
	keys := make([]attribute.Key, 0, set.Len())
	for _, kv := range set.ToSlice() {
		keys = append(keys, kv.Key)
	}
	return fmt.Errorf("otelexporter: %s: attribute keys %q: the instrument's metrics have labels for %q only (the keys of its first export)", in.owner, keys, in.keys)
}
