package mmv

import (
	"sync/atomic"

	"github.com/gopcp/mmv/internal/canon"
)

// keyIndex finds declared things by key: it maps a key to a position in a
// slice its owner keeps (the registry's metrics and an indom's instances
// by name, an indom's instances by id), whose keys it reads through the
// owner's key function. It holds no key itself: a table of 32-bit hashes
// and positions, probed linearly. Growing it rehashes no string and it
// has no pointer for the garbage collector to scan; a map from names was
// about 40% of the cost of declaring 1,000 metrics; a map from ids took
// 33 bytes more a vector value at 10,000, and 4 allocations more for a
// vector of ten (docs/design.md, "What a new value costs").
//
// The zero keyIndex is empty and ready. Positions must stay put while
// their key is held: the owners only append and drop their last.
//
// A full table is replaced by one twice as large, made ahead (spare), that
// takes the old one's entries a few slots at every add (move), as a
// vector's table does:
// rehashing them all at once made the 98,304th value of a vector wait
// 1-9 ms. Meanwhile a key the new table lacks is looked for in the old
// one, and a removal first moves what is left (removals are rare: an
// undone declaration's).
type keyIndex[K string | int32] struct {
	slots []uint64 // 0 when empty, else the key's hash << 32 | its position+1
	n     int      // keys held, in either table
	old   []uint64 // the table slots replaces, while old[moved:] has entries to move
	moved int
	next  spare[uint64] // the table to replace slots, made ahead near its growth (nearGrowth)
}

// nameIndex and idIndex index by name and by instance id.
type (
	nameIndex = keyIndex[string]
	idIndex   = keyIndex[int32]
)

// hash is the hash of k, a table index before it is masked. A name's is
// canon's, keyed for the process, inlined arithmetic where maphash's call
// and setup cost a quarter of adding an instance; an id's the high half
// of its product by an odd constant (Fibonacci hashing), so that ids a
// power of two apart do not share their low bits' slots.
func (x *keyIndex[K]) hash(k K) uint32 {
	if name, ok := any(k).(string); ok {
		h := canon.Hash([]string{name})
		return uint32(h>>32 ^ h)
	}
	return uint32(uint64(uint32(any(k).(int32))) * 0x9e3779b97f4a7c15 >> 32)
}

// find returns the position of k, and whether it is held.
func (x *keyIndex[K]) find(k K, key func(pos int) K) (int, bool) {
	if x.n == 0 {
		return 0, false
	}
	pos, _, ok := x.held(k, x.hash(k), key)
	return pos, ok
}

// held returns the position of k, of hash h, in either table, and
// whether it is held; when it is not, at is the empty slot of the new
// table where its probe ended, for add to fill.
func (x *keyIndex[K]) held(k K, h uint32, key func(pos int) K) (pos, at int, ok bool) {
	at, ok = slot(x.slots, k, h, key)
	if ok {
		return int(uint32(x.slots[at])) - 1, at, true
	}
	if x.old != nil {
		if i, ok := slot(x.old, k, h, key); ok {
			return int(uint32(x.old[i])) - 1, at, true
		}
	}
	return 0, at, false
}

// slot returns the slot of table t holding k, of hash h, and true; or
// the empty slot ending its probe, and false.
func slot[K string | int32](t []uint64, k K, h uint32, key func(pos int) K) (int, bool) {
	mask := len(t) - 1
	for i := int(h) & mask; ; i = (i + 1) & mask {
		e := t[i]
		if e == 0 {
			return i, false
		}
		if uint32(e>>32) == h && key(int(uint32(e))-1) == k {
			return i, true
		}
	}
}

// add holds k at pos unless it holds it already: it returns the position
// holding k, and whether that is pos, newly added.
func (x *keyIndex[K]) add(k K, pos int, key func(pos int) K) (int, bool) {
	x.reserve(1)
	return x.addHashed(k, x.hash(k), pos, key)
}

// insert holds k, which it does not hold, at pos: add without the probe
// for k, for a caller that knows k is new (an indom's instance ids, which
// it checks or its vector tells apart before they are tracked).
func (x *keyIndex[K]) insert(k K, pos int) {
	x.reserve(1)
	put(x.slots, uint64(x.hash(k))<<32|uint64(pos+1))
	x.n++
	x.move(4)
}

// touch loads the slot that a probe for hash h reads first, so that its
// cache line is on its way before addHashed reads it: a caller with many
// keys to add touches a batch of slots in a row, then adds their keys,
// and the cache misses of the batch overlap (indom.addAll). The load is
// atomic only so that the compiler keeps it, its value unused.
func (x *keyIndex[K]) touch(h uint32) { atomic.LoadUint64(&x.slots[int(h)&(len(x.slots)-1)]) }

// addHashed is add of k, of hash h, with room for it reserved.
func (x *keyIndex[K]) addHashed(k K, h uint32, pos int, key func(pos int) K) (int, bool) {
	holder, empty, held := x.held(k, h, key)
	if held {
		return holder, false
	}
	x.slots[empty] = uint64(h)<<32 | uint64(pos+1)
	x.n++
	x.move(4)
	return pos, true
}

// put puts entry e in the first empty slot of its probe in table t.
func put(t []uint64, e uint64) {
	mask := len(t) - 1
	i := int(e>>32) & mask
	for t[i] != 0 {
		i = (i + 1) & mask
	}
	t[i] = e
}

// move moves the entries of the next n slots of the old table, if any,
// into the new one, and drops the old table once every entry is moved.
// An entry stays in the old table too, which lookups read only for keys
// the new one lacks.
func (x *keyIndex[K]) move(n int) {
	if x.old == nil {
		return
	}
	end := min(x.moved+n, len(x.old))
	for _, e := range x.old[x.moved:end] {
		if e != 0 {
			put(x.slots, e)
		}
	}
	if x.moved = end; end == len(x.old) {
		x.old, x.moved = nil, 0
	}
}

// remove forgets k, if held: the entries after it in its probe move
// back, so that no probe meets a hole before its key.
func (x *keyIndex[K]) remove(k K, key func(pos int) K) {
	if x.n == 0 {
		return
	}
	x.move(len(x.old)) // first: a key left in the old table would stay found there
	i, held := slot(x.slots, k, x.hash(k), key)
	if !held {
		return
	}
	mask := len(x.slots) - 1
	for j := (i + 1) & mask; x.slots[j] != 0; j = (j + 1) & mask {
		// The entry at j moves into the hole at i unless its home slot
		// lies cyclically after i, up to j: it would then be found
		// before reaching the hole.
		if home := int(x.slots[j]>>32) & mask; (j-home)&mask >= (j-i)&mask {
			x.slots[i], i = x.slots[j], j
		}
	}
	x.slots[i] = 0
	x.n--
}

// reserve makes room for n more keys, keeping the table within its room
// (tableRoom, as a vector's table). A table replaced by one twice as
// large is moved by the next adds (move), 4 slots each, all of it before
// the new table is half full; a larger reserve, or one while a move is
// not done, moves everything at once.
func (x *keyIndex[K]) reserve(n int) {
	if x.n+n <= tableRoom(len(x.slots)) {
		if nearGrowth(x.n+n, len(x.slots)) {
			x.next.ask(2 * len(x.slots))
		}
		return
	}
	x.move(len(x.old))
	size := max(16, len(x.slots))
	for x.n+n > tableRoom(size) {
		size *= 2
	}
	x.old, x.moved = x.slots, 0
	x.slots = x.next.take(size)
	if n > 1 || size > 2*len(x.old) {
		x.move(len(x.old))
	}
}
