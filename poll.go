package mmv

import (
	"reflect"
	"runtime"
	"slices"
	"sync"
	"time"
)

// DefaultInterval is how often Poll runs a function, and how often
// histograms refresh their statistics, when no interval is given; callback
// metrics (NewCounterFunc...) are read this often.
const DefaultInterval = time.Second

// Poll arranges for f to run every interval (DefaultInterval when not
// positive) while r is started, on a goroutine of its own: first in Start,
// before it makes the file, so that PCP's first fetch reads what f copied
// (Start waits for it up to a second), then on the goroutine from Start's
// end, every interval until Close. Before Start, each Gather and Snapshot
// runs it first instead (waiting for it up to a second too), so that a
// registry never started (a host without
// PCP, served by package expose) serves what f copies, not what it held
// when declared. Use it to copy values kept elsewhere into the file, off
// the hot path: package goruntime copies runtime/metrics this way. f may
// call the registry's methods, such as Value to look its handles up once
// started (before, Start's run included, Value refuses with
// ErrNotStarted). Runs never overlap; Close does not wait for a run in
// progress, whose updates are then dropped like any update after Close,
// and no run begins once Close has returned. A panic of f in the run of
// Start, Gather or Snapshot, within the second they wait, goes on to
// their caller, as a callback metric's (NewCounterFunc); on the poll's
// goroutine, or past that second, it ends the program. A run of f that
// ends its goroutine (runtime.Goexit) ends the caller's goroutine the
// same way, where a caller waits for it; the poll goes on at the next
// interval (TestPollSurvivesGoexit). A
// nil r means Default, as for the instruments. A nil f is ignored: run,
// it would panic on the registry's goroutine, where no caller recovers.
//
// The function returned stops the poll, for good: no run of f begins once
// it has returned (one in progress ends as it does), Gather and Snapshot
// no longer run it, its goroutine ends, and the registry lets f go. f may
// call it; calling it again, or after Close, does nothing. A bridge closed
// while its registry goes on (prombridge) stops its poll so.
func (r *Registry) Poll(interval time.Duration, f func()) (stop func()) {
	r = registry(r)
	if f == nil {
		return func() {}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.pollLocked(interval, f)
	r.polls = append(r.polls, p)
	return func() { r.stopPoll(p) }
}

// stopPoll stops p, one of Poll's, and lets its function go.
func (r *Registry) stopPoll(p *poller) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p.f.Swap(nil) == nil {
		return
	}
	if i := slices.Index(r.polls, p); i >= 0 {
		// A new array: runPolls may be reading the old one.
		r.polls = slices.Concat(r.polls[:i], r.polls[i+1:])
	}
	if i := slices.Index(r.pollers, p); i >= 0 {
		r.pollers = slices.Delete(r.pollers, i, i+1)
	}
	p.haltLocked()
}

// pollLocked runs f as Poll does, while started, with the registry's lock
// held, and returns its poller: the caller adds it to r.polls, which
// Gather and Snapshot run before Start, when f copies what they show
// (Poll's, callback metrics'), not when it only refreshes what they read
// themselves (a histogram group's).
func (r *Registry) pollLocked(interval time.Duration, f func()) *poller {
	if interval <= 0 {
		interval = DefaultInterval
	}
	p := &poller{interval: interval}
	p.f.Store(&f)
	r.pollers = append(r.pollers, p)
	if r.state == started {
		p.startLocked()
	}
	return p
}

// startLocked starts p's goroutine, which runs its function every
// interval, the first time at once; called with the registry's lock held
// (at Start, or by Poll once started).
func (p *poller) startLocked() {
	if p.f.Load() == nil { // stopped
		return
	}
	s := make(chan struct{})
	p.stop = s
	go poll(p.interval, func() { p.runUnless(s) }, s, true)
}

