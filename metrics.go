package mmv

import (
	"fmt"
	"slices"
	"strings"
)

// Metric declares a metric.
type Metric struct {
	// Name is the metric's name below mmv.<file>: letters, digits and '_'
	// in dot-separated parts that each start with a letter.
	Name string
	// Item identifies the metric within its file, 1..1023. Zero asks the
	// registry to assign one from the name, the same at every start.
	Item uint32
	// Type is the type of the values.
	Type Type
	// Semantics says how readers interpret the values.
	Semantics Semantics
	// Units is the dimension and scale of the values.
	Units Units
	// Indom is the serial of the instance domain giving the metric one
	// value per instance; zero declares a singular metric.
	Indom uint32
	// ShortHelp is a one-line description; LongHelp may span lines. Each
	// holds at most 255 bytes. An empty text is left out of the file.
	ShortHelp, LongHelp string
}

// Metric records: the name (inline in v1, the offset of a string record in
// v2 and v3), then item, type, semantics, units, indom and the offsets of
// the help texts, at these offsets from the end of the name.
const (
	metricSizeV1    = 104
	metricSizeV2    = 48
	metricNameV1Len = 64
	metricNameV2Len = 8
	metricItemOff   = 0
	metricTypeOff   = 4
	metricSemOff    = 8
	metricUnitsOff  = 12
	metricIndomOff  = 16
	metricShortOff  = 24
	metricHelpOff   = 32
)

// metricRecord is the layout-independent part of a metric record.
type metricRecord struct {
	item      uint32
	typ       Type
	sem       Semantics
	units     Units
	indom     uint32
	shortText uint64
	helpText  uint64
}

// putMetric encodes a metric record; name is either the inline v1 name or,
// in v2 and v3, the offset of the name's string slot.
func putMetric(b []byte, version int, name string, nameOff uint64, m metricRecord) {
	body := b[metricNameV2Len:]
	if version == Version1 {
		copy(b[:metricNameV1Len], name)
		body = b[metricNameV1Len:]
	} else {
		ne.PutUint64(b, nameOff)
	}
	ne.PutUint32(body[metricItemOff:], m.item)
	ne.PutUint32(body[metricTypeOff:], uint32(m.typ))
	ne.PutUint32(body[metricSemOff:], uint32(m.sem))
	ne.PutUint32(body[metricUnitsOff:], uint32(m.units))
	ne.PutUint32(body[metricIndomOff:], m.indom)
	ne.PutUint64(body[metricShortOff:], m.shortText)
	ne.PutUint64(body[metricHelpOff:], m.helpText)
}

// ownPrefix is the first part of the names of the registry's own metrics
// (drops.go), which programs may not use.
const ownPrefix = "mmv"

// metricTable is the registry's metrics.
type metricTable struct {
	metrics  []*metric
	names    nameIndex      // positions in metrics
	prefixes map[string]int // how many metric names have each dot-prefix
	spare    []metric       // allocated for the next declarations (newMetric)
}

func (t *metricTable) metricName(pos int) string { return t.metrics[pos].Name }

// named returns the metric of a name, nil when none is declared.
func (t *metricTable) named(name string) *metric {
	if i, ok := t.names.find(name, t.metricName); ok {
		return t.metrics[i]
	}
	return nil
}

// newMetric returns a metric to declare. Metrics are allocated in blocks,
// as many as are declared already (8 to 256), not one by one: that was
// 1,000 of the 1,060 allocations of declaring 1,000 metrics. A block lives
// while one of its metrics is referenced.
func (t *metricTable) newMetric() *metric {
	if len(t.spare) == 0 {
		t.spare = make([]metric, min(max(len(t.metrics), 8), 256))
	}
	mt := &t.spare[0]
	t.spare = t.spare[1:]
	return mt
}

// metric is a declared metric and, once started, where its values are.
type metric struct {
	Metric
	part   *part
	index  int      // position in its part
	item   uint32   // the item in the file; 0 until assigned
	auto   bool     // the item is derived from the name
	indom  *indom   // nil when singular
	slots  []int32  // per instance, or one: the value's slot in its part, -1 for none
	values []*Value // nil, or as slots: the handles, made at their first use (part.handleOf)
}

// valueCount is the number of values of a metric: one per instance, or one.
func (m *metric) valueCount() int {
	if m.indom == nil {
		return 1
	}
	return len(m.indom.Instances)
}

// AddMetric declares a metric. Its indom, if any, must be declared first.
// After Start the metric's values are live at once; a metric that needs
// the file to grow and cannot have it is not declared.
func (r *Registry) AddMetric(m Metric) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.awaitPublicationLocked() // its values are live at once, or it is not declared
	_, err := r.addMetricLocked(m, undoDeclared)
	return err
}

