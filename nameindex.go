package mmv

import "github.com/gopcp/mmv/internal/canon"

// nameIndex finds declared things by name: it maps a name to a position
// in a slice its owner keeps (the registry's metrics, an indom's
// instances), whose names it reads through the owner's key function. It
// holds no name itself: a table of 32-bit hashes and positions, probed
// linearly. Growing it rehashes no string and it has no pointer for the
// garbage collector to scan; a map from names was about 40% of the cost
// of declaring 1,000 metrics.
//
// The zero nameIndex is empty and ready. Positions must stay put while
// their name is held: the owners only append and drop their last.
type nameIndex struct {
	slots []uint64 // 0 when empty, else the name's hash << 32 | its position+1
	n     int      // names held
}

// hash is the hash of name, a table index before it is masked: canon's,
// keyed for the process, inlined arithmetic where maphash's call and
// setup cost a quarter of adding an instance.
func (x *nameIndex) hash(name string) uint32 {
	h := canon.Hash([]string{name})
	return uint32(h>>32 ^ h)
}

// find returns the position of name, and whether it is held.
func (x *nameIndex) find(name string, key func(pos int) string) (int, bool) {
	if x.n == 0 {
		return 0, false
	}
	i, ok := x.slot(name, x.hash(name), key)
	if !ok {
		return 0, false
	}
	return int(uint32(x.slots[i])) - 1, true
}

// slot returns the slot holding name, of hash h, and true; or the empty
// slot ending its probe, and false.
func (x *nameIndex) slot(name string, h uint32, key func(pos int) string) (int, bool) {
	mask := len(x.slots) - 1
	for i := int(h) & mask; ; i = (i + 1) & mask {
		e := x.slots[i]
		if e == 0 {
			return i, false
		}
		if uint32(e>>32) == h && key(int(uint32(e))-1) == name {
			return i, true
		}
	}
}

// add holds name at pos unless it holds it already: it returns the
// position holding name, and whether that is pos, newly added.
func (x *nameIndex) add(name string, pos int, key func(pos int) string) (int, bool) {
	x.reserve(1)
	h := x.hash(name)
	i, held := x.slot(name, h, key)
	if held {
		return int(uint32(x.slots[i])) - 1, false
	}
	x.slots[i] = uint64(h)<<32 | uint64(pos+1)
	x.n++
	return pos, true
}

// remove forgets name, if held: the entries after it in its probe move
// back, so that no probe meets a hole before its name.
func (x *nameIndex) remove(name string, key func(pos int) string) {
	if x.n == 0 {
		return
	}
	i, held := x.slot(name, x.hash(name), key)
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

// reserve makes room for n more names, keeping the table at most 3/4 full.
func (x *nameIndex) reserve(n int) {
	if (x.n+n)*4 <= len(x.slots)*3 {
		return
	}
	size := max(16, len(x.slots))
	for (x.n+n)*4 > size*3 {
		size *= 2
	}
	old := x.slots
	x.slots = make([]uint64, size)
	mask := size - 1
	for _, e := range old {
		if e == 0 {
			continue
		}
		i := int(e>>32) & mask
		for x.slots[i] != 0 {
			i = (i + 1) & mask
		}
		x.slots[i] = e
	}
}
