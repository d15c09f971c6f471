package mmv

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gopcp/mmv/internal/pcpname"
)

// The registry's declarations: AddIndom, AddInstance, AddMetric, the
// Add*Label methods and the steps instruments take through the door
// (declare.go), on the model's objects (instances.go, metrics.go,
// labels.go). Each is a step of a transaction (transaction.go) that
// leaves its undo, and grows the files once all are taken (growth.go).

// AddMetric declares a metric. Its indom, if any, must be declared first.
// After Start the metric's values are live at once; a metric that needs
// the file to grow and cannot have it is not declared. An indom the
// registry made for an instrument, a vector's (Vec.Indom) or a
// histogram's buckets', is refused with ErrInUse, as AddInstance refuses
// it: the instrument adds, removes and reuses its instances, and binds the
// values of its own metrics alone.
func (r *Registry) AddMetric(m Metric) error {
	r = registry(r)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.awaitPublicationLocked() // its values are live at once, or it is not declared
	if err := r.checkProgramMetricLocked(&m); err != nil {
		return err
	}
	_, err := r.addMetricLocked(m, undoDeclared)
	return err
}

// checkProgramMetricLocked refuses a metric the program declares over an
// indom the registry made for an instrument: the instrument binds its own
// metrics' values to the instances it adds and removes, and a value handle
// on another metric (Registry.Value) was left on an instance the vector
// removed, detached for good once it made the instance again.
func (r *Registry) checkProgramMetricLocked(m *Metric) error {
	if err := r.declarableLocked(); err != nil {
		return err
	}
	if m.Indom == 0 {
		return nil
	}
	in := r.serials[m.Indom]
	if in == nil || !in.auto {
		return nil
	}
	return errorf(ErrInUse, subject("metric", m.Name), "indom %d is %s's, made by the registry for it: "+
		"the instrument adds and removes its instances, and declares the metrics over it", m.Indom, r.instrumentOfLocked(in))
}

// instrumentOfLocked names, in an error, the instrument an indom the
// registry made is for: its vector, or else its first metric (a single
// histogram's buckets, mmv.dropped's reasons).
func (r *Registry) instrumentOfLocked(in *indom) string {
	if in.vec.vec != nil {
		return in.vec.vec.what()
	}
	for _, m := range r.metrics {
		if m.indom == in {
			return subject("metric", m.Name)
		}
	}
	return "an instrument"
}

// addMetricLocked declares m. When its values need a growth step that
// fails, ifFailed decides (see publishFailure).
func (r *Registry) addMetricLocked(m Metric, ifFailed publishFailure) (*metric, error) {
	if err := r.declarableLocked(); err != nil {
		return nil, err
	}
	// Checked with no subject first: quoting the name costs more than
	// declaring the metric, so it is done only for the error.
	if r.checkMetricLocked("", &m) != nil {
		return nil, r.checkMetricLocked(subject("metric", m.Name), &m)
	}
	if r.state == started {
		if err := r.checkNameAfterStartLocked(m.Name); err != nil {
			return nil, err
		}
	}
	var in *indom
	if m.Indom != 0 {
		if in = r.serials[m.Indom]; in == nil {
			return nil, errorf(ErrUnknown, subject("metric", m.Name), "indom %d is not declared", m.Indom)
		}
	}
	if err := r.checkMetricBudgetLocked(m.Name, in); err != nil {
		return nil, err
	}
	p, newParts, err := r.partWithRoomLocked(in, &m)
	if err != nil {
		return nil, err
	}
	if holder, taken := p.itemHolder(m.Item, m.Name); m.Item != 0 && taken {
		err = errorf(ErrDuplicate, subject("metric", m.Name), "item %d already used by metric %s", m.Item, holder)
	} else if _, added := r.names.add(m.Name, len(r.metrics), r.metricName); !added {
		// The name is checked free as it is taken: one probe of the
		// index, where a lookup and then an addition took two.
		err = errorf(ErrDuplicate, subject("metric", m.Name), "name already declared")
	}
	if err != nil {
		r.parts = r.parts[:len(r.parts)-newParts]
		return nil, err
	}
	mt := r.newMetric()
	mt.Metric, mt.item, mt.indom = m, m.Item, in // a zeroed metric
	newIndom := mt.indom != nil && !p.hasIndom(mt.indom)
	r.declareMetric(p, mt, newIndom)
	if r.state == started && p.file != nil {
		if mt.auto() {
			mt.item = p.carriedItem(&mt.Metric)
		}
		p.newMetricSlots(mt)
	}
	r.uncarryLocked(m.Name) // a placeholder of the first file it replaces or clashes with
	grown := []*part{p}
	if newParts > 1 { // the parts before it, made empty to keep its name in the file that held it (partWithRoomLocked)
		grown = r.parts[len(r.parts)-newParts:]
	}
	if err := r.changedLocked(ifFailed, step{undo: (*Registry).undeclareMetric, p: p, m: mt, newIndom: newIndom, newParts: newParts}, grown...); err != nil {
		return nil, err
	}
	r.forgetRefusedLocked(mt) // declared since a New function's refusal (must): Err no longer says it
	return mt, nil
}

