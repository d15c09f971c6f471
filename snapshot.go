package mmv

import (
	"slices"
	"strings"

	"github.com/gopcp/mmv/internal/canon"
)

// MetricSnapshot is one metric of a registry and its values at one
// moment, as Registry.Snapshot reads them.
type MetricSnapshot struct {
	// Metric is the declaration: name, type, semantics, units, indom and
	// help, the item as declared (0 when derived); an Elapsed metric's
	// semantics and units are those PCP's reader exports, counter and
	// microseconds, whatever the declaration said (readAs).
	Metric
	// Labels are the labels PCP attaches to the metric: its indom's, the
	// registry's (cluster) labels, then the metric's own, PCP's order of
	// precedence (a label of a name met again later replaces the earlier,
	// as PCP shows it).
	Labels []Label
	// LabelNames are a vector's label names (a histogram vector's for its
	// statistics), which each value's Values are the values of; nil for
	// other metrics.
	LabelNames []string
	// Values are the metric's values: one, with Instance "", for a
	// singular metric; one per live instance of its indom otherwise, in
	// the indom's order.
	Values []InstanceValue
}

// InstanceValue is one value of a metric.
type InstanceValue struct {
	// Instance is the instance's name, "" for a singular metric; ID its
	// id in the indom.
	Instance string
	ID       int32
	// Values are a vector's label values, as MetricSnapshot.LabelNames.
	Values []string
	// Labels are the instance's PCP labels (a vector's values, while the
	// file's label budget gave them).
	Labels []Label
	// Value holds the value as the metric's Type: int32, uint32, int64,
	// uint64, float32, float64 or string; Elapsed is an int64 of
	// microseconds. It is nil when there is no value to read: one set
	// through Registry.Value before Start, when it has no storage yet, or
	// one PCP shows as no value in a file with the Sentinel flag.
	Value any
}

// Snapshot reads every metric of the registry and its current values, by
// name, whether the registry was started or not, where Gather reads them:
// the file once a value has storage there, else the instrument's own
// memory (before Start, or declared after it and not yet published).
// Unlike Gather it shows every metric as PCP names it (a histogram's
// h.bucket, h.count, h.p99... each), computes histograms' statistics
// afresh and calls callback metrics' functions (NewCounterFunc...), and
// before Start runs the registry's polls (Poll), so that a snapshot shows
// every update made before it, not only what the last refresh saw; and it
// allocates what it returns.
//
// Snapshot is for tests and diagnostics, not hot paths: it takes the
// registry's lock, as a declaration does; updates go on meanwhile,
// lock-free, so each value is read atomically but the metrics are not
// read at one instant. Package mmvtest builds its helpers on it. After
// Close it returns an error wrapping ErrClosed. Metrics come sorted by
// name, the registry's own (mmv.*) included.
func (r *Registry) Snapshot() ([]MetricSnapshot, error) {
	r = registry(r)
	if p := r.pollUnstarted(); p != nil {
		p.raise()
	}
	if p := r.runCallbacks(); p != nil {
		p.raise()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state == closed {
		return nil, errorf(ErrClosed, "file "+quote(r.name), "")
	}
	type slot struct {
		m *metric
		j int
	}
	read := map[slot]any{}
	for _, f := range r.onRead {
		f(func(m *metric, id int32, v any) {
			if j, ok := valueIndex(m, id); ok {
				read[slot{m, j}] = v
			}
		})
	}
	r.carryReboundLocked()
	cells := r.waitingCellsLocked()
	inst := r.instanceLabelsLocked(true)
	out := make([]MetricSnapshot, 0, len(r.metrics))
	for _, m := range r.metrics {
		ms := MetricSnapshot{Metric: readAs(m.Metric), Labels: r.labelsAboveLocked(nil, m), Values: make([]InstanceValue, 0, m.valueCount())}
		if m.indom != nil {
			ms.LabelNames = m.indom.vec.labels
		}
		for j := range m.valueCount() {
			iv := InstanceValue{}
			if m.indom != nil {
				if m.indom.isRemoved(j) {
					continue
				}
				in := m.indom.instance(j)
				iv.Instance, iv.ID, iv.Labels = in.Name, in.ID, inst[instanceKey{m.indom.Serial, in.ID}]
				if ms.LabelNames != nil {
					iv.Values, _ = canon.Values(nil, in.Name, ms.LabelNames)
				}
			}
			if v, ok := read[slot{m, j}]; ok {
				iv.Value = v
			} else if v := valueAt(r, m, j, cells[m]); v != nil {
				iv.Value = valueOf(v, m.Type)
			}
			ms.Values = append(ms.Values, iv)
		}
		out = append(out, ms)
	}
	slices.SortFunc(out, func(a, b MetricSnapshot) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// valueOf reads v as a value of type t (see InstanceValue.Value).
func valueOf(v *Value, t Type) any {
	switch t {
	case Int32:
		return int32(v.Int())
	case Uint32:
		return uint32(v.Int())
	case Int64, Elapsed:
		return v.Int()
	case Uint64:
		return uint64(v.Int())
	case Float:
		return float32(v.Float())
	case Double:
		return v.Float()
	}
	return v.String()
}
