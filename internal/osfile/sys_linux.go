//go:build !mmv_noport

package osfile

import (
	"errors"

	"golang.org/x/sys/unix"
)

// reserveFlags map the reserved range: no swap is set aside for it.
const reserveFlags = unix.MAP_PRIVATE | unix.MAP_ANONYMOUS | unix.MAP_NORESERVE

// notAFile tells whether opening a name without following it failed for
// what is there: a symlink (ELOOP), a socket (ENXIO).
func notAFile(err error) bool { return errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENXIO) }

// renameNoReplace renames from to to in d unless to exists (EEXIST), with
// linkRename where the file system has no RENAME_NOREPLACE.
func (d *Dir) renameNoReplace(from, to string) error {
	err := unix.Renameat2(d.fd, from, d.fd, to, unix.RENAME_NOREPLACE)
	if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOSYS) {
		return err
	}
	return d.linkRename(from, to)
}

// allocate reserves the file's blocks, writing zeros where the file system
// has no fallocate.
func allocate(fd int, size int64) error {
	err := unix.Fallocate(fd, 0, 0, size)
	if !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.ENOSYS) {
		return err
	}
	return writeZeros(fd, size)
}

// populate maps the pages of b, part of a file's shared mapping, writable
// at once (MADV_POPULATE_WRITE, Linux 5.14), without writing to them: the
// first write to each page faults no more, where it ran with the
// registry's lock held. A kernel without the advice refuses it, and the
// pages fault at their first write as they did before: nothing to report.
func populate(b []byte) { _ = unix.Madvise(b, unix.MADV_POPULATE_WRITE) }
