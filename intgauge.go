package mmv

// IntGauge is an integer level that goes up and down, such as requests in
// flight or a queue length: an Int64 metric with instant semantics. Its
// methods are safe from any goroutine and allocation-free; Add, Inc and
// Dec are single atomic operations. A nil *IntGauge ignores them.
type IntGauge struct{ cell cell }

// intGaugeKind is an IntGauge's metric: an instant Int64.
var intGaugeKind = cellKind{typ: Int64, sem: SemInstant}

// NewIntGauge declares an integer gauge on r (Default when nil).
// It panics if the registry refuses the declaration: an invalid or
// duplicate name, or a closed registry (the panic value wraps the sentinel,
// such as ErrName). A full disk is no refusal (see the package doc).
// Declare[IntGauge] returns the refusal instead.
func NewIntGauge(r *Registry, name, help string, units Units) *IntGauge {
	i := new(IntGauge)
	return must(i, declareCell(r, &i.cell, intGaugeKind, name, help, units))
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
// It panics if the registry refuses the declaration: an invalid or
// duplicate name or label name, or a closed registry (the panic value
// wraps the sentinel, such as ErrName). DeclareVec[IntGauge] returns it
// instead.
func NewIntGaugeVec(r *Registry, name, help string, units Units, labels ...string) *Vec[IntGauge] {
	return must(declareCellVec(r, intGaugeKind, name, help, units, labels, func(i *IntGauge) *cell { return &i.cell }))
}
