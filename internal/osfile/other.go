//go:build !(linux || darwin || freebsd) || mmv_noport

package osfile

import (
	"os"
	"time"
	"unsafe"
)

// Dir and File exist on every system so that mmv builds everywhere;
// OpenDir and Create fail with ErrUnsupported where there is no port.
type Dir struct{ path string }

type DirID struct{ Dev, Ino uint64 }

type File struct{}

func OpenDir(path string, format Format) (*Dir, error) { return nil, ErrUnsupported }

func Create(d *Dir, name string, size, valuesOff, valuesEnd int64, fill func(b []byte)) (*File, error) {
	return nil, ErrUnsupported
}

func Prepare(d *Dir, name string, size, valuesOff, valuesEnd int64, fill func(b []byte)) (*File, error) {
	return nil, ErrUnsupported
}

func (f *File) Commit() error { return ErrUnsupported }
func (f *File) Hold() error   { return ErrUnsupported }

func ProcessGone(pid int) bool                               { return false }
func (d *Dir) Path() string                                  { return d.path }
func (d *Dir) Join(name string) string                       { return d.path + "/" + name }
func (d *Dir) List() []string                                { return nil }
func (d *Dir) ReadHead(name string, b []byte) int            { return 0 }
func (d *Dir) Held(name string) bool                         { return false }
func (d *Dir) Stamp() (int64, bool)                          { return 0, false }
func (d *Dir) OpenRead(name string) *os.File                 { return nil }
func (d *Dir) LockClaims(wait time.Duration) (func(), error) { return nil, ErrUnsupported }
func (d *Dir) Close()                                        {}
func (d *Dir) Replaced() bool                                { return false }
func (d *Dir) ID() (DirID, bool)                             { return DirID{}, false }
func (f *File) Bytes() []byte                                { return nil }
func (f *File) Base() unsafe.Pointer                         { return nil }
func (f *File) Values() unsafe.Pointer                       { return nil }
func (f *File) ValuesOffset() int64                          { return 0 }
func (f *File) Path() string                                 { return "" }
func (f *File) Close(remove bool) error                      { return ErrUnsupported }
func (f *File) CloseAs(as string) error                      { return ErrUnsupported }
func (d *Dir) Remove(name string)                            {}
func (f *File) MapWritable(off, end int64)                   {}

func (f *File) Replace(size, used, valuesOff int64, live int, fill func(b []byte), merge func(written, final []byte), hook func(Step)) error {
	return ErrUnsupported
}

func (d *Dir) RewriteUnheld(name string, max int64, rewrite func(b []byte) []byte) (bool, error) {
	return false, ErrUnsupported
}

func (d *Dir) RewriteUnheldAs(name, as string, max int64, rewrite func(b []byte) []byte) (bool, error) {
	return false, ErrUnsupported
}

func (d *Dir) RewriteFrom(name, from string, max int64, rewrite func(b []byte) []byte) (bool, error) {
	return false, ErrUnsupported
}

func (f *File) AtName() bool { return true }

func (d *Dir) Reclaim(name string)   {}
func TempAbandoned(path string) bool { return false }
