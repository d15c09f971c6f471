//go:build (linux || darwin || freebsd) && !mmv_noport

package osfile

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
// closed at fork) until it execs, when the holder died meanwhile (a Close
// lets go of it: unlockClose). So a held lock is tried again for about
// lockAttempts milliseconds before an InUseError.
const lockAttempts = 100

// unlockClose lets go of the lock the descriptor fd holds, if any, and
// closes it. Closing alone lets it go only with the open file's last
// descriptor, and a child forked meanwhile holds one (until its exec
// closes it): after Close the next owner of the name, in this process or
// its successor, met the lock held by no registry, past lockAttempts
// under load (TestCloseFreesNameHeldByAChild).
func unlockClose(fd int) {
	unix.Flock(fd, unix.LOCK_UN)
	unix.Close(fd)
}

// acquire locks the file at name in d for a new owner, who then renames its
// own file over it (see file.commit). It returns the descriptor holding the
// lock, or -1 when no file is at the name; it fails with an *InUseError, naming
// the holder's pid, when another registry holds the name.
func (d *Dir) acquire(name string) (int, error) {
	holder := 0
	for range lockAttempts {
		// Read-only, so a file made by another user can be locked too;
		// non-blocking, so a FIFO planted there cannot hang the open.
		fd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		switch {
		case errors.Is(err, unix.ENOENT):
			return -1, nil
		case notAFile(err): // a symlink, a socket
			if err := d.clearName(name); err != nil {
				return -1, err
			}
			continue
		case err != nil:
			return -1, &os.PathError{Op: "open", Path: d.Join(name), Err: err}
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return -1, &os.PathError{Op: "stat", Path: d.Join(name), Err: err}
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
			unlockClose(fd)
			continue
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			unix.Close(fd)
			return -1, &os.PathError{Op: "lock", Path: d.Join(name), Err: err}
		}
		holder = d.owner(fd)
		unix.Close(fd)
		if holder != 0 && ProcessGone(holder) {
			holder = 0 // a dead writer's file: the lock is its next owner's
		}
		if LockHeldHook != nil {
			LockHeldHook()
		}
		time.Sleep(time.Millisecond)
	}
	return -1, &InUseError{Path: d.Join(name), Pid: holder}
}

// RewriteUnheld rewrites the regular file at name when no registry holds
// it (its lock is free, or its holder gone): rewrite gets its bytes, if it
// holds at most max, and returns what the file is to hold, renamed over it
// as a new file is, or nil to remove it, or b itself to leave it. It
// reports whether it changed the file. The caller holds the directory's
// lock (LockClaims), as for clearName. A held name is tried for as long as
// acquire tries one.
func (d *Dir) RewriteUnheld(name string, max int64, rewrite func(b []byte) []byte) (bool, error) {
	return d.rewriteUnheld(name, "", max, rewrite)
}

// RewriteUnheldAs is RewriteUnheld whose removal renames the file to as
// in the directory (ClosedName), over whatever file is there, as CloseAs
// does: its record, which PCP's reader ignores. When the rename fails
// (a directory planted at as), the file is removed all the same, and the
// error says why.
func (d *Dir) RewriteUnheldAs(name, as string, max int64, rewrite func(b []byte) []byte) (bool, error) {
	return d.rewriteUnheld(name, as, max, rewrite)
}

// RewriteFrom makes a file at name from the regular file from (a closed
// record, ClosedName) when nothing is at name: rewrite gets from's bytes,
// if it holds at most max, and returns what the file at name is to hold,
// written and renamed into place as Create does (where there is still
// none, see commit), or nil or b itself to make none. from stays as it
// is. It reports whether it made the file. The caller holds the
// directory's lock (LockClaims).
func (d *Dir) RewriteFrom(name, from string, max int64, rewrite func(b []byte) []byte) (bool, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); !errors.Is(err, unix.ENOENT) {
		return false, nil // a file at name, its own to rewrite (RewriteUnheld), or what acquire refuses
	}
	fd, ok := d.openRegular(from)
	if !ok {
		return false, nil
	}
	b, ok := readAll(fd, max)
	unix.Close(fd)
	if !ok {
		return false, nil
	}
	return d.write(name, -1, b, rewrite(b))
}

// rewriteUnheld is RewriteUnheld, renaming the file to as, when not
// empty, where RewriteUnheld removes it.
func (d *Dir) rewriteUnheld(name, as string, max int64, rewrite func(b []byte) []byte) (bool, error) {
	// Only a regular file: acquire clears what no registry puts at a name
	// (a symlink, which PCP's reader follows, a FIFO) and refuses a
	// directory, which stay here.
	var st unix.Stat_t
	if err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return false, nil
	}
	fd, err := d.acquire(name)
	var held *InUseError
	switch {
	case errors.As(err, &held):
		return false, nil
	case err != nil:
		return false, err
	case fd < 0:
		return false, nil
	}
	b, ok := readAll(fd, max)
	if !ok {
		closeNamed(fd)
		return false, nil
	}
	nb := rewrite(b)
	if nb != nil {
		return d.write(name, fd, b, nb)
	}
	defer closeNamed(fd)
	return d.takeAway(name, as)
}

