package mmv

// The identities the registry chooses itself derive from the names they
// stand for, as items and clusters do (parts.go), so that a restarted
// program, or the same program on another host, publishes the same ones
// whatever the order its declarations and label values arrive in: an
// instrument's indom serial from its metric's name, a vector's instance id
// from the instance's name. A derived identity that is taken probes to the
// next free one: the name that came first keeps its own, and the later one
// moves. An identity once given never moves and never names another name
// while the registry lives (see Vec.idLocked for how a vector keeps that
// with bounded memory).

// Indom serials derived from names are in the upper half of the serials,
// so that the serials a program chooses itself, usually from 1 up, stay
// free unless that half is full.
const (
	derivedSerials     = (MaxSerial + 1) / 2
	firstDerivedSerial = MaxSerial + 1 - derivedSerials
)

// autoSerialLocked returns the serial an indom of the registry's own, for
// the metric or metrics named key, takes: derived from key, 1024..2047,
// probing up and wrapping to the next free one, else the highest free one
// below 1024; 0 when none is free.
func (r *Registry) autoSerialLocked(key string) uint32 {
	home := fnv32(key) % derivedSerials
	for j := range uint32(derivedSerials) {
		if s := firstDerivedSerial + (home+j)%derivedSerials; r.serials[s] == nil {
			return s
		}
	}
	for s := uint32(firstDerivedSerial - 1); s > 0; s-- {
		if r.serials[s] == nil {
			return s
		}
	}
	return 0
}

// vecIDSpace is the number of ids a vector's instances may have, 0 up:
// PCP's instance ids are 31 bits.
const vecIDSpace = 1 << 31

// idLocked returns the id a new instance of the vector, name, takes, or
// false when the vector has given every id it may.
//
// Derived: FNV-1a of the name in the lower half of the kind's ids, probing
// up and wrapping within that half to the first id that no other name was
// given in the registry's life. Ids given are kept in v.given, those of
// names the vector has forgotten (pruneIDsLocked) too, so that none names
// another name later; the forgotten name itself, used again, finds its id
// there. To keep that memory bounded, a vector that has forgotten more
// names than it may hold, and 64, stops deriving (forgetIDLocked): from
// then on names new to it are counted in the upper half, in order, and
// none of its derived ids is given again.
func (v *Vec[T]) idLocked(name string) (int32, bool) {
	space := v.kind.idSpace()
	half := space / 2
	if !v.counting {
		home := int64(fnv32(name)) % half
		for j := range half {
			id := int32((home + j) % half)
			if o, ok := v.given[id]; !ok || o == name {
				return id, true
			}
		}
	}
	if half+v.counted >= space {
		return 0, false
	}
	return int32(half + v.counted), true
}

// gaveLocked records that name took id.
func (v *Vec[T]) gaveLocked(name string, id int32) {
	v.ids[name] = id
	v.given[id] = name
	if int64(id) >= v.kind.idSpace()/2 {
		v.counted++
	}
}

// forgetIDLocked forgets the id of a name that no indom of the vector has
// any more. While the vector derives ids it keeps the id in given, so that
// no other name takes it, until given keeps more ids of forgotten names
// than the vector may hold instances (its limit, within the registry's cap
// per indom), and 64: it then stops deriving (see idLocked), and given
// keeps only the ids of the names it remembers.
func (v *Vec[T]) forgetIDLocked(name string, id int32) {
	delete(v.ids, name)
	if v.counting {
		delete(v.given, id)
		return
	}
	holds := min(int(v.limit.Load()), capOf(v.r.opts.MaxIndomInstances, DefaultMaxIndomInstances))
	if len(v.given)-len(v.ids) <= max(holds, 64) {
		return
	}
	v.counting = true
	for id, name := range v.given {
		if _, ok := v.ids[name]; !ok {
			delete(v.given, id)
		}
	}
}

// idsExhausted is the error of a vector that has given every id it may.
func (v *Vec[T]) idsExhausted(name string) error {
	space := v.kind.idSpace()
	return errorf(ErrTooMany, inside(v.what(), "instance", name), "the vector has counted all its ids, %d to %d, once it forgot more values than its limit: it refuses new values for the registry's life", space/2, space-1)
}
