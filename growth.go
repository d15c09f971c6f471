package mmv

import (
	"errors"
	"math"
	"os"
	"runtime"
	"slices"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gopcp/mmv/internal/osfile"
)

// Growth: declarations made after Start are published in new files that
// keep every value at its address (docs/design.md, "Growing without moving
// a value").

// grewLocked records a declaration made after Start that changed the
// parts ps: their new values get storage in the files' spare room, and the
// files are rewritten after PublishDelay. A declaration whose values must
// be live at once (undoDeclared: the low-level API's) publishes now when
// a part has no file yet, its spare room is short, or a new value is a
// String (its text lives outside the values section), and returns the
// error for the caller to undo it when that fails; the others
// (keepDeclared) wait for the timer, which retries until it succeeds.
func (r *Registry) grewLocked(ifFailed publishFailure, ps ...*part) error {
	if r.state != started {
		return nil
	}
	for _, p := range ps {
		p.dirty = true
	}
	if ifFailed == keepDeclared || r.inFlight != nil || !needStorageNow(ps) {
		// An instrument's new values count in its own memory until a
		// publication gives them storage, which waits PublishDelay as
		// every declaration's does: a first use never waits for a growth
		// step, and a burst of them grows the file once, not at every
		// doubling of its room (PCP's agent reloads every new file). The
		// new values that have room in the file take it at once; those
		// that waited are the timer's to hand over, a chunk at a time
		// (publishPartsLocked): a first use that bound a chunk of them
		// waited 0.3-26 ms, and the first uses after a publication of
		// 50,000 values each did.
		r.boundLocked(ps)
		if len(ps) > 0 {
			r.armLocked() // they are dirty: something to publish, found without a look at every part
		} else {
			r.scheduleLocked()
		}
		return nil
	}
	var errs []error
	var cl *claims
	made := r.timer.replaced
	ps = r.inUncarryOrderLocked(ps) // before another file shows a name clashing with their placeholders (carry.go)
	for _, p := range ps {
		errs = append(errs, r.publishPartLocked(p, &cl, byDeclaration))
	}
	cl.release()
	r.pacedLocked(made)
	r.bindLocked(0)
	r.scheduleLocked()
	err := errors.Join(errs...)
	if ifFailed == keepDeclared {
		return nil
	}
	return err
}

// needStorageNow reports whether a part has no file yet, spare room short
// of its values, or a String value without its string record (its text
// lives outside the values section, laid out by a publication: unstrung):
// what a declaration whose values must be live at once publishes for.
func needStorageNow(ps []*part) bool {
	for _, p := range ps {
		if p.file == nil || p.slots.len() > p.file.capacity || p.unstrung != 0 {
			return true
		}
	}
	return false
}

// The publication schedule has one owner, scheduleLocked: every path that
// declares or publishes ends with it, and it alone starts or stops the
// timer, from the parts' state. So nothing can cancel a retry while a
// part still holds declarations its file lacks: a Flush or a declaration
// failing during an outage leaves the timer armed, and the registry keeps
// publishing every PublishDelay until every part is in its file.

// scheduleLocked arms the timer that publishes the parts after
// PublishDelay when one of them is not all in its file (a declaration not
// yet published, or a publication that failed), unless it is armed
// already; it stops the timer when none is, or the registry is not
// started. When every part has its file and every declaration is in it,
// no failure stands: the error of the last that failed is forgotten,
// whatever publication put them there (after one made at once for a
// low-level declaration, Err said the outage before it until the timer's
// next, for good when nothing was left for the timer:
// TestErrClearedByADeclarationsPublication).
func (r *Registry) scheduleLocked() {
	t := r.timer
	if r.state == started && !r.replacingLocked() {
		r.pubErr = nil
	}
	if r.state != started || !r.unpublishedLocked() {
		if t != nil && t.armed {
			t.Stop()
			t.armed = false
			if t.took { // a turn booked (publishDue), not to come
				t.took = false
				t.pace.refund()
			}
		}
		if r.inFlight == nil { // the arrays are a publication's while it flies
			for _, p := range r.parts {
				p.snap.quiet()
			}
		}
		return
	}
	r.armLocked()
}

// armLocked arms the publication timer, unless it is armed: the registry
// is started and has something to publish. The pace is the timer's to
// book when it is due (publishDue): armed for the pace's wait, then
// booking a turn after those booked meanwhile, a timer waited twice
// while another registry's Flushes spent every credit.
func (r *Registry) armLocked() {
	t := r.timer
	if t.armed {
		return
	}
	delay := r.opts.PublishDelay
	if delay <= 0 {
		delay = 50 * time.Millisecond
	}
	t.armed, t.due = true, time.Now().Add(delay)
	t.Reset(delay)
}

// pacedLocked spends a publication of the timer's pace (pace.go) when the
// one just done made or replaced a file, the timer's count of them
// (publishTimer.replaced) past made: a publication that failed, or waited
// for the directory's lock, replaced none, and PCP's agent rebuilds
// nothing for it. Counted, the failures of an outage spent the budget,
// and the first retry once space returned waited up to a second where
// the package doc promises one every PublishDelay
// (TestOutageRetriesNotPaced).
func (r *Registry) pacedLocked(made uint64) {
	t := r.timer
	switch replaced := t.replaced != made; {
	case t.took:
		if t.took = false; !replaced {
			t.pace.refund()
		}
	case replaced:
		t.pace.spend(time.Now())
	}
}

// replacingLocked reports whether a publication now replaces or makes a
// file: a part has declarations its file does not show, or no file.
func (r *Registry) replacingLocked() bool {
	return slices.ContainsFunc(r.parts, func(p *part) bool { return p.dirty || p.file == nil })
}

// newPublishTimer makes r's timer, stopped (AfterFunc makes none so), on
// the pace p.
func newPublishTimer(r *Registry, p *pace) *publishTimer {
	t := &publishTimer{pace: p}
	t.Timer = time.AfterFunc(time.Hour, r.publishDue)
	t.Stop()
	return t
}