// forgetRefusedLocked forgets a New function's refusal of the name of mt,
// just declared, if any: within a transaction, until it is undone, which
// gives the refusal back to Err (the instrument the New function returned
// is still in no file).
func (r *Registry) forgetRefusedLocked(mt *metric) {
	err, ok := r.refused[mt.Name]
	if !ok {
		return
	}
	delete(r.refused, mt.Name)
	if j := &r.journal; j.open {
		j.undo = append(j.undo, step{undo: (*Registry).unforgetRefusedLocked, m: mt, refusal: err})
	}
}

// unforgetRefusedLocked undoes forgetRefusedLocked of s.m's name.
func (r *Registry) unforgetRefusedLocked(s step) { r.refused[s.m.Name] = s.refusal }

// declareMetric records mt, whose name the index holds already, in the
// registry and in part p, with its indom when the part does not have it.
func (r *Registry) declareMetric(p *part, mt *metric, newIndom bool) {
	mt.part, mt.index = p, int32(len(p.metrics))
	r.metrics = appendGrown(r.metrics, mt)
	if mt.indom != nil {
		mt.indom.addUsers(1)
	}
	forPrefixes(mt.Name, func(prefix string) {
		if r.prefixes == nil {
			r.prefixes = map[string]int{} // at the first dotted name: most registries have none
		}
		r.prefixes[prefix]++
	})
	p.metrics = appendGrown(p.metrics, mt)
	p.joinMetric(mt, 1)
	if !mt.auto() {
		p.used.add(mt.item)
	}
	if newIndom {
		p.holdIndom(mt.indom)
	}
}

// undeclareMetric undoes the step of addMetricLocked that declared s.m in
// s.p: its slots, declareMetric, and the taking of an item.
func (r *Registry) undeclareMetric(s step) {
	p, mt, newIndom := s.p, s.m, s.newIndom
	p.releaseMetricSlots(mt)
	r.names.remove(mt.Name, r.metricName)
	r.metrics = r.metrics[:len(r.metrics)-1]
	if mt.indom != nil {
		mt.indom.addUsers(-1)
	}
	forPrefixes(mt.Name, func(prefix string) {
		if r.prefixes[prefix]--; r.prefixes[prefix] == 0 {
			delete(r.prefixes, prefix)
		}
	})
	p.metrics = p.metrics[:len(p.metrics)-1]
	p.joinMetric(mt, -1)
	if mt.item != 0 {
		p.unreserve(mt.item)
	}
	if newIndom {
		p.unholdIndom(mt.indom)
	}
	r.parts = r.parts[:len(r.parts)-s.newParts]
}

// checkMetricLocked checks what a metric declaration says on its own and
// against the namespace of the names declared; that the name is free is
// checked as it is taken (addMetricLocked).
func (r *Registry) checkMetricLocked(subject string, m *Metric) error {
	if err := checkMetricName(subject, m.Name, r.opts.Flags); err != nil {
		return err
	}
	if !r.declaringOwn && (m.Name == ownPrefix || strings.HasPrefix(m.Name, ownPrefix+".")) {
		return errorf(ErrNamespace, subject, "%s.* below a file is the registry's own", ownPrefix)
	}
	if r.prefixes[m.Name] > 0 {
		other := r.metrics[slices.IndexFunc(r.metrics, func(o *metric) bool { return strings.HasPrefix(o.Name, m.Name+".") })]
		return errorf(ErrNamespace, subject, "it is also a prefix of metric %q, which makes PCP drop every MMV metric on the host", other.Name)
	}
	if leaf := r.leafAbove(m.Name); leaf != nil {
		return errorf(ErrNamespace, subject, "metric %q is a prefix of it, which makes PCP drop every MMV metric on the host", leaf.Name)
	}
	if m.Item > MaxItem {
		return errorf(ErrRange, subject, "item %d is more than %d", m.Item, MaxItem)
	}
	if !m.Type.valid() {
		return errorf(ErrRange, subject, "unknown type %d", m.Type)
	}
	if !m.Semantics.valid() {
		return errorf(ErrRange, subject, "unknown semantics %d", m.Semantics)
	}
	if !m.Units.valid() {
		return errorf(ErrRange, subject, "units %#x: a dimension or scale is out of range", uint32(m.Units))
	}
	return checkHelp(subject, m.ShortHelp, m.LongHelp)
}

