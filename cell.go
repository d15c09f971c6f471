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
	mem  [1]uint64 // the value word: all a Value of a cell's types (numbers, not String nor Elapsed) reads of its record
	// moves counts the moves of what mem holds into the file (carryMem,
	// unbind): done in the high 32 bits, in progress in the low. A read
	// of both places (read) during one would find the value in neither,
	// or in both: it retries.
	moves atomic.Uint64
}

// moveDone ends a move begun by moves.Add(1).
const moveDone = 1<<32 - 1

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
	c.moves.Add(1)
	bits := atomic.SwapUint64(&c.mem[0], 0)
	if moveHook != nil {
		moveHook()
	}
	switch {
	case bits == 0:
	case c.heap.typ == Double:
		v.AddFloat(math.Float64frombits(bits))
	default:
		v.Add(int64(bits))
	}
	c.moves.Add(moveDone)
}

// moveHook, when tests set it, is called in the middle of a move
// (carryMem), what the memory held taken and not yet in the file.
var moveHook func()

// unbind points the cell back at its own memory, holding the value's last
// state, for a registry closing: updates from now on stay in memory.
func (c *cell) unbind() {
	c.carryMem()
	if v := c.v.Load(); v != &c.heap {
		c.moves.Add(1)
		atomic.StoreUint64(&c.mem[0], atomic.LoadUint64(v.u64()))
		c.v.Store(&c.heap)
		c.moves.Add(moveDone)
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

// add adds n to the value's word: the fast path of the integer
// instruments, which keeps the value live as its methods do (see
// Value.ptr).
func (c *cell) add(n uint64) {
	v := c.v.Load()
	atomic.AddUint64(v.u64(), n)
	runtime.KeepAlive(v)
}

// total is read's sum, an integer instrument's value.
func (c *cell) total() uint64 {
	w, p := c.read()
	return w + p
}

// read returns the value's word and what the cell's own memory holds
// once bound, updates not yet carried into the file: together, the
// instrument's value, read with no move between them.
func (c *cell) read() (word, pending uint64) {
	for {
		m := c.moves.Load()
		if uint32(m) == 0 {
			v := c.v.Load()
			word = atomic.LoadUint64(v.u64())
			runtime.KeepAlive(v)
			pending = 0
			if v != &c.heap {
				pending = atomic.LoadUint64(&c.mem[0])
			}
			if c.moves.Load() == m {
				return word, pending
			}
		}
		runtime.Gosched()
	}
}