// publishDue is the timer's function. A run whose arming was stopped, or
// replaced by a later one, since it fired finds the timer unarmed or not
// yet due, and leaves the publication to the arming in force.
func (r *Registry) publishDue() {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.timer
	now := time.Now()
	if !t.armed || now.Before(t.due) {
		return
	}
	t.armed = false
	if r.inFlight == nil && !r.replacingLocked() && !r.wakeRest && !r.bindableLocked() {
		// Nothing to write or bind: the cells bound lately alone are due
		// (rebound.go), carried with no allocation, where a whole
		// publication's made an allocation test racing it count more
		// (TestCarryingPublicationsAllocateNothing).
		r.rebound.published(now, false)
		r.scheduleLocked()
		return
	}
	if r.replacingLocked() && !t.took {
		// The pace is the directory's: another registry may have spent it
		// since this arming. Its turn booked, the timer waits for it.
		t.took = true
		if at := t.pace.book(now); at.After(now) {
			t.armed, t.due = true, at
			t.Reset(at.Sub(now))
			return
		}
	}
	r.publishPartsLocked(byTimer) // which arms the next try if this one fails
	// Still taken: closed meanwhile, nothing published.
	if t.took {
		t.took = false
		t.pace.refund()
	}
}

// unpublishedLocked reports whether a part has declarations its file does
// not show yet, or no file, or cells bound lately may hold updates the
// file lacks (rebound.go): the timer's publications carry those even
// when nothing else is declared.
func (r *Registry) unpublishedLocked() bool {
	return r.wakeRest || !r.rebound.empty() || r.replacingLocked()
}

// carryReboundLocked carries into the file what updates racing the
// binding of their cells left in the cells' own memory (rebound.go).
func (r *Registry) carryReboundLocked() { r.rebound.carryAll() }

// claimsLocked takes the claim lock of the registry's directory d, waiting
// up to claimWait while another registry holds it, and scans its live
// clusters, for the parts about to be made (startPartLocked); the caller
// calls unlock once they are. A failure names the part that would have
// been made first.
func (r *Registry) claimsLocked(d *osfile.Dir, first *part) (*claims, error) {
	unlock, err := d.LockClaims(claimWait)
	if err != nil {
		return nil, fileError(first.name, "cannot start", err)
	}
	return r.liveClaimsLocked(d, unlock), nil
}

// liveClaimsLocked scans the live clusters of d, whose claim lock unlock
// lets go; the timer's wait for the lock (tryClaimsLocked) is over.
func (r *Registry) liveClaimsLocked(d *osfile.Dir, unlock func()) *claims {
	r.claimBusy = time.Time{}
	// The files at the names of parts with no file yet, a previous run's,
	// are those its own replace (or, when a live registry holds one,
	// osfile.Create refuses it).
	replaced := map[string]bool{}
	for _, p := range r.parts {
		if p.file == nil {
			replaced[p.name] = true
		}
	}
	live, shown := liveClusters(d, func(name string) bool { return replaced[name] })
	return &claims{live: live, shown: shown, unlock: unlock}
}

// errClaimLater is tryClaimsLocked's: the directory's lock is busy, the
// part's file is for a later publication to make.
var errClaimLater = errors.New("mmv: the directory's lock is busy")

// tryClaimsLocked is claimsLocked for the timer's publication, whose lock
// first uses wait for: it tries the directory's lock once, and leaves a
// busy one to the timer's next try, a PublishDelay later, until it has
// been busy for claimWait, which fails as that long a wait would. Waiting
// with the registry's lock held stopped every first use of the registry
// for as long as another process held the directory's lock, up to
// claimWait (10 s) at each try.
func (r *Registry) tryClaimsLocked(first *part) (*claims, error) {
	unlock, err := r.dir.LockClaims(0)
	if busy := (*osfile.InUseError)(nil); errors.As(err, &busy) {
		if r.claimBusy.IsZero() {
			r.claimBusy = time.Now()
		}
		if busy.Waited = time.Since(r.claimBusy).Round(time.Millisecond); busy.Waited < claimWait {
			return nil, errClaimLater
		}
	}
	if err != nil {
		return nil, fileError(first.name, "cannot start", err)
	}
	return r.liveClaimsLocked(r.dir, unlock), nil
}

// startPartLocked gives the part's metrics their items and values their
// slots, and makes its file in d, claiming its cluster in cl
// (claimsLocked): under a temporary name, the name taken, until
// commitPartLocked renames it into place (osfile.Prepare). On failure the
// part is as it was.
func (r *Registry) startPartLocked(p *part, d *osfile.Dir, cl *claims) error {
	labels := r.labelsOf(p, labelArray())
	defer putLabels(labels)
	c := r.opts.Cluster
	if p.index > 0 {
		c = r.parts[0].cluster
	}
	var err error
	p.cluster, err = claimCluster(p.name, p.index > 0, c, cl.live)
	if err != nil {
		return err
	}
	r.carryLocked(p, d, cl.shown) // the last run's file at its name: before items are derived
	r.reserveCutLocked(p)
	// After the carry: a placeholder's name longer than a version 1 file
	// holds (63 bytes) makes it version 2, as a metric's does.
	version, err := r.versionWith(p, len(labels))
	if err != nil {
		p.reset()
		return err
	}
	p.assignItems()
	p.makeSlots()
	r.reslotLocked(p)
	p.stride = valueSize
	if r.opts.PadValues {
		p.stride = paddedStride
	}
	plan := newPlan(p, labels, version, nil)
	defer putPlan(plan)
	gen, pid := generation(time.Now()), int32(os.Getpid())
	ws := listed(r.waitingSlotsLocked(p, 0, nil, nil))
	f, err := prepareFile(d, p.name, p.prefix, plan.size, plan.offset[secValues], plan.record(secValues, p.slots.len()), p.slots.len(), &r.strs, func(b []byte) {
		r.encode(p, plan, b, gen, pid)
		showWaiting(p, plan, b, ws)
	})
	if err != nil {
		p.reset()
		return fileError(p.name, "cannot start", err)
	}
	f.strings = plan.strings()
	p.file, p.dirty, p.bound, p.unstrung = f, false, 0, 0
	p.valuesEnd = plan.end - plan.offset[secValues]
	cl.took(p.name, p.cluster)
	return nil
}

