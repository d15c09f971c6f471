//go:build linux

package mmv

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// tempOf is the temporary name of name this process writes with the
// random suffix given.
func tempOf(name, suffix string) string {
	return "." + name + "." + strconv.Itoa(os.Getpid()) + "." + suffix
}

// plantSuffixes makes createTemp try the given random suffixes in order.
func plantSuffixes(t *testing.T, suffixes ...string) {
	old := tempSuffix
	t.Cleanup(func() { tempSuffix = old })
	i := 0
	tempSuffix = func() string {
		s := suffixes[i%len(suffixes)]
		i++
		return s
	}
}

// TestCreateTempRefusesPlantedNames plants, at the temporary names the
// writer will try, a link to a file outside the directory, a dangling link
// to a path outside it, and a hard link to the outside file: createTemp
// passes over each (exclusive, no-follow creation) and none of the outside
// files changes; Start then publishes through the next free name.
func TestCreateTempRefusesPlantedNames(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	victim := filepath.Join(outside, "victim")
	require.NoError(t, os.WriteFile(victim, []byte("precious"), 0o600))
	dangling := filepath.Join(outside, "created")
	plant := func(suffix string, how func(at string) error) string {
		at := filepath.Join(dir, tempOf("app", suffix))
		require.NoError(t, how(at))
		return at
	}
	plant("a", func(at string) error { return os.Symlink(victim, at) })
	plant("b", func(at string) error { return os.Symlink(dangling, at) })
	plant("c", func(at string) error { return os.Link(victim, at) })
	plantSuffixes(t, "a", "b", "c", "d")

	r := NewRegistry("app", &Options{Dir: dir})
	require.NoError(t, r.AddMetric(Metric{Name: "m", Type: Uint64, Semantics: SemCounter}))
	require.NoError(t, r.Start())
	v, _ := r.Value("m", "")
	v.Add(42)
	defer r.Close()

	b, err := os.ReadFile(victim)
	assert.False(t, err != nil || string(b) != "precious", "the file outside the directory changed: %q, %v", b, err)
	fi, err := os.Stat(victim)
	assert.False(t, err != nil || fi.Mode().Perm() != 0o600, "the outside file's mode changed: %v, %v", fi, err)
	_, err = os.Lstat(dangling)
	assert.ErrorIs(t, err, os.ErrNotExist, "a dangling link was followed")
	for _, s := range []string{"a", "b"} {
		fi, err := os.Lstat(filepath.Join(dir, tempOf("app", s)))
		assert.False(t, err != nil || fi.Mode()&os.ModeSymlink == 0, "%s is no longer the planted link: %v", tempOf("app", s), err)
	}
	fi, err = os.Lstat(filepath.Join(dir, "app"))
	require.False(t, err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o644, "the published file: %v, %v", fi, err)
	_, err = os.Lstat(filepath.Join(dir, tempOf("app", "d")))
	assert.ErrorIs(t, err, os.ErrNotExist, "the temporary name %s", tempOf("app", "d"))
}

// TestCreateTempAllNamesTaken: when every name tried is taken, createTemp
// gives up with EEXIST after its attempts, and creates nothing.
func TestCreateTempAllNamesTaken(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	victim := filepath.Join(outside, "victim")
	os.WriteFile(victim, []byte("precious"), 0o600)
	require.NoError(t, os.Symlink(victim, filepath.Join(dir, tempOf("app", "x"))))
	plantSuffixes(t, "x")
	d, err := openDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	fd, tmp, err := createTemp(d, "app", 4096)
	if err == nil {
		unix.Close(fd)
	}
	require.Error(t, err, "createTemp took %s", tmp)
	assert.ErrorIs(t, err, unix.EEXIST)
	b, _ := os.ReadFile(victim)
	assert.Equal(t, "precious", string(b), "the outside file")
	es, _ := os.ReadDir(dir)
	assert.Len(t, es, 1, "what createTemp left")
}
