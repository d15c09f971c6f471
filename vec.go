package mmv

import (
	"slices"
	"sync"
	"sync/atomic"
)

// DefaultVecLimit is the number of instances a vector may hold unless
// SetLimit says otherwise: a guard against unbounded cardinality, such as
// a label taken from user input.
const DefaultVecLimit = 1000

// Vec is a vector of instruments of one kind, such as requests by route:
// one metric over an instance domain, with one instrument per instance.
// Instance names are the label values; PCP tells instances apart by their
// name up to the first space, so "GET /a" and "GET /b" cannot be both.
//
// Instances are declared with the vector or on first use: With on a new
// name adds the instance to the vector's instance domain, as Prometheus'
// WithLabelValues does. Before Start the new instrument counts in memory
// of its own, carried into the file by Start; after Start it is live at
// once, and PCP sees the instance after the registry's next publication
// (within Options.PublishDelay, or at Flush).
//
// A vector holds at most DefaultVecLimit instances, those declared with it
// included, unless SetLimit says otherwise. Beyond the limit, and for a
// name the registry refuses (empty, with a NUL, a leading or trailing
// space, longer than 255 bytes, or the same as another instance's up to
// the first space), With returns nil, whose methods do nothing, and Get
// returns the error.
//
// With on an existing instance is a map lookup, lock-free and
// allocation-free (a copy-on-write map rebuilt as the instances double,
// and a sync.Map of those added since); keep the instrument it returns on
// hot paths all the same. Adding an instance takes the registry's lock;
// goroutines asking for the same new name at once all get the one
// instrument. A histogram vector's instance adds one instance per bucket
// too (see NewHistogramVec).
type Vec[T any] struct {
	r     *Registry
	what  string // "vector \"name\"", for errors
	kind  vecKind[T]
	limit atomic.Int64

	// Lock-free reads: fast is a map rebuilt as instances are added,
	// recent holds those added since (string to *T).
	fast   atomic.Pointer[map[string]*T]
	recent sync.Map

	// Under r.mu:
	names    []string         // the instances with an instrument, in order
	all      map[string]*T    // every instrument
	declared map[string]int32 // instances declared whose instrument the file could not hold yet
	nrecent  int              // entries in recent
}

// vecKind is what a vector of one kind of instrument does, with the
// registry's lock held.
type vecKind[T any] interface {
	// declare adds what instance id needs to the registry, skipping what
	// a previous call added; added reports whether the instance is now in
	// the vector's instance domain, even when err is not nil.
	declare(name string, id int32) (added bool, err error)
	// make makes the instrument of a declared instance, bound to its
	// values when the registry is started, and keeps it for the
	// registry's Start and Close.
	make(name string, id int32) (*T, error)
}

func newVec[T any](r *Registry, metric string, kind vecKind[T], instances []string) *Vec[T] {
	v := &Vec[T]{r: r, what: "vector " + quote(metric), kind: kind, all: map[string]*T{}, declared: map[string]int32{}}
	v.limit.Store(DefaultVecLimit)
	for i, in := range instances {
		t, err := kind.make(in, int32(i))
		if err != nil {
			panic(err)
		}
		v.names = append(v.names, in)
		v.all[in] = t
	}
	v.rebuild()
	return v
}

// rebuild makes the fast map from all, with r.mu held (or before the
// vector is shared), and empties recent.
func (v *Vec[T]) rebuild() {
	fast := make(map[string]*T, len(v.all))
	for k, t := range v.all {
		fast[k] = t
	}
	v.fast.Store(&fast)
	v.recent.Clear()
	v.nrecent = 0
}

// known returns the instrument of an instance already made, lock-free.
func (v *Vec[T]) known(instance string) *T {
	if t := (*v.fast.Load())[instance]; t != nil {
		return t
	}
	if t, ok := v.recent.Load(instance); ok {
		return t.(*T)
	}
	return nil
}

