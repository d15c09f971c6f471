//go:build linux && !mmv_noport

package osfile

import (
	"encoding/binary"
	"os"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestReplaceMapsItsUsedPages: once Replace returns, every page of the
// grown file's values in use is mapped (/proc/self/pagemap's present bit),
// so that the registry's writes into them, which it makes with its lock
// held, fault no more; the pages of the room after them, and those of the
// sections before the values, the head's included (the seal is written,
// not stored through the mapping: see commit), are not. A kernel older
// than MADV_POPULATE_WRITE (5.14) maps none, and the test skips.
func TestReplaceMapsItsUsedPages(t *testing.T) {
	page := int(pageSize)
	values, used, size := 8*page, 40*page, 64*page
	f := create(t, openTestDir(t, t.TempDir()), "app", 8192)
	defer f.Close(true)
	require.NoError(t, f.Replace(int64(size), int64(used), int64(values), 0, fillHead, func(_, _ []byte) {}, nil))
	pagemap, err := os.Open("/proc/self/pagemap")
	if err != nil {
		t.Skipf("no pagemap: %v", err)
	}
	defer pagemap.Close()
	present := func(off int) bool {
		var e [8]byte
		addr := uintptr(f.Base()) + uintptr(off)
		_, err := pagemap.ReadAt(e[:], int64(addr/uintptr(page))*8)
		require.NoError(t, err)
		return binary.LittleEndian.Uint64(e[:])>>63 == 1
	}
	var before, mapped, room int
	for off := 0; off < values; off += page {
		if present(off) {
			before++
		}
	}
	for off := values; off < used; off += page { // nothing but populate writes them
		if present(off) {
			mapped++
		}
	}
	for off := used; off < size; off += page {
		if present(off) {
			room++
		}
	}
	if mapped == 0 {
		b, err := unix.Mmap(-1, 0, page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		require.NoError(t, err)
		defer unix.Munmap(b)
		if err := unix.Madvise(b, unix.MADV_POPULATE_WRITE); err != nil {
			t.Skipf("the kernel has no MADV_POPULATE_WRITE: %v", err)
		}
	}
	assert.Equal(t, (used-values)/page, mapped, "pages of the values in use mapped")
	assert.Zero(t, room, "pages of the room mapped")
	assert.Zero(t, before, "pages before the values mapped")
}

// TestValuesPagesOwnTheirFolios: the pages of a file's values section,
// which the registry writes through the mapping, share no page-cache
// folio with the pages around them, in a file Create writes (values in its
// middle) and one Replace writes (values last). A page written through a
// shared mapping faults once, and the file system's fault handler (ext4's,
// block_page_mkwrite) walks its whole folio: one pwrite of a 3.5 MB file
// left its values in a 1 MB folio, and populating its 78 pages of values
// took 0.36 ms, a fifth of a growth step (compare/BenchmarkGrowthStep),
// against 23 µs with the values written on their own. A folio is read off
// /proc/self/kpageflags: a page that is a compound page's tail shares its
// folio with the page before it. Without the right to read page frames
// (CAP_SYS_ADMIN), the test skips; a kernel caching files in single pages
// passes it.
func TestValuesPagesOwnTheirFolios(t *testing.T) {
	page := int64(pageSize)
	values, end, used, size := 700*page, 780*page, 800*page, 900*page
	d := openTestDir(t, t.TempDir())
	pagemap, err := os.Open("/proc/self/pagemap")
	if err != nil {
		t.Skipf("no pagemap: %v", err)
	}
	defer pagemap.Close()
	kpageflags, err := os.Open("/proc/kpageflags")
	if err != nil {
		t.Skipf("no kpageflags: %v", err)
	}
	defer kpageflags.Close()
	var sink byte
	// tail tells whether the page at off of f's mapping, read to map it,
	// is in the folio of the page before it.
	tail := func(f *File, off int64) bool {
		sink += *(*byte)(unsafe.Add(f.Base(), off))
		var e [8]byte
		_, err := pagemap.ReadAt(e[:], int64(uintptr(f.Base())+uintptr(off))/page*8)
		require.NoError(t, err)
		entry := binary.LittleEndian.Uint64(e[:])
		require.Equal(t, uint64(1), entry>>63, "page at %d not mapped", off)
		pfn := entry & (1<<55 - 1)
		if pfn == 0 {
			t.Skip("page frames hidden: needs CAP_SYS_ADMIN")
		}
		_, err = kpageflags.ReadAt(e[:], int64(pfn)*8)
		require.NoError(t, err)
		const compoundTail = 1 << 16
		return binary.LittleEndian.Uint64(e[:])&compoundTail != 0
	}

	f, err := Create(d, "first", size, values, end, fillHead)
	require.NoError(t, err)
	defer f.Close(true)
	assert.False(t, tail(f, values), "the first page of the values shares a folio with the page before it")
	assert.False(t, tail(f, end), "the page after the values shares a folio with their last")

	g := create(t, d, "grown", 8192)
	defer g.Close(true)
	require.NoError(t, g.Replace(size, used, values, 0, fillHead, func(_, _ []byte) {}, nil))
	assert.False(t, tail(g, values), "the first page of the values shares a folio with the page before it")
}
