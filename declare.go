package mmv

import "slices"

// The door between instruments and the registry. Instruments declare and
// bind through these methods only; those named ...Locked expect the
// registry's lock held, the others take it.

// bindValueLocked hands bind the handle of m's value for instance index
// inst (0 when singular) as soon as the value has storage: at once when it
// has, else after the Start or growth step that gives it.
func (r *Registry) bindValueLocked(m *metric, inst int, bind func(*Value)) {
	if v := r.handleLocked(m, inst); v != nil {
		bind(v)
		return
	}
	r.waiting = append(r.waiting, waiter{m, inst, bind})
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
	r.bindValueLocked(m, inst, c.bind)
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

// declareCell declares m on r and binds c to its value. It panics on a
// refused declaration; a full disk is no refusal: the instrument counts in
// its own memory until a later growth step publishes it.
func declareCell(r *Registry, m Metric, c *cell) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.declareCellLocked(m, c)
}

// declareCellLocked is declareCell with the registry's lock held.
func (r *Registry) declareCellLocked(m Metric, c *cell) {
	mt, err := r.addMetricLocked(m, true)
	if err != nil {
		panic(err)
	}
	r.bindCellLocked(mt, 0, c)
}

// addAutoIndomLocked declares an indom of the given instances (ids 0, 1,
// ... in order) for the metrics named key, under the serial derived from
// key (autoSerialLocked).
func (r *Registry) addAutoIndomLocked(key, help string, names []string) (*indom, error) {
	insts := make([]Instance, len(names))
	for i, n := range names {
		insts[i] = Instance{ID: int32(i), Name: n}
	}
	serial := r.autoSerialLocked(key)
	if serial == 0 {
		return nil, errorf(ErrTooMany, "file "+quote(r.name), "no indom serial left")
	}
	short, long := splitHelp(help)
	if err := r.addIndomLocked(Indom{Serial: serial, ShortHelp: short, LongHelp: long, Instances: insts}); err != nil {
		return nil, err
	}
	return r.serials[serial], nil
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
