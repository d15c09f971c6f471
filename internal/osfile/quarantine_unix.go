//go:build (linux || darwin || freebsd) && !mmv_noport

package osfile

import (
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A closed file's pages stay mapped, as anonymous memory, for a grace
// period: Close points every handle away from them first, but an update
// that loaded the address just before may still store into them. Then the
// range is unmapped, so that Start/Close cycles do not pile up mappings
// until the process runs out of them (about 65,000).
const quarantineGrace = time.Second

// quarantine holds the ranges waiting for their release, oldest first,
// and the one timer that releases them: no goroutine runs in between.
var quarantine struct {
	mu     sync.Mutex
	ranges []quarantined
	timer  *time.Timer
}

type quarantined struct {
	addr  unsafe.Pointer
	size  uintptr
	until time.Time
}

// quarantineRange unmaps [addr, addr+size) once the grace period is over.
func quarantineRange(addr unsafe.Pointer, size uintptr) {
	q := &quarantine
	q.mu.Lock()
	defer q.mu.Unlock()
	q.ranges = append(q.ranges, quarantined{addr, size, time.Now().Add(quarantineGrace)})
	if q.timer == nil {
		q.timer = time.AfterFunc(quarantineGrace, releaseQuarantined)
	}
}

// releaseQuarantined unmaps the ranges whose grace period is over, and
// sets the timer for the next one, if any.
func releaseQuarantined() {
	q := &quarantine
	q.mu.Lock()
	defer q.mu.Unlock()
	now := time.Now()
	n := 0
	for n < len(q.ranges) && !now.Before(q.ranges[n].until) {
		unix.MunmapPtr(q.ranges[n].addr, q.ranges[n].size)
		n++
	}
	q.ranges = append(q.ranges[:0], q.ranges[n:]...)
	q.timer = nil
	if len(q.ranges) > 0 {
		q.timer = time.AfterFunc(q.ranges[0].until.Sub(now), releaseQuarantined)
	}
}
