package mmv

import (
	"errors"
	"runtime"
	"slices"
	"sync/atomic"
	"time"
)

// The door between instruments and the registry. The instruments
// (instruments.go, counter.go, gauge.go, intgauge.go, timer.go,
// histogram.go, funcs.go, vec.go, expire.go) hold their registry as a
// door and ask it for nothing but the door's methods, all in this file:
// they never touch its fields or its lock, and hold its metrics and indoms
// only as tokens to hand back. TestOneDoor fails when an instrument file
// reaches past the door (door.r, or anything of Registry, metric, indom,
// part or label). A struct, not an interface: through an interface the
// compiler cannot see that what a first use of label values hands the
// registry stays on the stack, and each cost three more allocations.
// Methods named ...Locked need the registry's lock held: enter takes it,
// and with it the instruments' own state that it guards (a vector's
// instances and expiry); leave releases it.
type door struct{ r *Registry }

// The door's methods, by what they are for:
//   - the lock: enter, leave, startedLocked, bindableLocked;
//   - declarations, one transaction of steps: declareLocked,
//     declarePolledCell, addAutoIndomLocked, addMetricLocked;
//   - a vector's instances, by id: declareInstanceLocked,
//     removeInstrumentLocked, instanceIDLocked,
//     instanceNameLocked, linkVecLocked, runsLocked;
//   - values handed to instruments once they have storage:
//     bindCellLocked, handleOfLocked, and for a
//     vector's cells waitGroupLocked, handleLocked, slotLocked;
//   - a vector's room in its file, labels and limits: roomLocked, reserveLocked,
//     followLimitLocked, limitSet, labelInstanceLocked,
//     unlabelInstanceLocked, instanceCapLocked;
//   - the registry's own counts: dropLocked, expiredLocked;
//   - work at its events (Start and Close, a period, the reads of Gather
//     and Snapshot): hookLocked, pollLocked, readerLocked.
// Those that are the registry's own operations too forward to them.

func (d door) declareLocked(steps func() error) error { return d.r.declareLocked(steps) }
func (d door) addAutoIndomLocked(key, help string, names []string, kind, name string) (*indom, uint32, error) {
	return d.r.addAutoIndomLocked(key, help, names, kind, name)
}

// addVecIndomLocked adds the indom of the instances of the vector of
// metric name, its label names labels, as addAutoIndomLocked: every
// vector's instances, a histogram vector's statistics', are declared
// here, where the registry checks the labels against its own.
func (d door) addVecIndomLocked(key, help string, labels []string, name string) (*indom, uint32, error) {
	if err := d.r.vecLabelsFreeLocked(name, labels); err != nil {
		return nil, 0, err
	}
	return d.r.addAutoIndomLocked(key, help, nil, "vector", name)
}

// maxRefused bounds the New functions' refusals Err names one by one
// (must): a program declaring by names it learns (a counter per tenant)
// past a cap is refused once per name, as long as it runs. Past it, Err
// counts them, with the last.
const maxRefused = 32

// refuseLocked records a New function's refusal of the instrument name,
// err, for Err: by name, until it is declared, while fewer than
// maxRefused are; else counted.
func (r *Registry) refuseLocked(name string, err error) {
	if _, ok := r.refused[name]; ok || len(r.refused) < maxRefused {
		if r.refused == nil {
			r.refused = map[string]error{}
		}
		r.refused[name] = err
		return
	}
	r.refusedPast++
	r.refusedLast = err
}

// forgetRefusalLocked forgets a New function's refusal of the instrument
// name (must), declared since under its metrics' names (a histogram's
// name.count, name.bucket...), which addMetricLocked forgets alone.
func (d door) forgetRefusalLocked(name string) { delete(d.r.refused, name) }

// addMetricLocked declares m; a full disk is no refusal (keepDeclared).
func (d door) addMetricLocked(m Metric) (*metric, error)   { return d.r.addMetricLocked(m, keepDeclared) }
func (d door) bindCellLocked(m *metric, id int32, c *cell) { d.r.bindCellLocked(m, id, c) }

// waitGroupLocked wakes g (cellGroup.wakeLocked) at Start and after each
// publication until none of its cells waits.
func (d door) waitGroupLocked(g cellGroup) { d.r.waitingGroups = append(d.r.waitingGroups, g) }

// handleLocked returns the handle of m's value for instance index j,
// nil until it has storage.
func (d door) handleLocked(m *metric, j int) *Value { return d.r.handleLocked(m, j) }