// holdPartLocked makes sure p's name is free for the file
// startPartLocked made, or holds a file it may replace, as
// commitPartLocked would find it (osfile.File.Hold): Start holds every
// part's name before it renames any file into place.
func (r *Registry) holdPartLocked(p *part) error {
	if err := p.file.os.Hold(); err != nil {
		return fileError(p.name, "cannot start", err)
	}
	return nil
}

// commitPartLocked renames the file startPartLocked made for p into
// place. On failure the file is removed, and the part is as it was
// before startPartLocked.
func (r *Registry) commitPartLocked(p *part) error {
	if err := p.file.os.Commit(); err != nil {
		p.file.close(false)
		p.reset()
		return fileError(p.name, "cannot start", err)
	}
	return nil
}

// Flush publishes the declarations made since Start, or since the last
// Flush, in new files now. Until then PCP does not see them, though their
// values can already be updated. A declaration that needs a file to grow
// beyond its spare room flushes by itself. The error is that of the
// publication, such as a full disk; a failed publication, Flush's
// included, is retried every PublishDelay until it succeeds, and a later
// Flush tries again at once. A file no longer at its name (removed, or
// another renamed over it, which Err says) is written anew at its name.
// When the directory at the path opened at Start is another (see Err),
// Flush publishes in the one opened and returns the error that says so.
func (r *Registry) Flush() error {
	r = registry(r)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state != started {
		return nil
	}
	r.awaitPublicationLocked()
	if r.state != started { // closed meanwhile
		return nil
	}
	replaced := r.dirReplacedLocked()
	if replaced == nil { // else written anew where PCP does not look
		for _, p := range r.movedLocked() {
			p.dirty = true
		}
	}
	return errors.Join(r.publishPartsLocked(byFlush), replaced)
}

// movedLocked returns the parts whose files are no longer at their names,
// once no publication is in flight.
func (r *Registry) movedLocked() []*part {
	var moved []*part
	for _, p := range r.parts {
		if p.file != nil && !p.file.os.AtName() {
			moved = append(moved, p)
		}
	}
	return moved
}

// dirReplacedLocked says that the directory at the path the registry's
// directory was opened from at Start is another (moved aside and made
// again, removed, a symlink pointed elsewhere), which PCP reads, not the
// one the registry writes in: nil while it is the same. The registry does
// not follow it: its files' names are held, and its clusters claimed, in
// the directory it opened, and moving them is a Start's work.
func (r *Registry) dirReplacedLocked() error {
	if !r.dir.Replaced() {
		return nil
	}
	return errorf(ErrFile, subject("file", r.name), "the directory %s is no longer the one the registry opened at Start (moved, removed, or a symlink pointed elsewhere): PCP reads what is at that path now, where none of the registry's files are; a new registry, or a restart of the program, writes there", r.dir.Path())
}

// publishLocked publishes every part that needs it, holding the lock.
func (r *Registry) publishLocked() error { return r.publishPartsLocked(byDeclaration) }

// publisher is what a publication is made for, which decides what it
// waits for with the registry's lock held.
type publisher uint8

const (
	// byDeclaration: a declaration's, Close's or Value's, which holds the
	// lock throughout.
	byDeclaration publisher = iota
	// byFlush: a part that has a file is written without the lock
	// (publishPartUnlocking), so that no declaration waits for it.
	byFlush
	// byTimer: the timer's, or a first use's making room (roomLocked):
	// byFlush's, and a new file waits for no other registry's claim on
	// the directory (tryClaimsLocked).
	byTimer
)

// publishPartsLocked publishes every part that needs it, once the
// publication in progress, if any, is done, as by says.
func (r *Registry) publishPartsLocked(by publisher) error {
	unlock := by != byDeclaration
	r.awaitPublicationLocked()
	if r.state != started {
		// Closed while this waited without the lock: its files are gone
		// or another's to take, and publishing would make them again.
		return nil
	}
	r.rebound.published(time.Now(), by == byFlush)
	r.forgetRemovedLocked()
	var errs []error
	var cl *claims
	made := r.timer.replaced
	for _, p := range r.inUncarryOrderLocked(r.parts) {
		if unlock && p.file != nil {
			errs = append(errs, r.publishPartUnlocking(p))
			continue
		}
		errs = append(errs, r.publishPartLocked(p, &cl, by))
	}
	cl.release()
	r.pacedLocked(made)
	if !slices.ContainsFunc(r.parts, func(p *part) bool { return p.file == nil }) {
		r.claimBusy = time.Time{} // no file waits for the directory's lock
	}
	err := errors.Join(errs...)
	r.pubErr = err
	// The timer's publication binds a chunk at a time, the lock let go
	// between them, so that a first use waits for one at most; the
	// others bind all at once (bindLocked(0) reports nothing left).
	most := 0
	if unlock {
		most = wakeChunk
	}
	for r.bindLocked(most) {
		r.unlockLettingIn()
		r.mu.Lock()
		r.awaitPublicationLocked() // another's, begun meanwhile: see wakeLocked
		if r.state != started {
			break
		}
	}
	r.scheduleLocked()
	return err
}

// unlockLettingIn lets the registry's lock go and the instruments waiting
// for it (door.enter) in first: Go's mutex gives it back to this
// goroutine before a woken waiter runs, so that a first use waited
// several chunks of binding in a row.
func (r *Registry) unlockLettingIn() {
	r.mu.Unlock()
	for i := 0; i == 0 || i < 64 && r.entering.Load() > 0; i++ {
		runtime.Gosched()
	}
}

// roomLocked lets a first use of a value over in, after Start, take the
// slots removals freed rather than new ones once a file holding in has
// twice its values budget of slots, none free and some dying: it
// publishes (or waits for the publication in flight), which frees the
// slots of the values removed before it. Publications free slots at
// their pace: under churn faster, new slots were taken without bound,
// 8.8 million in 4 s of one histogram's value deleted and used again in
// a loop, a 300 MB file whose every dead record PCP's reader scans
// (TestChurnSlotsCapped). It lets the lock go while it publishes.
func (r *Registry) roomLocked(in *indom) {
	budget := fileBudget(&r.opts)
	if in == nil || budget > math.MaxInt/2 {
		return // no budget, no cap
	}
	crowded := func() bool {
		for _, x := range [2]*indom{in, in.vec.buckets} {
			if x == nil {
				continue
			}
			for p := range partsHolding(r.parts, x) {
				if len(p.free) == 0 && len(p.dying) > 0 && p.slots.len() >= 2*budget {
					return true
				}
			}
		}
		return false
	}
	for range 2 {
		if r.state != started || !crowded() {
			return
		}
		_ = r.publishPartsLocked(byTimer) // its error is the registry's (pubErr)
	}
}

