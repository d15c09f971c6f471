package otelexporter

import (
	"fmt"
	"slices"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
)

// A collection is the whole truth of an instrument's attribute sets: each
// set of it is one instance of the instrument's metrics, and a set the
// collection does not hold leaves PCP at the first export of it (the
// SDK may split one collection into several exports, of the same end
// Time; the later ones remove nothing). Observable instruments
// report only the sets their callbacks observed: kept, a set no longer
// observed showed its last value for good. Two sets of one collection
// that make one instance (a key missing and "", 200 and "200", printed
// alike) show neither, in one export or two of its batches: either value
// would be a guess.

// shownSet is one attribute set of an instrument, by its label values.
type shownSet struct {
	values []string
	les    []string // the le of each bucket written for it (a histogram's)
	pass   uint64   // the export whose points were last counted in points (pointSets)
	points int      // that export's points of it
	extra  int      // those of them with keys past the instrument's labels (merge.go)
	// coll is the instrument's collection whose points without such keys
	// plain counts, over its exports (the SDK's batches): two in two
	// batches collide as two in one export do (collided).
	coll  uint64
	plain int
	// written says its instances hold the values of its one point so
	// far, written whole, hasMin and hasMax whether they have a min and
	// a max; members are the sets added up in it once one had keys past
	// the labels (merge.go).
	written, hasMin, hasMax bool
	members                 *members
	queued                  uint64 // the export that last queued it to be written added up
	bad                     error  // why that export's points cannot be added up, if so
	why                     reason // and the reason they are counted for
}

// setOf returns the shown set of the label values values, made when new:
// for an instrument of singular metrics, its one set, which only keeps
// its buckets' le (it cannot leave PCP).
func (in *instrument) setOf(values []string) *shownSet {
	if len(in.keys) == 0 {
		if in.single == nil {
			in.single = &shownSet{}
		}
		return in.single
	}
	in.key = appendKey(in.key[:0], values)
	if s, ok := in.shown[string(in.key)]; ok {
		return s
	}
	s := &shownSet{values: slices.Clone(values)}
	if in.shown == nil {
		in.shown = map[string]*shownSet{}
	}
	in.shown[string(in.key)] = s
	return s
}

// appendKey appends to b a key of values that no other list of values
// has: each value's length, then the value.
func appendKey(b []byte, values []string) []byte {
	for _, v := range values {
		b = strconv.AppendInt(b, int64(len(v)), 10)
		b = append(b, ':')
		b = append(b, v...)
	}
	return b
}

// pointSets returns the shown set of each point of the export gen, whose
// attribute sets are sets, in order: nil for one with a key the
// instrument has no label for. It counts each set's points, for collided.
// The slice is the instrument's, for the export running.
func (in *instrument) pointSets(gen uint64, sets func(yield func(attribute.Set) bool)) []*shownSet {
	ps := in.ps[:0]
	for set := range sets {
		values, extra := in.valuesOf(set)
		if extra && !in.merges() {
			ps = append(ps, nil)
			continue
		}
		s := in.setOf(values)
		if s.pass != gen {
			s.pass, s.points, s.extra = gen, 0, 0
		}
		if s.coll != in.coll {
			s.coll, s.plain = in.coll, 0
		}
		s.points++
		if extra {
			s.extra++
		} else {
			s.plain++
		}
		ps = append(ps, s)
	}
	in.ps = ps
	return ps
}

// leaveAbsent removes the sets the export gen, the first of a
// collection, does not hold, once its
// points are counted (pointSets) and before they are written: left to
// the export's end, they held the vector's limit, refusing its new sets
// in their place. Apart from pointSets, whose loop over the points' sets
// it made allocate. A singular metric none of whose points is its own (a
// gauge's points all with keys it has no label for, dropped) shows no
// value on a registry with the Sentinel flag (removeSet).
func (in *instrument) leaveAbsent(gen uint64) {
	if s := in.single; s != nil && s.pass != gen && in.withdraws() {
		in.removeSet(s)
	}
	for k, s := range in.shown {
		if s.pass != gen {
			in.removeSet(s)
			delete(in.shown, k)
		}
	}
}

// collided reports whether the point of attribute set set, of shown set
// s, shares its instance with another point of the collection that has
// no key past the instrument's labels, counting it as dropped: the
// instance leaves PCP. Those with such keys add up in it (merge.go). A
// point of an earlier batch of the collection, written then, is counted
// with the first point that collides with it; counted per export, the
// later batch's wrote over it, unnamed
// (TestCollidingSetsAcrossBatchesNotCopied).
func (in *instrument) collided(d *drops, s *shownSet, set *attribute.Set) bool {
	if s.plain < 2 || len(in.keys) == 0 {
		return false
	}
	n := 1
	if s.written {
		n += s.plain - (s.points - s.extra)
	}
	in.dropCollided(d, s, n, set.Encoded(attribute.DefaultEncoder()))
	in.removeSet(s)
	return true
}

// dropCollided counts n points collided drops, of the attribute set
// encoded: apart, so that no point that does not collide allocates.
func (in *instrument) dropCollided(d *drops, s *shownSet, n int, encoded string) {
	in.drop(d, dropAttributes, n, fmt.Errorf("otelexporter: %s: %d attribute sets, such as {%s}, make one instance, of label values %q (a key missing and \"\", or values of two types printed alike): none copied",
		in.owner, s.plain, encoded, s.values))
}

// sweep ends the export gen, of collection coll, for an instrument it did
// not hold: unless the instrument is in coll already (an earlier export
// of a collection split), its sets leave PCP (those of an instrument it
// held left before its points were written, leaveAbsent). A singular
// metric cannot leave: it shows no value on a registry with the Sentinel
// flag (removeSet), and keeps its last value without it, named in d.
func (in *instrument) sweep(d *drops, gen, coll uint64) {
	switch {
	case in.err != nil || in.gen == gen || in.coll == coll:
	case in.withdraws():
		in.removeSet(in.setOf(nil))
	case len(in.keys) == 0:
		d.note(in.owner, "absent", fmt.Errorf("otelexporter: %s: no point in this collection (an observable instrument no longer observed?)%s", in.owner, in.kept()))
	default:
		in.leaveAbsent(gen)
	}
}
