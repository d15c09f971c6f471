package mmv

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/gopcp/mmv/internal/osfile"
)

// The lifecycle of a registry: declaring until Start, started until
// Close, then closed (docs/design.md, "One registry, one lifecycle").

// Start validates the declarations, writes the files and maps them. A file
// appears complete or not at all: it is written under a temporary name
// starting with '.', which PCP's reader ignores, then renamed into place.
// Every file is made, and every name checked, before any is renamed into
// place: when any file cannot be made, or a name is another live
// registry's, the registry stays declaring, every file at its name as it
// was. The files of an earlier run of the same name are replaced; its
// overflow files past this run's (<file>.N) stay, their metrics showing no
// value (the Sentinel flag), but for the names clashing at a dot with one
// this run declares in another file, until this run makes them again,
// renamed over them, their PMIDs kept, and the file renamed over one keeps
// the metrics this run has not declared again (carry.go): a Start that
// fails after making them so leaves them so. The metrics of the last run's
// first file that this run has not declared are kept in the new one with
// no value, their PMIDs kept, until it declares them, and the names it has
// declared keep their items there (carry.go). A name of the last run's
// files goes back to the file that held it while that file has room,
// declared before Start or after it, so its PMID stays whatever the order
// of declarations. A rename failing after another file was renamed into
// place (a name taken by another registry between its check and its
// rename) leaves that file at its name, never removed: its PMIDs vanishing
// and coming back at the next attempt would crash pmcd (docs/design.md, "A
// pmcd crash in PCP's reader"); the next attempt renames over it. A
// registry whose full names (mmv.<file>.<name>, or mmv.<name> with
// NoPrefix) clash with another live file's of the directory, the same name
// or one a leaf where the other is a prefix at a dot, is refused with
// ErrNamespace: PCP builds one namespace from every file.
func (r *Registry) Start() (err error) {
	r = registry(r)
	if p := r.pollUnstarted(); p != nil {
		p.raise() // the registry as it was, declaring
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	defer func() {
		if r.state == declaring {
			r.startErr = err // for Err, until a Start succeeds or Configure
		}
	}()
	if err := r.declaringLocked(); err != nil {
		return err
	}
	if err := r.validateLocked(); err != nil {
		return err
	}
	if err := r.placeLocked(); err != nil {
		return err
	}
	if err := r.checkPlacedLabelsLocked(); err != nil {
		return err
	}
	path := r.opts.Dir
	if path == "" {
		path = Dir()
	}
	d, err := openDir(path)
	if err != nil {
		return fileError(r.name, "cannot start", err)
	}
	// Laid out again where the last run's files put names elsewhere: they
	// keep their files (lastHomes). A Start that fails forgets them: they
	// are the files of this name in this directory, and Configure may
	// change both before the next (TestConfigureAfterFailedStartForgetsHomes).
	r.lastPrefix = r.lastOverflowPrefix(d)
	if r.homes = r.lastHomes(d); r.homes != nil {
		err = r.placeLocked()
		if err == nil {
			err = r.checkPlacedLabelsLocked()
		}
		if err != nil {
			r.homes = nil
			d.Close()
			return err
		}
	}
	r.dir = d
	r.checkLivenessLocked()
	cl, err := r.claimsLocked(d, r.parts[0])
	if err == nil {
		// Every file made before one is renamed into place: a Start that
		// fails leaves the files at their names as they were.
		err = r.checkNamespaceLocked(d, cl.shown)
		for _, p := range r.parts {
			if err != nil {
				break
			}
			err = r.startPartLocked(p, d, cl)
		}
		if err == nil {
			err = r.buryLeftoversLocked()
		}
		for _, p := range r.parts {
			if err == nil {
				err = r.holdPartLocked(p)
			}
		}
		for _, p := range r.parts {
			if err == nil {
				err = r.commitPartLocked(p)
			}
		}
		if err == nil {
			// The files carried the closed records they read (carryLocked,
			// buryLocked): the file at each one's name is the record now.
			// Under the claim lock, so no other Start of the name closes
			// meanwhile.
			for _, c := range r.closedRecords {
				d.Remove(c)
			}
		}
		r.closedRecords = nil
		cl.release()
	}
	if err != nil {
		// A file renamed into place stays: removed, its PMIDs would
		// vanish and come back at the next attempt.
		r.stopPartsLocked(false)
		r.dir.Close()
		r.dir = nil
		r.homes = nil
		r.restoreFlagsLocked()
		return err
	}
	r.state = started
	r.timer = newPublishTimer(r, paceOf(d))
	r.path = r.parts[0].file.path()
	r.bindLocked(0)
	// The cells bound now are carried by the timer's publications, as a
	// wake's are (rebound.go): unarmed, an update racing Start's binding
	// stayed out of the file until something else was published, maybe
	// never (TestUpdateRacingBindCarriedByTheTimer).
	r.scheduleLocked()
	for _, f := range r.onStart {
		f()
	}
	for _, p := range r.pollers {
		p.startLocked()
	}
	return nil
}

// Close unmaps the files, and takes them from PCP's view when the Process
// flag is set: each file is renamed to its closed record in the same
// directory, .<file>.closed for the first, .<file>.N.closed for an
// overflow file, which PCP ignores (its name starts with '.'), and so is
// each tombstone Start kept of an earlier run's overflow files. The next
// Start of the name, finding no file at one's name, reads the record as
// it reads a file left there
// (a killed run's, a run's without the flag), then removes it: a metric it
// declares with another descriptor takes another PMID, and the names it
// no longer declares keep theirs with no value, so that a client that
// looked one up before the restart (pmval, pmlogger) reads no value by a
// descriptor it is not. Without that flag the files stay with their last
// values, which PCP goes on reading. Values updated after Close are dropped, not written: every
// handle is pointed away from the files first. A file's pages become
// private memory, unmapped once no *Value handle on it is reachable, so
// that an update racing Close never faults: a program that keeps handles
// of closed registries keeps one mapping per closed file. Closing a
// registry that was never started only stops further declarations; closing
// it again does nothing.
func (r *Registry) Close() error {
	r = registry(r)
	// The callback metrics' last values, before the files are left.
	panicked := r.runCallbacks()
	r.mu.Lock()
	defer r.mu.Unlock()
	defer func() {
		if panicked != nil {
			panicked.raise() // once closed, the lock released after
		}
	}()
	r.awaitPublicationLocked()
	if r.state == closed {
		return nil
	}
	wasStarted, process := r.state == started, r.opts.Flags&Process != 0
	var err error
	if wasStarted && !process {
		// The files outlive the process: publish what they lack.
		err = r.publishLocked()
	}
	r.state = closed
	r.scheduleLocked() // stops the timer
	if !wasStarted {
		return nil
	}
	r.timer.pace.release()
	// A callback metric's function or hook that panics stops none of the
	// others, nor the rest of Close: the registry is closed whole, then
	// the first panic goes on to the caller. Stopped at the panic, Close
	// left the file at its name, locked, and the later polls running, for
	// good.
	for _, p := range r.pollers {
		p.haltLocked()
	}
	for _, f := range r.onClose {
		if p := runHook(f); p != nil && panicked == nil {
			panicked = p
		}
	}
	r.unbindCellsLocked()
	r.strs.mu.Lock()
	r.strs.closed = true
	r.strs.mu.Unlock()
	err = errors.Join(err, r.stopPartsLocked(process))
	if process {
		if tombstoneHook != nil {
			tombstoneHook(closeStopped)
		}
		err = errors.Join(err, r.closeTombstonesLocked())
	}
	r.dir.Close()
	return err
}

// declaringLocked refuses what only a declaring registry may do.
func (r *Registry) declaringLocked() error {
	switch r.state {
	case closed:
		return errorf(ErrClosed, subject("file", r.name), "")
	case started:
		return errorf(ErrStarted, subject("file", r.name), "")
	}
	return nil
}

// validateLocked checks the registry as a whole: what no single
// declaration shows.
func (r *Registry) validateLocked() error {
	if err := checkRegistryName(r.name, r.opts.Flags); err != nil {
		return err
	}
	subject := subject("file", r.name)
	if r.opts.Cluster > MaxCluster && r.opts.Cluster != ReaderCluster {
		return errorf(ErrRange, subject, "cluster %d is more than %d", r.opts.Cluster, MaxCluster)
	}
	if r.opts.Flags&^allFlags != 0 {
		return errorf(ErrRange, subject, "unknown flags %#x", uint32(r.opts.Flags&^allFlags))
	}
	for _, p := range r.parts {
		// The labels' count (labelCount), not a copy of them, which a
		// publication makes for its file alone.
		if _, err := r.versionWith(p, r.labelCount(p)); err != nil {
			return err
		}
	}
	return nil
}

// stopPartsLocked points every handle away from the files, closes them,
// taking them from PCP if asked, and returns the parts to how they were
// before Start. A file so taken is renamed to its closed record
// (osfile.ClosedName), which PCP's reader ignores as it ignores a removed
// file, and the next Start carries (carry.go).
func (r *Registry) stopPartsLocked(remove bool) error {
	var errs []error
	for _, p := range r.parts {
		p.detach()
		if p.file != nil {
			var err error
			if remove {
				err = p.file.closeAs(osfile.ClosedName(p.name))
			} else {
				err = p.file.close(false)
			}
			if err != nil {
				errs = append(errs, fileError(p.name, "cannot close", err))
			}
		}
		p.reset()
	}
	return errors.Join(errs...)
}

// Err says why the registry's metrics are not, or not all, in PCP: an
// error wrapping ErrNotStarted before Start (instruments count, but no file
// shows them), and the error of the last Start if it failed (until
// Configure), ErrClosed after Close, and while started the error of the
// last publication that failed, such as a full disk, until one succeeds,
// or why the registry's own count of refusals, mmv.<file>.mmv.dropped, has
// no file (a file budget, Options.MaxFileValues, below its 4 values), or
// which instruments a New function declared after Start are kept out of
// PCP because another program's live file holds their names
// (ErrNamespace) or a cap refused them (ErrTooMany), until declared: 32
// by name, then how many more refusals, with the last, or that a file is no longer at its name (removed, or
// replaced by someone: Flush writes it anew), or that the directory at its
// path is no longer the one opened at Start (moved, removed or a symlink
// repointed: the registry goes on writing in the one it opened, which PCP
// no longer reads, until a new registry starts), or why its files lack the
// Process flag it was given (ErrUnsupported: PCP's reader cannot check
// this process's pid, see Process); nil when the files hold every
// declaration published so far.
func (r *Registry) Err() error {
	r = registry(r)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.awaitPublicationLocked() // its file is moving: at its name once it lands
	switch r.state {
	case declaring:
		err := errorf(ErrNotStarted, subject("file", r.name), "its metrics are counted but in no file PCP reads")
		if r.startErr != nil { // said beside, as a service may have logged Start's error elsewhere
			return fmt.Errorf("%w: the last Start failed: %w", err, r.startErr)
		}
		return err
	case closed:
		return errorf(ErrClosed, subject("file", r.name), "")
	}
	errs := []error{r.pubErr, r.ownErr, r.liveErr}
	for _, name := range slices.Sorted(maps.Keys(r.refused)) {
		errs = append(errs, r.refused[name])
	}
	if r.refusedPast > 0 {
		errs = append(errs, fmt.Errorf("mmv: %s: and %d more refusals of the New functions, of names not listed, since Start (the last: %w)", subject("file", r.name), r.refusedPast, r.refusedLast))
	}
	if err := r.dirReplacedLocked(); err != nil {
		errs = append(errs, err)
	} else {
		for _, p := range r.movedLocked() {
			errs = append(errs, errorf(ErrFile, subject("file", p.name), "no longer at its name in %s (removed, or another renamed over it): PCP does not read it until Flush writes it anew", r.dir.Path()))
		}
	}
	if errs[1] == nil && errs[2] == nil && len(errs) == 3 {
		return r.pubErr
	}
	return errors.Join(errs...)
}

// checkLivenessLocked withholds the Process flag from the files of a
// registry that has it when PCP's reader cannot check this process's life,
// and records why for Err. The files' flags lack it (their parts', and
// fileFlagsLocked's for parts made after Start), the options keep it, as
// given (Options; Close takes the files from PCP); restoreFlagsLocked gives it
// back to the parts when Start fails.
func (r *Registry) checkLivenessLocked() {
	r.liveErr, r.withheld = nil, 0
	why := processLiveness().why
	if r.opts.Flags&Process == 0 || why == "" {
		return
	}
	r.liveErr = errorf(ErrUnsupported, subject("file", r.name), "the Process flag: %s; its files are written without it, so they stay with their last values if the process dies without Close (Close still takes them from PCP)", why)
	r.withheld = Process
	for _, p := range r.parts {
		p.flags &^= Process
	}
}

// restoreFlagsLocked gives back the flags checkLivenessLocked withheld.
func (r *Registry) restoreFlagsLocked() {
	for _, p := range r.parts {
		p.flags |= r.withheld
	}
	r.liveErr, r.withheld = nil, 0
}
