// Package mmv publishes a Go program's metrics to Performance Co-Pilot (PCP)
// through an MMV file, the memory-mapped format of mmv(5).
//
// A Registry declares instance domains, metrics and labels, then Start lays
// them out in a file under $PCP_TMP_DIR/mmv exactly as PCP's own C library,
// libpcp_mmv, would, and maps it. PCP's MMV agent (pmdammv) reads the values
// straight from that mapping, so an update is one atomic operation on shared
// memory: Value handles add and set without locks or allocation.
//
// Every declaration is checked against the rules of PCP's reader before the
// file is written, so a file the registry writes is loaded whole.
package mmv

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gopcp/mmv/internal/pcpconf"
)

// Options are the file-wide settings of a registry.
type Options struct {
	// Cluster is the PMID cluster of the file's metrics, 0..4095. Zero lets
	// PCP's reader choose one, which cluster labels then never match.
	Cluster uint32
	// Flags are the header flags.
	Flags Flags
	// Version forces file format Version2 or Version3. Zero chooses as
	// libpcp_mmv does: v1, v2 when a metric or instance name is 64 bytes or
	// longer, v3 when there are labels.
	Version int
	// Dir is the directory of the file. Empty means $PCP_TMP_DIR/mmv,
	// resolved as PCP resolves it (see Dir).
	Dir string
	// PublishDelay is how long declarations made after Start may wait to
	// be published together in a new file; zero means 50ms. Their values
	// can be updated at once; Flush publishes without waiting.
	PublishDelay time.Duration
	// MaxIndomInstances caps the instances of one indom, and MaxInstances
	// those of the registry (overflow files included once): PCP's reader
	// takes time quadratic in an indom's instances, inside pmcd, where
	// every client of the host waits for it (see docs/design.md, "What a
	// registry costs PCP's reader"). Zero means DefaultMaxIndomInstances
	// and DefaultMaxInstances; a negative value removes the cap. Raise
	// them knowingly: at 16,000 instances in one indom a fetch holds pmcd
	// for half a second, at 32,000 for three.
	MaxIndomInstances, MaxInstances int
}

// Registry declares the metrics of one MMV file and, once started, owns the
// file and hands out the Value handles that update it.
//
// Declare, call Start, then look values up with Value. Declarations may go
// on after Start: the file grows (see Flush). A Registry is safe for
// concurrent use.
type Registry struct {
	mu      sync.Mutex
	name    string
	opts    Options
	indoms  []*indom
	metrics []*metric
	labels  []*label
	serials map[uint32]*indom
	names   map[string]*metric
	// prefixes maps every dot-prefix of every metric name to one such
	// name, to refuse a metric named like another's prefix.
	prefixes map[string]string
	// slots lists the values in the order of their records: a value's slot
	// fixes its address for good.
	slots []slotOwner
	bound int // slots[:bound] have handles
	// parts are the overflow files of a registry with more metrics than a
	// file holds (see parts.go); elsewhere maps their metrics to them.
	parts     []*Registry
	elsewhere map[string]*Registry

	state   int // declaring, started or closed
	file    *file
	dirty   bool        // declarations not yet in the file
	pending *time.Timer // the publication of dirty declarations
	pubErr  error       // why the last publication failed

	strMu     sync.Mutex // serialises string values' writers
	strClosed bool       // under strMu: string updates are dropped

	// Hooks of the instruments built on the registry: run, in order, at
	// the end of Start and at the start of Close, with mu held.
	onStart, onClose []func()
}

const (
	declaring = iota
	started
	closed
)

type indom struct {
	Indom
	index int            // position in the registry
	ids   map[int32]int  // instance id to index
	names map[string]int // instance name to index
}

type metric struct {
	Metric
	index  int      // position in the registry
	indom  *indom   // nil when singular
	slots  []int    // per instance, or one: the value's slot
	values []*Value // per instance, or one: the handle, once the slot has storage
}

// slotOwner is the metric and instance (index in the indom) of a value.
type slotOwner struct {
	m    *metric
	inst int
}

type label struct {
	Label
	kind     labelKind
	metric   string // for labelItem
	serial   uint32 // for labelIndom and labelInstances
	instance int32  // for labelInstances
	payload  []byte
}

// NewRegistry returns a registry for the file name, with the given options
// (nil for the defaults). The name is checked by Start.
func NewRegistry(name string, opts *Options) *Registry {
	r := &Registry{name: name, serials: map[uint32]*indom{}, names: map[string]*metric{}, prefixes: map[string]string{},
		elsewhere: map[string]*Registry{}}
	if opts != nil {
		r.opts = *opts
	}
	return r
}