// valueOf finds a value by name: the metric's only value when instance is
// "", else the named instance's, as its metric and index in the indom.
func (r *Registry) valueOf(metric, instance string) (*metric, int, error) {
	m := r.named(metric)
	if m == nil {
		return nil, 0, errorf(ErrUnknown, subject("metric", metric), "")
	}
	if m.indom == nil {
		if instance != "" {
			return nil, 0, errorf(ErrUnknown, subject("metric", metric), "a singular metric has no instance %q", instance)
		}
		return m, 0, nil
	}
	i, ok := m.indom.lookup(instance)
	if !ok {
		return nil, 0, errorf(ErrUnknown, subject("metric", metric), "no instance %q in indom %d", instance, m.Indom)
	}
	return m, i, nil
}

// Value returns the handle on a value: the metric's only value when
// instance is "", else the value of the named instance. Look it up once and
// keep it; the lookup itself is a map access. A vector's values (a metric
// over Vec.Indom, or a histogram vector's buckets) are refused with
// ErrInUse, as AddMetric refuses that indom: the vector removes its
// instances (Delete, Reset, expiry) and makes them again with new values,
// and a handle would stay on the one removed, its updates dropped for
// good. Read them through the vector, Snapshot or Gather.
func (r *Registry) Value(metric, instance string) (*Value, error) {
	r = registry(r)
	r.mu.Lock()
	defer r.mu.Unlock()
	if m := r.named(metric); m != nil && m.indom != nil {
		if vec := r.removerOfLocked(m.indom); vec != "" {
			return nil, errorf(ErrInUse, subject("metric", metric), "its values are %s's, which removes its instances and makes them again: "+
				"a handle would stay on one removed; read them through the vector, Snapshot or Gather", vec)
		}
	}
	return r.valueLocked(metric, instance)
}

// valueLocked is Value but for its refusal of a vector's values.
func (r *Registry) valueLocked(metric, instance string) (*Value, error) {
	r.awaitPublicationLocked()
	switch r.state {
	case declaring:
		return nil, errorf(ErrNotStarted, subject("metric", metric), "")
	case closed:
		return nil, errorf(ErrClosed, subject("metric", metric), "")
	}
	// An instrument whose value has storage is bound before its handle is
	// given: updates through both then land in one place, which Gather
	// and Snapshot read (the timer's publication binds them in chunks).
	r.bindLocked(0)
	m, i, err := r.valueOf(metric, instance)
	if err != nil {
		return nil, err
	}
	v := r.handleLocked(m, i)
	if v == nil && r.unpublishedLocked() {
		// Declared by an instrument, whose first use does not wait for
		// the publication that gives it storage: this call does.
		r.publishLocked()
		if m, i, err = r.valueOf(metric, instance); err != nil {
			return nil, err
		}
		v = r.handleLocked(m, i)
	}
	if v == nil {
		return nil, fmt.Errorf("mmv: metric %q: not in the file yet: %w", metric, r.pubErr)
	}
	return v, nil
}

// removerOfLocked names, in an error, the vector that removes in's
// instances: in's own, or a histogram vector's for its buckets' indom;
// "" when no instrument removes them (an indom the program declared, a
// histogram's buckets, mmv.dropped's reasons).
func (r *Registry) removerOfLocked(in *indom) string {
	if in.vec.vec != nil {
		return in.vec.vec.what()
	}
	if !in.vec.follows {
		return ""
	}
	for _, x := range r.indoms { // the error's path alone
		if x.vec.buckets == in && x.vec.vec != nil {
			return x.vec.vec.what()
		}
	}
	return "a histogram vector"
}

// AddIndom declares an instance domain and its instances.
func (r *Registry) AddIndom(d Indom) error {
	r = registry(r)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.awaitPublicationLocked()
	return r.addIndomLocked(d, "", "")
}

