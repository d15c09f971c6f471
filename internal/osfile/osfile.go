// Package osfile is the operating system's side of mmv's files: a
// directory opened once and used through its descriptor, a file's name
// held by an exclusive flock, files written under a temporary name and
// renamed into place, mapped at an address that never changes while the
// file grows, and unmapped after a grace period once closed.
//
// It knows nothing of the MMV format but what a Format tells it: how many
// bytes of a file's head name its writer's pid, where that pid is, and how
// a mapped file is sealed before it is renamed into place. Its errors are
// its own (*TooLargeError, *InUseError, ErrUnsupported, or an
// *os.PathError naming the call and the path); the registry turns them
// into mmv's errors in one place (mmv's fileError).
//
// Liveness tells what PCP's reader can check of this process's life (its
// pid in the namespace of the /proc mounted here, and what defeats the
// check on Linux: a PID namespace of its own, /proc's hidepid).
//
// Linux, macOS and FreeBSD write files; every other system builds, and
// OpenDir and Create return ErrUnsupported there. The build tag
// mmv_noport gives Linux the other systems' build, so that CI runs what
// they do.
package osfile

import (
	"errors"
	"fmt"
	"time"
)

// ErrUnsupported: this system has no port of the file layer.
var ErrUnsupported = errors.New("memory-mapped MMV files are not written on this system")

// TooLargeError: a file that does not fit the address range reserved for
// it: Limit bytes at most, the sections before the values and the values
// taking at most Limit each way from where the values section starts.
type TooLargeError struct {
	Name  string // the file's name in its directory
	Size  int64  // bytes asked for
	Limit int64  // bytes a file may hold
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s: %d bytes do not fit the address range reserved for it (a file may hold %d)", e.Name, e.Size, e.Limit)
}

// InUseError: another registry, in this process or another, holds the
// lock of a file's name, or holds the directory's lock for longer than
// the caller waits.
type InUseError struct {
	Path   string        // the file or the directory
	Dir    bool          // the directory's lock, held for Waited
	Pid    int           // the holder's pid, 0 when not visible here
	Waited time.Duration // how long the caller waited for the directory's lock
}

func (e *InUseError) Error() string {
	switch {
	case e.Dir:
		return fmt.Sprintf("directory %s: another registry has held its lock for %v, making a file", e.Path, e.Waited)
	case e.Pid == 0:
		return fmt.Sprintf("%s: another registry holds it, in a process whose pid is not visible here", e.Path)
	}
	return fmt.Sprintf("%s: a registry in pid %d holds it", e.Path, e.Pid)
}

// Format is what the file layer knows of the files it writes.
type Format struct {
	// HeadSize is the number of bytes of a file's head that Owner reads.
	HeadSize int
	// Owner returns the pid of the writer a file's head names, 0 when it
	// names none (not a file of this format): the holder of its lock, for
	// InUseError.
	Owner func(head []byte) int
	// Seal completes a file's head, its first HeadSize bytes as fill
	// wrote them, once every other byte of the file is written; the file
	// layer writes the head back, then renames the file into place.
	Seal func(head []byte)
}

// Step is a point of File.Replace at which its hook is called, for tests
// that make updates race a growth.
type Step int

const (
	Written  Step = iota // the new file holds the values; updates still land in the old file
	Remapped             // updates land in the new file; the old file's final values not read
)

// LockHeldHook, when not nil, is called each time a name's lock is found
// held, before it is tried again: tests set it to free the lock at that
// moment.
var LockHeldHook func()
