package otelexporter

import (
	"fmt"
	"iter"
	"math"
	"slices"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
)

// Points whose attribute sets have keys the instrument has no label for
// (keys first exported after its first export, such as the semantic
// conventions' error.type, set on failed requests only) are added into
// the instance of their other attributes where totals add up: a
// counter's, and a histogram's buckets, count and sum, its min and max
// the least and greatest, as a View dropping those keys would add them.
// Dropped, they left the failed requests out of every total until the
// process restarted. A gauge's and an up-down counter's points are
// dropped, counted: levels do not add up.
//
// Each attribute set of such an instance is a member, whose last values
// the instance keeps, and it shows their sum: whichever batch of a
// collection (sdkmetric.WithMaxExportBatchSize) brings which member, so
// that a total never goes down, which PCP would read as a counter wrap.
// A member absent from a collection (an observable instrument's set not
// observed then) keeps its last values in the instance's totals, and
// comes back exact. Only past maxMembers members of an instance (a
// request id as a late key) do those absent from a whole collection
// leave, as a set leaves PCP: their last values stay in the totals,
// folded together, not kept apart, so that members do not pile up; one
// exported again is then a new member, its values added anew, as a set
// that left PCP starts anew when it comes back (so a folded set an
// observable callback reports again with its running total counts it
// twice). Members are told
// apart by their attribute sets, as the SDK tells its series apart: an
// int 1 and a string "1" are two. A member whose point cannot be stored
// (a value no counter holds, a malformed histogram point), or members
// whose sum a counter cannot hold, take the instance out of PCP, every
// point of it counted.

// members are the attribute sets added up in an instance, and the
// bounds of the export's last histogram point added in: those its sum
// has.
type members struct {
	own    *member                        // the instance's own set (no key past the labels), or what it showed before
	others map[attribute.Distinct]*member // the sets with keys past the labels
	folded member                         // the last values of the members that left
	les    []string
}

// all yields what ms adds up: the folded values of the members that
// left, the instance's own set, the others.
func (ms *members) all() iter.Seq[*member] {
	return func(yield func(*member) bool) {
		if !yield(&ms.folded) || ms.own != nil && !yield(ms.own) {
			return
		}
		for _, m := range ms.others {
			if !yield(m) {
				return
			}
		}
	}
}

// member is one attribute set added up in an instance, its last values.
type member struct {
	pass uint64 // the export that last gave its point
	coll uint64 // the collection of that export
	n    uint64 // a counter's total
	h    histValues
}

// merges reports whether in adds up points with keys past its labels.
func (in *instrument) merges() bool {
	return in.kind == kindCounter || in.kind == kindFloatCounter || in.kind == kindHistogram || in.kind == kindFloatHistogram
}

// merging reports whether s adds up its points: one of them, in this
// export or before, had keys past the labels.
func (s *shownSet) merging() bool { return s.extra > 0 || s.members != nil }

// fail takes s out of PCP at the end of the export (writeMerged), its
// points counted for why, err saying why; the first failure is named.
func (s *shownSet) fail(why reason, err error) {
	if s.bad == nil {
		s.bad, s.why = err, why
	}
}

// memberOf returns the member of s that the point of attribute set set
// is, to be given its values, and queues s to be written (writeMerged);
// nil when another point of the export had that set (a producer's
// duplicate), which takes s out of PCP. The first member s gets holds
// what s showed, written whole before: that member may come in a later
// batch of the collection, or no more.
func (in *instrument) memberOf(s *shownSet, set *attribute.Set) *member {
	if s.queued != in.gen {
		s.queued, s.bad = in.gen, nil
		in.merged = append(in.merged, s)
	}
	ms := s.members
	if ms == nil {
		ms = &members{others: map[attribute.Distinct]*member{}}
		s.members = ms
		if s.written {
			ms.own = in.shownMember(s)
		}
	}
	var m *member
	if in.noteExtra(set) {
		d := set.Equivalent()
		if m = ms.others[d]; m == nil {
			m = &member{}
			ms.others[d] = m
		}
	} else {
		if ms.own == nil {
			ms.own = &member{}
		}
		m = ms.own
	}
	if m.pass == in.gen {
		s.fail(dropAttributes, fmt.Errorf("otelexporter: %s: two points of attribute set {%s} in one export: none copied", in.owner, set.Encoded(attribute.DefaultEncoder())))
		return nil
	}
	m.pass, m.coll = in.gen, in.coll
	return m
}

// noteExtra reports whether set has keys in has no label for, and adds
// them to the export's notes, once each.
func (in *instrument) noteExtra(set *attribute.Set) bool {
	extra := false
	for it := set.Iter(); it.Next(); {
		k := it.Attribute().Key
		if _, found := slices.BinarySearch(in.keys, k); found {
			continue
		}
		extra = true
		if !slices.Contains(in.notes, k) {
			in.notes = append(in.notes, k)
		}
	}
	return extra
}

// shownMember returns a member of the values s shows, as written whole.
func (in *instrument) shownMember(s *shownSet) *member {
	m := &member{coll: in.coll}
	c, _ := in.counters.Get(s.values)
	if in.buckets == nil {
		m.n = c.Get()
		return m
	}
	m.h.count = c.Get()
	c, _ = in.sums.Get(s.values)
	m.h.sum = c.Get()
	if s.hasMin {
		g, _ := in.min.Get(s.values)
		m.h.min, m.h.hasMin = g.Get(), true
	}
	if s.hasMax {
		g, _ := in.max.Get(s.values)
		m.h.max, m.h.hasMax = g.Get(), true
	}
	m.h.les = s.les
	bv := append(slices.Clone(s.values), "")
	for _, le := range s.les {
		bv[len(s.values)] = le
		b, _ := in.buckets.Get(bv...)
		m.h.counts = append(m.h.counts, b.Get())
	}
	return m
}

