package mmv

import (
	"math"
	"strings"
	"sync/atomic"
	"unsafe"
)

// The door between instruments and the registry. Instruments declare and
// bind through these methods only; those named ...Locked expect the
// registry's lock held, the others take it.

// cell is where an instrument's value lives: memory of its own until the
// value has storage in a file, then the value in the file. Its handle is
// an atomic pointer, so updates never lock; binding swaps it.
type cell struct {
	v    atomic.Pointer[Value]
	heap Value
	mem  [valueSize / 8]uint64
}

func (c *cell) init(t Type) {
	c.heap = Value{p: unsafe.Pointer(&c.mem[0]), typ: t, word64: t == Uint64 || t == Int64 || t == Elapsed}
	c.v.Store(&c.heap)
}

// bind points the cell at its value in the file and carries what was
// counted before into it.
func (c *cell) bind(v *Value) {
	c.v.Store(v)
	c.carry()
}

// carry moves what the cell's own memory holds into the file: updates made
// before the value had storage, or racing with its binding. Numbers add,
// so nothing is counted twice.
func (c *cell) carry() {
	v := c.v.Load()
	if v == &c.heap {
		return
	}
	bits := atomic.SwapUint64(&c.mem[0], 0)
	if bits == 0 {
		return
	}
	if c.heap.typ == Double {
		v.AddFloat(math.Float64frombits(bits))
	} else {
		v.Add(int64(bits))
	}
}

// unbind points the cell back at its own memory, holding the value's last
// state, for a registry closing: updates from now on stay in memory.
func (c *cell) unbind() {
	c.carry()
	if v := c.v.Load(); v != &c.heap {
		atomic.StoreUint64(&c.mem[0], atomic.LoadUint64(v.u64()))
		c.v.Store(&c.heap)
	}
}

func (c *cell) value() *Value { return c.v.Load() }
func (c *cell) word() *uint64 { return c.v.Load().u64() }

// pending is what the cell's own memory holds once bound: updates not yet
// carried into the file.
func (c *cell) pending() uint64 {
	if c.v.Load() == &c.heap {
		return 0
	}
	return atomic.LoadUint64(&c.mem[0])
}

// waiter is an instrument waiting for a value to have storage.
type waiter struct {
	m    *metric
	inst int
	bind func(*Value)
}

// bindValueLocked hands bind the handle of m's value for instance index
// inst (0 when singular) as soon as the value has storage: at once when it
// has, else after the Start or growth step that gives it.
func (r *Registry) bindValueLocked(m *metric, inst int, bind func(*Value)) {
	if r.state == started && inst < len(m.values) && m.values[inst] != nil {
		bind(m.values[inst])
		return
	}
	r.waiting = append(r.waiting, waiter{m, inst, bind})
}

// bindCellLocked binds c to m's value for instance index inst as soon as
// it has storage, and unbinds it when the registry closes.
func (r *Registry) bindCellLocked(m *metric, inst int, c *cell) {
	r.cells = append(r.cells, c)
	r.bindValueLocked(m, inst, c.bind)
}

// wakeLocked hands the values that now have storage to their waiters.
func (r *Registry) wakeLocked() {
	if r.state != started {
		return
	}
	kept := r.waiting[:0]
	for _, w := range r.waiting {
		if w.inst < len(w.m.values) && w.m.values[w.inst] != nil {
			w.bind(w.m.values[w.inst])
		} else {
			kept = append(kept, w)
		}
	}
	clear(r.waiting[len(kept):])
	r.waiting = kept
}

// unbindCellsLocked points every instrument back at its own memory, before
// the files close.
func (r *Registry) unbindCellsLocked() {
	for _, c := range r.cells {
		c.unbind()
	}
}

// declareCell declares m on r and binds c to its value. It panics on a
// refused declaration; a full disk is no refusal: the instrument counts in
// its own memory until a later growth step publishes it.
func declareCell(r *Registry, m Metric, c *cell) {
	r.mu.Lock()
	defer r.mu.Unlock()
	mt, err := r.addMetricLocked(m, true)
	if err != nil {
		panic(err)
	}
	r.bindCellLocked(mt, 0, c)
}

// addAutoIndomLocked declares an indom of the given instances (ids 0, 1,
// ... in order) under the highest free serial, so that the serials a
// program chooses itself, usually from 1 up, stay free.
func (r *Registry) addAutoIndomLocked(help string, names []string) (*indom, error) {
	insts := make([]Instance, len(names))
	for i, n := range names {
		insts[i] = Instance{ID: int32(i), Name: n}
	}
	serial := uint32(MaxSerial)
	for serial > 0 && r.serials[serial] != nil {
		serial--
	}
	if serial == 0 {
		return nil, errorf(ErrTooMany, "file "+quote(r.name), "no indom serial left")
	}
	short, long := splitHelp(help)
	if err := r.addIndomLocked(Indom{Serial: serial, ShortHelp: short, LongHelp: long, Instances: insts}); err != nil {
		return nil, err
	}
	return r.serials[serial], nil
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
