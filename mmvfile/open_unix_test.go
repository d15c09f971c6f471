//go:build unix

package mmvfile_test

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv/mmvfile"
)

// TestOpenFIFO: a FIFO at the path, with no writer, is refused at once.
// Opening one to read blocks until a writer opens it: Open hung. (PCP's
// reader skips it and loads the directory's other files; PCP's mmvdump
// hangs.)
func TestOpenFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fifo")
	require.NoError(t, syscall.Mkfifo(path, 0o644))
	var err error
	within(t, 5*time.Second, "Open of a FIFO", func() { _, err = mmvfile.Open(path) })
	assert.ErrorContains(t, err, "not a regular file")
}

// TestLintDirRefusesNamedNonRegularFile: a path LintDir is given that is
// neither a regular file nor a directory (a FIFO, a device) is an error
// naming it and why, where LintDir skipped it, as it skips one in a
// directory it reads (PCP's reader skips those), and reported nothing:
// mmvdump -lint /dev/null said nothing and exited 0.
func TestLintDirRefusesNamedNonRegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	for _, path := range []string{fifo, "/dev/null"} {
		var err error
		within(t, 5*time.Second, "LintDir of "+path, func() { _, err = mmvfile.LintDir(path) })
		require.Error(t, err, path)
		assert.ErrorContains(t, err, path+": not a regular file nor a directory")
	}
	fds, err := mmvfile.LintDir(dir)
	require.NoError(t, err, "a FIFO in a directory, which PCP's reader skips")
	assert.Empty(t, fds)
}
