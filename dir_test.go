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

// startedApp makes a registry "app" in dir with one counter "m" set to
// set, started, closed when the test ends.
func startedApp(t *testing.T, dir string, set int64) *mmv.Registry {
	t.Helper()
	r := newRegistry(t, "app", dir, mmv.Options{Flags: mmv.Process})
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "m", Type: mmv.Uint64, Semantics: mmv.SemCounter}))
	startOrSkip(t, r)
	value(t, r, "m", "").Set(set)
	return r
}

// appValues reads the file at dir/app: metric name to value.
func appValues(t *testing.T, dir string) map[string]uint64 {
	t.Helper()
	f, err := mmvfile.Open(filepath.Join(dir, "app"))
	require.NoError(t, err)
	got := map[string]uint64{}
	for _, v := range f.Values {
		got[v.Metric.Name] = v.Uint
	}
	return got
}

// TestFileRemovedSaidAndPutBack: a started registry's file removed by
// someone (rm, a tmp cleaner), which PCP no longer reads, is named by Err,
// and Flush writes it anew at its name, its values as they are: Flush and
// Err said nothing, and the values went on into the unlinked file.
func TestFileRemovedSaidAndPutBack(t *testing.T) {
	dir := t.TempDir()
	r := startedApp(t, dir, 1)
	require.NoError(t, r.Err())
	require.NoError(t, os.Remove(filepath.Join(dir, "app")))
	value(t, r, "m", "").Add(1)
	err := r.Err()
	require.ErrorIs(t, err, mmv.ErrFile)
	assert.ErrorContains(t, err, `file "app": file system error: no longer at its name`)
	require.NoError(t, r.Flush())
	assert.Equal(t, map[string]uint64{"m": 2}, appValues(t, dir))
	assert.NoError(t, r.Err())
	value(t, r, "m", "").Add(1)
	assert.Equal(t, map[string]uint64{"m": 3}, appValues(t, dir), "updates land in the file at the name")
}

// TestSecondOwnerKeepsTheName: a registry whose file was removed, and
// whose name another registry then started on, does not take the name
// back from it: its growth is refused with ErrInUse, and Err says its
// file is not at its name, where the growth renamed its file over the one
// the other held locked, neither told. Once the other is gone, Flush puts
// it back.
func TestSecondOwnerKeepsTheName(t *testing.T) {
	dir := t.TempDir()
	a := startedApp(t, dir, 1)
	require.NoError(t, os.Remove(filepath.Join(dir, "app")))
	b := startedApp(t, dir, 2)
	require.Equal(t, map[string]uint64{"m": 2}, appValues(t, dir), "b's file at the name")

	// A declaration after Start publishes at once: refused.
	require.ErrorIs(t, a.AddMetric(mmv.Metric{Name: "later", Type: mmv.Uint64, Semantics: mmv.SemCounter}), mmv.ErrInUse)
	assert.ErrorIs(t, a.Flush(), mmv.ErrInUse)
	assert.ErrorContains(t, a.Err(), "no longer at its name")
	assert.Equal(t, map[string]uint64{"m": 2}, appValues(t, dir), "b's file at the name")
	assert.NoError(t, b.Err())

	require.NoError(t, b.Close()) // its file removed with it (Process)
	require.NoError(t, a.Flush())
	assert.Equal(t, map[string]uint64{"m": 1}, appValues(t, dir))
	assert.NoError(t, a.Err())
}
