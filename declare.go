package mmv

import (
	"slices"
	"unicode/utf8"
)

// The door between instruments and the registry. Instruments declare and
// bind through these methods only; those named ...Locked expect the
// registry's lock held, the others take it.

// bindValueLocked hands bind the handle of m's value for instance index
// inst (0 when singular) as soon as the value has storage: at once when it
// has, else after the Start or growth step that gives it.
func (r *Registry) bindValueLocked(m *metric, inst int, bind func(*Value)) {
	r.waitLocked(waiter{m: m, inst: inst, bind: bind})
}

// waitLocked hands w its value at once when it has storage, else keeps it
// waiting.
func (r *Registry) waitLocked(w waiter) {
	if v := r.handleLocked(w.m, w.inst); v != nil {
		w.bind(v)
		return
	}
	r.waiting = append(r.waiting, w)
}

// handleLocked returns the handle of m's value for instance index inst (0
// when singular), nil until the value has storage in a started file.
func (r *Registry) handleLocked(m *metric, inst int) *Value {
	if r.state != started {
		return nil
	}
	return m.part.handleOf(m, inst, &r.strs)
}

// bindCellLocked binds c to m's value for instance index inst as soon as
// it has storage, and unbinds it when the registry closes.
func (r *Registry) bindCellLocked(m *metric, inst int, c *cell) {
	r.cells[c] = struct{}{}
	r.waitLocked(waiter{m: m, inst: inst, bind: c.bind, c: c})
}

// unbindCellLocked points c back at its own memory for good: its value
// was removed.
func (r *Registry) unbindCellLocked(c *cell) {
	c.unbind()
	delete(r.cells, c)
}

// removeInstrumentLocked removes instance j of in for an instrument: the
// instance, its labels and the waiters for its values.
func (r *Registry) removeInstrumentLocked(in *indom, j int) {
	r.unwaitLocked(in, j)
	r.removeInstanceLabelsLocked(in.Serial, in.Instances[j].ID)
	r.removeInstanceLocked(in, j)
}

// renumberWaitersLocked gives the waiters for values of in the new
// indexes of their instances (see part.renumber). None waits for a removed
// instance (removeInstrumentLocked unwaits them); one would be dropped.
func (r *Registry) renumberWaitersLocked(in *indom, to []int) {
	r.waiting = slices.DeleteFunc(r.waiting, func(w waiter) bool { return w.m.indom == in && to[w.inst] < 0 })
	for i := range r.waiting {
		if w := &r.waiting[i]; w.m.indom == in {
			w.inst = to[w.inst]
		}
	}
}

// unwaitLocked forgets the waiters for the values of instance j of in,
// which was removed.
func (r *Registry) unwaitLocked(in *indom, j int) {
	r.waiting = slices.DeleteFunc(r.waiting, func(w waiter) bool { return w.m.indom == in && w.inst == j })
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
		j.undo = append(j.undo, step{kind: stepCell, m: mt, c: c})
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
	r.onRead = append(r.onRead, func(func(*metric, int, any)) { read() })
	r.pollLocked(DefaultInterval, read)
	return nil
}

// must returns t, or panics with err: the New functions' refusal.
func must[T any](t T, err error) T {
	if err != nil {
		panic(err)
	}
	return t
}

// A declaration of several steps, such as a vector's indom and then its
// metric, is one transaction, and so are the declarations of a
// Registry.Transact: each step changes what the registry declares and
// leaves its undo in the journal (changedLocked), the files grow once
// every step is taken, and a step that fails undoes those taken before it.
// A refused declaration thus leaves the registry, and its files byte for
// byte, as they were.

// journal is the transaction in progress, when open; its slices are kept
// from one transaction to the next.
type journal struct {
	open  bool
	undo  []step  // the steps taken, in order
	grown []*part // the parts they changed
}

// step is a declaration step to undo.
type step struct {
	kind              stepKind
	p                 *part
	m                 *metric
	c                 *cell
	in                *indom
	at                int  // stepInstances: the first instance added; stepRevive: the one revived
	newIndom, newPart bool // stepMetric: p took m's indom with it; p is new
}

type stepKind int

const (
	stepCell      stepKind = iota // cell c bound to metric m
	stepMetric                    // metric m declared in part p
	stepIndom                     // indom in declared
	stepInstances                 // instances of in added from index at on
	stepRevive                    // removed instance at of in revived
)

