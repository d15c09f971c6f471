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
	entry := pagemapOf(t)
	page := uintptr(os.Getpagesize())
	present := func(addr uintptr) bool { return entry(addr)>>63 == 1 }
	r, v := uncappedVec(t, "mapped", 1<<20)
	startOrSkip(t, r)
	useRoutes(v, 0, 2000)
	require.NoError(t, r.Flush()) // a grown file, every value bound
	useRoutes(v, 2000, 2010)
	var mapped bool
	hookGrowth(t, r, func(gp growthPoint) {
		switch gp {
		case afterSnapshot:
			useRoutes(v, 2010, 3000) // in flight: slots in the room
		case mappedTaken:
			mapped = true
		}
	})
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

// TestValuesOwnTheirFolios: the files' values are written with a pwrite of
// their own (osfile.writeTemp), so that the page cache holds them in
// folios of their own. The first write to a page through a shared mapping
// faults, and the file system's handler (ext4's, block_page_mkwrite) walks
// the page's whole folio: one pwrite of a growth step's 3.5 MB file left
// 70 of its 78 pages of values in a folio of 1 MB, and populating them
// took 0.36 ms, a fifth of the step (compare/BenchmarkGrowthStep), against
// 23 µs written apart. In Start's file the first page after the values,
// of the instances' names, shares no folio with them; in a grown one the
// first page of the values shares none with the page before it, of the
// names. /proc/kpageflags says which pages are a compound page's tail, in
// the folio of the page before; without the right to read page frames
// (CAP_SYS_ADMIN) the test skips. A kernel caching files in single pages
// passes it.
func TestValuesOwnTheirFolios(t *testing.T) {
	entry := pagemapOf(t)
	kpageflags, err := os.Open("/proc/kpageflags")
	if err != nil {
		t.Skipf("no kpageflags: %v", err)
	}
	defer kpageflags.Close()
	page := int64(os.Getpagesize())
	var sink byte
	// tail tells whether the page at off in p's file is in the folio of
	// the page before it.
	tail := func(p *part, off int64) bool {
		require.Less(t, off, int64(len(p.file.bytes())))
		addr := unsafe.Add(p.file.os.Base(), off)
		sink += *(*byte)(addr) // mapped
		pfn := entry(uintptr(addr)) & (1<<55 - 1)
		if pfn == 0 {
			t.Skipf("page frames hidden (%d): needs CAP_SYS_ADMIN", sink)
		}
		var e [8]byte
		_, err := kpageflags.ReadAt(e[:], int64(pfn)*8)
		require.NoError(t, err)
		const compoundTail = 1 << 16
		return binary.LittleEndian.Uint64(e[:])&compoundTail != 0
	}
	r, v := uncappedVec(t, "folios", 1<<20)
	useRoutes(v, 0, 8000) // names after the values: 2 MB in Start's file
	startOrSkip(t, r)
	p := r.parts[0]
	end := p.file.os.ValuesOffset() + int64(p.stride.at(p.slots.len()))
	assert.False(t, tail(p, (end+page-1)/page*page), "Start's file: the page after the values shares a folio with their last")

	useRoutes(v, 8000, 9000)
	require.NoError(t, r.Flush()) // grown: the values after the names
	assert.False(t, tail(p, p.file.os.ValuesOffset()/page*page), "a grown file: the first page of the values shares a folio with the page before it")
}
