package mmv

import "math"

// Gauge is a level that goes up and down, such as a temperature or a
// ratio: a Double metric with instant semantics. Its methods are safe from
// any goroutine and allocation-free; Add, Inc and Dec are a
// compare-and-swap loop. None panics: a nil *Gauge, and a zero Gauge (a
// Gauge{} no New function or Declare made, declared nowhere), ignore
// updates and read 0.
type Gauge struct{ cell cell }

// gaugeKind is a Gauge's metric: an instant Double.
var gaugeKind = cellKind{typ: Double, sem: SemInstant}

// NewGauge declares a float64 gauge on r (Default when nil).
// It panics if the registry refuses the declaration as a programming
// error: an invalid or duplicate name, a cap reached before Start (the
// panic value wraps the sentinel, such as ErrName). A cap reached after
// Start, a closed registry and a full disk are no panic: the gauge counts
// in its own memory, and Registry.Err says why (see the package doc).
// Declare[Gauge] returns the refusal instead.
func NewGauge(r *Registry, name, help string, units Units) *Gauge {
	g := new(Gauge)
	return must(r, name, g, declareCell(r, &g.cell, gaugeKind, name, help, units))
}

// Set stores f. It may wait for a publication rewriting the file (see
// Value).
func (g *Gauge) Set(f float64) {
	if g != nil {
		g.cell.set(math.Float64bits(f), setDouble)
	}
}

// Add adds f, which may be negative.
func (g *Gauge) Add(f float64) {
	if g != nil {
		g.cell.value().AddFloat(f)
	}
}

// Inc adds one.
func (g *Gauge) Inc() { g.Add(1) }

// Dec subtracts one.
func (g *Gauge) Dec() { g.Add(-1) }

// Get returns the level.
func (g *Gauge) Get() float64 {
	if g == nil {
		return 0
	}
	w, p := g.cell.read()
	return math.Float64frombits(w) + math.Float64frombits(p)
}

// NewGaugeVec declares a vector of float64 gauges on r (Default when nil), one per
// list of values of the label names labels, made on first use (see Vec).
// It panics if the registry refuses the declaration as a programming
// error: an invalid or duplicate name or label name, a cap reached before
// Start (the panic value wraps the sentinel, such as ErrName); after Start
// a cap, and a closed registry, return a nil vector, which ignores
// updates, and Registry.Err says why. DeclareVec[Gauge] returns the
// refusal instead.
func NewGaugeVec(r *Registry, name, help string, units Units, labels ...string) *Vec[Gauge] {
	v, err := declareCellVec(r, gaugeKind, name, help, units, labels, func(g *Gauge) *cell { return &g.cell })
	return must(r, name, v, err)
}