// publishPartLocked makes the part's file if it has none, claiming its
// cluster in *cl, made at the publication's first new file (claimsLocked,
// tryClaimsLocked by the timer) and released by the caller once the
// publication is done; or rewrites it with every declaration, values kept
// (see osfile.File.Replace for how no update is lost).
func (r *Registry) publishPartLocked(p *part, cl **claims, by publisher) error {
	if p.file != nil && !p.dirty {
		return nil
	}
	kept := p.carried // put back should the publication fail (tendCarriedLocked)
	if later, err := r.tendLeftoversLocked(p); later || err != nil {
		p.carried = kept
		return err
	}
	if p.file == nil {
		var err error
		switch {
		case *cl != nil:
		case by == byTimer:
			*cl, err = r.tryClaimsLocked(p)
		default:
			*cl, err = r.claimsLocked(r.dir, p)
		}
		if err == errClaimLater {
			return nil // the part has no file: the timer is armed
		}
		if err == nil {
			err = r.startPartLocked(p, r.dir, *cl)
		}
		if err == nil {
			err = r.commitPartLocked(p)
		}
		if err != nil {
			r.pubErr = err
		} else {
			r.timer.replaced++
		}
		return err
	}
	gr, err := r.growthLocked(p)
	if err != nil {
		p.carried = kept
		return err
	}
	pl, live, capacity := newPlan(p, gr.labels, gr.version, &gr.g), gr.live, gr.g.capacity
	defer putLabels(gr.labels)
	defer putPlan(pl)
	ws := listed(r.shownLocked(p, live))
	p.snap.waiting = ws
	defer clear(ws)
	if err := r.writeGrowth(p, &p.hold, p.file, pl, live, ws); err != nil {
		p.carried = kept
		err = fileError(p.name, "cannot grow", err)
		r.pubErr = err
		return err
	}
	p.file.capacity = capacity
	p.dirty = false
	p.valuesEnd = pl.end - pl.offset[secValues]
	r.timer.replaced++
	p.published()
	p.strungTo(p.slots.len())
	return nil
}

// bindLocked marks the values that have storage in a file as bound, their
// handles made on demand (part.handleOf), and hands them to the
// instruments waiting for them: to most of the vectors' instruments, or
// all when most is 0 (wakeLocked). It reports whether some with storage
// may still wait.
func (r *Registry) bindLocked(most int) bool {
	r.boundLocked(r.parts)
	return r.wakeLocked(most)
}

// boundLocked marks the values of parts ps that have storage in a file as
// bound, without handing them to their waiters: a value made next finds
// its storage (part.handleOf). A first use passes the parts it grew, the
// only ones whose values changed since the last publication bound every
// part's: looking at every part here and in scheduleLocked cost a first
// use after Start 3 µs more at 500 files and 6 at 1,000
// (BenchmarkManyVectors, after-ns/vector).
func (r *Registry) boundLocked(ps []*part) {
	for _, p := range ps {
		// Not while a publication is in progress: the values it did not
		// copy would be lost with the file it replaces.
		if p.file != nil && r.inFlight == nil {
			b := min(p.slots.len(), p.file.capacity)
			p.bindable = p.bindable || b > p.bound
			p.bound = b
		}
	}
}

// wakeChunk is how many of the vectors' instruments the timer's
// publication binds at most while it holds the lock (see
// publishPartsLocked). Binding every value first used during a
// publication's delay and write held the lock 11-23 ms for 70,000 of
// them, and every first use meanwhile waited; a first use now waits for
// one chunk at most. Chunks of 1,024 took 0.4-1.7 ms while first uses
// went on (the pages of the file's new room faulted in, the handles
// made), so that first uses in a row each waited one; chunks of 256 take
// 0.09-0.17 ms at the median, 0.17-0.46 ms at p90.
const wakeChunk = 256

// strings is where the file pl lays out has its string records.
func (pl *plan) strings() stringRecords {
	return stringRecords{uint64(pl.record(secStrings, 0)), uint64(pl.record(secStrings, pl.count[secStrings]))}
}

// carry copies the values of the first live slots into the grown file b
// laid out by pl, as a snapshot that merge compares with the old file's
// final values: the value words, the open interval of Elapsed values, and
// the text of String values, read from the old file old where the value's
// extra word points, when that is one of old's string records (strs): a
// String value the old file has no record for (unstrung) starts empty in
// b. Each word
// is read with an atomic load, so that none is read torn. Writers of
// strings are held off by strMu meanwhile.
func carry(p *part, pl *plan, old []byte, strs stringRecords, b []byte, live int) {
	section := b[pl.offset[secValues]:]
	// Without String or Elapsed values, only value words: no type per slot.
	words := !slices.ContainsFunc(p.metrics, func(m *metric) bool { return m.Type == String || m.Type == Elapsed })
	for s := range live {
		from := p.record(s)
		to := section[p.stride.at(s):][:valueSize]
		ne.PutUint64(to, atomic.LoadUint64((*uint64)(from)))
		if words {
			continue
		}
		switch p.typeOf(s) {
		case String:
			extra := atomic.LoadUint64((*uint64)(unsafe.Add(from, valueExtraOff)))
			if text := strs.at(old, extra); text != nil && p.strung(s) {
				copy(b[pl.valueStr[s]:pl.valueStr[s]+stringSize], text)
			}
		case Elapsed:
			ne.PutUint64(to[valueExtraOff:], atomic.LoadUint64((*uint64)(unsafe.Add(from, valueExtraOff))))
		}
	}
}

