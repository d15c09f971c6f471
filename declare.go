package mmv

import (
	"slices"
	"sync/atomic"
	"time"
)

// The door between instruments and the registry. The instruments
// (instruments.go, counter.go, gauge.go, intgauge.go, timer.go,
// histogram.go, funcs.go, vec.go, expire.go) hold their registry as a door
// and ask it for nothing else: they never see its fields or its lock, and
// hold its metrics and indoms only as tokens to hand back (a test,
// TestOneDoor, checks it). Methods named ...Locked need the registry's
// lock held: enter takes it, and with it the instruments' own state that
// it guards (a vector's instances and expiry); leave releases it.
type door interface {
	enter()
	leave()
	startedLocked() bool

	// Declarations: a transaction of steps (declareLocked), and the
	// steps an instrument takes.
	declareLocked(steps func() error) error
	declareCellLocked(m Metric, c *cell) error
	declarePolledCell(m Metric, c *cell, read func()) error
	addAutoIndomLocked(key, help string, names []string) (*indom, uint32, error)
	addMetricLocked(m Metric, ifFailed publishFailure) (*metric, error)

	// A vector's instances, by id: added or revived, removed, known.
	declareInstancesLocked(in *indom, insts ...Instance) (bool, error)
	removeInstrumentLocked(in *indom, id int32)
	hasInstanceLocked(in *indom, id int32) bool

	// Values handed to instruments once they have storage.
	bindCellLocked(m *metric, id int32, c *cell)
	unbindCellLocked(c *cell)
	bindValueLocked(m *metric, id int32, bind func(*Value))

	// A vector's room in its file, labels and limits.
	reserveLocked(in *indom, per, limit int) int
	followLimitLocked(in *indom, limit *atomic.Int64, per int)
	vecLabelsLocked(serial uint32, labels []string)
	labelInstanceLocked(subject string, serial uint32, id int32, names, values []string) bool
	instanceCapLocked() int

	// The registry's own counts of what vectors refused and expired.
	dropLocked(reason dropReason)
	expiredLocked(expired, late int)

	// Work at the registry's events: Start and Close, a period, and the
	// reads of Gather and Snapshot.
	hookLocked(start, close func())
	pollLocked(interval time.Duration, f func())
	readerLocked(g valueReader)
}

var _ door = (*Registry)(nil)

func (r *Registry) enter() { r.mu.Lock() }
func (r *Registry) leave() { r.mu.Unlock() }

// startedLocked reports whether the registry is started.
func (r *Registry) startedLocked() bool { return r.state == started }

// indexOf is the index of m's value for instance id: 0 when singular.
func indexOf(m *metric, id int32) int {
	if m.indom == nil {
		return 0
	}
	j, _ := m.indom.index(id)
	return j
}

// bindValueLocked hands bind the handle of m's value for instance id (0
// when singular) as soon as the value has storage: at once when it has,
// else after the Start or growth step that gives it.
func (r *Registry) bindValueLocked(m *metric, id int32, bind func(*Value)) {
	r.waitLocked(waiter{m: m, inst: indexOf(m, id), bind: bind})
}

// bindCellLocked binds c to m's value for instance id (0 when singular)
// as soon as it has storage, and unbinds it when the registry closes.
func (r *Registry) bindCellLocked(m *metric, id int32, c *cell) {
	r.cells[c] = struct{}{}
	r.waitLocked(waiter{m: m, inst: indexOf(m, id), bind: c.bind, c: c})
}

// unbindStepLocked undoes the binding of cell s.c to metric s.m.
func (r *Registry) unbindStepLocked(s step) {
	r.unbindCellLocked(s.c)
	r.waiting = slices.DeleteFunc(r.waiting, func(w waiter) bool { return w.m == s.m })
}

// unbindCellLocked points c back at its own memory for good: its value
// was removed.
func (r *Registry) unbindCellLocked(c *cell) {
	c.unbind()
	delete(r.cells, c)
}

// removeInstrumentLocked removes instance id of in for an instrument: the
// instance, its labels and the waiters for its values.
func (r *Registry) removeInstrumentLocked(in *indom, id int32) {
	j, _ := in.index(id)
	r.unwaitLocked(in, j)
	r.removeInstanceLabelsLocked(in.Serial, id)
	r.removeInstanceLocked(in, j)
}

// declareCellLocked declares m and binds c to its value, or returns the
// registry's refusal. A full disk is no refusal: the instrument counts in
// its own memory until a later growth step publishes it.
func (r *Registry) declareCellLocked(m Metric, c *cell) error {
	mt, err := r.addMetricLocked(m, keepDeclared)
	if err != nil {
		return err
	}
	r.bindCellLocked(mt, 0, c)
	if j := &r.journal; j.open {
		j.undo = append(j.undo, step{undo: (*Registry).unbindStepLocked, m: mt, c: c})
	}
	return nil
}

