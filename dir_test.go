//go:build linux

package mmv_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/mmvfile"
)

// growAndClose declares a second metric on a started registry "app",
// publishes it, then closes the registry (which has the Process flag).
// Before Close, it checks that the file in dir holds both metrics.
func growAndClose(t *testing.T, r *mmv.Registry, dir string) {
	t.Helper()
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "later", Type: mmv.Uint64, Semantics: mmv.SemCounter}))
	require.NoError(t, r.Flush())
	f, err := mmvfile.Open(filepath.Join(dir, "app"))
	require.NoError(t, err)
	assert.Len(t, f.Metrics, 2, "the file in the original directory was not republished")
	require.NoError(t, r.Close())
	assert.NoFileExists(t, filepath.Join(dir, "app"), "Close with the Process flag left the file")
}

// TestDirRelativeResolvedOnce: a relative Options.Dir is resolved once, at
// Start. After a chdir, growth republishes the file, and Close removes it,
// in the original directory; nothing appears under the new working
// directory. Path is absolute.
func TestDirRelativeResolvedOnce(t *testing.T) {
	first, second := t.TempDir(), t.TempDir()
	t.Chdir(first)
	r := mmv.NewRegistry("app", &mmv.Options{Dir: "rel", Flags: mmv.Process})
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "m", Type: mmv.Uint64, Semantics: mmv.SemCounter}))
	startOrSkip(t, r)
	assert.Equal(t, filepath.Join(first, "rel", "app"), r.Path())

	t.Chdir(second)
	growAndClose(t, r, filepath.Join(first, "rel"))
	es, err := os.ReadDir(second)
	require.NoError(t, err)
	assert.Empty(t, es, "files appeared under the new working directory")
}

// TestDirSwappedForSymlink: the directory, moved aside after Start and
// replaced by a symlink to another directory, is still the one growth and
// Close act on; the other directory is never written.
func TestDirSwappedForSymlink(t *testing.T) {
	tmp, other := t.TempDir(), t.TempDir()
	dir, aside := filepath.Join(tmp, "mmv"), filepath.Join(tmp, "aside")
	r := mmv.NewRegistry("app", &mmv.Options{Dir: dir, Flags: mmv.Process})
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "m", Type: mmv.Uint64, Semantics: mmv.SemCounter}))
	startOrSkip(t, r)

	require.NoError(t, os.Rename(dir, aside))
	require.NoError(t, os.Symlink(other, dir))
	growAndClose(t, r, aside)
	es, err := os.ReadDir(other)
	require.NoError(t, err)
	assert.Empty(t, es, "files appeared in the directory the link points to")
}