// merge brings into the first live values, now in the new file, what
// changed in the old file between the snapshot carried into the new file
// (snap, its values section as written) and the old file's final state,
// so that no update made during a growth step is lost. A value written in
// the new file since (it no longer holds the snapshot) takes the old
// file's change as a delta: the step holds Sets (setHold), so the
// new file's changes are adds, made after the old file's, and the sum is
// exact whatever the old file's were.
func merge(p *part, snap, final []byte, live int) {
	for s := range live {
		was, now := snap[p.stride.at(s):], final[p.stride.at(s):]
		// Most values did not change during the step: two compares each.
		if ne.Uint64(was) == ne.Uint64(now) && ne.Uint64(was[valueExtraOff:]) == ne.Uint64(now[valueExtraOff:]) {
			continue
		}
		at, typ := p.record(s), p.typeOf(s)
		switch typ {
		case Int32, Uint32:
			mergeWord((*atomic.Uint32)(at), ne.Uint32(was), ne.Uint32(now), func(cur, was, now uint32) uint32 { return cur + now - was })
		case Float:
			mergeWord((*atomic.Uint32)(at), ne.Uint32(was), ne.Uint32(now), func(cur, was, now uint32) uint32 {
				f := math.Float32frombits
				return math.Float32bits(float32(float64(f(cur)) + float64(f(now)) - float64(f(was))))
			})
		case Int64, Uint64, Elapsed:
			mergeWord((*atomic.Uint64)(at), ne.Uint64(was), ne.Uint64(now), func(cur, was, now uint64) uint64 { return cur + now - was })
			if typ == Elapsed { // and its open interval's start
				atomic.AddUint64((*uint64)(unsafe.Add(at, valueExtraOff)), ne.Uint64(now[valueExtraOff:])-ne.Uint64(was[valueExtraOff:]))
			}
		case Double:
			mergeWord((*atomic.Uint64)(at), ne.Uint64(was), ne.Uint64(now), func(cur, was, now uint64) uint64 {
				f := math.Float64frombits
				return math.Float64bits(f(cur) + f(now) - f(was))
			})
		}
	}
}

// growthHook, when not nil, is called at the points of a growth step where
// an update racing it changes what merge must do, so that tests make each
// of those interleavings happen every run (TestMergeInterleavings). Tests
// alone set it; a growth step, never the hot path, reads it.
var growthHook func(growthPoint)

// replaceHook returns the hook osfile.File.Replace calls at each Step:
// growthHook's, when tests set it.
func replaceHook() func(osfile.Step) {
	if growthHook == nil {
		return nil
	}
	return func(s osfile.Step) { growthHook(growthPoint(s)) }
}

// growthPoint is a point of a growth step where updates may race it.
type growthPoint int

const (
	afterSnapshot  = growthPoint(osfile.Written)  // the new file holds the values; updates still land in the old file
	afterRemap     = growthPoint(osfile.Remapped) // updates land in the new file; the old file's final values not read
	beforeMergeCAS = afterRemap + 1               // merge loaded a word of the new file and is about to swap it
	reserving      = afterRemap + 2               // a publication makes its snapshot's arrays, the lock let go
	mappedTaken    = afterRemap + 3               // a publication mapped the room its first uses took, the lock let go
)

// awaitHook, when a test sets it, is called where a caller lets the lock
// go to wait for the publication in progress (TestNoPublicationAfterClose).
// Atomic: the timer's goroutines read it while tests run.
var awaitHook atomic.Pointer[func()]

// atomicWord is atomic.Uint32 or atomic.Uint64.
type atomicWord[T uint32 | uint64] interface {
	Load() T
	CompareAndSwap(old, new T) bool
}

// mergeWord moves the live word w, which held was when the old file's word
// was snapshotted, to account for the old word's final value now: to now if
// nothing was written since, else by add. 32-bit types are in the first
// half of the value's word.
func mergeWord[T uint32 | uint64](w atomicWord[T], was, now T, add func(cur, was, now T) T) {
	if was == now {
		return
	}
	for {
		cur := w.Load()
		next := now
		if cur != was {
			next = add(cur, was, now)
		}
		if growthHook != nil {
			growthHook(beforeMergeCAS)
		}
		if w.CompareAndSwap(cur, next) {
			return
		}
	}
}

// waitLocked hands w its value at once when it has storage, else keeps it
// waiting.
func (r *Registry) waitLocked(w waiter) {
	if v := r.handleLocked(w.m, w.inst); v != nil {
		w.c.bind(v)
		return
	}
	r.waiting = append(r.waiting, w)
}

// handleLocked returns the handle of m's value for instance index inst (0
// when singular), nil until the value has storage in a started file.
func (r *Registry) handleLocked(m *metric, inst int) *Value {
	if r.state != started || m.part.flying {
		return nil
	}
	return m.part.handleOf(m, inst)
}

// readLocked is handleLocked for readers of values (Gather, Snapshot):
// while a publication of the part is in flight, every value its file held
// before keeps its storage, which the step carries into the new file, and
// only a free slot taken again meanwhile has none yet (part.landing).
// Readers given no handle for every value of a part in flight left a
// scrape that met a growth step without the file's values
// (TestGatherDuringGrowthShowsEveryValue). A handle it makes is tracked as
// the step's (setHold.add).
func (r *Registry) readLocked(m *metric, inst int) *Value {
	if r.state != started {
		return nil
	}
	p := m.part
	if p.flying && inst < m.slots.len() && slices.Contains(p.landing, int(*m.slots.at(inst))) {
		return nil
	}
	return p.handleOf(m, inst)
}

// handleOfLocked is handleLocked of m's value for instance id (0 when
// singular), whose index is likely at: looked up by id only when it is
// not there (ids are distinct in an indom), and not at all before Start,
// when no value has storage.
func (r *Registry) handleOfLocked(m *metric, id int32, at int) *Value {
	if r.state != started || m.part.flying {
		return nil
	}
	if in := m.indom; in == nil {
		at = 0
	} else if at < 0 || at >= in.count() || in.instanceID(at) != id {
		at = indexOf(m, id)
	}
	return r.handleLocked(m, at)
}

// renumberWaitersLocked gives the waiters for values of in the new
// indexes of their instances (see part.renumber). None waits for a removed
// instance (removeInstrumentLocked unwaits them); one would be dropped.
func (r *Registry) renumberWaitersLocked(in *indom, to []int) {
	r.waiting = slices.DeleteFunc(r.waiting, func(w waiter) bool { return w.m.indom == in && to[w.inst] < 0 })
	for i := range r.waiting {
		if w := &r.waiting[i]; w.m.indom == in {
			w.inst = to[w.inst]
		}
	}
}

