// Package bridge holds what both bridges (prombridge, otelexporter) use to
// declare their metrics: a Metric is a single instrument when the metric
// has no label, else a vector by label values; Transact declares them
// knowing the registry's labels; MayPass tells which refusals they try
// again.
package bridge

import (
	"errors"
	"math"
	"slices"

	"github.com/gopcp/mmv"
)

// Transact runs declare in one transaction on r (mmv.Registry.Transact),
// given the names of r's labels (mmv.Registry.Labels) and of those PCP
// puts on every metric itself (mmv.PCPLabelNames: hostname...), which a
// bridge renames its labels away from (exported_<name>): mmv refuses a
// vector labelled as either. They are read before the transaction holds
// r's lock, and a label added between, named as one of declare's, had it
// refused (mmv.ErrDuplicate), for good: declare is then tried again on
// the labels r has now, which only grow. It returns the refusal of the
// last try.
func Transact(r *mmv.Registry, declare func(tx *mmv.Tx, taken []string) error) error {
	taken := labelNames(r)
	for {
		if LabelsRead != nil {
			LabelsRead()
		}
		err := r.Transact(func(tx *mmv.Tx) error { return declare(tx, taken) })
		if !errors.Is(err, mmv.ErrDuplicate) {
			return err
		}
		now := labelNames(r)
		if slices.Equal(now, taken) {
			return err
		}
		taken = now
	}
}

// LabelsRead, when set, runs between Transact's read of the registry's
// labels and its transaction: a test's AddLabel there.
var LabelsRead func()

// labelNames returns the names of PCP's labels, then of r's.
func labelNames(r *mmv.Registry) []string {
	names := mmv.PCPLabelNames()
	for _, l := range r.Labels() {
		names = append(names, l.Name)
	}
	return names
}

// Metric is one metric's instruments: a single one, or a vector.
type Metric[T any] struct {
	one *T
	vec *mmv.Vec[T]
}

// Declare declares the metric name on d with the label names labels: a single
// instrument when there is none, else a vector holding at most limit
// instances. It returns the registry's refusal, which declares nothing.
func Declare[T mmv.CellKind](d mmv.Declarer, name, help string, u mmv.Units, labels []string, limit int) (Metric[T], error) {
	if len(labels) == 0 {
		one, err := mmv.Declare[T](d, name, help, u)
		return Metric[T]{one: one}, err
	}
	v, err := mmv.DeclareVec[T](d, name, help, u, labels...)
	if err != nil {
		return Metric[T]{}, err
	}
	v.SetLimit(limit)
	return Metric[T]{vec: v}, nil
}

// Single returns the single instrument, nil for a vector.
func (s Metric[T]) Single() *T { return s.one }

// Get returns the instrument of the label values, or why the vector
// refuses them.
func (s Metric[T]) Get(values []string) (*T, error) {
	if s.vec == nil {
		return s.one, nil
	}
	return s.vec.Get(values...)
}

// SetLimit sets the vector's limit on instances (mmv.Vec.SetLimit); a
// single instrument has none.
func (s Metric[T]) SetLimit(n int) { s.vec.SetLimit(n) }

// Remove takes the instance of the label values out of PCP, and reports
// whether there was one; a single instrument stays.
func (s Metric[T]) Remove(values []string) bool {
	return s.vec != nil && s.vec.Delete(values...)
}

// Withdraws reports whether r shows a singular metric a bridge withdraws
// (Metric.Withdraw) as no value: whether it has the mmv.Sentinel flag
// now. Read at each withdrawal, not once: a flag read at the bridge's
// start outlived a Configure that dropped it, and PCP showed a withdrawn
// counter as 2^64-1. Without it a singular metric whose source is gone
// keeps its last value, which the bridge names in its Err.
func Withdraws(r *mmv.Registry) bool { return r.Options().Flags&mmv.Sentinel != 0 }

// Withdraw shows the single instrument as no value, PCP's staleness
// marker on a registry with the mmv.Sentinel flag (Withdraws): all ones
// in a counter or an int gauge, NaN in a gauge (PCP 6.0.3 shows it as
// nan); a Timer, which no bridge declares, stays. mmv cannot undeclare a
// metric, and a singular one has no instance to delete; a vector's
// instances leave with Remove instead, and Withdraw does nothing to them.
// Without the flag these are ordinary values: call it only when
// Withdraws.
func (s Metric[T]) Withdraw() {
	switch one := any(s.one).(type) {
	case *mmv.Counter:
		one.Set(math.MaxUint64)
	case *mmv.IntGauge:
		one.Set(-1)
	case *mmv.Gauge:
		one.Set(math.NaN())
	}
}

// MayPass reports whether err, mmv's refusal of a declaration, depends on
// what may change while the registry lives, so that a bridge declares it
// again at its next refresh or export: another program's live file
// holding a clashing name (ErrNamespace: the file may go; mmv's own names
// and a clash with the registry's metrics, which stay, are refused again
// at the cost of one attempt), the registry's caps (ErrTooMany: series
// deleted, or sets leaving PCP, free room), a file of its own another
// process holds or the file system (ErrInUse, ErrFile). A name PCP cannot
// take, too long, or declared already (the program's own metric) is
// refused for good.
func MayPass(err error) bool {
	return errors.Is(err, mmv.ErrNamespace) || errors.Is(err, mmv.ErrTooMany) || errors.Is(err, mmv.ErrInUse) || errors.Is(err, mmv.ErrFile)
}
