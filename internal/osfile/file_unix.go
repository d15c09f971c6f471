//go:build (linux || darwin || freebsd) && !mmv_noport

package osfile

import (
	"errors"
	"io"
	"os"
	"slices"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gopcp/mmv/internal/reuse"
)

// File is a started registry's MMV file, mapped inside an address range
// reserved for it. Value handles point at the values section, whose address
// never changes: when the file grows, the new file is mapped over the old
// one so that its values land at the same addresses (see Replace). At
// Close the file's pages are replaced by anonymous memory, unmapped once
// no handle on them is reachable (see retire).
type File struct {
	dir    *Dir
	name   string // in dir
	path   string // absolute
	fd     int
	base   unsafe.Pointer // where the file's first byte is mapped
	size   int64
	values unsafe.Pointer // where the values section is mapped, for good
	resv   unsafe.Pointer // the reserved range
	// named is the descriptor of the file at the name, whose flock holds
	// the name (see acquire): fd, or the file replace could not rename
	// the new one over; -1 before the first rename.
	named int
	// closing counts the descriptors of replaced files being closed
	// (letGo), which Close waits for.
	closing sync.WaitGroup
	// tmp and head, from Prepare to Commit: the file's temporary name,
	// and its head as fill wrote it, which commit seals.
	tmp  string
	head []byte
}

// The reserved range: the file starts mapped in the middle, so that the
// sections before the values can grow down and the values up, up to half
// the range each. Reserving costs no memory.
const (
	reserveSize = 2 << 30
	reserveHalf = reserveSize / 2
)

// pageSize is the unit of mappings: a closed file's mapping covers its
// last page whole.
var pageSize = int64(os.Getpagesize())

// pageDown and pageUp round n down and up to a page boundary.
func pageDown(n int64) int64 { return n / pageSize * pageSize }
func pageUp(n int64) int64   { return pageDown(n + pageSize - 1) }

// Create takes the name in d (see acquire), removes the temporaries dead
// writers left of it and of its overflow files (see reclaim), writes a new file of the given size under a
// temporary name, maps it, and renames it to name; its values section is
// from valuesOff to valuesEnd. fill writes every byte but those the
// format's Seal writes, last, so a reader never takes a half-written file
// for a complete one. It is Prepare and Commit.
func Create(d *Dir, name string, size, valuesOff, valuesEnd int64, fill func(b []byte)) (*File, error) {
	f, err := Prepare(d, name, size, valuesOff, valuesEnd, fill)
	if err != nil {
		return nil, err
	}
	if err := f.Commit(); err != nil {
		f.Close(false)
		return nil, err
	}
	return f, nil
}