// addIndomLocked declares d; its errors name the instrument whose indom
// it is, a subject of kind and name, before the indom's serial, which the
// registry derived (addAutoIndomLocked): kind "" for the program's own.
func (r *Registry) addIndomLocked(d Indom, kind, name string) error {
	if err := r.declarableLocked(); err != nil {
		return err
	}
	// Checked with no subject first, as metrics are (addMetricLocked):
	// naming the indom is done only for an error.
	if r.checkIndomLocked("", &d) != nil {
		what := "indom " + strconv.FormatUint(uint64(d.Serial), 10)
		if kind != "" {
			what = subject(kind, name) + " " + what
		}
		return r.checkIndomLocked(what, &d)
	}
	in := &indom{Serial: d.Serial, ShortHelp: d.ShortHelp, LongHelp: d.LongHelp}
	if err := in.addAll(d.Instances); err != nil {
		return err
	}
	r.indoms = append(r.indoms, in)
	if r.serials == nil {
		r.serials = map[uint32]*indom{} // at the first indom: many registries have none
	}
	r.serials[d.Serial] = in
	r.taken.add(d.Serial)
	in.counts = &r.counts
	r.counts.instances += in.live
	// The first file holds every indom, as libpcp_mmv's does; an indom
	// has no value of its own, so nothing needs a growth step now.
	first := r.parts[0]
	first.indoms = append(first.indoms, in)
	return r.changedLocked(undoDeclared, step{undo: (*Registry).undeclareIndom, in: in}, first)
}

// checkIndomLocked checks an indom declaration, d, against the
// registry's, its options and caps.
func (r *Registry) checkIndomLocked(subject string, d *Indom) error {
	if d.Serial == 0 || d.Serial > MaxSerial {
		return errorf(ErrRange, subject, "serial must be 1..%d", MaxSerial)
	}
	if r.serials[d.Serial] != nil {
		return errorf(ErrDuplicate, subject, "serial already declared")
	}
	if err := checkIndomCluster(subject, r.opts.Cluster); err != nil {
		return err
	}
	if err := checkHelp(subject, d.ShortHelp, d.LongHelp); err != nil {
		return err
	}
	// The registry's own indoms, a few instances that count what the
	// caps refuse, are declared beyond them: declared under them,
	// mmv.dropped was refused by the cap whose refusals it was to count.
	if err := checkInstanceCaps(&r.opts, d.Serial, d.ShortHelp, 0, r.instanceCount(), len(d.Instances)); err != nil && !r.declaringOwn {
		return err
	}
	return checkIndomBudget(&r.opts, subject, len(d.Instances))
}

// undeclareIndom undoes addIndomLocked of s.in, the last indom declared.
func (r *Registry) undeclareIndom(s step) {
	in := s.in
	r.counts.instances -= in.live
	r.counts.values -= in.users * (in.live - 1)
	in.counts = nil
	r.indoms = r.indoms[:len(r.indoms)-1]
	delete(r.serials, in.Serial)
	r.taken.remove(in.Serial)
	first := r.parts[0]
	first.indoms = first.indoms[:len(first.indoms)-1]
}

// AddInstance adds an instance to a declared instance domain. After Start
// the values of the metrics over it are live at once; an instance that
// needs the file to grow and cannot have it is not added. A vector's
// indom (Vec.Indom) is refused with ErrInUse: its instances are the
// vector's label values, which With adds; so is every other indom the
// registry made for an instrument (a histogram's buckets, mmv.dropped's
// reasons), whose instances the instrument adds.
func (r *Registry) AddInstance(serial uint32, inst Instance) error {
	r = registry(r)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.awaitPublicationLocked() // its values are live at once, or it is not added
	if err := r.declarableLocked(); err != nil {
		return err
	}
	in, err := r.indomLocked(serial)
	if err != nil {
		return err
	}
	if in.vec.vec != nil {
		return errorf(ErrInUse, in.instanceSubject(inst.Name), "the indom is a vector's, whose instances are its label values, added by its With")
	}
	if in.auto {
		return errorf(ErrInUse, in.instanceSubject(inst.Name), "the indom was made by the registry for an instrument (a histogram's buckets, the reasons of its own counters), which adds its instances itself")
	}
	return r.addInstanceLocked(in, inst, undoDeclared, false)
}

// addInstanceLocked adds inst to in, declared: fresh as indom.addFresh
// adds it, else as indom.add, with the rest of its run in an indom that
// derives them (indom.tails). ifFailed is as for addMetricLocked.
func (r *Registry) addInstanceLocked(in *indom, inst Instance, ifFailed publishFailure, fresh bool) error {
	if err := r.declarableLocked(); err != nil {
		return err
	}
	first, n := in.count(), in.width()
	if err := checkInstanceCaps(&r.opts, in.Serial, in.ShortHelp, in.live, r.instanceCount(), n); err != nil {
		return err
	}
	if err := r.checkGrowthLocked(in, n); err != nil {
		return err
	}
	var err error
	if fresh {
		err = in.addFresh(inst)
	} else {
		err = in.add(inst)
	}
	if err != nil {
		return err // neither adds anything it refuses
	}
	var grown []*part
	for p := range partsHolding(r.parts, in) {
		grown = append(grown, p)
		if p.file == nil {
			continue
		}
		p.newInstanceSlots(in, first, -1)
	}
	return r.changedLocked(ifFailed, step{undo: (*Registry).removeNewInstancesLocked, in: in, at: first}, grown...)
}