// slotLocked returns the slot of m's value for instance index j, -1
// while its part has no file (before Start, or a part new since).
func (d door) slotLocked(m *metric, j int) int32 {
	if m.part.file == nil {
		return -1
	}
	return *m.slots.at(j)
}
func (d door) dropLocked(reason dropReason)                { d.r.dropLocked(reason) }
func (d door) expiredLocked(expired, late int)             { d.r.expiredLocked(expired, late) }
func (d door) pollLocked(interval time.Duration, f func()) { d.r.pollLocked(interval, f) }

// enter takes the registry's lock for an instrument, counted in entering
// while it waits for it (unlockLettingIn): not when the lock is free, where
// the count's two atomic adds were two locked instructions more than the
// lock's own.
func (d door) enter() {
	if d.r.mu.TryLock() {
		return
	}
	d.r.entering.Add(1)
	d.r.mu.Lock()
	d.r.entering.Add(-1)
}

// leave releases the lock, and yields to a goroutine making a table's
// next array, asked for and not made yet (sparesAsked).
func (d door) leave() {
	d.r.mu.Unlock()
	if sparesAsked.Load() > 0 {
		runtime.Gosched()
	}
}

// roomLocked is Registry.roomLocked for the values of the indom serial,
// after Start (before it, no value has a slot); it may let the lock go.
func (d door) roomLocked(serial uint32) {
	if d.startedLocked() {
		d.r.roomLocked(d.r.serials[serial])
	}
}

// closedLocked reports whether the registry is closed.
func (d door) closedLocked() bool { return d.r.state == closed }

// startedLocked reports whether the registry is started.
func (d door) startedLocked() bool { return d.r.state == started }

// bindableLocked reports whether a value may have got storage since the
// waiters were last woken: none has before Start, and after it only a
// part that gave one storage (part.bindable) has any. A value with none
// waits for the next wake, which binds it.
func (d door) bindableLocked() bool { return d.startedLocked() && d.r.bindableLocked() }

// handleOfLocked returns the handle of m's value for instance id (0 when
// singular), nil until it has storage in a started file; at is where the
// instance likely is in m's indom, its index when declared, which saves
// a lookup by id while it still is.
func (d door) handleOfLocked(m *metric, id int32, at int) *Value {
	return d.r.handleOfLocked(m, id, at)
}

// runsLocked makes in, new and empty, an indom whose instances come in
// runs, each named as its first followed by each of tails (see
// indom.tails): the instances the door adds to it, and the ids it
// revives, are the first of their runs.
func (d door) runsLocked(in *indom, tails []string) { in.tails = tails }

// bucketsLocked marks in as a histogram's buckets' (indom.buckets).
func (d door) bucketsLocked(in *indom) { in.buckets = true }

// unbindStepLocked undoes the binding of cell s.c to metric s.m.
func (r *Registry) unbindStepLocked(s step) {
	r.unbindCellLocked(s.c)
	r.waiting = slices.DeleteFunc(r.waiting, func(w waiter) bool { return w.m == s.m })
}

// removeInstrumentLocked removes instance id of in for an instrument: the
// instance, its labels and the waiters for its values.
func (d door) removeInstrumentLocked(in *indom, id int32) {
	r := d.r
	j, _ := in.index(id)
	r.unwaitLocked(in, j)
	r.removeInstanceLabelsLocked(in.Serial, id)
	r.removeInstanceLocked(in, j)
}

// declareCellLocked declares m and binds c to its value, or returns the
// registry's refusal. A full disk is no refusal: the instrument counts in
// its own memory until a later growth step publishes it.
func (r *Registry) declareCellLocked(m Metric, c *cell) error {
	mt, err := r.addMetricLocked(m, keepDeclared)
	if err != nil {
		return err
	}
	r.bindCellLocked(mt, 0, c)
	if j := &r.journal; j.open {
		j.undo = append(j.undo, step{undo: (*Registry).unbindStepLocked, m: mt, c: c})
	}
	return nil
}

// declarePolledCell declares m and binds c to its value, as
// declareCellLocked, and runs read as a poll (every DefaultInterval while
// started, and at each Gather and Snapshot before Start), at Start, at
// Close, before c leaves the file, and at each Snapshot once started
// (runCallbacks): a callback metric's way in. It takes the registry's
// lock. The calls of read are one at a time, the poll's (poller.run): a
// poll's run, slow to return, stored its older value after Close's, which
// the file kept.
func (d door) declarePolledCell(m Metric, c *cell, read func()) error {
	r := d.r
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.declareCellLocked(m, c); err != nil {
		return err
	}
	p := r.pollLocked(DefaultInterval, read)
	r.polls = append(r.polls, p)
	r.callbacks = append(r.callbacks, p)
	return nil
}

