//go:build unix

package main

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFIFO: mmvdump of a FIFO with no writer, as PCP's mmvdump and as
// JSON, fails at once with status 1, where it blocked in open (as PCP's
// mmvdump does) until a writer came.
func TestFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fifo")
	require.NoError(t, syscall.Mkfifo(path, 0o644))
	for _, args := range [][]string{{path}, {"-json", path}} {
		done := make(chan struct{})
		var stderr string
		var status int
		go func() { defer close(done); _, stderr, status = mmvdump(t, args...) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("mmvdump %v has not returned after 5 s", args)
		}
		assert.Equal(t, 1, status, "mmvdump %v", args)
		assert.Contains(t, stderr, "not a regular file", "mmvdump %v", args)
	}
}

// TestLintNamedNonRegularFileFails: mmvdump -lint of a path that is
// neither a regular file nor a directory fails with status 2, naming it
// and why, where it said nothing and exited 0, as for a clean file.
func TestLintNamedNonRegularFileFails(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	for _, path := range []string{fifo, "/dev/null"} {
		for _, args := range [][]string{{"-lint", path}, {"-lint", "-json", path}} {
			stdout, stderr, status := mmvdump(t, args...)
			assert.Equal(t, 2, status, "mmvdump %v", args)
			assert.Empty(t, stdout, "mmvdump %v", args)
			assert.Contains(t, stderr, path+": not a regular file nor a directory", "mmvdump %v", args)
		}
	}
}
