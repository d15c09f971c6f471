//go:build (linux || darwin || freebsd) && !mmv_noport

package osfile

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestCreateTempRefusesPlantedNames plants, at the temporary names the
// writer will try, a link to a file outside the directory, a dangling link
// to a path outside it, and a hard link to the outside file: createTemp
// passes over each (exclusive, no-follow creation) and none of the outside
// files changes; Create then publishes through the next free name.
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

	f := create(t, openTestDir(t, dir), "app", 4096)
	copy(f.Bytes(), "ours")
	defer f.Close(true)

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
	fd, tmp, err := createTemp(openTestDir(t, dir), "app", 4096)
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

// TestLinkRename: where the file system has no RENAME_NOREPLACE, a link
// and an unlink take a free name, and leave a taken one and the temporary
// as they were.
func TestLinkRename(t *testing.T) {
	dir := t.TempDir()
	d := openTestDir(t, dir)
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
