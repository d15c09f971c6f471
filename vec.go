package mmv

import "slices"

// Vec is a vector of instruments of one kind, such as requests by route:
// one metric over an instance domain, with one instrument per instance.
// Instance names are the label values; PCP tells instances apart by their
// name up to the first space, so "GET /a" and "GET /b" cannot be both.
//
// The instances are declared when the vector is; With on any other name
// returns nil, whose methods do nothing. (Instances created on first use
// will come with growth after Start.) With is a map lookup: look an
// instrument up once and keep it on hot paths, as with Prometheus'
// WithLabelValues.
type Vec[T any] struct {
	names []string
	m     map[string]*T
}

// With returns the instrument of the instance, or nil when the vector has
// no such instance.
func (v *Vec[T]) With(instance string) *T {
	if v == nil {
		return nil
	}
	return v.m[instance]
}

// Get returns the instrument of the instance, or an error wrapping
// ErrUnknown.
func (v *Vec[T]) Get(instance string) (*T, error) {
	if t := v.With(instance); t != nil {
		return t, nil
	}
	return nil, errorf(ErrUnknown, "instance "+quote(instance), "not in the vector")
}

// Instances returns the instance names, in the order they were declared.
func (v *Vec[T]) Instances() []string { return slices.Clone(v.names) }

func newVec[T any](instances []string, mk func() (*T, *slot)) (*Vec[T], []*slot) {
	v := &Vec[T]{names: slices.Clone(instances), m: make(map[string]*T, len(instances))}
	slots := make([]*slot, len(instances))
	for i, in := range instances {
		t, s := mk()
		v.m[in] = t
		slots[i] = s
	}
	return v, slots
}

// declareVec declares a metric of type t over an indom of the instances.
func declareVec[T any](r *Registry, name, help string, t Type, sem Semantics, units Units, instances []string, mk func() (*T, *slot)) *Vec[T] {
	if instances == nil {
		instances = []string{}
	}
	v, slots := newVec(instances, mk)
	declare(registry(r), "Instances of "+name, instances,
		[]Metric{metricOf(name, help, t, sem, units, autoIndom)},
		[]binding{{name, instances, slots}})
	return v
}

// NewCounterVec declares a vector of counters on r (Default when nil), one
// per instance.
func NewCounterVec(r *Registry, name, help string, units Units, instances ...string) *Vec[Counter] {
	return declareVec(r, name, help, Uint64, SemCounter, units, instances, func() (*Counter, *slot) {
		c := newCounter()
		return c, &c.s
	})
}

// NewGaugeVec declares a vector of float64 gauges on r (Default when nil),
// one per instance.
func NewGaugeVec(r *Registry, name, help string, units Units, instances ...string) *Vec[Gauge] {
	return declareVec(r, name, help, Double, SemInstant, units, instances, func() (*Gauge, *slot) {
		g := newGauge()
		return g, &g.s
	})
}

// NewIntGaugeVec declares a vector of integer gauges on r (Default when
// nil), one per instance.
func NewIntGaugeVec(r *Registry, name, help string, units Units, instances ...string) *Vec[IntGauge] {
	return declareVec(r, name, help, Int64, SemInstant, units, instances, func() (*IntGauge, *slot) {
		g := newIntGauge()
		return g, &g.s
	})
}

// NewTimerVec declares a vector of timers on r (Default when nil), one per
// instance.
func NewTimerVec(r *Registry, name, help string, instances ...string) *Vec[Timer] {
	return declareVec(r, name, help, Elapsed, SemCounter, Microsecond, instances, func() (*Timer, *slot) {
		t := newTimer()
		return t, &t.s
	})
}

// NewHistogramVec declares a vector of histograms on r (Default when nil),
// one per instance, sharing options o (nil for the defaults). The
// statistics (name.count, name.p99...) are over the vector's instances;
// name.bucket is over an indom of instance:bound pairs, such as
// "/api:0.00109863".
func NewHistogramVec(r *Registry, name, help string, units Units, o *HistogramOptions, instances ...string) *Vec[Histogram] {
	if instances == nil {
		instances = []string{}
	}
	hs := declareHistograms(r, name, help, units, o, instances)
	v := &Vec[Histogram]{names: slices.Clone(instances), m: make(map[string]*Histogram, len(instances))}
	for i, in := range instances {
		v.m[in] = hs[i]
	}
	return v
}
