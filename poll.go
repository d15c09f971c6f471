package mmv

import "time"

// DefaultInterval is how often Poll runs a function, and how often
// histograms refresh their statistics, when no interval is given.
const DefaultInterval = time.Second

// Poll arranges for f to run every interval (DefaultInterval when not
// positive) while r is started: once in Start, before it returns, then
// every interval on a goroutine of its own, and a last time in Close, while
// the file is still mapped. Use it to copy values kept elsewhere into the
// file, off the hot path: histograms refresh their statistics this way,
// and package goruntime copies runtime/metrics.
//
// Start and Close run f with the registry locked, so f must not call the
// registry's methods; it updates instruments and Values looked up before.
// Runs never overlap.
func (r *Registry) Poll(interval time.Duration, f func()) {
	r = registry(r)
	if interval <= 0 {
		interval = DefaultInterval
	}
	var stop, done chan struct{}
	r.hook(func() {
		f()
		stop, done = make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			t := time.NewTicker(interval)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					f()
				}
			}
		}()
	}, func() {
		if stop == nil {
			return
		}
		close(stop)
		<-done
		f()
	})
}
