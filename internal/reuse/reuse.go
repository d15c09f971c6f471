// Package reuse keeps one large object for the next use, for the whole
// process: the buffer a file is written from, a file's plan. A sync.Pool
// keeps one per processor, so that a file written from another processor
// than the last found none and made it anew, in proportion to the file,
// with the page faults and the collector's work that follow (29 of 300
// Starts of 10,000 instances in a row, on two cores). A Slot lets its object go at the
// second collection after its last use, as a Pool does: a program that
// stops writing files does not keep their memory.
package reuse

import (
	"runtime"
	"slices"
	"sync"
)

// Slot holds at most one T for the next Get. The zero Slot is empty and
// ready; it must not be copied once used.
type Slot[T any] struct {
	mu   sync.Mutex
	v    T
	held bool
	idle int // collections since Put (age)
}

// Get takes the object held, if any.
func (s *Slot[T]) Get() (v T, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok = s.v, s.held
	var zero T
	s.v, s.held = zero, false
	return v, ok
}

// Put holds v for the next Get, in place of any object held.
func (s *Slot[T]) Put(v T) {
	s.mu.Lock()
	s.v, s.held, s.idle = v, true, 0
	s.mu.Unlock()
	register(s)
}

// age counts a collection: the object held is let go at the second since
// it was put.
func (s *Slot[T]) age() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.idle++; s.idle >= 2 {
		var zero T
		s.v, s.held = zero, false
	}
}

type ager interface{ age() }

var (
	mu    sync.Mutex
	slots []ager // every Slot ever used: a few, package variables
	ticks int    // collections counted, for tests
)

// register makes s aged at every collection, starting the count at the
// first Slot used.
func register(s ager) {
	mu.Lock()
	defer mu.Unlock()
	for _, o := range slots {
		if o == s {
			return
		}
	}
	if len(slots) == 0 {
		arm()
	}
	slots = append(slots, s)
}

// sentinel is an object that dies at the next collection; it holds a
// pointer so that the runtime does not batch it with other small objects,
// which would delay its cleanup.
type sentinel struct{ _ *int }

// arm makes the next collection age every slot (tick), and arm again.
func arm() { runtime.AddCleanup(new(sentinel), func(struct{}) { tick() }, struct{}{}) }

// tick ages every slot, without mu held: the cleanup of a sentinel, run
// after the collection that found it dead.
func tick() {
	mu.Lock()
	ticks++
	all := slices.Clone(slots)
	arm()
	mu.Unlock()
	for _, s := range all {
		s.age()
	}
}
