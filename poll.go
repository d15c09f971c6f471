package mmv

import "time"

// DefaultInterval is how often Poll runs a function, and how often
// histograms refresh their statistics, when no interval is given; callback
// metrics (NewCounterFunc...) are read this often.
const DefaultInterval = time.Second

// Poll arranges for f to run every interval (DefaultInterval when not
// positive) while r is started, on a goroutine of its own: first as soon as
// Start has made the file, then every interval until Close. Use it to copy
// values kept elsewhere into the file, off the hot path: package goruntime
// copies runtime/metrics this way. f may call the registry's methods, such
// as Value to look its handles up on its first run. Runs never overlap;
// Close does not wait for a run in progress, whose updates are then
// dropped like any update after Close. A nil r means Default, as for the
// instruments.
func (r *Registry) Poll(interval time.Duration, f func()) {
	r = registry(r)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pollLocked(interval, f)
}

// pollLocked is Poll with the registry's lock held.
func (r *Registry) pollLocked(interval time.Duration, f func()) {
	if interval <= 0 {
		interval = DefaultInterval
	}
	var stop chan struct{}
	start := func() {
		stop = make(chan struct{})
		go poll(interval, f, stop)
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
}

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
