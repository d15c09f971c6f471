//go:build !mmv_noport

package osfile

import (
	"errors"

	"golang.org/x/sys/unix"
)

// reserveFlags map the reserved range: no swap is set aside for it.
const reserveFlags = unix.MAP_PRIVATE | unix.MAP_ANONYMOUS | unix.MAP_NORESERVE

// notAFile tells whether opening a name without following it failed for
// what is there: a symlink (ELOOP), a socket (EOPNOTSUPP).
func notAFile(err error) bool { return errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EOPNOTSUPP) }

// renameNoReplace renames from to to in d unless to exists (EEXIST):
// renameatx_np with RENAME_EXCL, or linkRename where the file system does
// not support it.
func (d *Dir) renameNoReplace(from, to string) error {
	err := unix.RenameatxNp(d.fd, from, d.fd, to, unix.RENAME_EXCL)
	if !errors.Is(err, unix.ENOTSUP) && !errors.Is(err, unix.EINVAL) {
		return err
	}
	return d.linkRename(from, to)
}

// allocate reserves the file's blocks (F_PREALLOCATE, which leaves the
// size as it is, then ftruncate), writing zeros where the file system
// cannot preallocate.
func allocate(fd int, size int64) error {
	st := unix.Fstore_t{Flags: unix.F_ALLOCATEALL, Posmode: unix.F_PEOFPOSMODE, Length: size}
	err := unix.FcntlFstore(uintptr(fd), unix.F_PREALLOCATE, &st)
	switch {
	case errors.Is(err, unix.ENOTSUP), errors.Is(err, unix.EINVAL):
		return writeZeros(fd, size)
	case err != nil:
		return err
	}
	return unix.Ftruncate(fd, size)
}

// populate does nothing here: the pages of a mapping fault at their first
// write (Linux maps them at once, see sys_linux.go).
func populate([]byte) {}