// set sets m's histogram values to h's, which it copies.
func (m *member) set(h histValues) {
	counts := append(m.h.counts[:0], h.counts...)
	m.h = h
	m.h.counts = counts
}

// writeMerged writes the sets queued by memberOf in this export, each
// the sum of its members, or takes out of PCP those it cannot write
// whole, counting their points.
func (in *instrument) writeMerged(d *drops) {
	if len(in.merged) == 0 {
		return
	}
	if len(in.notes) > 0 {
		slices.Sort(in.notes)
		if !slices.Equal(in.notes, in.noted) {
			in.noted = slices.Clone(in.notes)
			in.note = fmt.Errorf("otelexporter: %s: attribute keys %q have no label (its labels are the keys of its first export): their points are added into the instances of their other attributes", in.owner, in.noted)
		}
		// Named for the collection, as its drops are: a later batch
		// of it may not carry the key.
		d.add(in.owner, "merged", 0, in.note)
		in.notes = in.notes[:0]
	}
	for _, s := range in.merged {
		var ok bool
		if s.bad == nil {
			ok = in.storeMerged(d, s)
		}
		if s.bad != nil {
			in.removeSet(s)
			in.drop(d, s.why, s.points, s.bad)
			continue
		}
		// The registry counted one point refused; the others are counted
		// here.
		if !ok && s.points > 1 {
			in.drop(d, dropAttributes, s.points-1, fmt.Errorf("otelexporter: %s: %d points added into one instance of label values %q, which the registry refused", in.owner, s.points, s.values))
		}
	}
	clear(in.merged)
	in.merged = in.merged[:0]
}

// maxMembers is how many members with keys past the labels an instance
// keeps apart before it folds those absent from a whole collection.
const maxMembers = 64

// storeMerged stores the sum of the members of s, folding those that
// left (absent from the instrument's whole last collection) once s has
// more than maxMembers, and reports whether the registry took it;
// members whose sum a counter cannot hold fail s. Folded at once, a set
// an observable callback skipped for one collection counted twice when
// it came back with its running total.
func (in *instrument) storeMerged(d *drops, s *shownSet) bool {
	ms := s.members
	if len(ms.others) > maxMembers {
		for k, m := range ms.others {
			if m.coll < in.prevColl {
				in.fold(ms, m)
				delete(ms.others, k)
			}
		}
	}
	if in.buckets == nil {
		var n uint64
		ok := true
		for m := range ms.all() {
			ok = ok && n+m.n >= n
			n += m.n
		}
		if !ok {
			in.sumPast(s)
			return false
		}
		if err := in.storeCounter(s, n); err != nil {
			in.refused(d, err)
			return false
		}
		return true
	}
	h := &in.sum
	h.reset(ms.les)
	ok := true
	for m := range ms.all() {
		ok = h.add(&m.h) && ok
	}
	if !ok {
		in.sumPast(s)
		return false
	}
	return in.storeHistogram(d, s, *h)
}

// fold adds the last values of m, a member that left, into ms's folded
// ones.
func (in *instrument) fold(ms *members, m *member) {
	f := &ms.folded
	f.n += m.n // a sum stored before, which fitted
	if in.buckets == nil {
		return
	}
	if f.h.les == nil {
		f.h.les, f.h.counts = m.h.les, make([]uint64, len(m.h.les))
	}
	f.h.add(&m.h)
}

// sumPast fails s, whose members sum past what a counter holds.
func (in *instrument) sumPast(s *shownSet) {
	s.fail(dropValue, fmt.Errorf("otelexporter: %s: the points added into the instance of label values %q sum past a counter's 2^64", in.owner, s.values))
}

// reset makes h an empty sum of bounds les, its bucket counts reused.
func (h *histValues) reset(les []string) {
	counts := h.counts[:0]
	for range les {
		counts = append(counts, 0)
	}
	*h = histValues{les: les, counts: counts}
}

// add adds o into h, whose bounds o's bucket counts are brought to
// first (rebucket); ok is false when a count or the sum overflows.
func (h *histValues) add(o *histValues) (ok bool) {
	if o.les == nil {
		return true // a member of no point yet, the folded of none
	}
	if !slices.Equal(o.les, h.les) {
		o.rebucket(h.les)
	}
	ok = h.count+o.count >= h.count && h.sum+o.sum >= h.sum
	h.count += o.count
	h.sum += o.sum
	for i, n := range o.counts {
		ok = ok && h.counts[i]+n >= h.counts[i]
		h.counts[i] += n
	}
	if o.hasMin && (!h.hasMin || o.min < h.min) {
		h.min, h.hasMin = o.min, true
	}
	if o.hasMax && (!h.hasMax || o.max > h.max) {
		h.max, h.hasMax = o.max, true
	}
	return ok
}

// rebucket brings the bucket counts of h, a member's last values, to the
// bounds les (an instance's bounds changed, a producer's): each bucket's
// count goes into the first of les at or above its upper bound, so that
// its count and sum stay in the totals, which never go down, and a
// bucket's observations stay at or below its le. The member's next
// point, of les, brings its own counts.
func (h *histValues) rebucket(les []string) {
	counts := make([]uint64, len(les))
	j := 0
	for i, le := range h.les {
		b := parseLe(le)
		for j < len(les)-1 && parseLe(les[j]) < b {
			j++
		}
		counts[j] += h.counts[i]
	}
	h.les, h.counts = les, counts
}

// parseLe returns the bound an le names (lesOf's: +Inf the last).
func parseLe(le string) float64 {
	b, err := strconv.ParseFloat(le, 64)
	if err != nil {
		return math.Inf(1)
	}
	return b
}
