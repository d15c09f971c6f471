package otelexporter

import (
	"fmt"
	"iter"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/bridge"
)

// kind is what an instrument's metrics are, from the data of its first
// export.
type kind int

const (
	kindCounter        kind = iota // a monotonic int64 sum
	kindFloatCounter               // a monotonic float64 sum
	kindIntGauge                   // an int64 gauge or non-monotonic sum
	kindGauge                      // a float64 gauge or non-monotonic sum
	kindHistogram                  // an int64 explicit-bucket histogram
	kindFloatHistogram             // a float64 one
)

var kindNames = [...]string{"counter", "float counter", "int64 gauge", "float64 gauge", "int64 histogram", "float64 histogram"}

// instrument is the metrics of one OpenTelemetry instrument in the
// registry.
type instrument struct {
	id    ident         // of the instrument it was declared for
	owner string        // id, for errors
	r     *mmv.Registry // where it is declared: its Sentinel flag says whether a singular metric is withdrawn (bridge.Withdraws)
	kind  kind
	gen   uint64 // the last export that wrote it
	// coll is the exporter's collection that last wrote it, end the end
	// Time (Unix ns, 0 for none) of its points then; continues is whether
	// the export running continues that collection (removes none of its
	// sets).
	coll      uint64
	end       int64
	continues bool
	prevColl  uint64 // the collection before coll in which it was written: members absent since left (merge.go)
	// keys are the attribute keys of the points of its first export,
	// sorted as attribute sets sort them; one label each.
	keys []attribute.Key
	err  error // why the registry refused it: its points are dropped
	// retry is whether err may pass (bridge.MayPass): the instrument is declared
	// again at its next export; tried is the export that last declared it.
	retry bool
	tried uint64

	factor float64 // how many counter units one recorded unit is (fine)

	counters bridge.Metric[mmv.Counter] // sums; a histogram's count
	ints     bridge.Metric[mmv.IntGauge]
	gauges   bridge.Metric[mmv.Gauge]
	sums     bridge.Metric[mmv.Counter] // a histogram's sum
	min, max bridge.Metric[mmv.Gauge]   // a histogram's, when recorded
	minmax   bool
	buckets  *mmv.Vec[mmv.Counter]
	limit    int // Options.Limit: attribute sets per metric
	per      int // the most buckets of one point so far: the buckets' limit is limit times it

	values []string  // one point's label values (and le), reused
	bounds []float64 // the bucket bounds les names
	les    []string

	shown  map[string]*shownSet // the attribute sets in PCP, and the export's (sets.go), by appendKey
	single *shownSet            // a singular instrument's one set
	key    []byte               // appendKey's, reused
	ps     []*shownSet          // the export's points' (pointSets), reused
	merged []*shownSet          // the export's sets that add up their points (merge.go), reused
	notes  []attribute.Key      // the keys past the labels of the export's points, reused
	noted  []attribute.Key      // those note names, kept while they stay the same
	note   error
	sum    histValues // a merged histogram instance's values, reused
}

// shape is what the points of an instrument's first export say of it.
type shape struct {
	keys    []attribute.Key
	minmax  bool // a histogram with min and max
	buckets int  // a histogram's buckets
}