// addMetricLocked declares m. When its values need a growth step that
// fails, ifFailed decides (see publishFailure).
func (r *Registry) addMetricLocked(m Metric, ifFailed publishFailure) (*metric, error) {
	if err := r.declarableLocked(); err != nil {
		return nil, err
	}
	// Checked with no subject first: quoting the name costs more than
	// declaring the metric, so it is done only for the error.
	if r.checkMetricLocked("", m) != nil {
		return nil, r.checkMetricLocked(subject("metric", m.Name), m)
	}
	var in *indom
	if m.Indom != 0 {
		if in = r.serials[m.Indom]; in == nil {
			return nil, errorf(ErrUnknown, subject("metric", m.Name), "indom %d is not declared", m.Indom)
		}
	}
	if err := r.checkMetricBudgetLocked(subject("metric", m.Name), in); err != nil {
		return nil, err
	}
	p, newPart, err := r.partWithRoomLocked(in, m.Name)
	if err != nil {
		return nil, err
	}
	if m.Item != 0 && p.used[m.Item] {
		other := p.metrics[slices.IndexFunc(p.metrics, func(o *metric) bool { return o.item == m.Item })]
		err = errorf(ErrDuplicate, subject("metric", m.Name), "item %d already used by metric %q", m.Item, other.Name)
	} else if _, added := r.names.add(m.Name, len(r.metrics), r.metricName); !added {
		// The name is checked free as it is taken: one probe of the
		// index, where a lookup and then an addition took two.
		err = errorf(ErrDuplicate, subject("metric", m.Name), "name already declared")
	}
	if err != nil {
		if newPart {
			r.parts = r.parts[:len(r.parts)-1]
		}
		return nil, err
	}
	mt := r.newMetric()
	*mt = metric{Metric: m, item: m.Item, auto: m.Item == 0, indom: in}
	newIndom := mt.indom != nil && !p.hasIndom(mt.indom)
	r.declareMetric(p, mt, newIndom)
	if r.state == started && p.file != nil {
		if mt.auto {
			mt.item = takeItem(mt.Name, &p.used)
		}
		p.newMetricSlots(mt)
	}
	if err := r.changedLocked(ifFailed, step{kind: stepMetric, p: p, m: mt, newIndom: newIndom, newPart: newPart}, p); err != nil {
		return nil, err
	}
	return mt, nil
}

// declareMetric records mt, whose name the index holds already, in the
// registry and in part p, with its indom when the part does not have it.
func (r *Registry) declareMetric(p *part, mt *metric, newIndom bool) {
	mt.part, mt.index = p, len(p.metrics)
	r.metrics = append(r.metrics, mt)
	if mt.indom != nil {
		mt.indom.addUsers(1)
		mt.indom.metrics = append(mt.indom.metrics, mt)
	}
	forPrefixes(mt.Name, func(prefix string) { r.prefixes[prefix]++ })
	p.metrics = append(p.metrics, mt)
	if !mt.auto {
		p.used[mt.item] = true
	}
	if newIndom {
		p.indoms = append(p.indoms, mt.indom)
	}
}

// undeclareMetric undoes declareMetric, and the taking of an item.
func (r *Registry) undeclareMetric(p *part, mt *metric, newIndom, newPart bool) {
	r.names.remove(mt.Name, r.metricName)
	r.metrics = r.metrics[:len(r.metrics)-1]
	if mt.indom != nil {
		mt.indom.addUsers(-1)
		mt.indom.metrics = mt.indom.metrics[:len(mt.indom.metrics)-1]
	}
	forPrefixes(mt.Name, func(prefix string) {
		if r.prefixes[prefix]--; r.prefixes[prefix] == 0 {
			delete(r.prefixes, prefix)
		}
	})
	p.metrics = p.metrics[:len(p.metrics)-1]
	if mt.item != 0 {
		p.used[mt.item] = false
	}
	if newIndom {
		p.indoms = p.indoms[:len(p.indoms)-1]
	}
	if newPart {
		r.parts = r.parts[:len(r.parts)-1]
	}
}

// checkMetricLocked checks what a metric declaration says on its own and
// against the namespace of the names declared; that the name is free is
// checked as it is taken (addMetricLocked).
func (r *Registry) checkMetricLocked(subject string, m Metric) error {
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
	for i := range len(m.Name) {
		if m.Name[i] == '.' && r.named(m.Name[:i]) != nil {
			return errorf(ErrNamespace, subject, "metric %q is a prefix of it, which makes PCP drop every MMV metric on the host", m.Name[:i])
		}
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

// forPrefixes calls f with every dot-prefix of a metric name.
func forPrefixes(name string, f func(prefix string)) {
	for i := range len(name) {
		if name[i] == '.' {
			f(name[:i])
		}
	}
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
// keep it; the lookup itself is a map access.
func (r *Registry) Value(metric, instance string) (*Value, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.awaitPublicationLocked()
	switch r.state {
	case declaring:
		return nil, errorf(ErrNotStarted, subject("metric", metric), "")
	case closed:
		return nil, errorf(ErrClosed, subject("metric", metric), "")
	}
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

// partWithRoomLocked returns the first part with room for a metric of
// that name over in (nil when singular): fewer than MaxMetrics metrics,
// and values within its budget with the metric's (budget.go); or a new
// overflow part when none has. A name that fits only the first file
// (fitsOverflow) has the first file or an error. A new part's name is
// checked here, when the metric that needs it is declared; the caller
// drops the part if the declaration fails.
func (r *Registry) partWithRoomLocked(in *indom, name string) (p *part, isNew bool, err error) {
	budget, live := fileBudget(&r.opts), 1
	if in != nil {
		live = in.live
	}
	need := chargeOf(in, live, budget)
	for _, p := range r.parts {
		if len(p.metrics) < MaxMetrics && p.chargeLocked(budget, nil, 0)+need <= budget {
			return p, false, nil
		}
		if !fitsOverflow(r.name, r.opts.Flags, name) {
			return nil, false, errFirstFileOnly(name, r.name, len(p.metrics) >= MaxMetrics, p.chargeLocked(budget, nil, 0)+need, budget)
		}
	}
	p = newPart(len(r.parts), r.name, r.opts.Flags)
	if err := checkFileName(p.name, NoPrefix); err != nil {
		return nil, false, fmt.Errorf("mmv: file %q: more metrics than a file holds (%d, or %d values) need an overflow file: %w", r.name, MaxMetrics, budget, err)
	}
	r.parts = append(r.parts, p)
	return p, true, nil
}
