package mmvfile

import (
	"errors"
	"fmt"
	"strconv"
)

// Errors returned by Parse and Open. Every error about the file's contents
// wraps exactly one of them; its message names the section, record and
// offset at fault.
var (
	// ErrTruncated: the file ends before its header, its TOC or one of
	// its sections.
	ErrTruncated = errors.New("truncated")
	// ErrMagic: the file does not start with "MMV\0".
	ErrMagic = errors.New("bad magic")
	// ErrVersion: a version other than 1, 2 or 3.
	ErrVersion = errors.New("unsupported version")
	// ErrGeneration: a generation number that is zero, or gen1 != gen2,
	// as while a writer is still creating the file.
	ErrGeneration = errors.New("bad generation")
	// ErrSection: a section type listed twice in the TOC.
	ErrSection = errors.New("bad section")
	// ErrOffset: a section misaligned, overlapping the header, the TOC or
	// another section, starting beyond the end of the file, or wrapping
	// around.
	ErrOffset = errors.New("bad offset")
	// ErrCount: a count beyond the format's or PCP's limits: fewer than
	// 2 TOC entries, more than 1023 metrics or
	// 255 labels (PCP drops such a section whole), more indoms than PCP's
	// 22-bit serials number, or a file larger than MaxSize.
	ErrCount = errors.New("bad count")
	// ErrReference: a field that refers to another record does not lead
	// to one of the right kind: a value's metric or instance, an
	// instance's indom, an indom's instances (which must name it), a
	// value's instance in another indom than its metric's, a string offset
	// that is not a string slot.
	ErrReference = errors.New("bad reference")
	// ErrField: a record field PCP's reader misreads: an instance name
	// or label payload with no NUL (a v1 metric name too), an unknown value type, a cluster above
	// 4095, an instance id of -1 (PCP's PM_IN_NULL), or an instance id
	// twice in an indom. What PCP reads metric by metric (items, names,
	// serials, semantics, units, indoms, values, labels) is Lint's.
	ErrField = errors.New("bad field")
)

// formatError is an error in the file's contents.
type formatError struct {
	kind error
	msg  string
}

func (e *formatError) Error() string { return "mmvfile: " + e.kind.Error() + ": " + e.msg }
func (e *formatError) Unwrap() error { return e.kind }

func errorf(kind error, format string, args ...any) error {
	return &formatError{kind: kind, msg: fmt.Sprintf(format, args...)}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