// keysOf returns the keys of every attribute set, sorted.
func keysOf(sets iter.Seq[attribute.Set]) []attribute.Key {
	var keys []attribute.Key
	for s := range sets {
		for _, kv := range s.ToSlice() {
			keys = append(keys, kv.Key)
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// declare declares the metrics of instrument m, of identity id, under the
// PCP name name on r, each holding at most limit attribute sets, in one
// mmv transaction: when the registry refuses one, none is declared, and
// the instrument keeps the error, and whether it may pass. No label takes
// one of the registry's (unclash): those of the resource, and those the
// program added (Exporter.Registry, AddLabel), which the exporter did not
// rename: mmv refused the vector, every point dropped for good
// (TestKeyNamedAsProgramsRegistryLabelExported).
func declare(r *mmv.Registry, name string, id ident, m *metricdata.Metrics, sh shape, limit int) (in *instrument) {
	k, scope := id.kind, id.scope
	in = new(instrument)
	err := bridge.Transact(r, func(tx *mmv.Tx, taken []string) error {
		// Afresh at each try: one refused leaves its metrics undone.
		*in = instrument{id: id, owner: owner(scope, m.Name), r: r, kind: k, keys: sh.keys, factor: 1, minmax: sh.minmax, limit: limit}
		reserved := taken
		if k == kindHistogram || k == kindFloatHistogram {
			reserved = append(slices.Clip(taken), bucketLabel)
		}
		labels := unclash(sh.keys, reserved)
		in.values = make([]string, len(labels)+1)
		return in.declare(tx, name, m, scope, sh, labels, limit)
	})
	if err != nil {
		in.err = fmt.Errorf("otelexporter: %s as metric %q: %w", in.owner, name, err)
		in.retry = bridge.MayPass(err)
	}
	return in
}

// declare declares the metrics of in, of instrument m of scope, under the
// PCP name name in the transaction d, and returns the registry's refusal.
func (in *instrument) declare(d mmv.Declarer, name string, m *metricdata.Metrics, scope instrumentation.Scope, sh shape, labels []string, limit int) (err error) {
	u, known := unitsOf(m.Unit)
	h := helper{m: m, scope: scope, known: known}
	switch in.kind {
	case kindCounter:
		in.counters, err = bridge.Declare[mmv.Counter](d, name, h.text("", ""), u, labels, limit)
	case kindFloatCounter:
		fu, f := bridge.Fine(u)
		in.factor = f
		in.counters, err = bridge.Declare[mmv.Counter](d, name, h.text("", h.fineNote(fu)), fu, labels, limit)
	case kindIntGauge:
		in.ints, err = bridge.Declare[mmv.IntGauge](d, name, h.text("", ""), u, labels, limit)
	case kindGauge:
		in.gauges, err = bridge.Declare[mmv.Gauge](d, name, h.text("", ""), u, labels, limit)
	case kindHistogram, kindFloatHistogram:
		su, note := u, ""
		if in.kind == kindFloatHistogram {
			su, in.factor = bridge.Fine(u)
			note = h.fineNote(su)
		}
		in.buckets, err = mmv.DeclareVec[mmv.Counter](d, name+".bucket", h.text("by bucket", "Instances are the attribute values and le, the bucket's upper bound in "+
			h.unit()+"; counts are per bucket, not cumulative."), mmv.Count, append(slices.Clone(labels), bucketLabel)...)
		if err != nil {
			return err
		}
		in.buckets.SetInstanceLabels(false) // names say enough; the label budget goes to the other metrics
		in.raiseBuckets(max(sh.buckets, 1))
		if in.counters, err = bridge.Declare[mmv.Counter](d, name+".count", h.text("count", ""), mmv.Count, labels, limit); err != nil {
			return err
		}
		if in.sums, err = bridge.Declare[mmv.Counter](d, name+".sum", h.text("sum", note), su, labels, limit); err != nil {
			return err
		}
		if sh.minmax {
			if in.min, err = bridge.Declare[mmv.Gauge](d, name+".min", h.text("min", ""), u, labels, limit); err != nil {
				return err
			}
			in.max, err = bridge.Declare[mmv.Gauge](d, name+".max", h.text("max", ""), u, labels, limit)
		}
	}
	return err
}

// raiseBuckets makes room in the buckets' vector for n buckets per
// attribute set, when no point had that many: a limit fixed at the first
// export's buckets refused the sets of bounds grown later, within Limit.
func (in *instrument) raiseBuckets(n int) {
	if n > in.per {
		in.per = n
		in.buckets.SetLimit(in.limit * n)
	}
}

// helper writes the help texts of an instrument's metrics.
type helper struct {
	m     *metricdata.Metrics
	scope instrumentation.Scope
	known bool // the unit has PCP units
}

// text returns a help text: the description's first line (the
// instrument's name when it has none) and what part of the instrument the
// metric is, then a long help naming the instrument, its unit when PCP has
// none for it, and note, made a help text mmv takes (bridge.Help).
func (h helper) text(part, note string) string {
	short, _, _ := strings.Cut(h.m.Description, "\n")
	if short == "" {
		short = h.m.Name
	}
	if part != "" {
		short += ", " + part
	}
	long := fmt.Sprintf("OpenTelemetry %s.", owner(h.scope, h.m.Name))
	if !h.known {
		long += fmt.Sprintf(" Unit %q is not one PCP has: shown as none.", h.m.Unit)
	}
	if note != "" {
		long += " " + note
	}
	return bridge.Help(short, long)
}

// unit returns the instrument's unit as a help text says it.
func (h helper) unit() string {
	if h.m.Unit == "" {
		return "no unit"
	}
	return fmt.Sprintf("%q", h.m.Unit)
}

// fineNote says in what integer units a float total is kept.
func (h helper) fineNote(u mmv.Units) string {
	return fmt.Sprintf("Recorded as float64 in %s, kept as an integer counter of %q.", h.unit(), u.String())
}
