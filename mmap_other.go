//go:build !linux

package mmv

import "unsafe"

type file struct {
	path string
	base unsafe.Pointer
	size int64
}

func createFile(dir, name string, size int64, fill func(b []byte)) (*file, error) {
	return nil, errorf(ErrUnsupported, "file "+quote(name), "MMV files are written on Linux only")
}

func (f *file) bytes() []byte           { return nil }
func (f *file) close(remove bool) error { return nil }
