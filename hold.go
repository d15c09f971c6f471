package mmv

import (
	"iter"
	"sync"
)

// setHold is a part's hold of its values' Sets while a growth step
// carries them into a new file (writeGrowth), from the copy of their words
// to the merge of what changed in the old file meanwhile: merge adds that
// change to the new file's, which is exact only when the new file's
// changes are adds. Adds go on; a Set waits (Value.put, awaitSets). The
// handles made during a publication, under the lock it lets go, are
// tracked (add) and held as well.
type setHold struct {
	mu       sync.Mutex
	tracking bool // from track (or begin) to end
	holding  bool // from begin to end
	late     []*Value
}

// track begins tracking the handles made from now on, which the
// publication's snapshot of the part lacks.
func (h *setHold) track() {
	h.mu.Lock()
	h.tracking = true
	h.mu.Unlock()
}

// add tracks v, a handle just made, and holds its Sets if the hold has
// begun.
func (h *setHold) add(v *Value) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.tracking {
		h.late = append(h.late, v)
		if h.holding {
			v.set.Or(setHeld)
		}
	}
}

// begin holds the Sets of handles and of those tracked.
func (h *setHold) begin(handles iter.Seq[*Value]) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.tracking, h.holding = true, true
	for v := range handles {
		v.set.Or(setHeld)
	}
	for _, v := range h.late {
		v.set.Or(setHeld)
	}
}

// end releases what begin held, once; the Sets waiting go on, into the
// new file.
func (h *setHold) end(handles iter.Seq[*Value]) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.holding {
		for v := range handles {
			v.set.And(^uint32(setHeld))
		}
		for _, v := range h.late {
			v.set.And(^uint32(setHeld))
		}
	}
	h.tracking, h.holding, h.late = false, false, nil
}