// declarePolledCell declares m and binds c to its value, as
// declareCellLocked, and runs read at Start, every DefaultInterval while
// started, and at Close, before c leaves the file: a callback metric's
// way in. It takes the registry's lock.
func (r *Registry) declarePolledCell(m Metric, c *cell, read func()) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.declareCellLocked(m, c); err != nil {
		return err
	}
	r.onStart = append(r.onStart, read)
	r.onClose = append(r.onClose, read)
	r.onRead = append(r.onRead, func(func(*metric, int32, any)) { read() })
	r.pollLocked(DefaultInterval, read)
	return nil
}

// declareInstancesLocked adds the instances to the indom, unless the first
// one is there already, reviving those removed, and reports whether it is
// there. A full disk is no refusal: the instances wait for a later growth
// step.
func (r *Registry) declareInstancesLocked(in *indom, insts ...Instance) (bool, error) {
	if _, ok := in.index(insts[0].ID); ok {
		for _, inst := range insts {
			j, _ := in.index(inst.ID)
			if err := r.reviveInstanceLocked(in, j); err != nil {
				return true, err
			}
		}
		return true, nil
	}
	err := r.addInstancesLocked(in.Serial, insts, keepDeclared)
	_, ok := in.index(insts[0].ID)
	return ok, err
}

// hasInstanceLocked reports whether in still has instance id, live or
// removed (see indom.forget).
func (r *Registry) hasInstanceLocked(in *indom, id int32) bool {
	_, ok := in.index(id)
	return ok
}

// reserveLocked makes in, the indom of a vector of per values per
// instance, reserve room in its files for the vector's default limit, at
// most limit, and returns it (vecReserveLimit).
func (r *Registry) reserveLocked(in *indom, per, limit int) int {
	n := vecReserveLimit(&r.opts, per, limit)
	in.reserve = n * per
	return n
}

// followLimitLocked makes in's reservation follow the vector's limit
// down (indom.followLimit).
func (r *Registry) followLimitLocked(in *indom, limit *atomic.Int64, per int) {
	in.followLimit(limit, per)
}

// labelInstanceLocked gives instance id of the indom serial the label
// values as PCP instance labels, one per name, while the files holding
// the indom keep labelReserve label records for the program's own; it
// reports false, adding none, once they do not. A value too long for a
// label record only loses its label.
func (r *Registry) labelInstanceLocked(subject string, serial uint32, id int32, names, values []string) bool {
	if r.labelRoomLocked(serial) < len(names)+labelReserve {
		return false
	}
	for i, l := range names {
		_ = r.addLabelLocked(&label{Label: Label{Name: l, Value: values[i]}, kind: labelInstances, serial: serial, instance: id}, subject, "")
	}
	return true
}

// labelReserve is how many label records of a file vectors leave to the
// program's own labels.
const labelReserve = 32

// instanceCapLocked is the registry's cap on an indom's instances.
func (r *Registry) instanceCapLocked() int {
	return capOf(r.opts.MaxIndomInstances, DefaultMaxIndomInstances)
}

// hookLocked has the registry run start at Start (at once when it is
// started already) and close at Close, with its lock held.
func (r *Registry) hookLocked(start, close func()) {
	r.onStart = append(r.onStart, start)
	r.onClose = append(r.onClose, close)
	if r.state == started {
		start()
	}
}

// readerLocked has Gather and Snapshot read g's values from g.
func (r *Registry) readerLocked(g valueReader) {
	r.readers = append(r.readers, g)
	r.onRead = append(r.onRead, g.snapshot)
}

// doorOf returns the door of d's registry (see Declarer), its lock held,
// and the function that releases it; or why nothing can be declared there.
func doorOf(d Declarer) (door, func(), error) {
	r, unlock, err := lock(d)
	if err != nil {
		return nil, nil, err
	}
	return r, unlock, nil
}

// cellKind is what an instrument of one value declares: its value's type
// and semantics, and the rule it puts on its metric, if any (a Timer's
// units).
type cellKind struct {
	typ   Type
	sem   Semantics
	check func(m Metric) error
}

// metric returns the metric of an instrument of kind k, or why the kind
// refuses it.
func (k cellKind) metric(name, help string, units Units) (Metric, error) {
	m := metricOf(name, help, k.typ, k.sem, units, 0)
	if k.check != nil {
		if err := k.check(m); err != nil {
			return Metric{}, err
		}
	}
	return m, nil
}

// declareCell declares on d the instrument of kind k whose cell is c, or
// returns the refusal.
func declareCell(d Declarer, c *cell, k cellKind, name, help string, units Units) error {
	c.init(k.typ)
	m, err := k.metric(name, help, units)
	if err != nil {
		return err
	}
	r, unlock, err := lock(d)
	if err != nil {
		return err
	}
	defer unlock()
	return r.declareCellLocked(m, c)
}

// must returns t, or panics with err: the New functions' refusal.
func must[T any](t T, err error) T {
	if err != nil {
		panic(err)
	}
	return t
}

// dropReason is why a vector refused label values (drops.go).
type dropReason int

const (
	dropLimit   dropReason = iota // the vector holds its limit
	dropRefused                   // values the vector cannot name
	dropCap                       // the registry's caps on instances
	dropClosed                    // the registry is closed
	numDrops
)
