package mmv

import (
	"math"
	"slices"
	"sync/atomic"
)

// Gather reads every metric of the registry and its current values, for
// a program that serves them in another format as well as in PCP (package
// expose serves them to Prometheus). It costs the updates nothing: values
// are read where the updates leave them, with the atomic loads of
// Value.Int and Value.Float.
//
// A value is read where it is: in the file once it has storage there
// (what PCP's reader shows), else in an instrument's own memory (before
// Start, or declared after it and not yet published, as on a full disk),
// so a registry that is never started serves its instruments. A value
// with no storage yet is left out (the low-level API's metrics and a
// histogram's window statistics before Start), and so is one that PCP's
// reader shows as no value in a registry with the Sentinel flag
// (Value.SetNoValue). A callback metric (NewCounterFunc and the others)
// reads as at its function's last call, every DefaultInterval while
// started; before Start, Gather runs the registry's polls first (Poll),
// callback metrics' included, which read 0 there, a value the function
// never returned. A closed registry gathers nothing.
//
// A Family's Metric is the declaration, but for an Elapsed metric's
// semantics and units, which are those PCP's reader exports: counter and
// microseconds.
//
// A histogram is one Family, in place of its .bucket, .count and .sum
// metrics: its Bounds, and per Sample its Buckets, Count and Sum, read
// from the histogram itself (observations since the last refresh
// included, which PCP sees at the next Interval), and the labels of the
// three metrics and their indoms together (a histogram vector's indom's,
// Vec.Indom, included: PCP shows them on .count and .sum), as each
// Sample's Labels are its vector instance's. Its other metrics (min, max,
// mean, quantiles) are Families of their own.
//
// visit is called once per metric, in the order of declaration, with the
// registry's lock held: it must not call the registry or its instruments'
// declarations (Vec.With of new label values included). The Family and
// every slice in it are reused once visit returns.
func (r *Registry) Gather(visit func(*Family)) {
	r = registry(r)
	if p := r.pollUnstarted(); p != nil {
		p.raise()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state == closed {
		return
	}
	r.carryReboundLocked()
	cells := r.waitingCellsLocked()
	var hidden map[*metric]bool // shown in a reader's Family, as a histogram's .count and .sum
	type reader struct {
		g  valueReader
		in *indom    // of the metrics it hides, whose instances its Samples are
		ms []*metric // the metric it shows and those it hides, whose labels its Family carries
	}
	readers := map[*metric]reader{}
	for _, g := range r.readers {
		shown, hides := g.family()
		rd := reader{g: g, ms: append([]*metric{shown}, hides...)}
		for _, m := range hides {
			if hidden == nil {
				hidden = map[*metric]bool{}
			}
			hidden[m] = true
			rd.in = m.indom
		}
		readers[shown] = rd
	}
	inst := r.instanceLabelsLocked(false)
	f := &Family{}
	for _, m := range r.metrics {
		if hidden[m] {
			continue
		}
		f.reset(readAs(m.Metric))
		if rd, ok := readers[m]; ok {
			f.Labels = r.labelsAboveLocked(f.Labels, rd.ms...)
			rd.g.gather(f)
			f.instanceLabels(rd.in, inst)
		} else {
			f.Labels = r.labelsAboveLocked(f.Labels, m)
			f.gatherValues(r, m, cells[m], inst)
		}
		if len(f.Samples) > 0 {
			visit(f)
		}
	}
}

// readAs is m as PCP's reader exports it, which Snapshot and Gather
// show: an Elapsed metric is a counter in microseconds (its values are:
// Value.AddDuration), whatever semantics and units its record says. The
// file keeps the record as declared, as libpcp_mmv writes it (an Elapsed
// metric in milliseconds: TestGolden's elapsed).
func readAs(m Metric) Metric {
	if m.Type == Elapsed {
		m.Semantics, m.Units = SemCounter, Microsecond
	}
	return m
}

func (f *Family) gatherValues(r *Registry, m *metric, cells []*cell, inst map[instanceKey][]Label) {
	if m.indom == nil {
		if v := valueAt(r, m, 0, cells); v != nil {
			f.sample("").Value = v
		}
		return
	}
	f.LabelNames = m.indom.vec.labels
	for j := range m.indom.count() {
		if m.indom.isRemoved(j) {
			continue
		}
		if v := valueAt(r, m, j, cells); v != nil {
			in := m.indom.instance(j)
			s := f.sample(in.Name)
			s.Value = v
			s.Labels = inst[instanceKey{m.indom.Serial, in.ID}]
		}
	}
}

// instanceLabels gives the Samples a reader gathered, named as the
// instances of in, their labels in inst.
func (f *Family) instanceLabels(in *indom, inst map[instanceKey][]Label) {
	if in == nil || inst == nil {
		return
	}
	for i := range f.Samples {
		s := &f.Samples[i]
		if j, ok := in.lookup(s.Instance); ok {
			s.Labels = inst[instanceKey{in.Serial, in.instance(j).ID}]
		}
	}
}

// waitingCellsLocked returns the memories of the instruments waiting for
// storage, by metric and instance index; nil when none waits.
func (r *Registry) waitingCellsLocked() map[*metric][]*cell {
	var cells map[*metric][]*cell
	add := func(m *metric, inst int, c *cell) {
		if cells == nil {
			cells = map[*metric][]*cell{}
		}
		cs := cells[m]
		if cs == nil {
			cs = make([]*cell, m.valueCount())
			cells[m] = cs
		}
		if inst < len(cs) {
			cs[inst] = c
		}
	}
	for _, w := range r.waiting {
		add(w.m, w.inst, w.c)
	}
	for _, g := range r.waitingGroups {
		g.waitingLocked(add)
	}
	return cells
}

// valueAt is the value of m for instance index j: in the file once it
// has storage there, else in the instrument's memory, nil when it has
// neither.
func valueAt(r *Registry, m *metric, j int, cells []*cell) *Value {
	v := r.readLocked(m, j)
	if v == nil && j < len(cells) && cells[j] != nil {
		v = cells[j].value()
	}
	if v != nil && r.opts.Flags&Sentinel != 0 && v.missing() {
		return nil
	}
	return v
}

// missing reports whether v holds the reserved value that PCP's reader
// shows as no value in a file with the Sentinel flag (SetNoValue).
func (v *Value) missing() bool {
	switch v.Type() {
	case Double, Float:
		return math.IsNaN(v.Float())
	case String:
		return v.String() == ""
	}
	return atomic.LoadUint64(v.u64()) == math.MaxUint64
}

type instanceKey struct {
	serial uint32
	id     int32
}

// instanceLabelsLocked returns the instance labels by instance: the
// program's own (Registry.AddInstanceLabel), on a vector's instances
// too, then, with vectors, those the vectors derive from their values,
// which Gather leaves to Sample.Values.
func (r *Registry) instanceLabelsLocked(vectors bool) map[instanceKey][]Label {
	var ls map[instanceKey][]Label
	add := func(l label) {
		if ls == nil {
			ls = map[instanceKey][]Label{}
		}
		k := instanceKey{l.serial, l.instance}
		ls[k] = append(ls[k], l.public())
	}
	for _, l := range r.labels {
		if l.kind == labelInstances {
			add(*l)
		}
	}
	if vectors {
		for _, vl := range r.vecLabels {
			vl.eachLocked(add)
		}
	}
	return ls
}

// labelsAboveLocked appends to ls the labels of m's indom, of the
// registry and of m, in that order: PCP's order of precedence
// (pmLookupLabels: indom, cluster, item, then instances), so that a label
// replacing an earlier one of its name gives the value PCP shows. With
// more metrics (a histogram's, shown as one Family), the labels of any
// of theirs, each once, in the same order.
func (r *Registry) labelsAboveLocked(ls []Label, ms ...*metric) []Label {
	for _, kind := range [...]labelKind{labelIndom, labelCluster, labelItem} {
		for _, l := range r.labels {
			if l.kind == kind && (kind == labelCluster || slices.ContainsFunc(ms, func(m *metric) bool {
				return kind == labelItem && l.metric == m || kind == labelIndom && m.indom != nil && l.serial == m.indom.Serial
			})) {
				ls = append(ls, l.public())
			}
		}
	}
	return ls
}