// removeNewInstancesLocked undoes addInstanceLocked of the instances of
// s.in from index s.at on, the last added.
func (r *Registry) removeNewInstancesLocked(s step) {
	in, first := s.in, s.at
	for p := range partsHolding(r.parts, in) {
		if p.file != nil {
			p.releaseInstanceSlots(in, first)
		}
	}
	in.truncate(first)
}

func (r *Registry) indomLocked(serial uint32) (*indom, error) {
	if in := r.serials[serial]; in != nil {
		return in, nil
	}
	return nil, errorf(ErrUnknown, "indom "+strconv.FormatUint(uint64(serial), 10), "")
}

// removeInstanceLocked removes instance j of in: PCP no longer shows it
// from the next publication on, and its values' slots serve others after
// that. Its id and name stay its own, for reviveInstanceLocked, until the
// indom forgets its removed instances (forgetRemovedLocked). Its labels
// are the caller's to remove (removeInstanceLabelsLocked).
func (r *Registry) removeInstanceLocked(in *indom, j int) {
	if in.isRemoved(j) {
		return
	}
	in.removed[j] = true
	in.addLive(-1)
	var grown []*part
	for p := range partsHolding(r.parts, in) {
		p.remove(in, j)
		grown = append(grown, p)
	}
	r.grewLocked(keepDeclared, grown...) // nothing needs storage: no error
}

// reviveInstanceLocked gives removed instance j of in its place back, with
// values of its metrics starting from zero. A full disk is no refusal, as
// for addInstanceLocked with keepDeclared.
func (r *Registry) reviveInstanceLocked(in *indom, j int) error {
	if !in.isRemoved(j) {
		return nil
	}
	if err := checkInstanceCaps(&r.opts, in.Serial, in.ShortHelp, in.live, r.instanceCount(), 1); err != nil {
		return err
	}
	if err := r.checkGrowthLocked(in, 1); err != nil {
		return err
	}
	in.removed[j] = false
	in.addLive(1)
	var grown []*part
	for p := range partsHolding(r.parts, in) {
		if p.file != nil {
			p.newInstanceSlots(in, in.count(), j)
		}
		grown = append(grown, p)
	}
	return r.changedLocked(keepDeclared, step{undo: (*Registry).unreviveInstanceLocked, in: in, at: j}, grown...)
}

// unreviveInstanceLocked undoes reviveInstanceLocked of instance s.at of
// s.in.
func (r *Registry) unreviveInstanceLocked(s step) {
	in, j := s.in, s.at
	for p := range partsHolding(r.parts, in) {
		if p.file != nil {
			for _, m := range slices.Backward(p.metricsOver(in)) { // newest slot first
				p.release(m, j)
			}
		}
	}
	in.removed[j] = true
	in.addLive(-1)
}

// instanceCount is the number of instances the registry's indoms hold,
// removed ones not counted, each counted once whichever files hold it,
// the registry's own left out (ownCounts).
func (r *Registry) instanceCount() int { return r.counts.instances - r.own.instances }

// AddLabel attaches a label to every metric of the registry (a cluster
// label). It is refused on ReaderCluster. A label named le is refused
// with ErrDuplicate: a histogram's buckets, a bridge's too, carry their
// bound in their names (le=0.25), which the label would contradict on
// every bucket. So is a label named as a vector's label, and a vector
// declared later with a label of the registry's name (the New functions
// panic): PCP shows the registry's value on each of the vector's
// instances without a label of its own. AddMetricLabel, AddIndomLabel
// and AddInstanceLabel refuse so a label named as one their instances'
// names carry (a vector's label, a histogram's le), which PCP would show
// on every instance without a label of its own
// (Vec.SetInstanceLabels(false)). All four refuse a label named as one
// PCP puts on every metric itself (PCPLabelNames: hostname...) with
// ErrDuplicate: PCP would show it in place of its own.
func (r *Registry) AddLabel(l Label) error {
	r = registry(r)
	return r.addLabel(&label{Label: l, kind: labelCluster}, "registry", "")
}