// With returns the instrument of the instance, adding the instance on
// first use, or nil when the vector is full or the name is refused (see
// Get for why).
func (v *Vec[T]) With(instance string) *T {
	if v == nil {
		return nil
	}
	if t := v.known(instance); t != nil {
		return t
	}
	t, _ := v.add(instance)
	return t
}

// Get returns the instrument of the instance, adding the instance on first
// use. The error wraps ErrTooMany when the vector holds its limit of
// instances, or is the registry's when it refuses the instance (ErrName,
// ErrTooLong, ErrDuplicate, ErrClosed...).
func (v *Vec[T]) Get(instance string) (*T, error) {
	if v == nil {
		return nil, errorf(ErrUnknown, "instance "+quote(instance), "nil vector")
	}
	if t := v.known(instance); t != nil {
		return t, nil
	}
	return v.add(instance)
}

// add makes the instrument of a new instance.
func (v *Vec[T]) add(instance string) (*T, error) {
	r := v.r
	r.mu.Lock()
	defer r.mu.Unlock()
	if t := v.all[instance]; t != nil { // made by another goroutine meanwhile
		return t, nil
	}
	id, declared := v.declared[instance]
	if !declared {
		n := len(v.names) + len(v.declared)
		if limit := v.limit.Load(); int64(n) >= limit {
			return nil, errorf(ErrTooMany, v.what+" instance "+quote(instance), "the vector holds its limit of %d instances (see SetLimit)", limit)
		}
		id = int32(n)
	}
	added, err := v.kind.declare(instance, id)
	if added {
		v.declared[instance] = id
	}
	if err != nil {
		return nil, err
	}
	t, err := v.kind.make(instance, id)
	if err != nil {
		return nil, err
	}
	delete(v.declared, instance)
	v.names = append(v.names, instance)
	v.all[instance] = t
	if fast := *v.fast.Load(); v.nrecent < max(8, len(fast)) {
		v.recent.Store(instance, t)
		v.nrecent++
		return t, nil
	}
	// Rebuild the fast map once recent has as many entries: the copies
	// cost O(1) per instance, amortised. A reader that missed in the old
	// map and then in the cleared recent map takes the lock above.
	v.rebuild()
	return t, nil
}

// SetLimit sets the number of instances the vector may hold, those it was
// declared with included (DefaultVecLimit until then). A limit below the
// instances it holds keeps them and adds no more.
func (v *Vec[T]) SetLimit(n int) {
	v.limit.Store(int64(n))
}

// Limit returns the number of instances the vector may hold.
func (v *Vec[T]) Limit() int { return int(v.limit.Load()) }

// Instances returns the instance names, in the order they were declared or
// first used.
func (v *Vec[T]) Instances() []string {
	v.r.mu.Lock()
	defer v.r.mu.Unlock()
	return slices.Clone(v.names)
}

// slotVec is the vecKind of the instruments with one value each: counters,
// gauges and timers.
type slotVec[T any] struct {
	r      *Registry
	metric string
	serial uint32
	mk     func() (*T, *slot)
	insts  []string // the instances made, and their slots
	slots  []*slot
}

func (k *slotVec[T]) declare(name string, id int32) (bool, error) {
	return declareInstances(k.r, k.serial, Instance{ID: id, Name: name})
}

// declareInstances adds the instances to the indom, unless the first one
// is there already, and reports whether it is there.
func declareInstances(r *Registry, serial uint32, insts ...Instance) (bool, error) {
	in := r.serials[serial]
	if _, ok := in.ids[insts[0].ID]; ok {
		return true, nil
	}
	err := r.addInstances(serial, insts)
	_, ok := in.ids[insts[0].ID]
	return ok, err
}

func (k *slotVec[T]) make(name string, _ int32) (*T, error) {
	t, s := k.mk()
	if k.r.state == started {
		v, err := k.r.lookup(k.metric, name)
		if err != nil {
			return nil, err
		}
		s.bind(v)
	}
	k.insts = append(k.insts, name)
	k.slots = append(k.slots, s)
	return t, nil
}

// start binds the instruments made before Start.
func (k *slotVec[T]) start() {
	for i, s := range k.slots {
		v, err := k.r.lookup(k.metric, k.insts[i])
		if err != nil {
			panic("mmv: instrument lost its metric: " + err.Error())
		}
		s.bind(v)
	}
}

