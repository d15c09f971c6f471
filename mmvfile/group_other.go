//go:build !unix

package mmvfile

import "io/fs"

// groupOf reports no group where files have none.
func groupOf(fs.FileInfo) (int, bool) { return 0, false }
