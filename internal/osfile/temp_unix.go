//go:build (linux || darwin || freebsd) && !mmv_noport

package osfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// A file is written under a temporary name, ".<name>.<pid>.<random>", and
// renamed into place once complete: PCP's reader ignores names starting
// with '.'. The pid is the writer's, so that a temporary left by a writer
// killed mid-write can be told from one being written: the next owner of
// the name removes the temporaries whose writer is gone (see reclaim). See
// tempLen for the length this adds.

// createTemp creates a temporary of name in d exclusively, refusing to
// follow a link, so nothing planted in the directory can redirect the
// write, gives it its mode and its blocks, and locks it, for the name it
// will be renamed to (see acquire). It returns the temporary's name in d.
func createTemp(d *Dir, name string, size int64) (int, string, error) {
	for range 10 {
		tmp := "." + name + "." + strconv.Itoa(os.Getpid()) + "." + tempSuffix()
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
			op, err = "lock", unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
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
	var rnd [tempRandom / 2]byte
	rand.Read(rnd[:])
	return hex.EncodeToString(rnd[:])
}

// tempRandom is the length of a temporary name's random part.
const tempRandom = 8

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

// tempWriter returns the pid in entry, if it is a temporary of name. The
// random part must be hex of its exact length: a temporary of the overflow
// file name.2 is .<name>.2.<pid>.<random>, and names such as
// .<name>.<digits>.lock are not ours.
func tempWriter(name, entry string) (int, bool) {
	rest, ok := strings.CutPrefix(entry, "."+name+".")
	if !ok {
		return 0, false
	}
	pid, random, ok := strings.Cut(rest, ".")
	if _, err := hex.DecodeString(random); !ok || len(random) != tempRandom || err != nil {
		return 0, false
	}
	n, err := strconv.Atoi(pid)
	if err != nil || n <= 0 || strconv.Itoa(n) != pid {
		return 0, false
	}
	return n, true
}

// reclaim removes the temporaries of name whose writer no longer exists,
// never a live process's, so it needs no lock. It is best effort: what it
// cannot list or remove stays, as it would without it.
func (d *Dir) reclaim(name string) {
	for _, e := range d.List() {
		if pid, ok := tempWriter(name, e); ok && ProcessGone(pid) {
			unix.Unlinkat(d.fd, e, 0)
		}
	}
}
