package mmv

// What the instruments (counter.go, gauge.go, intgauge.go, timer.go,
// histogram.go, funcs.go) share: their metrics' fields, the registry a nil
// one means, and Declare and DeclareVec.

func metricOf(name, help string, t Type, sem Semantics, units Units, indom uint32) Metric {
	short, long := splitHelp(help)
	return Metric{Name: name, Type: t, Semantics: sem, Units: units, Indom: indom, ShortHelp: short, LongHelp: long}
}

// CellKind is the kinds of instrument that hold one value each, which
// Declare and DeclareVec declare.
type CellKind interface {
	Counter | Gauge | IntGauge | Timer
}

// Declare declares an instrument of kind T on d: a registry (Default when
// nil), or a transaction on one (see Registry.Transact). It is NewCounter,
// NewGauge, NewIntGauge or NewTimer returning the registry's refusal
// instead of panicking: for programs and bridges that declare what they
// learn at run time, such as another library's metrics, and must refuse
// one, not crash. A Timer's units must be Nanosecond.
//
// The error wraps the sentinel of the rule broken (ErrName, ErrDuplicate,
// ErrNamespace, ErrTooLong, ErrTooMany, ErrClosed...). A refused
// declaration declares nothing: the registry and its files are as before,
// and the name stays free. A full disk is no refusal (see the package
// doc).
func Declare[T CellKind](d Declarer, name, help string, units Units) (*T, error) {
	t, c, m := newCell[T](name, help, units)
	if err := checkCellUnits(t, m); err != nil {
		return nil, err
	}
	r, unlock, err := lock(d)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := r.declareCellLocked(m, c); err != nil {
		return nil, err
	}
	return t, nil
}

// DeclareVec declares a vector of instruments of kind T on d, one per list
// of values of the label names labels, as NewCounterVec and the others do,
// but returns the registry's refusal instead of panicking, as Declare
// does: a refused vector declares nothing, neither its metric nor its
// indom.
func DeclareVec[T CellKind](d Declarer, name, help string, units Units, labels ...string) (*Vec[T], error) {
	t, _, m := newCell[T](name, help, units)
	if err := checkCellUnits(t, m); err != nil {
		return nil, err
	}
	return declareVec(d, m, labels, func() (*T, *cell) {
		t, c, _ := newCell[T](name, help, units)
		return t, c
	})
}

// newCell returns a new instrument of kind T, its cell, and the metric
// declaring it.
func newCell[T CellKind](name, help string, units Units) (*T, *cell, Metric) {
	t := new(T)
	var c *cell
	typ, sem := Uint64, SemCounter
	switch i := any(t).(type) {
	case *Counter:
		c = &i.cell
	case *Gauge:
		c, typ, sem = &i.cell, Double, SemInstant
	case *IntGauge:
		c, typ, sem = &i.cell, Int64, SemInstant
	case *Timer:
		c = &i.cell
	}
	c.init(typ)
	return t, c, metricOf(name, help, typ, sem, units, 0)
}

// checkCellUnits refuses a Timer's metric m in other units than
// nanoseconds, which it counts.
func checkCellUnits(t any, m Metric) error {
	if _, timer := t.(*Timer); timer && m.Units != Nanosecond {
		return errorf(ErrRange, subject("metric", m.Name), "a Timer counts nanoseconds: its units must be Nanosecond")
	}
	return nil
}