// Name returns the file name.
func (r *Registry) Name() string { return r.name }

// AddIndom declares an instance domain and its instances.
func (r *Registry) AddIndom(d Indom) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.declarable(); err != nil {
		return err
	}
	subject := "indom " + strconv.FormatUint(uint64(d.Serial), 10)
	if d.Serial == 0 || d.Serial > MaxSerial {
		return errorf(ErrRange, subject, "serial must be 1..%d", MaxSerial)
	}
	if r.serials[d.Serial] != nil {
		return errorf(ErrDuplicate, subject, "serial already declared")
	}
	if r.opts.Cluster > maxIndomCluster {
		return errorf(ErrRange, subject, "cluster %d is more than %d: PCP keeps %d bits of an indom's cluster<<11|serial, so its id would be cluster %d's and its labels lost",
			r.opts.Cluster, maxIndomCluster, indomIDBits, r.opts.Cluster&maxIndomCluster)
	}
	if err := checkHelp(subject, d.ShortHelp, d.LongHelp); err != nil {
		return err
	}
	if err := checkInstanceCaps(&r.opts, subject, d.ShortHelp, 0, r.instanceCount(), len(d.Instances)); err != nil {
		return err
	}
	in := &indom{Indom: d, ids: map[int32]int{}, names: map[string]int{}}
	in.Instances = nil
	for _, inst := range d.Instances {
		if err := in.add(inst); err != nil {
			return err
		}
	}
	in.index = len(r.indoms)
	r.indoms = append(r.indoms, in)
	r.serials[d.Serial] = in
	return r.grew(nil)
}

// AddInstance adds an instance to a declared instance domain.
func (r *Registry) AddInstance(serial uint32, inst Instance) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.addInstances(serial, []Instance{inst})
}

// addInstances adds instances to a declared instance domain, all of them
// or, when one is refused, none, with mu held. An error from the file's
// growth (see grew) comes after the instances were added.
func (r *Registry) addInstances(serial uint32, insts []Instance) error {
	if err := r.declarable(); err != nil {
		return err
	}
	in, err := r.indom(serial)
	if err != nil {
		return err
	}
	first := len(in.Instances)
	if err := checkInstanceCaps(&r.opts, "indom "+strconv.FormatUint(uint64(serial), 10), in.ShortHelp, first, r.instanceCount(), len(insts)); err != nil {
		return err
	}
	for _, inst := range insts {
		if err := in.add(inst); err != nil {
			in.truncate(first)
			return err
		}
	}
	err = r.forParts(serial, func(p *Registry) error {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.addInstances(serial, insts)
	})
	if err != nil {
		return err
	}
	var slots []int
	if r.state == started {
		for _, m := range r.metrics {
			if m.indom == in {
				for j := first; j < len(in.Instances); j++ {
					slots = append(slots, r.newSlot(m, j))
				}
			}
		}
	}
	return r.grew(slots)
}

// truncate forgets the instances from index n on.
func (in *indom) truncate(n int) {
	for _, inst := range in.Instances[n:] {
		delete(in.ids, inst.ID)
		key, _, _ := strings.Cut(inst.Name, " ")
		delete(in.names, key)
	}
	in.Instances = in.Instances[:n]
}

func (in *indom) add(inst Instance) error {
	subject := "indom " + strconv.FormatUint(uint64(in.Serial), 10) + " instance " + quote(inst.Name)
	if inst.ID < 0 {
		return errorf(ErrRange, subject, "id %d is negative", inst.ID)
	}
	if err := checkInstanceName(subject, inst.Name); err != nil {
		return err
	}
	if _, dup := in.ids[inst.ID]; dup {
		return errorf(ErrDuplicate, subject, "id %d already declared", inst.ID)
	}
	// PCP matches instance names up to the first space.
	key, _, _ := strings.Cut(inst.Name, " ")
	if i, dup := in.names[key]; dup {
		return errorf(ErrDuplicate, subject, "same name up to the first space as instance %q", in.Instances[i].Name)
	}
	in.ids[inst.ID] = len(in.Instances)
	in.names[key] = len(in.Instances)
	in.Instances = append(in.Instances, inst)
	return nil
}