// pollUnstarted runs the registry's polls when it is not started yet,
// without its lock, which they may take: the first step of Start, so that
// what they copy is in the files PCP first reads (a poll's goroutine,
// started after them, left PCP reading zeros meanwhile), and of Gather and
// Snapshot. It waits for them up to pollWait: a poll stuck (a bridge's
// collector that never returns) holds none of them longer, and its run
// copies its values when it ends. A poll running already, on another
// goroutine or below this Gather (a poll that gathers), is not run again:
// it copies the values meanwhile, and waiting for it would hold a poll
// that gathers a second at each of its Gathers. It returns the value the
// first of them panicked with within the wait, which the caller panics
// with (runPolls): on the goroutine it ran on, no caller could recover it,
// and a scrape (package expose) of a callback that panicked ended the
// program.
func (r *Registry) pollUnstarted() *hookPanic {
	return r.runPollsIn(declaring, func() []*poller { return r.polls }, false)
}

// runCallbacks runs the callback metrics' functions of a started
// registry, each after its run in progress if any, waiting for them up to
// pollWait in all (runPolls), without the registry's lock: a function that
// reads the registry (a vector's Instances, which takes the lock) made
// Close and Snapshot, which ran them holding it, wait for ever. It returns
// the value the first of them panicked with, if one did: the others run
// all the same.
func (r *Registry) runCallbacks() *hookPanic {
	return r.runPollsIn(started, func() []*poller { return r.callbacks }, true)
}

// runPollsIn runs the polls of (read with the registry's lock held) when
// the registry is in state s, without the lock (runPolls).
func (r *Registry) runPollsIn(s state, of func() []*poller, waiting bool) *hookPanic {
	r.mu.Lock()
	var polls []*poller
	if r.state == s {
		polls = of()
	}
	r.mu.Unlock()
	return runPolls(polls, pollWait, waiting)
}

