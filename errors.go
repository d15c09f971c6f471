package mmv

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/gopcp/mmv/internal/osfile"
	"github.com/gopcp/mmv/internal/pcpconf"
)

// Errors returned by the registry. Every error the package returns wraps one
// of these, so callers can test for the rule broken with errors.Is; the
// message also names the metric, indom, instance, label or file at fault.
// Only an ErrFile wraps a second error, the system's (a syscall.Errno inside
// an *os.PathError naming the path and the call); when that error is a
// permission error, the message says how to get the right to write in
// PCP's directory.
var (
	// ErrName: a file, metric, instance or label name that PCP would not
	// accept, or a help text or string value (Value.SetString) holding a
	// NUL.
	ErrName = errors.New("invalid name")
	// ErrDuplicate: a name, item, serial or instance declared twice.
	ErrDuplicate = errors.New("duplicate")
	// ErrRange: an item, serial, cluster, instance id, type, semantics,
	// units or version outside what PCP accepts.
	ErrRange = errors.New("out of range")
	// ErrTooLong: a help text, name, string value or label beyond its size limit.
	ErrTooLong = errors.New("too long")
	// ErrTooMany: more metrics, items or labels than one file may hold,
	// more instances than an indom's or a registry's cap (see
	// Options.MaxIndomInstances), or than a vector's limit (Vec.SetLimit).
	ErrTooMany = errors.New("too many")
	// ErrNamespace: a metric name that is also a prefix of another at a dot,
	// which makes PCP drop every MMV metric on the host; at Start, and for
	// a metric declared after it, a full name that clashes so, or is the
	// same, with another live file's of the directory.
	ErrNamespace = errors.New("namespace conflict")
	// ErrUnknown: a reference to a metric, indom or instance not declared.
	ErrUnknown = errors.New("not declared")
	// ErrLabel: a label whose value or identity PCP would not accept.
	ErrLabel = errors.New("invalid label")
	// ErrType: an operation that does not fit the value's type, or a
	// callback metric declared without its function.
	ErrType = errors.New("wrong type")
	// ErrStarted: Start or Configure on a registry already started.
	ErrStarted = errors.New("registry already started")
	// ErrNotStarted: a Value lookup on a registry not started yet.
	ErrNotStarted = errors.New("registry not started")
	// ErrClosed: an operation on a closed registry, or a declaration on a
	// Tx whose Transact has returned.
	ErrClosed = errors.New("registry closed")
	// ErrInUse: a file name another registry holds, in this process or in
	// another live one, the message naming the holder's pid; or an indom
	// the registry made for an instrument (a vector's, a histogram's
	// buckets'), to which AddInstance adds nothing and over which AddMetric
	// declares nothing.
	ErrInUse = errors.New("in use")
	// ErrClusterInUse: an explicit Options.Cluster that another live file
	// of the directory has, which would make PCP show one file's values
	// under the other's names; the message names the cluster, that file
	// and its writer's pid.
	ErrClusterInUse = errors.New("cluster in use")
	// ErrFile: the file system refused an operation on the registry's
	// directory or files. The error wraps the system's error too
	// (syscall.ENOSPC, os.ErrPermission, ...) and names the file and what
	// the registry was doing.
	ErrFile = errors.New("file system error")
	// ErrUnsupported: memory-mapped files are not supported on this system;
	// in Err, the Process flag is not, for this process (see Process).
	ErrUnsupported = errors.New("not supported on this system")
)

// publishFailure is what a declaration made after Start does when the
// growth step it needs at once fails.
type publishFailure bool

const (
	// undoDeclared: the error is returned and the declaration undone.
	undoDeclared publishFailure = false
	// keepDeclared: the declaration stays, published by the retry; the
	// error is only the registry's publication error (an instrument counts
	// in memory meanwhile).
	keepDeclared publishFailure = true
)

// errorf returns an error wrapping kind whose message names subject, such
// as `mmv: metric "a.b": invalid name: must start with a letter`.
func errorf(kind error, subject, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if subject != "" {
		subject += ": "
	}
	if msg != "" {
		msg = ": " + msg
	}
	return &declError{kind: kind, msg: "mmv: " + subject + kind.Error() + msg}
}

type declError struct {
	kind error
	msg  string
}

func (e *declError) Error() string { return e.msg }
func (e *declError) Unwrap() error { return e.kind }

// fileError turns an error of the file layer (internal/osfile), met while
// the registry did what with the file name, into mmv's: ErrInUse naming
// the holder's pid, ErrTooMany, ErrUnsupported, and otherwise ErrFile
// wrapping err (an *os.PathError naming the path and the call), which for
// a permission error says how to get the right to write. It is the one
// place where the file layer's errors become mmv's.
func fileError(name, what string, err error) error {
	var inUse *osfile.InUseError
	var tooLarge *osfile.TooLargeError
	switch {
	case errors.As(err, &inUse) && inUse.Dir:
		return errorf(ErrInUse, subject("directory", inUse.Path), "another registry has held its lock for %v, making a file", inUse.Waited)
	case errors.As(err, &inUse) && inUse.Pid == 0:
		return errorf(ErrInUse, subject("file", inUse.Path), "another registry holds it, in a process whose pid is not visible here")
	case errors.As(err, &inUse):
		return errorf(ErrInUse, subject("file", inUse.Path), "a registry in pid %d holds it", inUse.Pid)
	case errors.As(err, &tooLarge):
		return errorf(ErrTooMany, subject("file", name), "%d bytes do not fit the address range reserved for it (a file may hold %d)", tooLarge.Size, tooLarge.Limit)
	case errors.Is(err, osfile.ErrUnsupported):
		return errorf(ErrUnsupported, subject("file", name), "MMV files are written on Linux, macOS and FreeBSD only")
	}
	hint := ""
	if errors.Is(err, os.ErrPermission) && pcpconf.Get(os.Getenv, "PCP_TMP_DIR", pcpconf.Files) != "" {
		hint = ": run the service as a member of PCP's group (pcp), which owns $PCP_TMP_DIR/mmv (pmcd's MMV agent reads no other directory)"
	}
	return fmt.Errorf("mmv: file %q: %s: %w: %w%s", name, what, ErrFile, err, hint)
}

func quote(s string) string { return strconv.Quote(s) }

// subject names what an error is about, for errorf: a kind and its name,
// such as `metric "a.b"`.
func subject(kind, name string) string { return kind + " " + quote(name) }

// inside names a thing within another subject, such as
// `vector "requests" label "route"`.
func inside(outer, kind, name string) string { return outer + " " + subject(kind, name) }