// AddMetric declares a metric. Its indom, if any, must be declared first.
func (r *Registry) AddMetric(m Metric) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.declarable(); err != nil {
		return err
	}
	subject := "metric " + quote(m.Name)
	if err := checkMetricName(subject, m.Name, r.opts.Flags); err != nil {
		return err
	}
	if r.names[m.Name] != nil || r.elsewhere[m.Name] != nil {
		return errorf(ErrDuplicate, subject, "name already declared")
	}
	if other, ok := r.prefixes[m.Name]; ok {
		return errorf(ErrNamespace, subject, "it is also a prefix of metric %q, which makes PCP drop every MMV metric on the host", other)
	}
	for i := range len(m.Name) {
		if m.Name[i] == '.' && (r.names[m.Name[:i]] != nil || r.elsewhere[m.Name[:i]] != nil) {
			return errorf(ErrNamespace, subject, "metric %q is a prefix of it, which makes PCP drop every MMV metric on the host", m.Name[:i])
		}
	}
	if m.Item > MaxItem {
		return errorf(ErrRange, subject, "item %d is more than %d", m.Item, MaxItem)
	}
	if _, ok := typeNames[m.Type]; !ok {
		return errorf(ErrRange, subject, "unknown type %d", m.Type)
	}
	if _, ok := semNames[m.Semantics]; !ok {
		return errorf(ErrRange, subject, "unknown semantics %d", m.Semantics)
	}
	if !m.Units.valid() {
		return errorf(ErrRange, subject, "units %#x: a dimension or scale is out of range", uint32(m.Units))
	}
	if err := checkHelp(subject, m.ShortHelp, m.LongHelp); err != nil {
		return err
	}
	mt := &metric{Metric: m, index: len(r.metrics)}
	if m.Indom != 0 {
		in, err := r.indom(m.Indom)
		if err != nil {
			return errorf(ErrUnknown, subject, "indom %d is not declared", m.Indom)
		}
		mt.indom = in
	}
	if len(r.metrics) >= MaxMetrics {
		if err := r.addElsewhere(m); err != nil {
			return err
		}
		r.addPrefixes(m.Name)
		return nil
	}
	if m.Item != 0 {
		for _, o := range r.metrics {
			if o.Item == m.Item {
				return errorf(ErrDuplicate, subject, "item %d already used by metric %q", m.Item, o.Name)
			}
		}
	}
	r.metrics = append(r.metrics, mt)
	r.names[m.Name] = mt
	r.addPrefixes(m.Name)
	var slots []int
	if r.state == started {
		for j := range mt.valueCount() {
			slots = append(slots, r.newSlot(mt, j))
		}
	}
	return r.grew(slots)
}

// addPrefixes records the dot-prefixes of a metric name.
func (r *Registry) addPrefixes(name string) {
	for i := range len(name) {
		if name[i] == '.' {
			r.prefixes[name[:i]] = name
		}
	}
}

// newSlot gives instance j of m (0 when singular) the next value slot.
func (r *Registry) newSlot(m *metric, j int) int {
	m.slots = append(m.slots, len(r.slots))
	m.values = append(m.values, nil)
	r.slots = append(r.slots, slotOwner{m, j})
	return len(r.slots) - 1
}

// grew records a declaration made after Start, whose new values have the
// given slots: they get storage in the file's spare room, and the file is
// rewritten with the declaration after PublishDelay; or at once when the
// spare room is short, or a new value is a String (its text lives outside
// the values section).
func (r *Registry) grew(slots []int) error {
	if r.state != started {
		return nil
	}
	r.dirty = true
	now := false
	for _, s := range slots {
		now = now || s >= r.file.capacity || r.slots[s].m.Type == String
	}
	if now {
		return r.publish()
	}
	r.bind()
	if r.pending == nil {
		delay := r.opts.PublishDelay
		if delay <= 0 {
			delay = 50 * time.Millisecond
		}
		r.pending = time.AfterFunc(delay, func() { r.Flush() })
	}
	return nil
}

// Flush publishes the declarations made since Start, or since the last
// Flush, in a new file now. Until then PCP does not see them, though their
// values can already be updated. A declaration that needs the file to grow
// beyond its spare room flushes by itself.
func (r *Registry) Flush() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state != started {
		return nil
	}
	return errors.Join(r.publish(), r.forParts(0, (*Registry).Flush))
}

