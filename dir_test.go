//go:build linux

package mmv_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/mmvfile"
)

// growAndClose declares a second metric on a started registry "app",
// publishes it, then closes the registry (which has the Process flag).
// Before Close, it checks that the file in dir holds both metrics, and
// that Flush returned what flushed says.
func growAndClose(t *testing.T, r *mmv.Registry, dir string, flushed func(t require.TestingT, err error, _ ...any)) {
	t.Helper()
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "later", Type: mmv.Uint64, Semantics: mmv.SemCounter}))
	flushed(t, r.Flush())
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
	growAndClose(t, r, filepath.Join(first, "rel"), require.NoError)
	es, err := os.ReadDir(second)
	require.NoError(t, err)
	assert.Empty(t, es, "files appeared under the new working directory")
}

// TestDirSwappedForSymlink: the directory, moved aside after Start and
// replaced by a symlink to another directory, is still the one growth and
// Close act on; the other directory is never written. Flush says so
// (TestDirReplacedSaid).
func TestDirSwappedForSymlink(t *testing.T) {
	tmp, other := t.TempDir(), t.TempDir()
	dir, aside := filepath.Join(tmp, "mmv"), filepath.Join(tmp, "aside")
	r := mmv.NewRegistry("app", &mmv.Options{Dir: dir, Flags: mmv.Process})
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "m", Type: mmv.Uint64, Semantics: mmv.SemCounter}))
	startOrSkip(t, r)

	require.NoError(t, os.Rename(dir, aside))
	require.NoError(t, os.Symlink(other, dir))
	growAndClose(t, r, aside, func(t require.TestingT, err error, _ ...any) { require.ErrorIs(t, err, mmv.ErrFile) })
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

// TestDirReplacedSaid: PCP's directory replaced while a registry runs (an
// operator's mv and mkdir, rm -rf and mkdir, a symlinked directory pointed
// elsewhere with ln -sfn): the registry goes on writing, growth included,
// in the directory it opened at Start, which PCP no longer reads. Flush
// and Err returned nil (and after rm -rf, Err said Flush would write the
// file anew, where Flush failed with ENOENT for good); they now say that
// the directory at the path is another, naming it. Put back, the
// directory is the registry's again, and nothing is said.
func TestDirReplacedSaid(t *testing.T) {
	for _, c := range []struct {
		name    string
		symlink bool
		replace func(dir string)
	}{
		{"moved", false, func(dir string) {
			require.NoError(t, os.Rename(dir, dir+".old"))
			require.NoError(t, os.Mkdir(dir, 0o775))
		}},
		{"removed", false, func(dir string) {
			require.NoError(t, os.RemoveAll(dir))
			require.NoError(t, os.Mkdir(dir, 0o775))
		}},
		{"symlink repointed", true, func(dir string) {
			require.NoError(t, os.Symlink("b", dir+".new"))
			require.NoError(t, os.Rename(dir+".new", dir))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tmp, dir := pcpDir(t)
			if c.symlink {
				require.NoError(t, os.Mkdir(filepath.Join(tmp, "a"), 0o775))
				require.NoError(t, os.Mkdir(filepath.Join(tmp, "b"), 0o775))
				require.NoError(t, os.Symlink("a", dir))
			}
			r := newRegistry(t, "moved", dir, mmv.Options{Flags: mmv.Process})
			c0 := mmv.NewCounter(r, "before", "", mmv.Count)
			startOrSkip(t, r)
			c0.Add(7)
			require.NotNil(t, pcptest.Find(pcptest.Info(t, tmp), "mmv.moved.before"), "PCP shows the metric once started")

			c.replace(dir)
			late := mmv.NewCounter(r, "after", "", mmv.Count) // a growth step
			late.Add(3)
			flushErr, err := r.Flush(), r.Err()
			for _, err := range []error{flushErr, err} {
				require.ErrorIs(t, err, mmv.ErrFile)
				require.ErrorContains(t, err, "the directory "+dir+" is no longer the one the registry opened at Start")
				require.NotContains(t, err.Error(), "Flush writes it anew")
			}
			require.Nil(t, pcptest.Find(pcptest.Info(t, tmp), "mmv.moved.after"), "PCP reads the new directory")

			if c.name == "moved" { // put back
				require.NoError(t, os.Remove(dir))
				require.NoError(t, os.Rename(dir+".old", dir))
				require.NoError(t, r.Flush())
				require.NoError(t, r.Err())
				m := pcptest.Find(pcptest.Info(t, tmp), "mmv.moved.after")
				require.NotNil(t, m, "the directory put back, PCP reads the registry's files again")
				require.Equal(t, "3", m.Value)
			}
		})
	}
}