// declareInstanceLocked adds inst to the indom, with the rest of its run
// in an indom that derives them (indom.tails), unless it is there
// already, reviving it if removed, and reports whether it is there, and
// its index j in the indom, which stays until the indom forgets removed
// instances (a publication's, never a declaration's). A full disk is no
// refusal: the instances wait for a later growth step. fresh says the
// indom has neither its name nor its id, as a vector knows of its new
// values (instanceIDs.idLocked): it is added with no lookup, by name or
// by id (indom.addFresh).
func (d door) declareInstanceLocked(in *indom, fresh bool, inst Instance) (j int, there bool, err error) {
	if !fresh {
		if j, ok := in.index(inst.ID); ok {
			for k := range in.width() {
				if err := d.r.reviveInstanceLocked(in, j+k); err != nil {
					return j, true, err
				}
			}
			return j, true, nil
		}
	}
	j = in.count() // where addInstanceLocked puts it
	if err = d.r.addInstanceLocked(in, inst, keepDeclared, fresh); err == nil {
		return j, true, nil
	}
	j, there = in.index(inst.ID)
	return j, there, err
}

// instanceIDLocked returns the id of in's instance named name, live or
// removed, if in has one; instanceNameLocked the name of instance id.
func (d door) instanceIDLocked(in *indom, name string) (int32, bool) {
	if i, ok := in.byName(name); ok {
		return in.instanceID(i), true
	}
	return 0, false
}
func (d door) instanceAtLocked(in *indom, i int) int32 { return in.instanceID(i) } // the id of instance i
func (d door) instanceNameLocked(in *indom, id int32) (string, bool) {
	if i, ok := in.index(id); ok {
		return in.instance(i).Name, true
	}
	return "", false
}

// linkVecLocked links the registry to the vector over in, declared
// within the transaction in progress, if any, and unlinked should it be
// undone (vecLink).
func (d door) linkVecLocked(in *indom, l vecLink) {
	r := d.r
	in.vec = l
	if j := &r.journal; j.open {
		j.undo = append(j.undo, step{undo: (*Registry).unlinkVecLocked, in: in})
	}
}

// unlinkVecLocked undoes linkVecLocked of the vector over s.in, which
// refuses values from then on: the program may hold it still.
func (r *Registry) unlinkVecLocked(s step) {
	if v := s.in.vec.vec; v != nil {
		v.undoneLocked()
	}
	s.in.vec = vecLink{}
}

// reserveLocked makes in, the indom of a vector of per values per
// instance, reserve room in its files for the vector's default limit, at
// most limit, and returns it (vecReserveLimit).
func (d door) reserveLocked(in *indom, per, limit int) int {
	n := vecReserveLimit(&d.r.opts, per, limit)
	in.reserve, in.per = n*per, per // before a metric is over in: a part's chargeBound counts it as the metric joins
	return n
}

// limitSet tells that a vector's limit was set, which may lower what its
// indoms reserve (indom.reserved): without the lock, which a transaction
// may hold.
func (d door) limitSet() { d.r.limitsSet.Add(1) }

// followLimitLocked makes in's reservation follow the vector's limit
// down (indom.followLimit).
func (d door) followLimitLocked(in *indom, limit *atomic.Int64, per int) {
	in.followLimit(limit, per)
}

// labelInstanceLocked counts the label records of a new instance of v,
// whose label values are values, one per name, in *vl, made at v's first
// instance labelled, while the files holding its indom keep labelReserve
// label records for the program's own, or the file's version has labels;
// it returns how many, 0 when they do not keep them. A value too long for
// a label record only loses its label: no error is kept, nor a subject
// made. The records are derived from v when read (vecLabels); the
// instance's addition already marked its files to publish. full is v's
// mark of the budget's last refusal: until labels are freed, every new
// value of v is refused at the cost of a compare (labelMark).
func (d door) labelInstanceLocked(vl **vecLabels, v labelledVec, values []string, full *labelMark) (records uint8) {
	r := d.r
	if full.full && !full.freedLocked(r) {
		return 0
	}
	serial, names := v.labelNames()
	in := r.serials[serial]
	if r.opts.Version == Version2 || r.labelRoomLocked(in) < len(names)+labelReserve {
		*full = labelMark{full: true, own: int32(len(r.labels)), vec: int32(r.vecRecords), parts: int32(len(r.parts))}
		return 0
	}
	full.full = false
	for i, name := range names {
		if labelFits(name, values[i]) {
			records++
		}
	}
	if *vl == nil {
		*vl = &vecLabels{of: v, in: in}
		r.vecLabels = append(r.vecLabels, *vl)
	}
	in.labels += int(records)
	r.vecRecords += int(records)
	return records
}

