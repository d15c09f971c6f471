//go:build linux && !mmv_noport

package osfile

import (
	"encoding/binary"
	"os"
	"testing"

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
