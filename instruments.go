package mmv

// Declare and DeclareVec declare any of the instruments that hold one
// value each (counter.go, gauge.go, intgauge.go, timer.go), whose files
// each give their type's cellKind.

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
	t := new(T)
	if err := declareCell(d, cellOf(t), kindOf[T](), name, help, units); err != nil {
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
	return declareCellVec(d, kindOf[T](), name, help, units, labels, cellOf[T])
}

// cellOf returns the cell of t.
func cellOf[T CellKind](t *T) *cell {
	switch i := any(t).(type) {
	case *Counter:
		return &i.cell
	case *Gauge:
		return &i.cell
	case *IntGauge:
		return &i.cell
	case *Timer:
		return &i.cell
	}
	panic("unreachable")
}

// kindOf returns the cellKind of T.
func kindOf[T CellKind]() cellKind {
	switch any((*T)(nil)).(type) {
	case *Counter:
		return counterKind
	case *Gauge:
		return gaugeKind
	case *IntGauge:
		return intGaugeKind
	}
	return timerKind
}
