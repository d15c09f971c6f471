package mmv

import (
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// A started file's name belongs to one registry, in this process or any
// other: the owner holds an exclusive flock on the file at the name. A file
// is locked while still a temporary, before the rename that puts it at the
// name, so the file at a name is locked from the moment it appears, and only
// the holder of that lock renames another file over it. PCP's reader never
// locks. The kernel drops the lock with the last descriptor of its holder,
// so a killed writer frees its name at once; its file is replaced by the
// next owner's.

// lockAttempts bounds the retries when the file at the name changes under
// us, or its lock is held. A held lock may be about to go: the next owner
// of a dead writer's file renames its own over it at once, and a child the
// holder forked keeps the lock (its descriptors are close-on-exec, not
// closed at fork) until it execs, even after the holder's Close. So a held
// lock is tried again for about lockAttempts milliseconds before ErrInUse.
const lockAttempts = 100

// lockHeldHook, when not nil, is called each time acquire finds the lock
// held, before it tries again: tests set it to free the lock at that
// moment (TestRestartWhileAChildHoldsTheLock).
var lockHeldHook func()

// acquire locks the file at name in d for a new owner, who then renames its
// own file over it (see file.commit). It returns the descriptor holding the
// lock, or -1 when no file is at the name; it fails with ErrInUse, naming
// the holder's pid, when another registry holds the name.
func (d *dir) acquire(name string) (int, error) {
	holder := 0
	for range lockAttempts {
		// Read-only, so a file made by another user can be locked too;
		// non-blocking, so a FIFO planted there cannot hang the open.
		fd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		switch {
		case errors.Is(err, unix.ENOENT):
			return -1, nil
		case errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENXIO): // a symlink, a socket
			if err := d.clearName(name); err != nil {
				return -1, err
			}
			continue
		case err != nil:
			return -1, &os.PathError{Op: "open", Path: d.join(name), Err: err}
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return -1, &os.PathError{Op: "stat", Path: d.join(name), Err: err}
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			unix.Close(fd)
			if err := d.clearName(name); err != nil {
				return -1, err
			}
			continue
		}
		err = unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			// The holder before us may have replaced or removed the file
			// between our open and our flock: the lock is only ours if the
			// name is still the file we locked.
			if d.sameFile(name, fd) {
				return fd, nil
			}
			unix.Close(fd)
			continue
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			unix.Close(fd)
			return -1, &os.PathError{Op: "lock", Path: d.join(name), Err: err}
		}
		holder = writerPid(fd)
		unix.Close(fd)
		if holder != 0 && processGone(holder) {
			holder = 0 // a dead writer's file: the lock is its next owner's
		}
		if lockHeldHook != nil {
			lockHeldHook()
		}
		time.Sleep(time.Millisecond)
	}
	subject := "file " + quote(d.join(name))
	if holder == 0 {
		return -1, errorf(ErrInUse, subject, "another registry holds it, in a process whose pid is not visible here")
	}
	return -1, errorf(ErrInUse, subject, "a registry in pid %d holds it", holder)
}

// processGone reports whether no process has that pid: for a Process
// file's writer, what PCP's reader decides from /proc/<pid>.
func processGone(pid int) bool { return errors.Is(unix.Kill(pid, 0), unix.ESRCH) }

// claimWait bounds how long lockClaims waits for another registry to
// finish making its file: seconds for a file of millions of values. Tests
// shorten it.
var claimWait = 10 * time.Second

// lockClaims takes the directory's lock, an exclusive flock on the
// directory itself, which every registry holds while it makes a file:
// from the scan of the directory's files that chooses the file's cluster
// (claimCluster) until the file is at its name. Each registry opens the
// directory for itself, so the lock keeps apart the registries of one
// process as well as those of others. It returns the function that lets
// the lock go; it fails with ErrInUse when another registry holds the lock
// for longer than claimWait.
func (d *dir) lockClaims() (unlock func(), err error) {
	deadline := time.Now().Add(claimWait)
	for wait := 100 * time.Microsecond; ; wait = min(2*wait, 10*time.Millisecond) {
		err := unix.Flock(d.fd, unix.LOCK_EX|unix.LOCK_NB)
		switch {
		case err == nil:
			return func() { unix.Flock(d.fd, unix.LOCK_UN) }, nil
		case !errors.Is(err, unix.EWOULDBLOCK):
			return nil, &os.PathError{Op: "lock", Path: d.path, Err: err}
		case time.Now().After(deadline):
			return nil, errorf(ErrInUse, "directory "+quote(d.path), "another registry has held its lock for %v, making a file", claimWait)
		}
		time.Sleep(wait)
	}
}

// writerPid returns the pid in the MMV header of the file open as fd, 0
// when it has none: the registry that wrote the file, which holds its lock.
func writerPid(fd int) int {
	var h [headerSize]byte
	if n, _ := unix.Pread(fd, h[:], 0); n != headerSize || string(h[:len(Magic)]) != Magic {
		return 0
	}
	return max(int(int32(ne.Uint32(h[hdrPidOff:]))), 0)
}

// clearName removes what is at name in d when no registry can have put it
// there (a symlink, a FIFO, a socket, a device), for a file of ours to take
// its place; it refuses a directory. The caller holds the directory's lock
// (lockClaims), as every registry making a file does, so that of two
// registries finding the same debris only one removes it: the other might
// remove the first one's file, renamed into place since.
func (d *dir) clearName(name string) error {
	var st unix.Stat_t
	switch err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case errors.Is(err, unix.ENOENT):
		return nil
	case err != nil:
		return &os.PathError{Op: "stat", Path: d.join(name), Err: err}
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG: // a file renamed into place since: look again
		return nil
	case unix.S_IFDIR:
		return &os.PathError{Op: "replace", Path: d.join(name), Err: unix.EISDIR}
	}
	if err := unix.Unlinkat(d.fd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return &os.PathError{Op: "remove", Path: d.join(name), Err: err}
	}
	return nil
}

// renameNoReplace renames from to to in d unless to exists (EEXIST), with
// linkRename where the file system has no RENAME_NOREPLACE.
func (d *dir) renameNoReplace(from, to string) error {
	err := unix.Renameat2(d.fd, from, d.fd, to, unix.RENAME_NOREPLACE)
	if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOSYS) {
		return err
	}
	return d.linkRename(from, to)
}

// linkRename is renameNoReplace by a link, which fails with EEXIST when to
// exists, then the unlink of from.
func (d *dir) linkRename(from, to string) error {
	if err := unix.Linkat(d.fd, from, d.fd, to, 0); err != nil {
		return err
	}
	unix.Unlinkat(d.fd, from, 0)
	return nil
}