// unwaitLocked forgets the waiters for the values of instance j of in,
// which was removed.
func (r *Registry) unwaitLocked(in *indom, j int) {
	r.waiting = slices.DeleteFunc(r.waiting, func(w waiter) bool { return w.m.indom == in && w.inst == j })
}

// bindableLocked reports whether a part gave a value storage since the
// waiters were last woken (part.bindable).
func (r *Registry) bindableLocked() bool {
	return slices.ContainsFunc(r.parts, func(p *part) bool { return p.bindable })
}

// wakeLocked hands the values that now have storage to their waiters.
// Only a part that gave a value storage (bindable) can have any: every
// first use after Start adds a waiter until the next publication, and a
// scan of them all at each cost that first use time in the number waiting.
//
// most bounds how many of the vectors' instruments it binds, 0 for no
// bound: a wake that stops there leaves the rest to the next (wakeRest)
// and reports it, and the timer stays armed until one binds them
// (unpublishedLocked).
func (r *Registry) wakeLocked(most int) bool {
	if r.state != started {
		return false
	}
	if r.inFlight != nil {
		// A publication's step carries the values, which hold the copies
		// an earlier file showed (showWaiting): a binding's store into
		// one after its snapshot would be merged as an update, a gauge
		// shown at 1e17 and set to 1 then ending at 0. The bindings wait
		// for the step's end (publishPartsLocked).
		return r.wakeRest || r.bindableLocked()
	}
	woken := r.wakeRest
	for _, p := range r.parts {
		woken = woken || p.bindable
		p.bindable = false
	}
	if !woken {
		return false
	}
	bound := r.rebound.fresh()
	kept := r.waiting[:0]
	for _, w := range r.waiting {
		if v := r.handleLocked(w.m, w.inst); v != nil {
			w.c.bind(v)
			*bound = append(*bound, w.c)
		} else {
			kept = append(kept, w)
		}
	}
	clear(r.waiting[len(kept):])
	r.waiting = kept
	for _, g := range r.readers {
		g.bindLocked(r.handleOfLocked)
	}
	budget := most
	if most <= 0 {
		budget = -1 // never down to 0
	}
	groups := r.waitingGroups[:0]
	for _, g := range r.waitingGroups {
		if g.wakeLocked(r.handleLocked, bound, &budget) {
			groups = append(groups, g)
		}
	}
	clear(r.waitingGroups[len(groups):])
	r.waitingGroups = groups
	r.wakeRest = budget == 0
	return r.wakeRest
}

// A file shows the value of each instrument waiting for storage in it as
// the instrument holds it when the file is written: a cell's memory, a
// histogram's values as its refresh would store them. A cell's binding
// stores its memory over that copy (cell.bind), a histogram's refreshes
// overwrite it. PCP read 0 for a counter already counted from the file's
// rename until the timer bound its chunk, or Start its cells, and for a
// histogram until its next refresh, an Interval later. The slots the file
// carries from the one it replaces hold such a copy from an earlier file,
// or the bound value: those are not shown again, which merge would take
// for updates (see carry).

// waitingSlotsLocked lists the values waiting for storage in part p at
// slot from or after: it appends to ws those of singular instruments and
// readers, and to lists the listings of the vectors' cells
// (cellGroup.shownLocked), which a publication runs without the lock.
// Every slot is below p.slots.len(): from there on none is, and the
// values waiting are not walked (1 ms at 50,000, with the lock held, in
// the publications of new label values the last growth made room for).
func (r *Registry) waitingSlotsLocked(p *part, from int, ws []waitingValue, lists []shownList) ([]waitingValue, []shownList) {
	if from >= p.slots.len() {
		return ws, lists
	}
	slot := func(m *metric, inst int) int { // -1: not shown
		if m.part != p {
			return -1 // another part's: its slots may not be made yet
		}
		if s := int(*m.slots.at(inst)); s >= from {
			return s
		}
		return -1
	}
	for _, w := range r.waiting {
		if s := slot(w.m, w.inst); s >= 0 {
			ws = append(ws, waitingValue{slot: s, c: w.c})
		}
	}
	past := func(m *metric) int32 {
		if m.part != p {
			return math.MaxInt32
		}
		return int32(from)
	}
	for _, g := range r.waitingGroups {
		if l := g.shownLocked(past); l != nil {
			lists = append(lists, l)
		}
	}
	for _, g := range r.readers {
		g.waitingLocked(func(m *metric, id int32, v any) {
			j, ok := valueIndex(m, id)
			if !ok {
				return
			}
			if s := slot(m, j); s >= 0 {
				ws = append(ws, waitingValue{slot: s, word: wordOf(v)})
			}
		})
	}
	return ws, lists
}

// listed runs lists on ws, and returns it. It lets the lists go: each
// holds a copy of its vector's queue.
func listed(ws []waitingValue, lists []shownList) []waitingValue {
	for _, l := range lists {
		ws = l(ws)
	}
	clear(lists)
	return ws
}

// shownLocked lists the values a grown file of part p shows past its
// first live slots, in the part's reused array (snapArrays.waiting), but
// for those lists give, which the caller runs (listed) before it writes
// the file, with the lock or without it while its publication is in
// progress.
func (r *Registry) shownLocked(p *part, live int) ([]waitingValue, []shownList) {
	return r.waitingSlotsLocked(p, live, p.snap.waiting[:0], p.snap.lists[:0])
}

// reslotLocked gives the vectors' waiting cells of part p's metrics the
// slots p.makeSlots made.
func (r *Registry) reslotLocked(p *part) {
	slot := func(m *metric, j int) (int32, bool) {
		if m.part != p {
			return 0, false
		}
		return *m.slots.at(j), true
	}
	for _, g := range r.waitingGroups {
		g.reslotLocked(slot)
	}
}

// wordOf is the value word of v, a value as a valueReader hands it: a
// count, or a Double.
func wordOf(v any) uint64 {
	if f, ok := v.(float64); ok {
		return math.Float64bits(f)
	}
	return v.(uint64)
}