// labelMark is, once the label budget refused a vector's instance its
// labels, the registry's label counts then: the program's labels, the
// vectors' records, the files. The budget is asked again at a new value
// only once one of them is lower, or the files other (labels removed, a
// vector's instances deleted or expired, files laid out anew): a vector
// that met the budget labels its new values again once the budget is free,
// and one that meets it pays a compare, not the count of a file's labels,
// at each new value until then.
type labelMark struct {
	full            bool
	own, vec, parts int32
}

// freedLocked reports whether labels may have been freed since the mark.
func (m *labelMark) freedLocked(r *Registry) bool {
	return int32(len(r.labels)) < m.own || int32(r.vecRecords) < m.vec || int32(len(r.parts)) != m.parts
}

// unlabelInstanceLocked uncounts the label records of an instance of the
// vector of vl, removed.
func (d door) unlabelInstanceLocked(vl *vecLabels, records uint8) {
	vl.in.labels -= int(records)
	d.r.vecRecords -= int(records)
}

// labelReserve is how many label records of a file vectors leave to the
// program's own labels.
const labelReserve = 32

// instanceCapLocked is the registry's cap on an indom's instances.
func (d door) instanceCapLocked() int {
	r := d.r
	return capOf(r.opts.MaxIndomInstances, DefaultMaxIndomInstances)
}

// hookLocked has the registry run start at Start (at once when it is
// started already) and close at Close, with its lock held.
func (d door) hookLocked(start, close func()) {
	r := d.r
	r.onStart = append(r.onStart, start)
	r.onClose = append(r.onClose, close)
	if r.state == started {
		start()
	}
}

// readerLocked has Gather and Snapshot read g's values from g.
func (d door) readerLocked(g valueReader) {
	r := d.r
	r.readers = append(r.readers, g)
	r.onRead = append(r.onRead, g.snapshot)
}

// doorOf returns the door of d's registry (see Declarer), its lock held,
// and the lock to release; or why nothing can be declared there.
func doorOf(d Declarer, kind, name string) (door, held, error) {
	r, h, err := lock(d, kind, name)
	return door{r}, h, err
}

// cellKind is what an instrument of one value declares: its value's type
// and semantics, and the rule it puts on its metric, if any (a Timer's
// units).
type cellKind struct {
	typ   Type
	sem   Semantics
	check func(m Metric) error
}

// metric returns the metric of an instrument of kind k, or why the kind
// refuses it.
func (k cellKind) metric(name, help string, units Units) (Metric, error) {
	m := metricOf(name, help, k.typ, k.sem, units, 0)
	if k.check != nil {
		if err := k.check(m); err != nil {
			return Metric{}, err
		}
	}
	return m, nil
}

// declareCell declares on d the instrument of kind k whose cell is c, or
// returns the refusal.
func declareCell(d Declarer, c *cell, k cellKind, name, help string, units Units) error {
	c.init(k.typ)
	m, err := k.metric(name, help, units)
	if err != nil {
		return err
	}
	r, h, err := lock(d, "metric", m.Name)
	if err != nil {
		return err
	}
	defer h.release()
	return r.declareCellLocked(m, c)
}

// must returns t, or panics with err: a New function's refusal of the
// instrument name on r (Default when nil). Only a programming error
// panics, which every run of the program meets: an invalid name, a
// duplicate, a type clash, a cap reached before Start, an instrument
// larger than a whole file's budget (tooLargeError). A refusal the
// running program meets is no panic, for a program must not crash for
// its conditions: t is returned, counting in memory of its own (a nil
// vector or histogram, which ignore updates), never in PCP, and the
// registry's Err says why. Those are a name another program's live file
// holds, found after Start (otherFileError); a cap reached after Start
// (ErrTooMany: lazily declared instruments reach Options.MaxValues, a
// file's budget, the caps on instances, as the program runs); and a
// closed registry (ErrClosed: a handler's first use during a graceful
// shutdown, after main's Close), which Err says already.
func must[T any](r *Registry, name string, t T, err error) T {
	if err == nil {
		return t // before errors.As, whose target escapes: an allocation
	}
	var other otherFileError
	var tooLarge tooLargeError
	switch {
	case errors.As(err, &tooLarge):
		panic(err)
	case errors.As(err, &other):
		other.r.mu.Lock()
		other.r.refuseLocked(other.name, err)
		other.r.mu.Unlock()
		return t
	case errors.Is(err, ErrClosed):
		return t
	case errors.Is(err, ErrTooMany):
		r = registry(r)
		r.mu.Lock()
		defer r.mu.Unlock()
		switch r.state {
		case started:
			r.refuseLocked(name, err)
			return t
		case closed: // since the refusal
			return t
		}
	}
	panic(err)
}
