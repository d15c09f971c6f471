//go:build (linux || darwin || freebsd) && !mmv_noport

package osfile

import (
	"runtime"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A closed file's pages are retired: the registry points every handle
// away from them and Close maps anonymous memory over them, but an update
// that loaded its value's address just before may still store there, and
// however late: Go may preempt a goroutine between the load and the store,
// and its thread may then wait for a CPU for any time. No grace period is
// long enough, so a retired range is unmapped only when its file is
// unreachable. That proves no update is left in between: every handle on
// a value of the file references the file (mmv's Value.file, which holds
// the *File), and every update
// keeps its handle live until its last access to the value
// (runtime.KeepAlive in mmv's Value's and cell's methods: no atomic, lock or
// branch, at most a store of the handle to the stack), so a goroutine
// stopped inside an update holds the handle in a register or a stack
// slot, which the garbage collector scans (the frame an asynchronous
// preemption interrupted conservatively, registers included). And no
// update starts after Close, since every handle points away.
//
// Until then a retired range costs one mapping, and no memory but the
// pages late updates touched. A program that keeps handles of closed
// registries keeps their ranges. The others go at the next collection; a
// program closing registries faster than it collects gets a collection
// once retiredGCEvery ranges wait (and not more than once every quarter of
// that many retirements, for a program that holds them), so that they
// never pile up to the process's limit on mappings (vm.max_map_count,
// about 65,000).
const retiredGCEvery = 1024

// retiredCount counts the ranges retired, retiredLive those not unmapped
// yet, and retiredGCAt is retiredCount at the last collection retire asked
// for.
var retiredCount, retiredLive, retiredGCAt atomic.Int64

type retiredRange struct {
	addr unsafe.Pointer
	size uintptr
}

// retire unmaps [addr, addr+size), which f mapped, once f is unreachable.
func retire(f *File, addr unsafe.Pointer, size uintptr) {
	runtime.AddCleanup(f, releaseRetired, retiredRange{addr, size})
	n := retiredCount.Add(1)
	if retiredLive.Add(1) >= retiredGCEvery {
		if last := retiredGCAt.Load(); n-last >= retiredGCEvery/4 && retiredGCAt.CompareAndSwap(last, n) {
			runtime.GC()
		}
	}
}

func releaseRetired(r retiredRange) {
	unix.MunmapPtr(r.addr, r.size)
	retiredLive.Add(-1)
}