// Labels returns the labels AddLabel attached to every metric of r, in
// the order added: a bridge renames a label of its source's named as one
// of them (exported_<name>), as a Prometheus scrape renames a series'
// label that a target label has, where mmv refuses the vector.
func (r *Registry) Labels() []Label {
	r = registry(r)
	r.mu.Lock()
	defer r.mu.Unlock()
	var ls []Label
	for _, l := range r.labels {
		if l.kind == labelCluster {
			ls = append(ls, l.Label)
		}
	}
	return ls
}

// AddMetricLabel attaches a label to a declared metric.
func (r *Registry) AddMetricLabel(metric string, l Label) error {
	r = registry(r)
	return r.addLabel(&label{Label: l, kind: labelItem}, subject("metric", metric), metric)
}

// AddIndomLabel attaches a label to a declared instance domain. PCP
// merges an indom's labels under the registry's (AddLabel), the metric's
// and the instance's: a label named as one of the registry's, of another
// value, which pminfo would never show, is refused with ErrDuplicate, and
// so is a registry label named as an indom's, of another value.
func (r *Registry) AddIndomLabel(serial uint32, l Label) error {
	r = registry(r)
	return r.addLabel(&label{Label: l, kind: labelIndom, serial: serial}, "indom "+strconv.FormatUint(uint64(serial), 10), "")
}

// AddInstanceLabel attaches a label to one instance of a declared domain.
// On an instance of a vector (found by Snapshot's indom and id), the
// label goes with the instance: Delete and expiry remove it, and the
// values used again come back with their own labels alone.
func (r *Registry) AddInstanceLabel(serial uint32, id int32, l Label) error {
	r = registry(r)
	return r.addLabel(&label{Label: l, kind: labelInstances, serial: serial, instance: id},
		"indom "+strconv.FormatUint(uint64(serial), 10)+" instance "+strconv.Itoa(int(id)), "")
}

func (r *Registry) addLabel(l *label, subject, metric string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.addLabelLocked(l, subject, metric)
}

// addLabelLocked attaches l, said to be on subject, to what its kind says:
// the metric named metric for an item label.
func (r *Registry) addLabelLocked(l *label, subject, metric string) error {
	if err := r.declarableLocked(); err != nil {
		return err
	}
	switch l.kind {
	case labelCluster:
		if err := checkClusterLabel(inside(subject, "label", l.Name), r.opts.Cluster); err != nil {
			return err
		}
	case labelItem:
		if l.metric = r.named(metric); l.metric == nil {
			return errorf(ErrUnknown, subject, "label %q on a metric not declared", l.Name)
		}
	case labelIndom, labelInstances:
		in, err := r.indomLocked(l.serial)
		if err != nil {
			return err
		}
		if _, ok := in.index(l.instance); l.kind == labelInstances && !ok {
			return errorf(ErrUnknown, subject, "label %q on an instance not declared", l.Name)
		}
	}
	if r.opts.Version == Version2 {
		return errorf(ErrRange, inside(subject, "label", l.Name), "labels need version 3, and version 2 is forced")
	}
	if err := checkPayload(subject, l); err != nil {
		return err
	}
	if pcpname.IsOwn(l.Name) {
		return errorf(ErrDuplicate, inside(subject, "label", l.Name), "PCP labels every metric with %s itself (PCPLabelNames), and would show this one in its place", l.Name)
	}
	if err := r.checkLabelFreeLocked(l, subject); err != nil { // after its payload, which it compares
		return err
	}
	var grown []*part
	for _, p := range r.parts {
		if !r.labelIn(l, p) {
			continue
		}
		if r.labelCount(p) >= MaxLabels {
			return errorf(ErrTooMany, inside(subject, "label", l.Name), "a file holds at most %d labels", MaxLabels)
		}
		grown = append(grown, p)
	}
	r.labels = appendGrown(r.labels, l)
	// A label needs no storage: published with the next file, which is
	// retried until it is written.
	return r.grewLocked(keepDeclared, grown...)
}

