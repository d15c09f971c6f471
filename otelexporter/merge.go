package otelexporter

import (
	"fmt"
	"math"
	"slices"

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
// collection (sdkmetric.WithMaxExportBatchSize) brings which member, and
// a member no longer exported (an observable instrument's) stays in it,
// so that a total never goes down, which PCP would read as a counter
// wrap. A member whose point cannot be stored (a value no counter
// holds, a malformed histogram point), or two of one export that print
// alike, take the instance out of PCP, every point of it counted.

// member is one attribute set added up in an instance, its last values.
type member struct {
	pass uint64 // the export that last gave its point
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

// memberOf returns the member of s that the point of attribute set set
// is, to be given its values, and queues s to be written (writeMerged);
// nil when another point of the export was that member (sets whose keys
// past the labels print alike), which takes s out of PCP. The first
// member s gets holds what s showed, written whole before: that member
// may come in a later batch of the collection, or no more.
func (in *instrument) memberOf(s *shownSet, set *attribute.Set) *member {
	if s.queued != in.gen {
		s.queued, s.bad = in.gen, nil
		in.merged = append(in.merged, s)
	}
	if s.members == nil {
		s.members = map[string]*member{}
		if s.written {
			s.members[""] = in.shownMember(s)
		}
	}
	key, extra := in.extraOf(set)
	if extra != nil {
		in.notes = append(in.notes, extra...)
	}
	m := s.members[key]
	if m == nil {
		m = &member{}
		s.members[key] = m
	}
	if m.pass == in.gen {
		s.bad = fmt.Errorf("otelexporter: %s: two attribute sets of label values %q and keys past its labels %s print alike: none copied", in.owner, s.values, key)
		return nil
	}
	m.pass = in.gen
	return m
}

// shownMember returns a member of the values s shows, as written whole.
func (in *instrument) shownMember(s *shownSet) *member {
	m := &member{}
	if in.buckets == nil {
		c, _ := in.counters.Get(s.values)
		m.n = c.Get()
		return m
	}
	c, _ := in.counters.Get(s.values)
	m.h.count = c.Get()
	c, _ = in.sums.Get(s.values)
	m.h.sum = c.Get()
	m.h.les = s.les
	bv := append(slices.Clone(s.values), "")
	for _, le := range s.les {
		bv[len(s.values)] = le
		b, _ := in.buckets.Get(bv...)
		m.h.counts = append(m.h.counts, b.Get())
	}
	// Its min and max are not read back: a gauge with no value reads 0.
	// The member's next point brings them.
	return m
}

// extraOf returns a key of the attributes of set whose keys in has no
// label for, "" for none, and those keys, nil for none.
func (in *instrument) extraOf(set *attribute.Set) (string, []attribute.Key) {
	var b []byte
	var keys []attribute.Key
	for it := set.Iter(); it.Next(); {
		kv := it.Attribute()
		if _, found := slices.BinarySearch(in.keys, kv.Key); found {
			continue
		}
		keys = append(keys, kv.Key)
		b = appendKey(b, []string{string(kv.Key), kv.Value.Emit()})
	}
	return string(b), keys
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
	slices.Sort(in.notes)
	if keys := slices.Compact(in.notes); len(keys) > 0 {
		d.note(in.owner, "merged", fmt.Errorf("otelexporter: %s: attribute keys %q have no label (its labels are the keys of its first export): their points are added into the instances of their other attributes", in.owner, keys))
	}
	in.notes = in.notes[:0]
	for _, s := range in.merged {
		if s.bad != nil {
			in.removeSet(s)
			d.drop(dropAttributes, s.points, in.owner, s.bad)
			continue
		}
		ok := true
		if in.buckets == nil {
			var n uint64
			for _, m := range s.members {
				n += m.n
			}
			if err := in.storeCounter(s, n); err != nil {
				d.refused(in.owner, fmt.Errorf("otelexporter: %s: %w", in.owner, err))
				ok = false
			}
		} else {
			ok = in.storeHistogram(d, s, in.sumOf(s))
		}
		// The registry counted one point refused; the others are counted
		// here.
		if !ok && s.points > 1 {
			d.drop(dropAttributes, s.points-1, in.owner, fmt.Errorf("otelexporter: %s: %d points added into one instance of label values %q, which the registry refused", in.owner, s.points, s.values))
		}
	}
	clear(in.merged)
	in.merged = in.merged[:0]
}

// sumOf returns the histogram values of s, the sum of its members: of
// those of the bounds of this export's points (a member of other bounds,
// not exported since they changed, is forgotten).
func (in *instrument) sumOf(s *shownSet) histValues {
	var les []string
	for _, m := range s.members {
		if m.pass == in.gen {
			les = m.h.les
			break
		}
	}
	h := histValues{les: les, counts: make([]uint64, len(les)), min: math.Inf(1), max: math.Inf(-1)}
	for k, m := range s.members {
		if !slices.Equal(m.h.les, les) {
			delete(s.members, k)
			continue
		}
		h.count += m.h.count
		h.sum += m.h.sum
		for i, n := range m.h.counts {
			h.counts[i] += n
		}
		if m.h.hasMin {
			h.min, h.hasMin = min(h.min, m.h.min), true
		}
		if m.h.hasMax {
			h.max, h.hasMax = max(h.max, m.h.max), true
		}
	}
	return h
}
