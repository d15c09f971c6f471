//go:build !mmv_noport

package osfile

import (
	"errors"

	"golang.org/x/sys/unix"
)

// reserveFlags map the reserved range (FreeBSD has no MAP_NORESERVE: an
// inaccessible anonymous range costs no swap there).
const reserveFlags = unix.MAP_PRIVATE | unix.MAP_ANONYMOUS

// notAFile tells whether opening a name without following it failed for
// what is there: a symlink (EMLINK, FreeBSD's answer to O_NOFOLLOW), a
// socket (EOPNOTSUPP).
func notAFile(err error) bool {
	return errors.Is(err, unix.EMLINK) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EOPNOTSUPP)
}

// renameNoReplace renames from to to in d unless to exists (EEXIST): by a
// link and an unlink, FreeBSD's rename having no way to refuse a taken name.
func (d *Dir) renameNoReplace(from, to string) error { return d.linkRename(from, to) }

// allocate gives the file its blocks by writing zeros (golang.org/x/sys
// offers no posix_fallocate on FreeBSD).
func allocate(fd int, size int64) error { return writeZeros(fd, size) }

// populate does nothing here: the pages of a mapping fault at their first
// write (Linux maps them at once, see sys_linux.go).
func populate([]byte) {}