// publish rewrites the file with every declaration, values kept. See
// file.replace for how no update is lost.
func (r *Registry) publish() error {
	if r.pending != nil {
		r.pending.Stop()
		r.pending = nil
	}
	if !r.dirty {
		return nil
	}
	f := r.file
	version, err := r.version()
	if err != nil {
		return err
	}
	live := min(len(r.slots), f.capacity)
	// Room to double, and to cover the old mapping whole.
	oldEnd := int64(uintptr(f.base) + uintptr(f.size) - uintptr(f.values))
	capacity := max(2*len(r.slots)+16, int((oldEnd+valueSize-1)/valueSize))
	p := r.newPlan(version, &growth{phase: int64(uintptr(f.values)) % pageSize, capacity: capacity})
	gen, pid := generation(time.Now()), int32(os.Getpid())

	r.strMu.Lock()
	defer r.strMu.Unlock()
	snap := make([]byte, live*valueSize)
	err = f.replace(p.size, p.offset[secValues], capacity, live, func(b []byte) {
		// Word by word with atomic loads, so no value is read torn.
		words := unsafe.Slice((*uint64)(f.values), len(snap)/8)
		for i := range words {
			ne.PutUint64(snap[8*i:], atomic.LoadUint64(&words[i]))
		}
		r.encode(p, b, gen, pid)
		r.carry(p, b, snap)
	}, func(final []byte) { r.merge(snap, final) })
	if err != nil {
		err = fileError(r.name, "cannot grow", err)
		r.pubErr = err
		return err
	}
	r.dirty, r.pubErr = false, nil
	r.bind()
	return nil
}

// fileError names the file in an error from the file system; the
// package's own errors name it already.
func fileError(name, what string, err error) error {
	var ours *declError
	if errors.As(err, &ours) {
		return err
	}
	return fmt.Errorf("mmv: file %q: %s: %w", name, what, err)
}

// bind makes the handles of the slots that have storage in the file.
func (r *Registry) bind() {
	for ; r.bound < min(len(r.slots), r.file.capacity); r.bound++ {
		o := r.slots[r.bound]
		v := newValue(unsafe.Add(r.file.values, r.bound*valueSize), o.m.Type, r)
		o.m.values[o.inst] = &v
	}
}

// AddLabel attaches a label to every metric of the registry (a cluster
// label). It needs a non-zero Options.Cluster.
func (r *Registry) AddLabel(l Label) error {
	return r.addLabel(&label{Label: l, kind: labelCluster}, "registry")
}

// AddMetricLabel attaches a label to a declared metric.
func (r *Registry) AddMetricLabel(metric string, l Label) error {
	return r.addLabel(&label{Label: l, kind: labelItem, metric: metric}, "metric "+quote(metric))
}

// AddIndomLabel attaches a label to a declared instance domain.
func (r *Registry) AddIndomLabel(serial uint32, l Label) error {
	return r.addLabel(&label{Label: l, kind: labelIndom, serial: serial}, "indom "+strconv.FormatUint(uint64(serial), 10))
}

// AddInstanceLabel attaches a label to one instance of a declared domain.
func (r *Registry) AddInstanceLabel(serial uint32, id int32, l Label) error {
	return r.addLabel(&label{Label: l, kind: labelInstances, serial: serial, instance: id},
		"indom "+strconv.FormatUint(uint64(serial), 10)+" instance "+strconv.Itoa(int(id)))
}

func (r *Registry) addLabel(l *label, subject string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.declarable(); err != nil {
		return err
	}
	switch l.kind {
	case labelCluster:
		if r.opts.Cluster == 0 {
			return errorf(ErrLabel, subject+" label "+quote(l.Name), "a cluster label needs a non-zero cluster: PCP never matches it on cluster 0")
		}
	case labelItem:
		if p := r.elsewhere[l.metric]; p != nil {
			return p.AddMetricLabel(r.partName(l.metric), l.Label)
		}
		if r.names[l.metric] == nil {
			return errorf(ErrUnknown, subject, "label %q on a metric not declared", l.Name)
		}
	case labelIndom, labelInstances:
		in, err := r.indom(l.serial)
		if err != nil {
			return err
		}
		if _, ok := in.ids[l.instance]; l.kind == labelInstances && !ok {
			return errorf(ErrUnknown, subject, "label %q on an instance not declared", l.Name)
		}
	}
	if r.opts.Version == Version2 {
		return errorf(ErrRange, subject+" label "+quote(l.Name), "labels need version 3, and version 2 is forced")
	}
	if len(r.labels) >= MaxLabels {
		return errorf(ErrTooMany, subject+" label "+quote(l.Name), "a file holds at most %d labels", MaxLabels)
	}
	p, err := labelPayload(subject, l.Label)
	if err != nil {
		return err
	}
	l.payload = p
	if l.kind != labelItem {
		serial := l.serial // zero for a cluster label: every file
		err := r.forParts(serial, func(p *Registry) error {
			return p.addLabel(&label{Label: l.Label, kind: l.kind, serial: l.serial, instance: l.instance}, subject)
		})
		if err != nil {
			return err
		}
	}
	r.labels = append(r.labels, l)
	return r.grew(nil)
}