// Prepare is Create but the rename: the file is written and mapped under
// its temporary name, the name taken but its file, if any, untouched,
// until Commit renames it into place; Close before Commit removes it. A
// registry making several files prepares them all before it commits one,
// so that one it cannot make leaves every name as it was: a Start that
// failed at its second file had renamed its first over the last run's,
// then removed it, and the PMIDs PCP's clients held vanished and came
// back at the next Start, which crashes pmcd (mmv's
// TestFailedStartKeepsFile).
func Prepare(d *Dir, name string, size, valuesOff, valuesEnd int64, fill func(b []byte)) (*File, error) {
	if size > reserveHalf {
		return nil, &TooLargeError{Name: name, Size: size, Limit: reserveHalf}
	}
	named, err := d.acquire(name)
	if err != nil {
		return nil, err
	}
	d.reclaim(name)
	b := getScratch(size)
	defer putScratch(b)
	fd, tmp, err := writeTemp(d, name, size, b, valuesOff, valuesEnd, fill)
	if err != nil {
		closeNamed(named)
		return nil, err
	}
	f := &File{dir: d, name: name, path: d.Join(name), fd: fd, size: size, named: named, tmp: tmp, head: slices.Clone(b[:d.format.HeadSize])}
	fail := func(err error) (*File, error) {
		unix.Close(fd)
		unix.Unlinkat(d.fd, tmp, 0)
		closeNamed(f.named)
		return nil, err
	}
	f.resv, err = unix.MmapPtr(-1, 0, nil, reserveSize, unix.PROT_NONE, reserveFlags)
	if err != nil {
		return fail(&os.PathError{Op: "mmap", Path: d.Join(tmp), Err: err})
	}
	f.base = unsafe.Add(f.resv, reserveHalf)
	f.values = unsafe.Add(f.base, valuesOff)
	if _, err := unix.MmapPtr(fd, 0, f.base, uintptr(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_FIXED); err != nil {
		unix.MunmapPtr(f.resv, reserveSize)
		return fail(&os.PathError{Op: "mmap", Path: d.Join(tmp), Err: err})
	}
	return f, nil
}

// Commit renames the file Prepare made into place. On failure the file
// stays prepared, for Close to remove.
func (f *File) Commit() error {
	if err := f.commit(f.tmp, f.head); err != nil {
		return err
	}
	f.tmp, f.head = "", nil
	return nil
}

// writeTemp writes a new file of size bytes under a temporary name of name
// in d, locked (see createTemp): fill fills b, the file's first bytes,
// zeroed, in memory, and pwrites write them; the rest reads as zeros, its
// blocks allocated but never written. Writing through a mapping instead
// would cost a page fault per page. The pages of the values section, from
// valuesOff to valuesEnd, are written by a pwrite of their own, so that
// the page cache holds them in folios of their own: the first write to a
// page through a shared mapping faults, and the file system's handler
// (ext4's, block_page_mkwrite) walks the page's whole folio. One pwrite of
// a 3.5 MB file left 70 of its 78 pages of values in a folio of 1 MB, and
// mapping them writable (populate) took 0.36 ms, a fifth of a growth step;
// 23 µs written apart (mmv's TestValuesOwnTheirFolios). It returns the
// descriptor and the temporary's name.
func writeTemp(d *Dir, name string, size int64, b []byte, valuesOff, valuesEnd int64, fill func(b []byte)) (int, string, error) {
	fd, tmp, err := createTemp(d, name, size)
	if err != nil {
		return -1, "", err
	}
	fill(b)
	n := int64(len(b))
	lo, hi := min(pageDown(valuesOff), n), min(pageUp(valuesEnd), n)
	for _, at := range [][2]int64{{0, lo}, {lo, hi}, {hi, n}} {
		if err := pwriteAt(fd, b[at[0]:at[1]], at[0]); err != nil {
			unix.Close(fd)
			unix.Unlinkat(d.fd, tmp, 0)
			return -1, "", &os.PathError{Op: "write", Path: d.Join(tmp), Err: err}
		}
	}
	return fd, tmp, nil
}

// scratch holds the buffer files are written from (see writeTemp), for
// the next file written, so that a growth step allocates nothing in
// proportion to the file: it costs as much memory as the largest file
// written lately, until it is let go, at the second collection after its
// last use. One for the process (reuse.Slot), not one per processor as a
// sync.Pool's, with which 29 of 300 Starts in a row on two cores made one
// anew.
var scratch reuse.Slot[[]byte]

// getScratch returns a zeroed buffer of n bytes, from scratch when it holds
// one big enough.
func getScratch(n int64) []byte {
	if b, _ := scratch.Get(); int64(cap(b)) >= n {
		s := b[:n]
		clear(s)
		return s
	}
	return make([]byte, n)
}

// putScratch keeps b for the next file written.
func putScratch(b []byte) { scratch.Put(b) }

// commit seals the file at tmp, whose first bytes fill wrote as b (its
// head, at least), and renames it, in the directory, into place: over the
// file at the name, whose lock f.named holds, or, when there was none,
// only where there is still none; a file another registry put at the
// name meanwhile is acquired first (and refused when held). The lock of
// the file replaced is then let go: the file's own holds the name.
func (f *File) commit(tmp string, b []byte) error {
	if seal := f.dir.format.Seal; seal != nil {
		head := b[:f.dir.format.HeadSize]
		seal(head)
		// Written, not stored through the mapping: the first store into a
		// page of a new shared mapping is a write fault, 15 µs on ext4
		// here against 2 for this pwrite (two thirds of commit's time).
		if err := pwriteAt(f.fd, head, 0); err != nil {
			return &os.PathError{Op: "write", Path: f.dir.Join(tmp), Err: err}
		}
	}
	// The file locked may be no longer at the name: removed, or another
	// renamed over it (an operator, a second registry that then took the
	// name): the name is taken as at Create, the file there acquired
	// first, not renamed over blind, which took a live registry's file
	// from it with no error on either side.
	f.forgetMoved()
	var err error = unix.EEXIST
	for range lockAttempts {
		if f.named >= 0 {
			if err = f.noSmallerThan(f.named); err == nil {
				err = unix.Renameat(f.dir.fd, tmp, f.dir.fd, f.name)
			}
			break
		}
		if err = f.dir.renameNoReplace(tmp, f.name); !errors.Is(err, unix.EEXIST) {
			break
		}
		var aerr error
		if f.named, aerr = f.dir.acquire(f.name); aerr != nil {
			return aerr
		}
	}
	if err != nil {
		return &os.PathError{Op: "rename", Path: f.path, Err: err}
	}
	if f.named != f.fd {
		f.letGo(f.named)
	}
	f.named = f.fd
	return nil
}

// forgetMoved lets go of the file f locked at its name once that file is
// no longer there.
func (f *File) forgetMoved() {
	if f.named >= 0 && !f.dir.sameFile(f.name, f.named) {
		f.letGo(f.named)
		f.named = -1
	}
}

// Hold makes the file at the name, if any, the one f holds, acquiring a
// file put there since Prepare (refused when held), as Commit would: a
// check of every name before any is renamed into place, so that a Start
// meeting another owner at its second file's name fails before its first
// file is in place (a file renamed into place, then removed, makes its
// PMIDs vanish and come back at the next attempt, which crashes pmcd).
func (f *File) Hold() error {
	f.forgetMoved()
	if f.named >= 0 {
		return nil
	}
	named, err := f.dir.acquire(f.name)
	f.named = named
	return err
}

// noSmallerThan extends the file, before it is renamed over the file
// open as fd, to that file's size when it is larger: PCP's reader stats a
// file, then opens it and maps it at the size it read, and a smaller file
// renamed over the name between the two (a registry's next run with fewer
// metrics before Start) had it read past the end of its mapping, which
// crashed pmcd (mmv's TestRestartSmallerFileKeepsPMCD). The tail reads as
// zeros, holes on disk, and nothing points into it. A grown file is never
// smaller than the file it replaces (Replace).
func (f *File) noSmallerThan(fd int) error {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Size <= f.size {
		return nil
	}
	if err := unix.Ftruncate(f.fd, st.Size); err != nil {
		return &os.PathError{Op: "truncate", Path: f.path, Err: err}
	}
	return nil
}

// AtName reports whether the file is at its name in its directory: an
// operator may have removed it, or renamed another over it, which PCP
// then reads instead. Not while Replace runs.
func (f *File) AtName() bool { return f.named >= 0 && f.dir.sameFile(f.name, f.named) }

// letGo closes fd, our descriptor of a file the rename replaced, if any,
// on a goroutine of its own: closeNamed off the caller's path. That
// close is the unlinked file's last reference unless PCP's reader still
// maps it: the kernel frees its page cache there, and on a file system
// mounted with discard waits for the device. In Create, it made a Start
// over the 11 MB file a program's last run left 4.3-5x a Start over none
// (BenchmarkStartOverLastRun); 1.2-1.3x off its path.
func (f *File) letGo(fd int) {
	if fd >= 0 {
		f.closing.Go(func() { unix.Close(fd) })
	}
}

// closeNamed closes the descriptor of a file acquire locked, if any
// (unlockClose).
func closeNamed(fd int) {
	if fd >= 0 {
		unlockClose(fd)
	}
}

// Replace swaps the file for a grown one of the given size whose values
// section is at valuesOff. fill writes the new file's first used bytes
// (into memory, written to the file at once; zeros follow) but those Seal
// writes; the new file is then mapped so its values take the old ones'
// addresses, the old file's last values are read back, and merge gets the
// first live bytes of both values sections, as fill wrote the new one and
// as the old one ended, to carry over updates made while fill ran. Only
// then is the new file renamed into place, and the pages of its values
// in use mapped writable at once where the system can (populate). hook,
// when not nil, is called at each Step.
func (f *File) Replace(size, used, valuesOff int64, live int, fill func(b []byte), merge func(written, final []byte), hook func(Step)) error {
	newBase := unsafe.Add(f.values, -valuesOff)
	if uintptr(newBase) < uintptr(f.resv) || uintptr(unsafe.Add(newBase, size)) > uintptr(f.resv)+reserveSize ||
		uintptr(newBase) > uintptr(f.base) || uintptr(unsafe.Add(newBase, size)) < uintptr(unsafe.Add(f.base, f.size)) {
		return &TooLargeError{Name: f.name, Size: size, Limit: reserveHalf}
	}
	// The old file's final values after the new file's bytes, in one buffer.
	buf := getScratch(used + int64(live))
	defer putScratch(buf)
	b, final := buf[:used], buf[used:]
	fd, tmp, err := writeTemp(f.dir, f.name, size, b, valuesOff, used, fill)
	if err != nil {
		return err
	}
	if hook != nil {
		hook(Written)
	}
	// The new mapping covers the old one whole, so from here on every
	// update lands in the new file.
	if _, err := unix.MmapPtr(fd, 0, newBase, uintptr(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_FIXED); err != nil {
		unix.Close(fd)
		unix.Unlinkat(f.dir.fd, tmp, 0)
		return &os.PathError{Op: "mmap", Path: f.dir.Join(tmp), Err: err}
	}
	if hook != nil {
		hook(Remapped)
	}
	oldValuesOff := int64(uintptr(f.values) - uintptr(f.base))
	if _, err := unix.Pread(f.fd, final, oldValuesOff); err != nil {
		// The old file is ours and open: this does not happen. Its updates
		// since fill are lost, but the new file is whole.
		clear(final)
	}
	if f.fd != f.named {
		unix.Close(f.fd) // a file whose rename failed: not at the name
	}
	f.fd, f.base, f.size = fd, newBase, size
	merge(b[valuesOff:valuesOff+int64(live)], final)
	if err := f.commit(tmp, b); err != nil {
		// The old file stays at the name, and f.named keeps its lock.
		unix.Unlinkat(f.dir.fd, tmp, 0)
		return err
	}
	// The new mapping has no page mapped: each one's first write, by the
	// registry binding values a chunk at a time with its lock held, faulted
	// (most of a chunk's 0.1-1.5 ms at 100,000 values). The values' pages
	// in use are mapped now, by the caller that holds no lock; those of the
	// room after them stay unwritten until a value takes them (MapWritable),
	// and those before them, written once, are PCP's to read.
	f.MapWritable(valuesOff, used)
	return nil
}

// MapWritable maps the pages of the file's bytes from off to end writable
// at once where the system can (populate), so that the first write to
// each, which faults on a new mapping, is paid by a caller that holds no
// lock: a growth step's for the values in use it wrote, the registry's for
// those that took the room while it wrote.
func (f *File) MapWritable(off, end int64) {
	off = pageDown(off)
	if end = min(end, f.size); off < end {
		populate(unsafe.Slice((*byte)(unsafe.Add(f.base, off)), end-off))
	}
}

// pwriteAt writes b at offset at of the file fd.
func pwriteAt(fd int, b []byte, at int64) error {
	for off := 0; off < len(b); {
		n, err := unix.Pwrite(fd, b[off:], at+int64(off))
		if err != nil {
			return err
		}
		if n == 0 {
			return io.ErrShortWrite
		}
		off += n
	}
	return nil
}

// Bytes returns the mapped file.
func (f *File) Bytes() []byte { return unsafe.Slice((*byte)(f.base), f.size) }

// Base returns where the file's first byte is mapped now: it moves when
// the file grows.
func (f *File) Base() unsafe.Pointer { return f.base }

// Values returns the address of the values section, the same for the
// file's whole life.
func (f *File) Values() unsafe.Pointer { return f.values }

// ValuesOffset returns the offset of the values section in the file now.
func (f *File) ValuesOffset() int64 { return int64(uintptr(f.values) - uintptr(f.base)) }

// Path returns the file's absolute path.
func (f *File) Path() string { return f.path }

// Close swaps the file's pages for anonymous memory, so that updates still
// in flight land harmlessly, however late (see retire), releases the rest
// of the reserved range at once, removes the file if asked and if it is
// still ours (a file prepared and never committed: its temporary, the
// name's file left as it was), and gives up the name: in that order, so
// that no one locks a file about to lose its name.
func (f *File) Close(remove bool) error { return f.close(remove, "") }

// CloseAs is Close that renames the file, if it is still at its name and
// ours, to as in its directory (ClosedName: PCP's reader ignores it),
// over whatever file is there, instead of removing it: the record of the
// file's last contents, for the next owner of the name to read. When the
// rename fails, the file is removed, and the error says why.
func (f *File) CloseAs(as string) error { return f.close(true, as) }

func (f *File) close(remove bool, as string) error {
	mapped := pageUp(f.size)
	_, err := unix.MmapPtr(-1, 0, f.base, uintptr(mapped), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED)
	if err != nil {
		// The file stays mapped, and takes the late updates, for good.
		err = &os.PathError{Op: "mmap", Path: f.path, Err: err}
	} else {
		if lo := uintptr(f.base) - uintptr(f.resv); lo > 0 {
			unix.MunmapPtr(f.resv, lo)
		}
		if hi := uintptr(f.resv) + reserveSize - uintptr(f.base) - uintptr(mapped); hi > 0 {
			unix.MunmapPtr(unsafe.Add(f.base, mapped), hi)
		}
		retire(f, f.base, uintptr(mapped))
	}
	switch {
	case f.tmp != "": // prepared, never committed: the file at the name is not ours
		unix.Unlinkat(f.dir.fd, f.tmp, 0)
	case remove && f.dir.sameFile(f.name, f.named):
		_, e := f.dir.takeAway(f.name, as)
		err = errors.Join(err, e)
	}
	if f.fd != f.named {
		unlockClose(f.fd)
	}
	closeNamed(f.named)
	f.closing.Wait()
	return err
}
