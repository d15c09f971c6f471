//go:build (linux || darwin || freebsd) && !mmv_noport

package osfile

import (
	"errors"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// Dir is the directory of a started registry's files, resolved once: its
// absolute path, for messages, and a descriptor every create, rename,
// unlink and stat goes through, so that neither a chdir nor the directory
// swapped for another (or for a symlink) after OpenDir moves the files
// elsewhere.
type Dir struct {
	path   string
	fd     int
	format Format
}

// OpenDir makes path absolute, creates it if missing, and opens it for
// files of the given format. A symlink at path itself is followed, as
// libpcp and PCP's reader follow it: only the directory's owner can point
// it elsewhere.
func OpenDir(path string, format Format) (*Dir, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, &os.PathError{Op: "resolve", Path: path, Err: err}
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, &os.PathError{Op: "create directory", Path: abs, Err: err}
	}
	fd, err := unix.Open(abs, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: abs, Err: err}
	}
	return &Dir{path: abs, fd: fd, format: format}, nil
}

// Replaced reports whether the directory at the path is no longer the one
// OpenDir opened (moved, removed, or a symlink at the path pointed
// elsewhere), where readers resolving the path, PCP's, no longer look. One
// stat of the path.
func (d *Dir) Replaced() bool {
	var held, now unix.Stat_t
	if unix.Fstat(d.fd, &held) != nil {
		return false
	}
	return unix.Stat(d.path, &now) != nil || held.Dev != now.Dev || held.Ino != now.Ino
}

// Path returns the directory's absolute path.
func (d *Dir) Path() string { return d.path }

// DirID is a directory's identity, whatever the path it is opened by (a
// symlink, a relative path): its device and inode.
type DirID struct{ Dev, Ino uint64 }

// ID returns the identity of the directory opened, false when it cannot
// be read.
func (d *Dir) ID() (DirID, bool) {
	var st unix.Stat_t
	if unix.Fstat(d.fd, &st) != nil {
		return DirID{}, false
	}
	return DirID{Dev: uint64(st.Dev), Ino: uint64(st.Ino)}, true
}

// Join returns the path of name in the directory, for messages.
func (d *Dir) Join(name string) string { return filepath.Join(d.path, name) }

// sameFile tells whether name in the directory is, without following a
// symlink, the file open as fd.
func (d *Dir) sameFile(name string, fd int) bool {
	var ours, now unix.Stat_t
	return unix.Fstat(fd, &ours) == nil && unix.Fstatat(d.fd, name, &now, unix.AT_SYMLINK_NOFOLLOW) == nil &&
		ours.Dev == now.Dev && ours.Ino == now.Ino
}

// List returns the names in the directory, or none when it cannot be
// read. It reads from a descriptor of its own, so that every listing
// starts at the beginning.
func (d *Dir) List() []string {
	fd, err := unix.Openat(d.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	f := os.NewFile(uintptr(fd), d.path)
	defer f.Close()
	names, _ := f.Readdirnames(-1)
	return names
}

// Stamp returns the directory's modification time, which every file
// made, renamed or removed in it changes, and whether it is settled: a
// clock tick older than now, so that a change from now on shows a new
// stamp. A file system stamps times from a clock that ticks every few
// milliseconds: a change in the tick of the last could leave the stamp
// as it was, and only what was read of the directory a tick after its
// stamp is known to hold every change the stamp stands for.
func (d *Dir) Stamp() (stamp int64, settled bool) {
	var st unix.Stat_t
	if unix.Fstat(d.fd, &st) != nil {
		return 0, false
	}
	stamp = st.Mtim.Nano()
	tick := stampTick
	if stamp%int64(time.Second) == 0 {
		tick = time.Second + stampTick // a file system of whole seconds (ext4's small inodes, HFS+, some NFS)
	}
	return stamp, time.Now().UnixNano()-stamp > tick.Nanoseconds()
}

// stampTick is more than the clock tick of a file system's times (1-10
// ms).
const stampTick = 20 * time.Millisecond

// ReadHead reads the start of the regular file name into b, without
// following a link or blocking on a FIFO, and returns how many bytes it
// read.
func (d *Dir) ReadHead(name string, b []byte) int {
	fd, ok := d.openRegular(name)
	if !ok {
		return 0
	}
	defer unix.Close(fd)
	n, _ := unix.Pread(fd, b, 0)
	return max(n, 0)
}

// OpenRead opens the regular file name for reading, as ReadHead does, or
// returns nil: for a caller that reads a few parts of it (ReadAt), each
// bounded by its buffer, not the whole file, and closes it.
func (d *Dir) OpenRead(name string) *os.File {
	fd, ok := d.openRegular(name)
	if !ok {
		return nil
	}
	return os.NewFile(uintptr(fd), d.Join(name))
}

// Held reports whether a registry holds the regular file name (its lock,
// see acquire), without waiting: a registry's own name is another's while
// one holds it.
func (d *Dir) Held(name string) bool {
	fd, ok := d.openRegular(name)
	if !ok {
		return false
	}
	defer unlockClose(fd) // its lock, when it took it
	return errors.Is(unix.Flock(fd, unix.LOCK_SH|unix.LOCK_NB), unix.EWOULDBLOCK)
}

// openRegular opens the regular file name read-only, without following a
// link or blocking on a FIFO.
func (d *Dir) openRegular(name string) (int, bool) {
	fd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, false
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return 0, false
	}
	return fd, true
}

// Remove removes the regular file name, if there is one.
func (d *Dir) Remove(name string) {
	if fd, ok := d.openRegular(name); ok {
		unix.Close(fd)
		unix.Unlinkat(d.fd, name, 0)
	}
}

// takeAway takes the file at name out of PCP's view: renamed to as in the
// directory when as is not empty (its closed record, ClosedName, over
// whatever file is there), removed when it is empty, or when the rename
// fails (a directory planted at as), the error then saying why. It
// reports whether the name is free of the file.
func (d *Dir) takeAway(name, as string) (bool, error) {
	var renameErr error
	if as != "" {
		e := unix.Renameat(d.fd, name, d.fd, as)
		if e == nil {
			return true, nil
		}
		renameErr = &os.LinkError{Op: "rename", Old: d.Join(name), New: d.Join(as), Err: e}
	}
	if e := unix.Unlinkat(d.fd, name, 0); e != nil && !errors.Is(e, unix.ENOENT) {
		return false, errors.Join(renameErr, &os.PathError{Op: "remove", Path: d.Join(name), Err: e})
	}
	return true, renameErr
}

// Close closes the directory's descriptor.
func (d *Dir) Close() { unix.Close(d.fd) }