// valueCount is the number of values of a metric: one per instance, or one.
func (m *metric) valueCount() int {
	if m.indom == nil {
		return 1
	}
	return len(m.indom.Instances)
}

// labelTarget returns the identity and internal instance of a label's
// record: the cluster, the metric's item, or the indom serial and instance.
func (r *Registry) labelTarget(l *label, p *plan) (identity uint32, instance int32) {
	switch l.kind {
	case labelCluster:
		return r.opts.Cluster, labelNoInstance
	case labelItem:
		return p.items[r.names[l.metric].index], labelNoInstance
	case labelIndom:
		return l.serial, labelNoInstance
	}
	return l.serial, l.instance
}

func (r *Registry) declarable() error {
	if r.state == closed {
		return errorf(ErrClosed, "file "+quote(r.name), "")
	}
	return nil
}

func (r *Registry) indom(serial uint32) (*indom, error) {
	if in := r.serials[serial]; in != nil {
		return in, nil
	}
	return nil, errorf(ErrUnknown, "indom "+strconv.FormatUint(uint64(serial), 10), "")
}

// validate checks the registry as a whole: what no single declaration shows.
func (r *Registry) validate() error {
	if err := checkFileName(r.name, r.opts.Flags); err != nil {
		return err
	}
	subject := "file " + quote(r.name)
	if r.opts.Cluster > MaxCluster {
		return errorf(ErrRange, subject, "cluster %d is more than %d", r.opts.Cluster, MaxCluster)
	}
	if r.opts.Flags&^allFlags != 0 {
		return errorf(ErrRange, subject, "unknown flags %#x", uint32(r.opts.Flags&^allFlags))
	}
	_, err := r.version()
	return err
}

// version chooses the file format version as libpcp_mmv does, or checks
// the forced one.
func (r *Registry) version() (int, error) {
	need := Version1
	for _, m := range r.metrics {
		if len(m.Name) > maxV1Name {
			need = Version2
		}
	}
	for _, in := range r.indoms {
		for _, inst := range in.Instances {
			if len(inst.Name) > maxV1Name {
				need = Version2
			}
		}
	}
	if len(r.labels) > 0 {
		need = Version3
	}
	switch v := r.opts.Version; {
	case v == 0:
		return need, nil
	case v != Version2 && v != Version3:
		return 0, errorf(ErrRange, "file "+quote(r.name), "version %d: only 2 or 3 can be forced", v)
	case v < need:
		return 0, errorf(ErrRange, "file "+quote(r.name), "version %d is forced but labels need version 3", v)
	default:
		return v, nil
	}
}

// assignItems gives every metric declared without an item one derived from
// its name. Names are taken in sorted order and collisions probe to the
// next free item, so the same set of names gets the same items whatever
// the order of declaration.
func assignItems(ms []*metric) []uint32 {
	items := make([]uint32, len(ms))
	used := make([]bool, MaxItem+1)
	var auto []int
	for i, m := range ms {
		items[i] = m.Item
		if m.Item == 0 {
			auto = append(auto, i)
		}
		used[m.Item] = true
	}
	slices.SortFunc(auto, func(a, b int) int { return cmp.Compare(ms[a].Name, ms[b].Name) })
	for _, i := range auto {
		it := 1 + fnv32(ms[i].Name)%MaxItem
		for used[it] {
			it = 1 + it%MaxItem
		}
		used[it] = true
		items[i] = it
	}
	return items
}

func fnv32(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

// Start validates the declarations, writes the file and maps it. The file
// appears complete or not at all: it is written under a temporary name
// starting with '.', which PCP's reader ignores, then renamed into place.
func (r *Registry) Start() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.declarable(); err != nil {
		return err
	}
	if r.state == started {
		return errorf(ErrStarted, "file "+quote(r.name), "")
	}
	if err := r.validate(); err != nil {
		return err
	}
	version, _ := r.version()
	for _, m := range r.metrics {
		for j := range m.valueCount() {
			r.newSlot(m, j)
		}
	}
	p := r.newPlan(version, nil)
	dir := r.opts.Dir
	if dir == "" {
		dir = Dir()
	}
	gen, pid := generation(time.Now()), int32(os.Getpid())
	f, err := createFile(dir, r.name, p.size, p.offset[secValues], len(r.slots), func(b []byte) { r.encode(p, b, gen, pid) })
	if err != nil {
		for _, m := range r.metrics {
			m.slots, m.values = nil, nil
		}
		r.slots = nil
		return fileError(r.name, "cannot start", err)
	}
	r.file = f
	r.state = started
	r.bind()
	for i, p := range r.parts {
		if err := p.Start(); err != nil {
			for _, q := range r.parts[:i] {
				q.Close()
			}
			r.closeFile(true)
			return err
		}
	}
	for _, f := range r.onStart {
		f()
	}
	return nil
}

