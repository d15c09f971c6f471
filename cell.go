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

// init makes c, new and not yet seen by another goroutine (an instrument
// being declared, a vector's new entry), count in its own memory. The
// handle is stored plainly: an atomic store, an exchange, waits for the
// new object's cache line, 2% of a counter vector's new label value.
// Whoever hands c out after publishes it with an atomic store or a lock.
func (c *cell) init(t Type) {
	c.heap.init(unsafe.Pointer(&c.mem[0]), t, nil)
	*(*unsafe.Pointer)(unsafe.Pointer(&c.v)) = unsafe.Pointer(&c.heap)
}

// bind points the cell at its value in the file and moves what was
// counted before into it, in one move. The file holds 0 there, or what
// the memory held when the file was written (showWaiting): the memory's
// value replaces it, and what updates added to the memory while the
// handle swapped is then added.
func (c *cell) bind(v *Value) {
	c.beginMove()
	atomic.StoreUint64(v.u64(), atomic.SwapUint64(&c.mem[0], 0))
	c.v.Store(v)
	c.addMemMoving(v)
	c.endMove()
}

// memory is what the cell's own memory holds: the value's word while
// the cell waits for storage.
func (c *cell) memory() uint64 { return atomic.LoadUint64(&c.mem[0]) }

// carry moves what the cell's own memory holds into the file: updates made
// before the value had storage, or racing with its binding. Numbers add,
// so nothing is counted twice.
func (c *cell) carry() {
	// A load first: it leaves the word shared in every core's cache while
	// there is nothing to carry.
	if atomic.LoadUint64(&c.mem[0]) != 0 {
		c.carryMem()
	}
}

func (c *cell) carryMem() {
	c.beginMove()
	if v := c.v.Load(); v != &c.heap {
		c.addMemMoving(v)
	}
	c.endMove()
}

// beginMove begins a move, of what the cell's memory holds into the file
// or back: the cell's moves are one at a time, and reads (read) and Sets
// (set) wait for the one in progress.
func (c *cell) beginMove() {
	for {
		if m := c.moves.Load(); uint32(m) == 0 && c.moves.CompareAndSwap(m, m+1) {
			return
		}
		runtime.Gosched()
	}
}

func (c *cell) endMove() { c.moves.Add(moveDone) }

// addMemMoving adds what the cell's memory holds to v, in a move.
func (c *cell) addMemMoving(v *Value) {
	bits := atomic.SwapUint64(&c.mem[0], 0)
	if moveHook != nil {
		moveHook()
	}
	switch {
	case bits == 0:
	case c.heap.Type() == Double:
		v.AddFloat(math.Float64frombits(bits))
	default:
		v.Add(int64(bits))
	}
}

// moveHook, when tests set it, is called in the middle of a move
// (addMemMoving), what the memory held taken and not yet in the file.
var moveHook func()

// unbind points the cell back at its own memory, holding the value's last
// state, for a registry closing: updates from now on stay in memory.
func (c *cell) unbind() {
	c.beginMove()
	if v := c.v.Load(); v != &c.heap {
		c.addMemMoving(v)
		atomic.StoreUint64(&c.mem[0], atomic.LoadUint64(v.u64()))
		c.v.Store(&c.heap)
	}
	c.endMove()
}

// set makes bits, the value's word (an integer's, or a Double's bits), the
// cell's value: Set of Counter and IntGauge (state set64) and of Gauge
// (setDouble). What the cell's memory holds once bound (updates racing
// the binding) goes, as every update before a Set does. A move adds what
// it took to the file after taking it, and a store in between would be
// added to: set stores into the file alone only when it finds no move,
// nothing in the memory and a value marked set (and its Sets not held),
// and no move begun by the end of its store; else it does its work in a
// move of its own.
func (c *cell) set(bits uint64, state uint32) {
	m := c.moves.Load()
	if uint32(m) == 0 && atomic.LoadUint64(&c.mem[0]) == 0 {
		// Loaded after m: a handle loaded before a move that ended
		// before m would be the one the move replaced.
		v := c.v.Load()
		if v == nil { // a zero instrument's, which nothing moves
			return
		}
		if v.storeWord(bits, state) && c.moves.Load() == m {
			return
		}
	}
	c.setMoving(bits)
}

// setMoving is set in a move. The cell's own Value is never marked set
// (its memory is stored here, not through it), so that storeWord fails on
// it and set comes here while the cell is not bound. A growth step holding
// the value's Sets is waited for out of the move, which reads and the
// registry's moves would wait for in turn.
func (c *cell) setMoving(bits uint64) {
	for {
		c.beginMove()
		v, stored := c.v.Load(), true
		if v == &c.heap {
			atomic.StoreUint64(&c.mem[0], bits)
		} else {
			atomic.StoreUint64(&c.mem[0], 0)
			stored = v.tryPut(bits)
		}
		c.endMove()
		if stored {
			return
		}
		v.awaitSets()
	}
}

func (c *cell) value() *Value { return c.v.Load() }

// add adds n to the value's word: the fast path of the integer
// instruments, which keeps the value live as its methods do (see
// Value.ptr). A zero instrument's cell has no handle, and ignores it.
func (c *cell) add(n uint64) {
	v := c.v.Load()
	if v == nil {
		return
	}
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
			if v == nil { // a zero instrument's
				return 0, 0
			}
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
