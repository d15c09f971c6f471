package mmv

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// A started file's name belongs to one registry, in this process or any
// other: the owner holds an exclusive flock on the lock file .<name>.lock
// beside it, a dot-file PCP's reader ignores and never locks. The kernel
// drops the lock with the last descriptor of its holder, so a killed
// writer frees its names at once; a lock file it leaves behind is taken
// over by the next owner.
type nameLock struct {
	dir  *dir
	name string // the lock file's name in dir
	fd   int
}

// lockAttempts bounds the retries when the lock file changes under us, or
// its holder lets it go between our attempt and our look at who held it.
const lockAttempts = 100

// lock takes the name in d, or fails with ErrInUse naming the holder.
func (d *dir) lock(name string) (*nameLock, error) {
	lname := "." + name + ".lock"
	holder := 0
	for range lockAttempts {
		// Read-only, so a lock file made by another user can be locked too;
		// non-blocking, so a FIFO planted there cannot hang the open.
		fd, err := unix.Openat(d.fd, lname, unix.O_RDONLY|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o644)
		if err != nil {
			return nil, &os.PathError{Op: "create", Path: d.join(lname), Err: err}
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
			unix.Close(fd)
			return nil, &os.PathError{Op: "lock", Path: d.join(lname), Err: errNotRegular}
		}
		err = unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			// The holder before us may have removed the name between our
			// open and our flock: the lock is only ours if the name is
			// still the file we locked.
			if d.sameFile(lname, fd) {
				return &nameLock{dir: d, name: lname, fd: fd}, nil
			}
			unix.Close(fd)
			continue
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			unix.Close(fd)
			return nil, &os.PathError{Op: "lock", Path: d.join(lname), Err: err}
		}
		holder = lockHolder(&st)
		unix.Close(fd)
		if holder != 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	subject := "file " + quote(d.join(name))
	if holder == 0 {
		return nil, errorf(ErrInUse, subject, "another registry holds %s, in a process whose pid is not visible here", lname)
	}
	return nil, errorf(ErrInUse, subject, "a registry in pid %d holds it", holder)
}

var errNotRegular = errors.New("not a regular file")

// lockHolder returns the pid holding a flock on the file st describes, as
// /proc/locks shows it, or 0 when it shows none (the lock just went) or
// the holder is in a pid namespace this process cannot see.
func lockHolder(st *unix.Stat_t) int {
	b, err := os.ReadFile("/proc/locks")
	if err != nil {
		return 0
	}
	// "1: FLOCK  ADVISORY  WRITE 1234 fe:00:9986039 0 EOF"
	id := fmt.Sprintf("%02x:%02x:%d", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 6 && f[1] == "FLOCK" && f[5] == id {
			pid, _ := strconv.Atoi(f[4])
			return max(pid, 0)
		}
	}
	return 0
}

// release removes the lock file, if it is still ours, then unlocks it:
// in that order, so that no one locks a file about to lose its name.
func (l *nameLock) release() {
	if l.dir.sameFile(l.name, l.fd) {
		unix.Unlinkat(l.dir.fd, l.name, 0)
	}
	unix.Close(l.fd)
}