// showWaiting writes into b, a file of part p laid out by pl, the waiting
// values ws.
func showWaiting(p *part, pl *plan, b []byte, ws []waitingValue) {
	section := b[pl.offset[secValues]:]
	for _, w := range ws {
		word := w.word
		if w.c != nil {
			word = w.c.memory()
		}
		ne.PutUint64(section[p.stride.at(w.slot):], word)
	}
}

// forgetRemovedLocked makes the indoms that keep many removed instances
// forget them (indom.forget), moving the values of the others to their
// new indexes.
func (r *Registry) forgetRemovedLocked() {
	for _, in := range r.indoms {
		if in.vec.follows || !in.forgetsRemoved() {
			continue
		}
		r.forgetLocked(in)
		if b := in.vec.buckets; b != nil {
			r.forgetLocked(b)
		}
	}
}

// forgetLocked makes in forget its removed instances.
func (r *Registry) forgetLocked(in *indom) {
	if v := in.vec.vec; v != nil {
		for j := range in.count() {
			if in.isRemoved(j) {
				v.forgotLocked(in.instance(j))
			}
		}
	}
	to := in.forget()
	for p := range partsHolding(r.parts, in) {
		p.renumber(in, to)
	}
	r.renumberWaitersLocked(in, to)
	for _, g := range r.waitingGroups {
		g.renumberLocked(in, to)
	}
}

// bindCellLocked binds c to m's value for instance id (0 when singular)
// as soon as it has storage, and unbinds it when the registry closes.
func (r *Registry) bindCellLocked(m *metric, id int32, c *cell) {
	if r.cells == nil { // a registry of vectors alone needs none
		r.cells = map[*cell]struct{}{}
	}
	r.cells[c] = struct{}{}
	r.waitLocked(waiter{m: m, inst: indexOf(m, id), c: c})
}

// unbindCellsLocked points every instrument back at its own memory, with
// what it counted, before the files close.
func (r *Registry) unbindCellsLocked() {
	for c := range r.cells {
		c.unbind()
	}
	for _, in := range r.indoms {
		if g := in.vec.group; g != nil {
			g.unbindLocked()
		}
	}
}

// unbindCellLocked points c back at its own memory for good: its value
// was removed.
func (r *Registry) unbindCellLocked(c *cell) {
	c.unbind()
	delete(r.cells, c)
}

// awaitPublicationLocked returns once no publication is in progress
// without the lock: publishing again, closing, or declaring what must
// have storage at once (the low-level API) waits for it. It lets the lock
// go meanwhile, so the caller must hold nothing half done, and check the
// registry's state after it: Close may have run.
func (r *Registry) awaitPublicationLocked() {
	for r.inFlight != nil {
		if h := awaitHook.Load(); h != nil {
			(*h)()
		}
		done := r.inFlight
		r.mu.Unlock()
		<-done
		r.mu.Lock()
	}
}

// snapshotInstances returns how many instances a snapshot of p copies
// the removed flags of (snapshotLocked).
func (p *part) snapshotInstances() (insts int) {
	for _, in := range p.indoms {
		insts += in.count()
	}
	return insts
}

// reserveSnapshotUnlocking gives the arrays of p's snapshot room for what
// the publication about to begin copies into them with the lock held (p
// as it is, and the values past the file's first live slots, which it
// shows), letting the lock go while it makes them, the publication in
// progress meanwhile (inFlight). Reserved only at the end of each
// publication, a registry's first one, and those of a part growing faster
// than its room, grew them with the lock held: a first publication of
// 70,000 values waiting held it 6-8 ms, where the copies take 1.
func (r *Registry) reserveSnapshotUnlocking(p *part) {
	for {
		live := min(p.slots.len(), p.file.capacity) // as growthLocked's
		n, shown := p.snapshotInstances(), p.slots.len()-live
		if p.snap.fits(n, shown) {
			return
		}
		done := make(chan struct{})
		r.inFlight = done
		r.unlockLettingIn()
		if growthHook != nil {
			growthHook(reserving)
		}
		p.snap.reserve(2 * n)
		p.snap.reserveWaiting(2 * shown)
		r.mu.Lock()
		r.inFlight = nil
		close(done)
	}
}

// publishPartUnlocking publishes part p, which has a file, as
// publishPartLocked does, but lets the lock go while it encodes the file,
// writes it, maps it over the old one and merges the values: from a copy
// of what the file describes (snapshotLocked), taken with the lock held.
// Meanwhile declarations go on: their values wait for storage (bindLocked
// binds none, handleLocked hands none out), those given a free slot
// leave its old record, which this step carries and merges, as it is
// until the step is done (part.land), and they stay to publish (dirty),
// as do the values removed meanwhile, whose slots stay dying.
func (r *Registry) publishPartUnlocking(p *part) error {
	if !p.dirty {
		return nil
	}
	r.reserveSnapshotUnlocking(p) // lets the lock go: names are declared meanwhile
	// Put back should the publication fail (tendCarriedLocked).
	kept := p.carried
	if later, err := r.tendLeftoversLocked(p); later || err != nil {
		p.carried = kept
		return err
	}
	gr, err := r.growthLocked(p)
	if err != nil {
		p.carried = kept
		return err
	}
	f, live, capacity := p.file, gr.live, gr.g.capacity
	sp, dying, laid := p.snapshotLocked(), len(p.dying), p.slots.len()
	ws, lists := r.shownLocked(p, live)
	p.dirty, p.flying = false, true
	done := make(chan struct{})
	r.inFlight = done
	p.hold.track() // the handles made without the lock, which sp lacks

	r.mu.Unlock()
	ws = listed(ws, lists)
	p.snap.waiting, p.snap.lists = ws, lists
	pl := newPlan(sp, gr.labels, gr.version, &gr.g)
	end, valuesOff, used := pl.end-pl.offset[secValues], pl.offset[secValues], pl.used
	err = r.writeGrowth(sp, &p.hold, f, pl, live, ws)
	p.snap.done() // off the lock: its end cleared 1-2 MB with the lock held at 100,000 values
	putPlan(pl)
	putLabels(gr.labels)
	p.snap.reserve(capacity) // the next snapshot's, this publication's until it ends
	p.snap.reserveWaiting(2 * len(ws))
	r.mu.Lock()
	if err == nil {
		// The values first used while the step wrote took slots after
		// those it wrote, in the room, whose pages the step left unmapped:
		// the wake binds them a chunk at a time with the lock held, and
		// the first chunk's first writes faulted, 0.5-1 ms at 100,000
		// values. Mapped here, still in flight, without the lock.
		taken := valuesOff + int64(p.stride.at(min(p.slots.len(), capacity)))
		r.mu.Unlock()
		f.os.MapWritable(used, taken)
		if growthHook != nil {
			growthHook(mappedTaken)
		}
		r.mu.Lock()
	}
	p.endSnapshot()

	r.inFlight = nil
	close(done)
	p.land()
	if err != nil {
		p.carried = kept
		p.dirty = true
		err = fileError(p.name, "cannot grow", err)
		r.pubErr = err
		return err
	}
	f.capacity = capacity
	p.valuesEnd = end
	r.timer.replaced++
	p.strungTo(laid)
	p.free = append(p.free, p.dying[:dying]...)
	p.dying = slices.Delete(p.dying, 0, dying)
	return nil
}

