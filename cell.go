package mmv

import (
	"math"
	"runtime"
	"sync/atomic"
	"unsafe"
)

// cell is where an instrument's value lives: memory of its own until the
// value has storage in a file, then the value in the file. Its handle is
// an atomic pointer, so updates never lock; binding swaps it.
type cell struct {
	v    atomic.Pointer[Value]
	heap Value
	mem  [valueMetricOff / 8]uint64 // the value and its extra word: all a Value reads of its record
}

func (c *cell) init(t Type) {
	c.heap = Value{p: unsafe.Pointer(&c.mem[0]), typ: t, word64: t == Uint64 || t == Int64}
	c.v.Store(&c.heap)
}

// bind points the cell at its value in the file and carries what was
// counted before into it.
func (c *cell) bind(v *Value) {
	c.v.Store(v)
	c.carryMem()
}

// carry moves what the cell's own memory holds into the file: updates made
// before the value had storage, or racing with its binding. Numbers add,
// so nothing is counted twice.
func (c *cell) carry() {
	// A load first: on the path of every Set, it leaves the word shared in
	// every core's cache while there is nothing to carry.
	if atomic.LoadUint64(&c.mem[0]) != 0 {
		c.carryMem()
	}
}

func (c *cell) carryMem() {
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
	c.carryMem()
	if v := c.v.Load(); v != &c.heap {
		atomic.StoreUint64(&c.mem[0], atomic.LoadUint64(v.u64()))
		c.v.Store(&c.heap)
	}
}

// set carries what the cell's memory holds, then stores n: Set of Counter
// and IntGauge, one call with no other on its fast path.
func (c *cell) set(n int64) {
	c.carry()
	if v := c.v.Load(); !v.store64(uint64(n)) {
		v.setInt(n)
	}
}

func (c *cell) value() *Value { return c.v.Load() }

// add adds n to the value's word and load reads it: the fast paths of the
// integer instruments, which keep the value live as its methods do (see
// Value.ptr).
func (c *cell) add(n uint64) {
	v := c.v.Load()
	atomic.AddUint64(v.u64(), n)
	runtime.KeepAlive(v)
}

func (c *cell) load() uint64 {
	v := c.v.Load()
	n := atomic.LoadUint64(v.u64())
	runtime.KeepAlive(v)
	return n
}

// pending is what the cell's own memory holds once bound: updates not yet
// carried into the file.
func (c *cell) pending() uint64 {
	if c.v.Load() == &c.heap {
		return 0
	}
	return atomic.LoadUint64(&c.mem[0])
}

// unbindCells points every instrument back at its own memory, before the
// files close.
func unbindCells(cells map[*cell]struct{}) {
	for c := range cells {
		c.unbind()
	}
}