// checkLabelFreeLocked refuses a label whose name the same registry,
// metric, indom or instance has already, its vector's label names
// included: PCP shows the last of the two, and an empty label beside it,
// where the first was accepted, and Snapshot showed both.
func (r *Registry) checkLabelFreeLocked(l *label, subject string) error {
	for _, o := range r.labels {
		if o.Name != l.Name {
			continue
		}
		if o.kind == l.kind && o.metric == l.metric && o.serial == l.serial && o.instance == l.instance {
			return errorf(ErrDuplicate, inside(subject, "label", l.Name), "it has a label of that name already")
		}
		if err := shadowedIndomLabel(l, o, subject); err != nil {
			return err
		}
	}
	// A histogram's buckets carry their bound in their names, as the
	// bridges' do, not as a label: a label le shown on them says another.
	const onBuckets = "a histogram's buckets carry their upper bound, le, in their instance names (\"route=/a,le=0.25\"), not as a label: " +
		"PCP would show this one on the buckets"
	if l.kind == labelCluster {
		if l.Name == bucketLabel { // on every metric, a histogram's buckets among them now or once declared
			return errorf(ErrDuplicate, inside(subject, "label", l.Name), onBuckets)
		}
		for _, in := range r.indoms {
			if in.vec.vec != nil && slices.Contains(in.vec.labels, l.Name) {
				return errorf(ErrDuplicate, inside(subject, "label", l.Name), "%s has a label of that name: %s", in.vec.vec.what(), onUnlabelled)
			}
		}
		return nil
	}
	var in *indom
	if l.kind == labelItem {
		in = l.metric.indom
	} else {
		in = r.serials[l.serial]
	}
	if in == nil || !slices.Contains(r.namedLabelsLocked(in), l.Name) {
		return nil
	}
	switch {
	case l.Name == bucketLabel && in.buckets:
		return errorf(ErrDuplicate, inside(subject, "label", l.Name), onBuckets)
	case l.kind == labelInstances:
		// A vector's label, so the vector is there (namedLabelsLocked).
		return errorf(ErrDuplicate, inside(subject, "label", l.Name), "the instance is %s's, which has a label of that name", r.vecOverLocked(in).vec.what())
	}
	return errorf(ErrDuplicate, inside(subject, "label", l.Name), "the instances' names carry a label of that name (\"route=/a\"): %s", onUnlabelled)
}

// shadowedIndomLabel refuses l, named as o, when one is an indom's label
// and the other the registry's, of another value: PCP merges an indom's
// labels under the registry's (pmLookupLabels: indom, cluster, item, then
// the instance), and every metric over the indom is the registry's, so
// pminfo never showed the indom's, the registry's value in its place on
// every instance, with no error (TestIndomLabelNamedAsRegistrysRefused).
// Of the same value it hides nothing: pmseries and pmproxy 6.0.3, which
// show no cluster label, see it on the indom (docs/fleet.md). A metric's
// label over the indom stays free: it shadows the indom's on that metric
// alone, the registry's on it too. Both payloads are made (checkPayload).
func shadowedIndomLabel(l, o *label, subject string) error {
	var other string
	switch {
	case l.kind == labelIndom && o.kind == labelCluster:
		other = "the registry has a label of that name (AddLabel)"
	case l.kind == labelCluster && o.kind == labelIndom:
		other = fmt.Sprintf("indom %d has a label of that name (AddIndomLabel)", o.serial)
	default:
		return nil
	}
	theirs := o.appendPayload(nil)
	if l.Optional == o.Optional && bytes.Equal(l.appendPayload(nil), theirs) {
		return nil
	}
	return errorf(ErrDuplicate, inside(subject, "label", l.Name), "%s, %s: PCP merges an indom's labels under the registry's, "+
		"and would show the registry's value on each of the indom's instances, never the indom's", other, theirs)
}

// onUnlabelled says why a label named like a vector's is refused, on the
// registry or on what the vector's instances are over.
const onUnlabelled = "PCP would show this one on each instance without a label of its own (Vec.SetInstanceLabels(false), past the file's label budget)"

// vecLabelsFreeLocked refuses the label names of the vector of metric
// that the registry has a label of (AddLabel): PCP shows the registry's
// on each of the vector's instances without a label of its own, its
// value for theirs. Before, such a vector was declared, and the
// registry's label showed, say, route="web" on instances named route=/a
// (TestRegistryLabelNamedAsVectorsRefused). The vector's name is made on
// failure alone: made at every declaration, it was an allocation more a
// vector (TestDeclareVecAllocations).
func (r *Registry) vecLabelsFreeLocked(metric string, labels []string) error {
	for _, l := range r.labels {
		if l.kind == labelCluster && slices.Contains(labels, l.Name) {
			return errorf(ErrDuplicate, inside(subject("vector", metric), "label", l.Name), "the registry has a label of that name (AddLabel): %s", onUnlabelled)
		}
	}
	return nil
}

