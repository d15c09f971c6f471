package mmv

import (
	"slices"
	"strings"
)

// MetricSnapshot is one metric of a registry and its values at one
// moment, as Registry.Snapshot reads them.
type MetricSnapshot struct {
	// Metric is the declaration: name, type, semantics, units, indom and
	// help, the item as declared (0 when derived).
	Metric
	// Labels are the labels PCP attaches to the metric, the registry's
	// (cluster) labels first, then the metric's own, then its indom's.
	Labels []Label
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
	// Labels are the instance's labels (a vector's label values).
	Labels []Label
	// Value holds the value as the metric's Type: int32, uint32, int64,
	// uint64, float32, float64 or string; Elapsed is an int64 of
	// microseconds.
	Value any
}

// Snapshot reads every metric of the registry and its current values, by
// name, whether the registry was started or not: before Start, and for
// what a growth step has yet to publish after it, the instruments' own
// memory; once published, the file's values. Histograms' statistics are
// computed afresh and callback metrics (NewCounterFunc...) called, so that
// a snapshot shows every update made before it, not only those the last
// refresh saw. Values set through Registry.Value exist only in files:
// before Start they read as zero.
//
// Snapshot is for tests and diagnostics, not hot paths: it takes the
// registry's lock, as a declaration does, and allocates the result;
// updates go on meanwhile, lock-free, so each value is read atomically
// but the metrics are not read at one instant. Package mmvtest builds
// its helpers on it. After Close it returns an error wrapping ErrClosed.
// Metrics come sorted by name, the registry's own (mmv.*) included.
func (r *Registry) Snapshot() ([]MetricSnapshot, error) {
	r = registry(r)
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
		f(func(m *metric, j int, v any) { read[slot{m, j}] = v })
	}
	waiting := map[slot]*cell{}
	for _, w := range r.waiting {
		if w.c != nil {
			waiting[slot{w.m, w.inst}] = w.c
		}
	}
	labels := r.snapshotLabelsLocked()
	out := make([]MetricSnapshot, 0, len(r.metrics))
	for _, m := range r.metrics {
		ms := MetricSnapshot{Metric: m.Metric, Labels: labels.of(m)}
		ms.Values = make([]InstanceValue, 0, m.valueCount())
		for j := range m.valueCount() {
			iv := InstanceValue{}
			if m.indom != nil {
				if m.indom.removed[j] {
					continue
				}
				inst := m.indom.Instances[j]
				iv.Instance, iv.ID, iv.Labels = inst.Name, inst.ID, labels.instance[instanceKey{m.Indom, inst.ID}]
			}
			switch v, ok := read[slot{m, j}]; {
			case ok:
				iv.Value = v
			case waiting[slot{m, j}] != nil:
				iv.Value = valueOf(waiting[slot{m, j}].value(), m.Type)
			default:
				iv.Value = valueOf(r.handleLocked(m, j), m.Type) // nil (zero) before Start
			}
			ms.Values = append(ms.Values, iv)
		}
		out = append(out, ms)
	}
	slices.SortFunc(out, func(a, b MetricSnapshot) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// snapshotLabels are the registry's labels by what they label.
type snapshotLabels struct {
	cluster  []Label
	item     map[*metric][]Label
	indom    map[uint32][]Label
	instance map[instanceKey][]Label
}

type instanceKey struct {
	serial uint32
	id     int32
}

func (r *Registry) snapshotLabelsLocked() snapshotLabels {
	ls := snapshotLabels{item: map[*metric][]Label{}, indom: map[uint32][]Label{}, instance: map[instanceKey][]Label{}}
	for _, l := range r.labels {
		switch l.kind {
		case labelCluster:
			ls.cluster = append(ls.cluster, l.Label)
		case labelItem:
			ls.item[l.metric] = append(ls.item[l.metric], l.Label)
		case labelIndom:
			ls.indom[l.serial] = append(ls.indom[l.serial], l.Label)
		case labelInstances:
			k := instanceKey{l.serial, l.instance}
			ls.instance[k] = append(ls.instance[k], l.Label)
		}
	}
	return ls
}

// of returns the labels of metric m: the registry's, its own, its indom's.
func (ls *snapshotLabels) of(m *metric) []Label {
	all := slices.Concat(ls.cluster, ls.item[m])
	if m.indom != nil {
		all = append(all, ls.indom[m.Indom]...)
	}
	return all
}

// valueOf reads v as a value of type t (see InstanceValue.Value); a nil v
// reads as t's zero.
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