// readAll reads the whole regular file open as fd, if it holds at most
// max bytes.
func readAll(fd int, max int64) ([]byte, bool) {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Size > max {
		return nil, false
	}
	b := make([]byte, st.Size)
	n, _ := unix.Pread(fd, b, 0)
	return b, n == len(b)
}

// write puts nb at name, written and renamed over the file acquire
// locked as named (-1: none, renamed where there is still none), as a new
// file is (commit), the name held throughout, never mapped; nb nil, or b
// itself, the bytes the file was read from, leaves the name as it is. It
// reports whether it wrote the file.
func (d *Dir) write(name string, named int, b, nb []byte) (bool, error) {
	if nb == nil || len(nb) == len(b) && (len(b) == 0 || &nb[0] == &b[0]) {
		closeNamed(named)
		return false, nil
	}
	f := &File{dir: d, name: name, path: d.Join(name), size: int64(len(nb)), named: named}
	tfd, tmp, err := writeTemp(d, name, f.size, nb, 0, 0, func([]byte) {})
	if err != nil {
		closeNamed(named)
		return false, err
	}
	f.fd = tfd
	err = f.commit(tmp, nb)
	if err != nil {
		unix.Unlinkat(d.fd, tmp, 0)
		closeNamed(f.named)
	}
	unlockClose(tfd)
	f.closing.Wait()
	return err == nil, err
}

// ProcessGone reports whether no process has that pid, the pid a file's
// header names (or a temporary's name): for a Process file's writer, what
// PCP's reader decides from /proc/<pid>. Where this process cannot tell
// (its /proc is not PCP's, processGone), the writer counts as alive: its
// file keeps its cluster and its names, and is never rewritten. It costs
// a system call or two, for it runs per file at Start and at every
// namespace check.
func ProcessGone(pid int) bool { return processGone(pid) }

// LockClaims takes the directory's lock, an exclusive flock on the
// directory itself, which every registry holds while it makes a file:
// from the scan of the directory's files that chooses the file's cluster
// (mmv's claimCluster) until the file is at its name. Each registry opens
// the directory for itself, so the lock keeps apart the registries of one
// process as well as those of others. It returns the function that lets
// the lock go; it fails with an *InUseError when another registry holds
// the lock for longer than wait.
func (d *Dir) LockClaims(wait time.Duration) (unlock func(), err error) {
	start := time.Now()
	for pause := 100 * time.Microsecond; ; pause = min(2*pause, 10*time.Millisecond) {
		err := unix.Flock(d.fd, unix.LOCK_EX|unix.LOCK_NB)
		switch {
		case err == nil:
			return func() { unix.Flock(d.fd, unix.LOCK_UN) }, nil
		case !errors.Is(err, unix.EWOULDBLOCK):
			return nil, &os.PathError{Op: "lock", Path: d.path, Err: err}
		case time.Since(start) > wait: // the wait, not the last pause, which the error named (10 ms)
			return nil, &InUseError{Path: d.path, Dir: true, Waited: time.Since(start).Round(time.Millisecond)}
		}
		time.Sleep(pause)
	}
}

// owner returns the pid the head of the file open as fd names (see
// Format.Owner), 0 when it names none: the registry that wrote the file,
// which holds its lock.
func (d *Dir) owner(fd int) int {
	h := make([]byte, d.format.HeadSize)
	if n, _ := unix.Pread(fd, h, 0); n != len(h) || d.format.Owner == nil {
		return 0
	}
	return max(d.format.Owner(h), 0)
}

// clearName removes what is at name in d when no registry can have put it
// there (a symlink, a FIFO, a socket, a device), for a file of ours to take
// its place; it refuses a directory. The caller holds the directory's lock
// (lockClaims), as every registry making a file does, so that of two
// registries finding the same debris only one removes it: the other might
// remove the first one's file, renamed into place since.
func (d *Dir) clearName(name string) error {
	var st unix.Stat_t
	switch err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case errors.Is(err, unix.ENOENT):
		return nil
	case err != nil:
		return &os.PathError{Op: "stat", Path: d.Join(name), Err: err}
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG: // a file renamed into place since: look again
		return nil
	case unix.S_IFDIR:
		return &os.PathError{Op: "replace", Path: d.Join(name), Err: unix.EISDIR}
	}
	if err := unix.Unlinkat(d.fd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return &os.PathError{Op: "remove", Path: d.Join(name), Err: err}
	}
	return nil
}

// linkRename renames from to to in d unless to exists, by a link, which fails with EEXIST when to
// exists, then the unlink of from.
func (d *Dir) linkRename(from, to string) error {
	if err := unix.Linkat(d.fd, from, d.fd, to, 0); err != nil {
		return err
	}
	unix.Unlinkat(d.fd, from, 0)
	return nil
}
