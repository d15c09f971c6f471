//go:build linux

package mmv

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// file is a started registry's MMV file, mapped at the start of an address
// range reserved for it. Handles point into that range, and the range stays
// mapped for the life of the process, so a handle can never fault: after
// Close the file's pages are replaced by anonymous memory.
type file struct {
	path string
	fd   int
	base unsafe.Pointer
	size int64
}

// reserveSize is the address space reserved for one file: the most it can
// grow to. Reserving costs no memory.
const reserveSize = 1 << 30

// createFile writes a file of the given size under a temporary name in
// dir, fills it, and renames it to name. fill writes every byte but gen2,
// which createFile copies from gen1 last so a reader never takes a
// half-written file for a complete one.
func createFile(dir, name string, size int64, fill func(b []byte)) (*file, error) {
	if size > reserveSize {
		return nil, errorf(ErrTooMany, "file "+quote(name), "%d bytes, more than the %d a file may hold", size, reserveSize)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, dirError(dir, err)
	}
	fd, tmp, err := createTemp(dir, name)
	if err != nil {
		return nil, err
	}
	f := &file{path: filepath.Join(dir, name), fd: fd}
	fail := func(err error) (*file, error) {
		if f.base != nil {
			unix.MunmapPtr(f.base, reserveSize)
		}
		unix.Close(fd)
		unix.Unlink(tmp)
		return nil, err
	}
	// Mode 0644 whatever the umask, without changing the process's umask.
	if err := unix.Fchmod(fd, 0o644); err != nil {
		return fail(&os.PathError{Op: "chmod", Path: tmp, Err: err})
	}
	// Allocate every block now: a store into a mapped page that the file
	// system cannot back kills the process with SIGBUS.
	if err := allocate(fd, size); err != nil {
		return fail(&os.PathError{Op: "allocate", Path: tmp, Err: err})
	}
	base, err := unix.MmapPtr(-1, 0, nil, reserveSize, unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return fail(&os.PathError{Op: "mmap", Path: tmp, Err: err})
	}
	f.base = base
	if _, err := unix.MmapPtr(fd, 0, base, uintptr(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_FIXED); err != nil {
		return fail(&os.PathError{Op: "mmap", Path: tmp, Err: err})
	}
	f.size = size
	b := f.bytes()
	fill(b)
	atomic.StoreUint64((*uint64)(unsafe.Add(base, hdrGen2Off)), ne.Uint64(b[hdrGen1Off:]))
	if err := unix.Rename(tmp, f.path); err != nil {
		return fail(&os.PathError{Op: "rename", Path: f.path, Err: err})
	}
	return f, nil
}

// createTemp creates dir/.name.RANDOM exclusively, refusing to follow a
// link, so nothing planted in the directory can redirect the write.
func createTemp(dir, name string) (int, string, error) {
	for range 10 {
		var rnd [6]byte
		rand.Read(rnd[:])
		tmp := filepath.Join(dir, "."+name+"."+hex.EncodeToString(rnd[:]))
		fd, err := unix.Open(tmp, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
		if err == nil {
			return fd, tmp, nil
		}
		if !errors.Is(err, unix.EEXIST) {
			return -1, "", dirError(dir, &os.PathError{Op: "create", Path: tmp, Err: err})
		}
	}
	return -1, "", &os.PathError{Op: "create", Path: dir, Err: unix.EEXIST}
}

// allocate reserves the file's blocks, writing zeros where the file system
// has no fallocate.
func allocate(fd int, size int64) error {
	err := unix.Fallocate(fd, 0, 0, size)
	if !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.ENOSYS) {
		return err
	}
	zeros := make([]byte, 64<<10)
	for off := int64(0); off < size; off += int64(len(zeros)) {
		n := min(int64(len(zeros)), size-off)
		if _, err := unix.Pwrite(fd, zeros[:n], off); err != nil {
			return err
		}
	}
	return nil
}

// dirError explains a directory the process cannot write to.
func dirError(dir string, err error) error {
	if errors.Is(err, os.ErrPermission) {
		return errorf(os.ErrPermission, "directory "+quote(dir),
			"cannot write there: run as a member of PCP's group (pcp), or set PCP_TMP_DIR to a directory the process owns (%v)", err)
	}
	return err
}

func (f *file) bytes() []byte { return unsafe.Slice((*byte)(f.base), f.size) }

// close swaps the file's pages for anonymous memory, so that updates still
// in flight land harmlessly, and removes the file if asked and if it is
// still ours.
func (f *file) close(remove bool) error {
	_, err := unix.MmapPtr(-1, 0, f.base, uintptr(f.size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED)
	if err != nil {
		return &os.PathError{Op: "mmap", Path: f.path, Err: err}
	}
	if tail := pageRound(f.size); tail < reserveSize {
		unix.MunmapPtr(unsafe.Add(f.base, tail), uintptr(reserveSize-tail))
	}
	if remove {
		var ours, now unix.Stat_t
		if unix.Fstat(f.fd, &ours) == nil && unix.Stat(f.path, &now) == nil && ours.Dev == now.Dev && ours.Ino == now.Ino {
			if err := unix.Unlink(f.path); err != nil {
				unix.Close(f.fd)
				return &os.PathError{Op: "remove", Path: f.path, Err: err}
			}
		}
	}
	return unix.Close(f.fd)
}

func pageRound(n int64) int64 {
	p := int64(os.Getpagesize())
	return (n + p - 1) / p * p
}