func (k *slotVec[T]) stop() {
	for _, s := range k.slots {
		s.carry()
	}
}

// declareVec declares a metric of type t over an indom of the instances.
func declareVec[T any](r *Registry, name, help string, t Type, sem Semantics, units Units, instances []string, mk func() (*T, *slot)) *Vec[T] {
	r = registry(r)
	if instances == nil {
		instances = []string{}
	}
	serial, err := r.autoIndom("Instances of "+name, instances)
	if err != nil {
		panic(err)
	}
	if err := r.AddMetric(metricOf(name, help, t, sem, units, serial)); err != nil {
		panic(err)
	}
	k := &slotVec[T]{r: r, metric: name, serial: serial, mk: mk}
	r.mu.Lock()
	v := newVec(r, name, vecKind[T](k), instances)
	r.mu.Unlock()
	r.hook(k.start, k.stop)
	return v
}

// NewCounterVec declares a vector of counters on r (Default when nil), one
// per instance; more are added on first use (see Vec).
func NewCounterVec(r *Registry, name, help string, units Units, instances ...string) *Vec[Counter] {
	return declareVec(r, name, help, Uint64, SemCounter, units, instances, func() (*Counter, *slot) {
		c := newCounter()
		return c, &c.s
	})
}

// NewGaugeVec declares a vector of float64 gauges on r (Default when nil),
// one per instance; more are added on first use (see Vec).
func NewGaugeVec(r *Registry, name, help string, units Units, instances ...string) *Vec[Gauge] {
	return declareVec(r, name, help, Double, SemInstant, units, instances, func() (*Gauge, *slot) {
		g := newGauge()
		return g, &g.s
	})
}

// NewIntGaugeVec declares a vector of integer gauges on r (Default when
// nil), one per instance; more are added on first use (see Vec).
func NewIntGaugeVec(r *Registry, name, help string, units Units, instances ...string) *Vec[IntGauge] {
	return declareVec(r, name, help, Int64, SemInstant, units, instances, func() (*IntGauge, *slot) {
		g := newIntGauge()
		return g, &g.s
	})
}

// NewTimerVec declares a vector of timers on r (Default when nil), one per
// instance; more are added on first use (see Vec).
func NewTimerVec(r *Registry, name, help string, instances ...string) *Vec[Timer] {
	return declareVec(r, name, help, Elapsed, SemCounter, Microsecond, instances, func() (*Timer, *slot) {
		t := newTimer()
		return t, &t.s
	})
}

// NewHistogramVec declares a vector of histograms on r (Default when nil),
// one per instance, sharing options o (nil for the defaults); more are
// added on first use (see Vec). The statistics (name.count, name.p99...)
// are over the vector's instances; name.bucket is over an indom of
// instance:bound pairs, such as "/api:0.00109863", to which a new instance
// adds one pair per bucket. As those pairs are told apart up to the first
// space, the instance names of a histogram vector have no space.
//
// Its default limit is the registry's cap on an indom's instances
// (Options.MaxIndomInstances) over a histogram's buckets, when that is
// less than DefaultVecLimit: 215 instances with the default 19 buckets and
// cap of 4096, 16 with the log-linear layout's 242 by default. SetLimit
// raises it, within the cap.
func NewHistogramVec(r *Registry, name, help string, units Units, o *HistogramOptions, instances ...string) *Vec[Histogram] {
	r = registry(r)
	if instances == nil {
		instances = []string{}
	}
	g := declareHistograms(r, name, help, units, o, instances)
	r.mu.Lock()
	defer r.mu.Unlock()
	v := newVec(r, name, vecKind[Histogram](g), instances)
	// The default limit keeps the buckets' indom within the registry's cap.
	if c := capOf(r.opts.MaxIndomInstances, DefaultMaxIndomInstances) / len(g.bounds); c < DefaultVecLimit {
		v.limit.Store(int64(c))
	}
	return v
}
