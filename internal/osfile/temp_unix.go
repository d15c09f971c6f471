//go:build (linux || darwin || freebsd) && !mmv_noport

package osfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// createTemp creates a temporary of name in d exclusively, refusing to
// follow a link, so nothing planted in the directory can redirect the
// write, gives it its mode and its blocks, and locks it, for the name it
// will be renamed to (see acquire). It returns the temporary's name in d
// (see tempName). The lock tells a temporary being written from one its
// writer left (see abandoned).
func createTemp(d *Dir, name string, size int64) (int, string, error) {
	for range 10 {
		tmp := tempName(name, os.Getpid(), tempSuffix())
		fd, err := unix.Openat(d.fd, tmp, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return -1, "", &os.PathError{Op: "create", Path: d.Join(tmp), Err: err}
		}
		op := "chmod"
		// Mode 0644 whatever the umask, without changing the process's umask.
		if err = unix.Fchmod(fd, 0o644); err == nil {
			op, err = "lock", lockNew(fd)
		}
		if err == nil {
			// Allocate every block now: a store into a mapped page that
			// the file system cannot back kills the process with SIGBUS.
			op, err = "allocate", allocate(fd, size)
		}
		if err != nil {
			unix.Close(fd)
			unix.Unlinkat(d.fd, tmp, 0)
			return -1, "", &os.PathError{Op: op, Path: d.Join(tmp), Err: err}
		}
		return fd, tmp, nil
	}
	return -1, "", &os.PathError{Op: "create", Path: d.path, Err: unix.EEXIST}
}

// tempSuffix returns the random part of a temporary name; tests replace
// it to plant links at the names createTemp will try.
var tempSuffix = func() string {
	var rnd [TempRandom / 2]byte
	rand.Read(rnd[:])
	return hex.EncodeToString(rnd[:])
}

// lockNew takes the exclusive lock of the temporary just created as fd.
// Only one looking whether it is abandoned can hold it, for as long as it
// looks (reclaim, mmvdump -lint): it is tried for up to 50 ms.
func lockNew(fd int) error {
	for pause := 50 * time.Microsecond; ; pause *= 2 {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if !errors.Is(err, unix.EWOULDBLOCK) || pause > 25*time.Millisecond {
			return err
		}
		time.Sleep(pause)
	}
}

// writeZeros gives the file its blocks by writing zeros over its first
// size bytes.
func writeZeros(fd int, size int64) error {
	zeros := make([]byte, 64<<10)
	for off := int64(0); off < size; off += int64(len(zeros)) {
		n := min(int64(len(zeros)), size-off)
		if _, err := unix.Pwrite(fd, zeros[:n], off); err != nil {
			return err
		}
	}
	return nil
}

// abandoned reports whether the temporary open as fd is one its writer
// left: a regular file whose lock is free. Its writer holds the lock from
// just after its creation (createTemp) until it renames or removes it, and
// dies with it, SIGKILL included. No pid is compared: a writer in another
// PID namespace (a container's, pid 1 there) has a pid that means another
// process here, or none. It takes the lock, how (LOCK_SH or LOCK_EX),
// which the caller lets go (unlockClose), and returns the file's status.
func abandoned(fd, how int) (unix.Stat_t, bool) {
	var st unix.Stat_t
	ok := unix.Flock(fd, how|unix.LOCK_NB) == nil && unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG
	return st, ok
}

// openTemp opens a temporary to look at it: never through a link, never
// waiting on a FIFO.
const openTemp = unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC

// reclaim removes the abandoned temporaries (see abandoned) of name and
// of name.N, a registry's overflow files, holding each one's lock while it
// removes it: a writer killed while it grew them left them, and a run
// that makes no file at their names would leave them for good. The caller
// holds the directory's lock (LockClaims), and the name's when a file is
// at it; every writer of a temporary holds one or the other from before
// its creation (Prepare, Replace, RewriteUnheld), so none is between the
// creation of a temporary reclaim finds and its lock, when it is unlocked
// but not abandoned; name.N is the registry's own, which no other
// registry is named. It is best effort: what it cannot list, open or
// remove stays, as it would without it.
func (d *Dir) reclaim(name string) {
	for _, e := range d.List() {
		if file, _, ok := ParseTemp(e); !ok || !registryFile(file, name) {
			continue
		}
		fd, err := unix.Openat(d.fd, e, openTemp, 0)
		if err != nil {
			continue
		}
		if _, ok := abandoned(fd, unix.LOCK_EX); ok && d.sameFile(e, fd) {
			unix.Unlinkat(d.fd, e, 0)
		}
		unlockClose(fd)
	}
}

// TempAbandoned reports whether the file at path is a temporary, by its
// name (ParseTemp), that its writer left (see abandoned): what mmvdump
// -lint reports. Its caller excludes no writer, as reclaim's does: an
// empty temporary may be one its writer has just created and not yet
// locked, and is abandoned once its pid is gone or it has been left for
// tempGrace. It only reads the file, locking it (shared) for as long as
// it looks.
func TempAbandoned(path string) bool {
	_, pid, ok := ParseTemp(filepath.Base(path))
	if !ok {
		return false
	}
	fd, err := unix.Open(path, openTemp, 0)
	if err != nil {
		return false
	}
	defer unlockClose(fd)
	st, ok := abandoned(fd, unix.LOCK_SH)
	return ok && (st.Size > 0 || ProcessGone(pid) || time.Since(time.Unix(st.Mtim.Unix())) > tempGrace)
}

// tempGrace is how long TempAbandoned leaves an empty, unlocked temporary
// of a live pid to its writer, which may be about to lock it.
const tempGrace = time.Minute
