package mmv

// IntGauge is an integer level that goes up and down, such as requests in
// flight or a queue length: an Int64 metric with instant semantics. Its
// methods are safe from any goroutine and allocation-free; Add, Inc and
// Dec are single atomic operations. None panics: a nil *IntGauge, and a
// zero IntGauge (an IntGauge{} no New function or Declare made, declared
// nowhere), ignore updates and read 0. In a
// registry with the Sentinel flag its -1, all ones, is PCP's "no value",
// which Gather and Snapshot leave out too.
type IntGauge struct{ cell cell }

// intGaugeKind is an IntGauge's metric: an instant Int64.
var intGaugeKind = cellKind{typ: Int64, sem: SemInstant}

// NewIntGauge declares an integer gauge on r (Default when nil).
// It panics if the registry refuses the declaration as a programming
// error: an invalid or duplicate name, a cap reached before Start (the
// panic value wraps the sentinel, such as ErrName). A cap reached after
// Start, a closed registry and a full disk are no panic: the gauge counts
// in its own memory, and Registry.Err says why (see the package doc).
// Declare[IntGauge] returns the refusal instead.
func NewIntGauge(r *Registry, name, help string, units Units) *IntGauge {
	i := new(IntGauge)
	return must(r, name, i, declareCell(r, &i.cell, intGaugeKind, name, help, units))
}

// Set stores n. It may wait for a publication rewriting the file (see
// Value).
func (g *IntGauge) Set(n int64) {
	if g != nil {
		g.cell.set(uint64(n), set64)
	}
}

// Add adds n, which may be negative.
func (g *IntGauge) Add(n int64) {
	if g != nil {
		g.cell.add(uint64(n))
	}
}

// Inc adds one.
func (g *IntGauge) Inc() { g.Add(1) }

// Dec subtracts one.
func (g *IntGauge) Dec() { g.Add(-1) }

// Get returns the level.
func (g *IntGauge) Get() int64 {
	if g == nil {
		return 0
	}
	return int64(g.cell.total())
}

// NewIntGaugeVec declares a vector of integer gauges on r (Default when nil), one per
// list of values of the label names labels, made on first use (see Vec).
// It panics if the registry refuses the declaration as a programming
// error: an invalid or duplicate name or label name, a cap reached before
// Start (the panic value wraps the sentinel, such as ErrName); after Start
// a cap, and a closed registry, return a nil vector, which ignores
// updates, and Registry.Err says why. DeclareVec[IntGauge] returns the
// refusal instead.
func NewIntGaugeVec(r *Registry, name, help string, units Units, labels ...string) *Vec[IntGauge] {
	v, err := declareCellVec(r, intGaugeKind, name, help, units, labels, func(i *IntGauge) *cell { return &i.cell })
	return must(r, name, v, err)
}