// Value returns the handle on a value: the metric's only value when
// instance is "", else the value of the named instance. Look it up once and
// keep it; the lookup itself is a map access.
func (r *Registry) Value(metric, instance string) (*Value, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lookup(metric, instance)
}

// lookup is Value with mu held, for the hooks that run under it.
func (r *Registry) lookup(metric, instance string) (*Value, error) {
	subject := "metric " + quote(metric)
	switch r.state {
	case declaring:
		return nil, errorf(ErrNotStarted, subject, "")
	case closed:
		return nil, errorf(ErrClosed, subject, "")
	}
	if p := r.elsewhere[metric]; p != nil {
		return p.Value(r.partName(metric), instance)
	}
	m := r.names[metric]
	if m == nil {
		return nil, errorf(ErrUnknown, subject, "")
	}
	i := 0
	if m.indom == nil {
		if instance != "" {
			return nil, errorf(ErrUnknown, subject, "a singular metric has no instance %q", instance)
		}
	} else {
		key, _, _ := strings.Cut(instance, " ")
		var ok bool
		i, ok = m.indom.names[key]
		if !ok || m.indom.Instances[i].Name != instance {
			return nil, errorf(ErrUnknown, subject, "no instance %q in indom %d", instance, m.Indom)
		}
	}
	if m.values[i] == nil {
		return nil, fmt.Errorf("mmv: metric %q: not in the file: %w", metric, r.pubErr)
	}
	return m.values[i], nil
}

// Path returns the path of the file, once started.
func (r *Registry) Path() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.file == nil {
		return ""
	}
	return r.file.path
}

// Close unmaps the file, and removes it when the Process flag is set;
// without that flag the file stays with its last values, which PCP goes on
// reading. Values updated after Close are dropped, not written. Closing a
// registry that was never started only stops further declarations.
func (r *Registry) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state == closed {
		return nil
	}
	wasStarted := r.state == started
	var err error
	if wasStarted && r.opts.Flags&Process == 0 {
		// The file outlives the process: publish what it lacks.
		err = r.publish()
	}
	if r.pending != nil {
		r.pending.Stop()
	}
	r.state = closed
	if wasStarted {
		for _, f := range r.onClose {
			f()
		}
	}
	err = errors.Join(err, r.forParts(0, (*Registry).Close))
	if r.file == nil {
		return err
	}
	return errors.Join(err, r.closeFile(r.opts.Flags&Process != 0))
}

// closeFile unmaps the file, dropping string updates from now on, and
// removes it if asked.
func (r *Registry) closeFile(remove bool) error {
	r.strMu.Lock()
	r.strClosed = true
	r.strMu.Unlock()
	return r.file.close(remove)
}

// Dir returns the directory where registries write their files by default:
// $PCP_TMP_DIR/mmv. PCP_TMP_DIR is taken from the environment, else from
// the first pcp.conf found ($PCP_CONF, $PCP_DIR/etc/pcp.conf, /etc/pcp.conf,
// /usr/local/etc/pcp.conf), as libpcp finds it. On a machine with no
// pcp.conf at all it is os.TempDir(), so programs run without PCP.
func Dir() string {
	return dirFrom(os.Getenv, pcpconf.Files)
}

// dirFrom is Dir with the environment and the default pcp.conf paths given.
func dirFrom(getenv func(string) string, files []string) string {
	if d := pcpconf.Get(getenv, "PCP_TMP_DIR", files); d != "" {
		return filepath.Join(d, "mmv")
	}
	return filepath.Join(os.TempDir(), "mmv")
}

// generation returns a generation number as libpcp makes them: seconds in
// the high 32 bits, microseconds in the low.
func generation(t time.Time) uint64 {
	return uint64(t.Unix())<<32 | uint64(t.Nanosecond()/1000)
}

func quote(s string) string { return strconv.Quote(s) }
