package mmv

import (
	"encoding/binary"
	"os"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGrowthMapsTheRoomTakenInFlight: the values first used while a
// growth step writes its file without the lock take slots in the new
// file's room, after the values it wrote and mapped; the step maps their
// pages writable too, before the wake binds them a chunk at a time with
// the lock held, where each page's first write faulted (0.5-1 ms of the
// first chunk at 100,000 values). The pages after them stay unmapped
// until a value takes them. /proc/self/pagemap's present bit says which
// pages are mapped.
func TestGrowthMapsTheRoomTakenInFlight(t *testing.T) {
	pagemap, err := os.Open("/proc/self/pagemap")
	if err != nil {
		t.Skipf("no pagemap: %v", err)
	}
	defer pagemap.Close()
	page := uintptr(os.Getpagesize())
	present := func(addr uintptr) bool {
		var e [8]byte
		_, err := pagemap.ReadAt(e[:], int64(addr/page)*8)
		require.NoError(t, err)
		return binary.LittleEndian.Uint64(e[:])>>63 == 1
	}
	r, v := uncappedVec(t, "mapped", 1<<20)
	startOrSkip(t, r)
	useRoutes(v, 0, 2000)
	require.NoError(t, r.Flush()) // a grown file, every value bound
	useRoutes(v, 2000, 2010)
	var mapped bool
	growthHook = func(gp growthPoint) {
		switch gp {
		case afterSnapshot:
			useRoutes(v, 2010, 3000) // in flight: slots in the room
		case mappedTaken:
			mapped = true
		}
	}
	defer func() { growthHook = nil }()
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.parts[0]
	require.NoError(t, r.publishPartUnlocking(p)) // no wake: nothing bound
	require.True(t, mapped, "the publication mapped no room")
	m := p.metrics[0]
	last := min(m.slots.len(), p.file.capacity) - 1
	require.Greater(t, last, 2500, "the first uses in flight took no room")
	addr := func(s int) uintptr { return uintptr(unsafe.Add(p.file.values, p.stride.at(s))) }
	unmapped := 0
	for j := 2010; j <= last; j++ {
		if !present(addr(int(*m.slots.at(j)))) {
			unmapped++
		}
	}
	assert.Zero(t, unmapped, "values first used in flight whose page is not mapped")
	after := (addr(p.slots.len()-1)/page + 1) * page
	if after < uintptr(unsafe.Add(p.file.os.Base(), len(p.file.os.Bytes()))) {
		assert.False(t, present(after), "the page after the values taken is mapped")
	}
}