// runPolls runs the functions of polls, each on a goroutine of its own,
// and waits for them up to d in all: one stuck holds no other back, nor
// the caller past d, where each in turn was waited for up to d, and
// callbacks that all blocked on one lock (a pool's counts, its shutdown
// holding it) held Close a second each. A poll's run in progress is
// waited for, within d, before its own when waiting is set (Close and
// Snapshot want the latest value), else left to copy what it copies. A
// run past d goes on, as a Poll's run in progress at Close does.
//
// It returns the value the first of them, in the order of polls,
// panicked with within d, for the caller to panic with. One that panics
// past d, its caller gone, is not recovered: it ends the program, with
// the function's own stack, as a panic on the poll's goroutine does.
// Recovered, it was swallowed, and the program went on as if the
// function had returned.
func runPolls(polls []*poller, d time.Duration, waiting bool) *hookPanic {
	if len(polls) == 0 {
		return nil
	}
	end := time.Now().Add(d)
	// Which to run, and which of those the caller locked, counted before
	// any run: one ending before the next was counted closed done. A
	// caller inside a run (a callback reading Snapshot) waits for none in
	// progress: one of them is its own, which would hold it d at every
	// call.
	locked, run := make([]bool, len(polls)), make([]bool, len(polls))
	w := &pollRuns{panics: make([]*hookPanic, len(polls)), done: make(chan struct{})}
	checked, inside := false, false
	for i, p := range polls {
		if locked[i] = p.mu.TryLock(); !locked[i] && waiting && !checked {
			checked, inside = true, inPollRun()
		}
		if run[i] = locked[i] || waiting && !inside; run[i] {
			w.left++
		}
	}
	if w.left == 0 {
		return nil
	}
	for i, p := range polls {
		if run[i] {
			go p.runFor(w, i, locked[i], end)
		}
	}
	t := time.NewTimer(time.Until(end))
	defer t.Stop()
	select {
	case <-w.done:
	case <-t.C:
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.over = true
	for _, v := range w.panics {
		if v != nil {
			return v
		}
	}
	return nil
}

// The functions a poll's function runs under, as runtime.Frame names
// them: read from the functions, not written out, which a fork renaming
// the module would have left behind (TestCallbackSnapshotWaitsNotForItself
// fails when they are not the frames').
var runForName, runUnlessName = funcName((*poller).runFor), funcName((*poller).runUnless)

// funcName returns the name of the function f.
func funcName(f any) string { return runtime.FuncForPC(reflect.ValueOf(f).Pointer()).Name() }

// inPollRun reports whether the caller runs inside a poll's function.
// Go gives a goroutine no identity to compare with a run's, and the
// stack is what tells a Snapshot called from a callback from one called
// beside it; read only when a run is in progress.
func inPollRun() bool {
	pcs := make([]uintptr, 64)
	for n := runtime.Callers(2, pcs); ; n = runtime.Callers(2, pcs) {
		if n < len(pcs) {
			pcs = pcs[:n]
			break
		}
		pcs = make([]uintptr, 2*len(pcs))
	}
	for frames := runtime.CallersFrames(pcs); ; {
		f, more := frames.Next()
		if f.Function == runForName || f.Function == runUnlessName {
			return true
		}
		if !more {
			return false
		}
	}
}

// pollRuns is what runPolls waits for: the runs left, the values they
// panicked with, by poll, and whether it waits no more (over), after
// which a run's panic is not recovered.
type pollRuns struct {
	mu     sync.Mutex
	left   int
	panics []*hookPanic
	over   bool
	done   chan struct{} // closed when left reaches 0
}

// endLocked counts one run ended, with the value it panicked with if
// any.
func (w *pollRuns) endLocked(i int, v *hookPanic) {
	w.panics[i] = v
	if w.left--; w.left == 0 {
		close(w.done)
	}
}

// end counts run i ended, as it returned or was not run.
func (w *pollRuns) end(i int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.endLocked(i, nil)
}

// runFor runs f as run i of w once p is locked, by the caller (locked) or
// here, waiting for the run in progress until end: past it, f is not run.
func (p *poller) runFor(w *pollRuns, i int, locked bool, end time.Time) {
	for ; !locked; locked = p.mu.TryLock() {
		if time.Now().After(end) {
			w.end(i)
			return
		}
		time.Sleep(time.Millisecond)
	}
	returned := false
	defer func() {
		// The poll let go before the run counts itself ended: a caller
		// that saw it end and ran the poll again found it held, and
		// skipped it (TestEveryGatherRunsAPollBeforeStart).
		p.mu.Unlock()
		if returned {
			w.end(i)
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if !w.over { // else the panic goes on, and ends the program
			w.endLocked(i, recovered(recover()))
		}
	}()
	p.run()
	returned = true
}

// hookPanic is how a hook or poll that did not return ended: the value
// it panicked with, or runtime.Goexit (exited), which testing's FailNow
// calls.
type hookPanic struct {
	v      any
	exited bool
}

// recovered is the hookPanic of a function that did not return, of what
// recover returned: nil for runtime.Goexit, which recovers nothing (a
// panic(nil) recovers a *runtime.PanicNilError, but under
// GODEBUG=panicnil=1, where it too is taken for a Goexit).
func recovered(v any) *hookPanic { return &hookPanic{v: v, exited: v == nil} }

// raise ends the caller as the hook or poll ended, on the caller's
// goroutine: with its panic, or by runtime.Goexit. Panicked with nil, the
// caller of a callback that called FailNow failed with
// *runtime.PanicNilError, not as its test.
func (p *hookPanic) raise() {
	if p.exited {
		runtime.Goexit()
	}
	panic(p.v)
}

// runHook runs f, and returns the value it panicked with, nil if it
// returned.
func runHook(f func()) (p *hookPanic) {
	returned := false
	defer func() {
		if !returned {
			p = recovered(recover())
		}
	}()
	f()
	returned = true
	return nil
}

// pollWait bounds a wait for the polls' runs before Start (pollUnstarted).
const pollWait = time.Second

// poll runs f every interval until stop is closed, the first time at
// once when now is set; f runs nothing once stop is closed
// (poller.runUnless). An f that ends its goroutine (runtime.Goexit) ends
// this run alone: the poll goes on, on a new goroutine, where it stopped
// for the registry's life. A panic ends the program, as its doc says.
func poll(interval time.Duration, f func(), stop chan struct{}, now bool) {
	t := time.NewTicker(interval)
	defer t.Stop()
	stopped := false
	defer func() {
		if !stopped {
			go poll(interval, f, stop, false)
		}
	}()
	for {
		if now {
			f()
		}
		now = true
		select {
		case <-stop:
			stopped = true
			return
		case <-t.C:
		}
	}
}
