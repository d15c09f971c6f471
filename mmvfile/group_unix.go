//go:build unix

package mmvfile

import (
	"io/fs"
	"syscall"
)

// groupOf returns the group id of a file.
func groupOf(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Gid), true
}
