package mmv

import (
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
// and no run begins once Close has returned. A
// nil r means Default, as for the instruments. A nil f is ignored: run,
// it would panic on the registry's goroutine, where no caller recovers.
func (r *Registry) Poll(interval time.Duration, f func()) {
	r = registry(r)
	if f == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.polls = append(r.polls, r.pollLocked(interval, f))
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
	p := &poller{f: f}
	var stop chan struct{}
	start := func() {
		s := make(chan struct{})
		stop = s
		go poll(interval, func() { p.runUnless(s) }, s)
	}
	r.onStart = append(r.onStart, start)
	r.onClose = append(r.onClose, func() {
		if stop != nil {
			close(stop)
		}
	})
	if r.state == started {
		start()
	}
	return p
}

// pollUnstarted runs the registry's polls when it is not started yet,
// without its lock, which they may take: the first step of Start, so that
// what they copy is in the files PCP first reads (a poll's goroutine,
// started after them, left PCP reading zeros meanwhile), and of Gather and
// Snapshot. It waits for them up to pollWait: a poll stuck (a bridge's
// collector that never returns) holds none of them longer, and its run
// copies its values when it ends. A poll running already, on another
// goroutine or below this Gather (a poll that gathers), is not run again:
// it copies the values meanwhile, and waiting for it would wait for ever
// in the second case.
func (r *Registry) pollUnstarted() {
	r.mu.Lock()
	var polls []*poller
	if r.state == declaring {
		polls = r.polls
	}
	r.mu.Unlock()
	if len(polls) == 0 {
		return
	}
	// Each on a goroutine of its own: one stuck holds no other back.
	var wg sync.WaitGroup
	for _, p := range polls {
		if p.mu.TryLock() {
			wg.Go(func() {
				defer p.mu.Unlock()
				p.f()
			})
		}
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	t := time.NewTimer(pollWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// runCallbacks runs the callback metrics' functions of a started
// registry, each after its run in progress if any, waiting for both up to
// pollWait (runWithin), without the registry's lock: a
// function that reads the registry (a vector's Instances, which takes the
// lock) made Close and Snapshot, which ran them holding it, wait for
// ever. It returns the value the first of them panicked with, if one did:
// the others run all the same.
func (r *Registry) runCallbacks() (panicked *hookPanic) {
	r.mu.Lock()
	var cbs []*poller
	if r.state == started {
		cbs = r.callbacks
	}
	r.mu.Unlock()
	for _, p := range cbs {
		if v := p.runWithin(pollWait); v != nil && panicked == nil {
			panicked = v
		}
	}
	return panicked
}

// runWithin runs f after the run in progress, if any, and waits for its
// run up to d in all, on a goroutine of its own: Close and Snapshot call
// it (runCallbacks), and a run stuck (a callback that never returns, its
// run left by a Gather before Start, or its own) held them for ever, and
// a service's shutdown with Close. A run past d goes on, as a Poll's run
// in progress at Close does. It returns the value f panicked with, if it
// did within d.
func (p *poller) runWithin(d time.Duration) *hookPanic {
	end := time.Now().Add(d)
	for !p.mu.TryLock() {
		if time.Now().After(end) {
			return nil
		}
		time.Sleep(time.Millisecond)
	}
	done := make(chan *hookPanic, 1)
	go func() {
		defer p.mu.Unlock()
		done <- runHook(p.f)
	}()
	t := time.NewTimer(time.Until(end))
	defer t.Stop()
	select {
	case v := <-done:
		return v
	case <-t.C:
		return nil
	}
}

// hookPanic is the value a hook panicked with.
type hookPanic struct{ v any }

// runHook runs f, and returns the value it panicked with, nil if it
// returned.
func runHook(f func()) (p *hookPanic) {
	returned := false
	defer func() {
		if !returned {
			p = &hookPanic{recover()}
		}
	}()
	f()
	returned = true
	return nil
}

// pollWait bounds a wait for the polls' runs before Start (pollUnstarted).
const pollWait = time.Second

func poll(interval time.Duration, f func(), stop chan struct{}) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		default:
		}
		f()
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}
