//go:build linux

package mmv

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestLinkRename: where the file system has no RENAME_NOREPLACE, a link
// and an unlink take a free name, and leave a taken one and the temporary
// as they were.
func TestLinkRename(t *testing.T) {
	dir := t.TempDir()
	d, err := openDir(dir)
	require.NoError(t, err)
	defer d.close()
	write := func(name, body string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		return string(b)
	}
	write(".tmp", "ours")
	require.NoError(t, d.linkRename(".tmp", "app"))
	assert.Equal(t, "ours", read("app"))
	assert.NoFileExists(t, filepath.Join(dir, ".tmp"))

	write(".tmp", "second")
	require.ErrorIs(t, d.linkRename(".tmp", "app"), unix.EEXIST)
	assert.Equal(t, "ours", read("app"), "the taken name")
	assert.Equal(t, "second", read(".tmp"), "the temporary")
}