// namedLabelsLocked returns the label names in's instance names carry:
// its vector's, and a histogram's buckets' le after the histogram
// vector's. A label of one of these names added by hand to in, one of its
// instances or a metric over it contradicts the names: PCP shows it on
// every instance that has no label of that name itself (the bridges'
// buckets, SetInstanceLabels(false), a histogram vector's buckets, a
// vector past the file's label budget).
func (r *Registry) namedLabelsLocked(in *indom) []string {
	v := r.vecOverLocked(in)
	switch {
	case !in.buckets && v == nil:
		return nil
	case !in.buckets:
		return v.labels
	case v == nil: // a single histogram's
		return []string{bucketLabel}
	}
	return append(slices.Clip(v.labels), bucketLabel)
}

// vecOverLocked returns the link of the vector whose instances in's are:
// in's own, or the histogram vector's whose buckets' indom in is, found by
// a scan, for a label's declaration alone; nil for none.
func (r *Registry) vecOverLocked(in *indom) *vecLink {
	if in.vec.vec != nil {
		return &in.vec
	}
	if !in.buckets {
		return nil
	}
	for _, x := range r.indoms {
		if x.vec.buckets == in && x.vec.vec != nil {
			return &x.vec
		}
	}
	return nil
}

// checkPlacedLabelsLocked checks the labels of each file once Start or
// Configure placed the metrics (placeLocked): the labels follow their
// metrics and indoms, and, checked when declared against the files of
// then, more of them could land in one file than PCP reads, which drops
// them all, silently.
func (r *Registry) checkPlacedLabelsLocked() error {
	for _, p := range r.parts {
		if n := r.labelCount(p); n > MaxLabels {
			return errorf(ErrTooMany, subject("file", p.name), "%d labels once its metrics are placed by name: PCP reads at most %d a file, and drops them all past it", n, MaxLabels)
		}
	}
	return nil
}

// labelRoomLocked returns how many more labels the files holding in can
// all take.
func (r *Registry) labelRoomLocked(in *indom) int {
	room := MaxLabels
	for p := range partsHolding(r.parts, in) {
		room = min(room, MaxLabels-r.labelCount(p))
	}
	return room
}

// labelCount is len(r.labelsOf(p)), counted without making the list: a
// vector asks at every instance it labels. The vectors' records are
// summed over the part's own indoms (indom.labels), not looked for among
// every vector's: at the default budget, where a file holds two vectors,
// the first use of a value cost 29 µs with 1,000 vectors declared.
func (r *Registry) labelCount(p *part) int {
	if len(r.parts) == 1 {
		return len(r.labels) + r.vecRecords // every label is in the only file
	}
	n := 0
	for _, l := range r.labels {
		if r.labelIn(l, p) {
			n++
		}
	}
	if p.index == 0 {
		return n + r.vecRecords // the first file holds every indom
	}
	for _, in := range p.indoms {
		n += in.labels
	}
	return n
}

// removeInstanceLabelsLocked removes the labels of instance id of the indom
// serial, which was removed.
func (r *Registry) removeInstanceLabelsLocked(serial uint32, id int32) {
	r.labels = slices.DeleteFunc(r.labels, func(l *label) bool {
		return l.kind == labelInstances && l.serial == serial && l.instance == id
	})
}

// AddMetric declares a metric in the transaction, as Registry.AddMetric
// does, but a full disk is no refusal: the metric's values get storage
// from a later growth step, retried after Options.PublishDelay, as an
// instrument's do.
func (tx *Tx) AddMetric(m Metric) error {
	r, h, err := tx.lock("metric", m.Name)
	if err != nil {
		return err
	}
	defer h.release()
	if err := r.checkProgramMetricLocked(&m); err != nil {
		return err
	}
	_, err = r.addMetricLocked(m, keepDeclared)
	return err
}

// addAutoIndomLocked declares an indom of the instances names (ids derived
// from them: fixedInstances) for the metrics named key, under the serial
// derived from key (autoSerial), and returns it and its serial. Its help
// is made up by the registry, and cut to fit (pcpname.Help); its errors name
// the instrument it is for, a subject of kind and name.
func (r *Registry) addAutoIndomLocked(key, help string, names []string, kind, name string) (*indom, uint32, error) {
	insts := fixedInstances(names)
	serial := autoSerial(key, &r.taken)
	if serial == 0 {
		return nil, 0, errorf(ErrTooMany, subject("file", r.name), "no indom serial left")
	}
	short, long := splitHelp(help)
	short, long = pcpname.Help(short), pcpname.Help(long)
	if err := r.addIndomLocked(Indom{Serial: serial, ShortHelp: short, LongHelp: long, Instances: insts}, kind, name); err != nil {
		return nil, 0, err
	}
	in := r.serials[serial]
	in.auto = true
	return in, serial, nil
}
