package mmv

import "time"

// Series that expire: a vector given an expiry (Vec.SetExpiry) deletes the
// instances whose values have not changed for that long. A sweep, every
// quarter of the expiry while the registry is started, compares each
// instrument's state with the one it saw before, off the hot path: an
// update stores no timestamp and pays nothing. Expired instances are
// deleted as by Delete, and counted in the registry's own metric
// mmv.<file>.mmv.expired, declared at the first expiry: instance "expired"
// counts them, "late" those updated after their expiry, within a sweep,
// through an instrument kept from before (see Vec.SetExpiry).

// SetExpiry makes the vector delete the instances whose values have not
// changed for d, as Delete does; d <= 0 (the default) keeps them. It may
// be called before or after Start, and again to change d.
//
// A sweep every d/4, while the registry is started (none before Start),
// compares each instrument's state with the state the previous sweep
// saw: a counter's or a gauge's value, a timer's total, a histogram's
// count of observations. An instance expires at the first sweep at least
// d after the sweep that first saw its current state: between d and
// d + d/2 after its last update, and PCP no longer shows it after the
// next publication. Values that come back get a new instrument, from
// zero, with the instance id of before while the vector remembers it (see
// Delete). A value that changes and changes back between two sweeps, such
// as a gauge set to 1 then to its old value again, looks unchanged: choose
// d well above the gaps between the updates of a live series.
//
// An update racing the expiry of its instance, through an instrument the
// program kept or that With returned just before, counts in the
// instrument's own memory, which Get shows but PCP no longer does, as
// after Delete; the next sweep counts the instruments so updated in
// mmv.<file>.mmv.expired's instance "late", so that none is lost
// silently. Updates to them later still are not watched: keep the
// instrument With returns for a burst of updates, not for ever. As for
// Delete and Close, an update that loaded the instrument's address in the
// file just before its expiry and stores just after lands in the removed
// value, unseen: a window of a few instructions, which only a cost on
// every update would close.
//
// Cost: nothing on the update path; a sweep holds the registry's lock
// for a state read per instance (a histogram's: one load per bucket), and
// 16 bytes per instance keep what it saw.
func (v *Vec[T]) SetExpiry(d time.Duration) {
	if !v.declared() {
		return
	}
	v.r.enter()
	defer v.r.leave()
	v.expiry.d.Store(int64(max(d, 0)))
	if v.undone {
		return // nothing to sweep, for good
	}
	if !v.expiry.hooked {
		v.expiry.hooked = true
		v.r.hookLocked(v.scheduleSweepLocked, v.stopSweepsLocked)
	} else if v.r.startedLocked() {
		// Sweeps every d/4 of the new d from now: the sweep scheduled
		// for the old one, an hour's, left a shorter d waiting for it.
		v.stopSweepsLocked()
		v.scheduleSweepLocked()
	}
}

// Expiry returns the vector's expiry, 0 when its instances do not expire.
func (v *Vec[T]) Expiry() time.Duration {
	if v == nil {
		return 0
	}
	return time.Duration(v.expiry.d.Load())
}

// scheduleSweepLocked schedules the next sweep, unless one is scheduled
// or there is no expiry.
func (v *Vec[T]) scheduleSweepLocked() {
	d := time.Duration(v.expiry.d.Load())
	if d <= 0 || v.expiry.timer != nil {
		return
	}
	v.expiry.sweeps++
	n := v.expiry.sweeps
	v.expiry.timer = time.AfterFunc(max(d/4, time.Millisecond), func() { v.sweep(n) })
}

// stopSweepsLocked stops the sweep scheduled, and one whose timer fired
// and that waits for the lock (sweep).
func (v *Vec[T]) stopSweepsLocked() {
	v.expiry.sweeps++
	if v.expiry.timer != nil {
		v.expiry.timer.Stop()
		v.expiry.timer = nil
	}
}

// sweep expires the instances unchanged for the vector's expiry, and
// counts the instruments expired at the last sweep and updated since.
func (v *Vec[T]) sweep(n uint64) {
	v.r.enter()
	defer v.r.leave()
	if n != v.expiry.sweeps || !v.r.startedLocked() {
		return // stopped, or another scheduled since: that one sweeps
	}
	v.expiry.timer = nil
	v.sweepLocked(time.Now())
	v.scheduleSweepLocked()
}

// sweepLocked is a sweep at now.
func (v *Vec[T]) sweepLocked(now time.Time) {
	late := 0
	for _, w := range v.expiry.expired {
		if w.read() != w.state {
			late++
		}
	}
	clear(v.expiry.expired)
	v.expiry.expired = v.expiry.expired[:0]
	d := v.expiry.d.Load()
	if d > 0 {
		for _, e := range v.order.all() {
			if e.deleted() {
				continue
			}
			id := e.id
			s := v.kind.stateLocked(id, e.t)
			if w, ok := v.expiry.seen[id]; !ok || s != w.state {
				if v.expiry.seen == nil {
					v.expiry.seen = map[int32]swept{}
				}
				v.expiry.seen[id] = swept{s, now.UnixNano()}
				continue
			} else if now.UnixNano()-w.at < d {
				continue
			}
			v.expiry.expired = append(v.expiry.expired, watched{v.kind.watchLocked(id, e.t), s})
			v.deleteLocked(e)
		}
		v.tidyLocked()
	} else {
		v.expiry.seen = nil
	}
	if n := len(v.expiry.expired); n > 0 || late > 0 {
		v.r.expiredLocked(n, late)
	}
}

// state is what a sweep compares of a cell: its value, with what waits
// to be carried into the file.
func (c *cell) state() uint64 { return c.total() }

// observations is the histogram's count of observations, which a sweep
// compares.
func (h *Histogram) observations() uint64 {
	var n uint64
	for i := range h.l.n {
		n += h.count(i)
	}
	return n
}

func (k *cellVec[T]) stateLocked(_ int32, t *T) uint64        { return k.cellOf(t).state() }
func (k *cellVec[T]) watchLocked(_ int32, t *T) func() uint64 { return k.cellOf(t).state }

func (g *histGroup) stateLocked(_ int32, h *Histogram) uint64        { return h.observations() }
func (g *histGroup) watchLocked(_ int32, h *Histogram) func() uint64 { return h.observations }
