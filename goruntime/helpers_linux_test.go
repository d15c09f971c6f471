//go:build linux

package goruntime

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gopcp/mmv/internal/pcptest"
)

// smallTmpfs mounts a tmpfs of the given size on a temporary directory, as
// the root package's disk-full tests do. It needs root: elsewhere the test
// is skipped, or fails as pcptest.MustHave says.
func smallTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		pcptest.MustHave(t, errors.New("mounting a tmpfs needs root"))
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		pcptest.MustHave(t, fmt.Errorf("mount -t tmpfs -o size=%s tmpfs %s: %w", size, dir, err))
	}
	t.Cleanup(func() { assert.NoError(t, unix.Unmount(dir, unix.MNT_DETACH), "umount %s", dir) })
	return dir
}

// fill writes a file in dir until the file system is full, and returns it.
func fill(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			require.ErrorIs(t, err, syscall.ENOSPC)
			break
		}
	}
	for { // the last partial block too
		if _, err := f.Write(buf[:1]); err != nil {
			break
		}
	}
	return path
}
