package mmv

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/gopcp/mmv/internal/pcpname"
)

// Default is the registry the package-level convenience uses: the New
// functions declare on it when given a nil registry. Its file is named after
// the program: the base name of os.Args[0], with every character PCP does
// not accept in a file name turned into '_' (and "go_" put before a name
// that does not start with a letter), so a program built as "my-server"
// writes $PCP_TMP_DIR/mmv/my_server, read as mmv.my_server.* in PCP.
// It has the Process flag, so PCP stops showing the metrics of a program
// that has died, however it died, and the cluster derived from its name
// (see Options.Cluster), so its PMIDs are the same on every restart and
// every host and cluster labels work. Registry.Configure changes the name
// or options before Start, instruments already declared included.
// The program calls Default.Start once its instruments are declared, and
// Default.Close on exit.
var Default = NewRegistry(programName(os.Args), &Options{Flags: Process})

// programName turns a program's path into a valid file name.
func programName(args []string) string {
	name := "go"
	if len(args) > 0 && args[0] != "" {
		name = filepath.Base(args[0])
	}
	name = pcpname.Part(strings.TrimSuffix(name, ".exe"), "go_")
	return name[:min(len(name), 64)]
}

func metricOf(name, help string, t Type, sem Semantics, units Units, indom uint32) Metric {
	short, long := splitHelp(help)
	return Metric{Name: name, Type: t, Semantics: sem, Units: units, Indom: indom, ShortHelp: short, LongHelp: long}
}

// registry is r, or Default when r is nil.
func registry(r *Registry) *Registry {
	if r == nil {
		return Default
	}
	return r
}

// splitHelp makes a help text the short help (first line) and long help.
func splitHelp(help string) (short, long string) {
	short, long, _ = strings.Cut(help, "\n")
	return short, strings.TrimSpace(long)
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
