package mmv

// Counter is a total that only grows, such as requests served or bytes
// sent: a Uint64 metric with counter semantics, which PCP tools show as a
// rate. Its methods are safe from any goroutine, lock-free and
// allocation-free, and never panic. A nil *Counter, and a zero Counter (a
// Counter{} no New function or Declare made, declared nowhere), ignore
// updates and read 0.
type Counter struct{ cell cell }

// counterKind is a Counter's metric: a Uint64 counter.
var counterKind = cellKind{typ: Uint64, sem: SemCounter}

// NewCounter declares a counter on r (Default when nil). units are usually
// Count or Byte.
// It panics if the registry refuses the declaration as a programming
// error: an invalid or duplicate name, a cap reached before Start (the
// panic value wraps the sentinel, such as ErrName). A cap reached after
// Start, a closed registry and a full disk are no panic: the counter counts
// in its own memory, and Registry.Err says why (see the package doc).
// Declare[Counter] returns the refusal instead.
func NewCounter(r *Registry, name, help string, units Units) *Counter {
	c := new(Counter)
	return must(r, name, c, declareCell(r, &c.cell, counterKind, name, help, units))
}

// Inc adds one.
func (c *Counter) Inc() {
	if c != nil {
		c.cell.add(1)
	}
}

// Add adds n.
func (c *Counter) Add(n uint64) {
	if c != nil {
		c.cell.add(n)
	}
}

// Set stores n, for mirroring a total counted elsewhere (as the goruntime
// package does); a counter PCP sees go down reads as a wrap. It may wait
// for a publication rewriting the file (see Value).
func (c *Counter) Set(n uint64) {
	if c != nil {
		c.cell.set(n, set64)
	}
}

// Get returns the total.
func (c *Counter) Get() uint64 {
	if c == nil {
		return 0
	}
	return c.cell.total()
}

// NewCounterVec declares a vector of counters on r (Default when nil), one per
// list of values of the label names labels, made on first use (see Vec).
// It panics if the registry refuses the declaration as a programming
// error: an invalid or duplicate name or label name, a cap reached before
// Start (the panic value wraps the sentinel, such as ErrName); after Start
// a cap, and a closed registry, return a nil vector, which ignores
// updates, and Registry.Err says why. DeclareVec[Counter] returns the
// refusal instead.
func NewCounterVec(r *Registry, name, help string, units Units, labels ...string) *Vec[Counter] {
	v, err := declareCellVec(r, counterKind, name, help, units, labels, func(c *Counter) *cell { return &c.cell })
	return must(r, name, v, err)
}