// declareLocked runs the steps of one declaration as one transaction:
// when a step fails (or panics), every step it took is undone and its
// error returned; else the parts the steps changed grow, once the
// outermost transaction is done. Within another transaction, such as a
// Registry.Transact, a declaration that fails undoes its own steps only.
// A full disk is no refusal: the new values wait for a later growth step
// (keepDeclared).
func (r *Registry) declareLocked(steps func() error) error {
	j := &r.journal
	outer := !j.open
	j.open = true
	undo, grown := len(j.undo), len(j.grown)
	failed := true
	defer func() {
		if failed {
			for len(j.undo) > undo {
				s := j.undo[len(j.undo)-1]
				j.undo = j.undo[:len(j.undo)-1]
				r.undoLocked(s)
			}
			j.grown = j.grown[:grown]
		}
		if outer {
			clear(j.undo[:cap(j.undo)]) // undone steps too, for the garbage collector
			clear(j.grown[:cap(j.grown)])
			*j = journal{undo: j.undo[:0], grown: j.grown[:0]}
		}
	}()
	if err := steps(); err != nil {
		return err
	}
	failed = false
	if outer && len(j.grown) > 0 {
		r.grewLocked(keepDeclared, j.grown...) // no error
	}
	return nil
}

// changedLocked ends step s, which changed the parts ps: within a
// transaction (declareLocked), it leaves the step to undo
// should a later one fail, and the parts to grow when all are taken;
// alone, the parts grow now (grewLocked, ifFailed as for addMetricLocked), and
// the step is undone when that fails.
func (r *Registry) changedLocked(ifFailed publishFailure, s step, ps ...*part) error {
	if j := &r.journal; j.open {
		j.undo = append(j.undo, s)
		for _, p := range ps {
			if !slices.Contains(j.grown, p) {
				j.grown = append(j.grown, p)
			}
		}
		return nil
	}
	if err := r.grewLocked(ifFailed, ps...); err != nil {
		r.undoLocked(s)
		return err
	}
	return nil
}

// undoLocked undoes step s, the last one taken that is not undone.
func (r *Registry) undoLocked(s step) {
	switch s.kind {
	case stepCell:
		r.unbindCellLocked(s.c)
		r.waiting = slices.DeleteFunc(r.waiting, func(w waiter) bool { return w.m == s.m })
	case stepMetric:
		s.p.releaseMetricSlots(s.m)
		r.undeclareMetric(s.p, s.m, s.newIndom, s.newPart)
	case stepIndom:
		r.undeclareIndom(s.in)
	case stepInstances:
		r.removeNewInstancesLocked(s.in, s.at)
	case stepRevive:
		r.unreviveInstanceLocked(s.in, s.at)
	}
}

// addAutoIndomLocked declares an indom of the given instances (ids 0, 1,
// ... in order) for the metrics named key, under the serial derived from
// key (autoSerialLocked). Its help is made up by the registry, and cut to
// fit (fitHelp).
func (r *Registry) addAutoIndomLocked(key, help string, names []string) (*indom, error) {
	insts := make([]Instance, len(names))
	for i, n := range names {
		insts[i] = Instance{ID: int32(i), Name: n}
	}
	serial := r.autoSerialLocked(key)
	if serial == 0 {
		return nil, errorf(ErrTooMany, subject("file", r.name), "no indom serial left")
	}
	short, long := splitHelp(help)
	short, long = fitHelp(short), fitHelp(long)
	if err := r.addIndomLocked(Indom{Serial: serial, ShortHelp: short, LongHelp: long, Instances: insts}); err != nil {
		return nil, err
	}
	in := r.serials[serial]
	in.shares = true
	return in, nil
}

// fitHelp cuts a help text the registry makes up, such as an indom's
// "Instances of " and a metric's name, to the 255 bytes a help text holds,
// ending it with "..." when cut, so that a text made from a valid name
// never makes the name invalid.
func fitHelp(s string) string {
	if len(s) <= MaxStringLen {
		return s
	}
	cut := MaxStringLen - len("...")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut-- // not within a character
	}
	return s[:cut] + "..."
}

// wakeLocked hands the values that now have storage to their waiters.
func (r *Registry) wakeLocked() {
	if r.state != started {
		return
	}
	kept := r.waiting[:0]
	for _, w := range r.waiting {
		if v := r.handleLocked(w.m, w.inst); v != nil {
			w.bind(v)
		} else {
			kept = append(kept, w)
		}
	}
	clear(r.waiting[len(kept):])
	r.waiting = kept
}