// writeGrowth writes f's grown file, laid out by pl, from what part p
// (the part, or its snapshot) describes, the first live values carried
// and merged (osfile.File.Replace, which calls the hook at each step,
// loses no update), and the values of the cells ws waiting for the slots
// after them shown; writers of strings are held off meanwhile, and Sets
// of the values carried from their carry to their merge (hold, the
// part's). The caller sets f's capacity once it succeeds.
func (r *Registry) writeGrowth(p *part, hold *setHold, f *file, pl *plan, live int, ws []waitingValue) error {
	gen, pid := generation(time.Now()), int32(os.Getpid())
	r.strs.mu.Lock()
	defer r.strs.mu.Unlock()
	defer hold.end() // when Replace fails before its merge
	return f.os.Replace(pl.size, pl.used, pl.offset[secValues], int(p.stride.at(live)), func(b []byte) {
		r.encode(p, pl, b, gen, pid)
		hold.begin(p.handles(live))
		carry(p, pl, f.bytes(), f.strings, b, live)
		showWaiting(p, pl, b, ws)
	}, func(snap, final []byte) {
		f.strings = pl.strings() // the grown file is mapped
		merge(p, snap, final, live)
		hold.end()
	}, replaceHook())
}

// grown is what a grown file of a part is laid out by (newPlan), but the
// part itself: its version and labels, the slots of the old file that are
// live, and where its values go and their room (g).
type grown struct {
	version int
	labels  []label // from labelArray: the caller's to give back (putLabels) once a grown is returned
	live    int
	g       growth
}

// growthLocked says how the grown file of part p, which has a file, is
// laid out. Room to double, and to cover the old file's records whole
// (those after the values too, in a first file laid out as libpcp_mmv's):
// the new file, its values at the same address in the same place of a
// page, then covers the old mapping. Not the old mapping's page rounding:
// that would grow the file at every publication.
func (r *Registry) growthLocked(p *part) (grown, error) {
	labels := r.labelsOf(p, labelArray())
	version, err := r.versionWith(p, len(labels))
	if err != nil {
		putLabels(labels)
		return grown{}, err
	}
	capacity := max(2*p.slots.len()+16, p.stride.covering(p.valuesEnd))
	return grown{version: version, labels: labels, live: min(p.slots.len(), p.file.capacity),
		g: growth{from: p.file.os.ValuesOffset(), capacity: capacity}}, nil
}

// snapshotLocked returns a copy of what the part's file describes, for a
// publication without the lock, which lays it out (newPlan) and writes
// it: its indoms' instances, its metrics, over the copies of their indoms,
// and their handles, its slots. Metrics' names, types and helps never
// change. The copies are made in a few arrays, not an object each, those
// of the last snapshot (snap): the lock is held meanwhile, and 1,000
// vectors' indoms and metrics made it thousands of allocations.
//
// The instances are not copied but shared: an indom's instances below
// its length never change (names and ids are for life; appends, and the
// undos of a transaction's, go past it, since none runs across a
// snapshot; forget makes a new array). Copying them held the lock 7-17 ms
// at 100,000 instances, and every first use meanwhile waited. The slots
// and handles are shared too, copied array by array only where the part
// writes them before the snapshot ends (segList.share, endSnapshot).
func (p *part) snapshotLocked() *part {
	sp := &part{name: p.name, index: p.index, prefix: p.prefix, flags: p.flags, cluster: p.cluster,
		slots: p.slots.share(), file: p.file, stride: p.stride, strings: p.strings, carried: p.carried, emptied: p.emptied, unstrung: p.unstrung}
	removed := slices.Grow(p.snap.removed[:0], p.snapshotInstances())
	ins := make([]indom, len(p.indoms))
	sp.indoms = make([]*indom, len(p.indoms))
	copyOf := make(map[*indom]*indom, len(p.indoms))
	for i, in := range p.indoms {
		removed = append(removed, in.removed...)
		k := len(removed) - len(in.removed)
		ins[i] = indom{Serial: in.Serial, ShortHelp: in.ShortHelp, LongHelp: in.LongHelp, insts: in.insts, tails: in.tails,
			removed: removed[k:len(removed):len(removed)], live: in.live, auto: in.auto}
		sp.indoms[i], copyOf[in] = &ins[i], &ins[i]
	}
	ms := make([]metric, len(p.metrics))
	sp.metrics = make([]*metric, len(p.metrics))
	for i, m := range p.metrics {
		ms[i] = *m
		if m.values.len() > 0 { // empty until a handle is made (part.handleOf)
			ms[i].values = m.values.share()
		}
		if m.indom != nil {
			ms[i].indom = copyOf[m.indom]
		}
		sp.metrics[i] = &ms[i]
	}
	p.snap.removed = removed
	return sp
}

// endSnapshot ends the snapshot snapshotLocked made, once its publication
// is done with it: the part's lists stop keeping it as it was.
func (p *part) endSnapshot() {
	p.slots.unshare()
	for _, m := range p.metrics {
		m.values.unshare()
	}
}
