//go:build !linux

package mmv

import "unsafe"

type file struct {
	path     string
	base     unsafe.Pointer
	values   unsafe.Pointer
	size     int64
	capacity int
}

type dir struct{ path string }

func openDir(path string) (*dir, error) {
	return nil, errorf(ErrUnsupported, "directory "+quote(path), "MMV files are written on Linux only")
}

func (d *dir) close()                             {}
func (d *dir) list() []string                     { return nil }
func (d *dir) readHead(name string, b []byte) int { return 0 }
func processGone(pid int) bool                    { return false }
func (d *dir) lockClaims() (func(), error)        { return func() {}, nil }

func createFile(d *dir, name string, size, valuesOff int64, capacity int, fill func(b []byte)) (*file, error) {
	return nil, errorf(ErrUnsupported, "file "+quote(name), "MMV files are written on Linux only")
}

func (f *file) replace(size, used, valuesOff int64, capacity, live int, fill func(b []byte), merge func(written, final []byte)) error {
	return errorf(ErrUnsupported, "file "+quote(f.path), "")
}

func (f *file) bytes() []byte           { return nil }
func (f *file) close(remove bool) error { return nil }
