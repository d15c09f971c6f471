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
