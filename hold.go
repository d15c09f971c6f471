package mmv

import (
	"iter"
	"sync"
	"sync/atomic"
)

// setHold is a part's hold of its values' Sets while a growth step
// carries them into a new file (writeGrowth), from the copy of their words
// to the merge of what changed in the old file meanwhile: merge adds that
// change to the new file's, which is exact only when the new file's
// changes are adds. Adds go on; a Set waits (Value.put, awaitSets). The
// handles made during a publication, under the lock it lets go, are
// tracked (add) and held as well.
type setHold struct {
	mu sync.Mutex
	// tracking is set from track (or begin) to end. add reads it without
	// the mutex: track sets it under the registry's lock, which add's
	// callers hold, so that a handle made after track finds it set, and
	// one made after end finds it clear. Most handles are made with no
	// publication in flight, and took the mutex for nothing, 28 times
	// for a histogram vector's new label value.
	tracking atomic.Bool
	held     iter.Seq[*Value] // from begin to end: the handles begin held
	late     []*Value
}

// track begins tracking the handles made from now on, which the
// publication's snapshot of the part lacks.
func (h *setHold) track() {
	h.mu.Lock()
	h.tracking.Store(true)
	h.mu.Unlock()
}

// add tracks v, a handle just made with the registry's lock held, and
// holds its Sets if the hold has begun.
func (h *setHold) add(v *Value) {
	if !h.tracking.Load() {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.tracking.Load() { // end may have run meanwhile
		h.late = append(h.late, v)
		if h.held != nil {
			v.set.Or(setHeld)
		}
	}
}

// begin holds the Sets of handles and of those tracked.
func (h *setHold) begin(handles iter.Seq[*Value]) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.tracking.Store(true)
	h.held = handles
	h.mark(func(w *atomic.Uint32) { w.Or(setHeld) })
}

// end releases what begin held, once; the Sets waiting go on, into the
// new file.
func (h *setHold) end() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.held != nil {
		h.mark(func(w *atomic.Uint32) { w.And(^uint32(setHeld)) })
	}
	h.tracking.Store(false)
	h.held, h.late = nil, nil
}

// mark applies op to the set word of every handle held and tracked.
func (h *setHold) mark(op func(*atomic.Uint32)) {
	for v := range h.held {
		op(&v.set)
	}
	for _, v := range h.late {
		op(&v.set)
	}
}
