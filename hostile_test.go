//go:build unix

package mmv_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/mmvfile"
)

// hostileRegistry starts a registry "app" in dir with one counter set to 42.
func hostileRegistry(t *testing.T, dir string, flags mmv.Flags) (*mmv.Registry, error) {
	t.Helper()
	r := mmv.NewRegistry("app", &mmv.Options{Dir: dir, Flags: flags})
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "m", Type: mmv.Uint64, Semantics: mmv.SemCounter}))
	if err := r.Start(); err != nil {
		return r, err
	}
	v, err := r.Value("m", "")
	require.NoError(t, err)
	v.Set(42)
	return r, nil
}

// victim writes a file outside the registry's directory and returns a
// check that it is unchanged.
func victim(t *testing.T) (path string, unchanged func()) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "victim")
	require.NoError(t, os.WriteFile(path, []byte("precious"), 0o600))
	return path, func() {
		t.Helper()
		b, err := os.ReadFile(path)
		fi, serr := os.Stat(path)
		assert.False(t, err != nil || serr != nil || string(b) != "precious" || fi.Mode().Perm() != 0o600, "the file outside the directory changed: %q, %v, %v", b, fi, err)
	}
}

// publishedIntact checks that dir/app is a regular file of mode 0644 that
// mmvfile reads with m = 42.
func publishedIntact(t *testing.T, dir string) {
	t.Helper()
	path := filepath.Join(dir, "app")
	fi, err := os.Lstat(path)
	require.False(t, err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o644, "%s is not our regular file: %v, %v", path, fi, err)
	f, err := mmvfile.Open(path)
	require.NoError(t, err)
	assert.False(t, len(f.Values) != 1 || f.Values[0].Uint != 42, "%s does not hold m = 42: %+v", path, f.Values)
}

// TestHostileLinkAtTarget plants at the file's name a symlink to a file
// outside the directory, a dangling symlink, a hard link to the outside
// file, and a FIFO: Start puts its file at the name in their place, so the
// outside files are never written, and Close (Process flag) removes only
// its own file.
func TestHostileLinkAtTarget(t *testing.T) {
	needFileLayer(t)
	for _, c := range []struct {
		name  string
		plant func(target, at string) error
	}{
		{"symlink", os.Symlink},
		{"hard link", os.Link},
		{"dangling symlink", func(target, at string) error { return os.Symlink(target+".new", at) }},
		{"FIFO", func(_, at string) error { return syscall.Mkfifo(at, 0o644) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path, unchanged := victim(t)
			require.NoError(t, c.plant(path, filepath.Join(dir, "app")))
			r, err := hostileRegistry(t, dir, mmv.Process)
			require.NoError(t, err)
			unchanged()
			publishedIntact(t, dir)
			_, err = os.Lstat(path + ".new")
			assert.ErrorIs(t, err, os.ErrNotExist, "a dangling link was followed")
			require.NoError(t, r.Close())
			unchanged()
			_, err = os.Lstat(filepath.Join(dir, "app"))
			assert.ErrorIs(t, err, os.ErrNotExist, "Close left the file")
		})
	}
}

// TestHostileDirectoryAtTarget: a directory planted at the file's name
// makes Start fail, leaving no temporary file behind.
func TestHostileDirectoryAtTarget(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "app"), 0o755))
	r, err := hostileRegistry(t, dir, 0)
	if err == nil {
		r.Close()
	}
	require.Error(t, err, "Start renamed over a directory")
	t.Log(err)
	es, _ := os.ReadDir(dir)
	assert.False(t, len(es) != 1 || es[0].Name() != "app" || !es[0].IsDir(), "Start left %v", es)
	assert.Equal(t, "", r.Path(), "a failed Start has a path")
}

// TestHostileReplacedBeforeClose: another file renamed over ours after
// Start is not removed by Close, even with the Process flag.
func TestHostileReplacedBeforeClose(t *testing.T) {
	needFileLayer(t)
	dir := t.TempDir()
	r, err := hostileRegistry(t, dir, mmv.Process)
	require.NoError(t, err)
	other := filepath.Join(dir, "other")
	require.NoError(t, os.WriteFile(other, []byte("theirs"), 0o644))
	require.NoError(t, os.Rename(other, filepath.Join(dir, "app")))
	require.NoError(t, r.Close())
	b, err := os.ReadFile(filepath.Join(dir, "app"))
	assert.False(t, err != nil || string(b) != "theirs", "Close removed or changed a file that is not its own: %q, %v", b, err)
}

// TestHostileDirectoryIsSymlink documents a decision: the directory itself
// may be a symlink, and is followed, as libpcp and PCP's reader follow it
// (an administrator may point $PCP_TMP_DIR/mmv elsewhere). Only the
// directory's owner can change where it points, and the library trusts the
// directory, not what is planted in it. PCP's reader, given the link, reads
// the file.
func TestHostileDirectoryIsSymlink(t *testing.T) {
	needFileLayer(t)
	tmp, elsewhere := t.TempDir(), t.TempDir()
	require.NoError(t, os.Symlink(elsewhere, filepath.Join(tmp, "mmv")))
	r, err := hostileRegistry(t, filepath.Join(tmp, "mmv"), 0)
	require.NoError(t, err)
	defer r.Close()
	publishedIntact(t, elsewhere)
	fi, err := os.Lstat(filepath.Join(tmp, "mmv"))
	assert.False(t, err != nil || fi.Mode()&os.ModeSymlink == 0, "the directory link was replaced: %v", err)
	if !pcptest.WantPCP(t) {
		return
	}
	m := pcptest.Find(pcptest.Info(t, tmp), "mmv.app.m")
	assert.False(t, m == nil || m.Value != "42", "PCP's reader through the linked directory shows %+v, want mmv.app.m = 42", m)
}

// TestHostileReadOnlyDirectory: a directory the process cannot write to,
// or cannot create the directory in, gives an error wrapping
// os.ErrPermission that names the directory and, on a machine with PCP
// (a pcp.conf), the ways out (PCP's group, PCP_TMP_DIR). Root can write
// anywhere, so as root the test runs its checks in a child process as the
// user nobody.
func TestHostileReadOnlyDirectory(t *testing.T) {
	needFileLayer(t)
	if childRole() == "readonly" {
		for _, dir := range strings.Split(os.Getenv("MMV_TEST_DIRS"), ":") {
			_, err := hostileRegistry(t, dir, 0)
			fmt.Printf("%t\t%v\n", errors.Is(err, os.ErrPermission), err)
		}
		return
	}
	t.Parallel() // as root, it waits on its child
	base := t.TempDir()
	ro := filepath.Join(base, "ro")
	require.NoError(t, os.Mkdir(ro, 0o755))
	require.NoError(t, os.Mkdir(filepath.Join(ro, "mmv"), 0o755))
	require.NoError(t, os.Chmod(filepath.Join(ro, "mmv"), 0o555))
	require.NoError(t, os.Chmod(ro, 0o555))
	require.NoError(t, os.Chmod(filepath.Dir(base), 0o755))
	require.NoError(t, os.Chmod(base, 0o755))
	t.Cleanup(func() { os.Chmod(ro, 0o755); os.Chmod(filepath.Join(ro, "mmv"), 0o755) })
	dirs := []string{filepath.Join(ro, "mmv"), filepath.Join(ro, "missing", "mmv")}

	var lines []string
	if os.Geteuid() != 0 {
		for _, dir := range dirs {
			_, err := hostileRegistry(t, dir, 0)
			lines = append(lines, fmt.Sprintf("%t\t%v", errors.Is(err, os.ErrPermission), err))
		}
	} else {
		cmd := childCmd(t, "TestHostileReadOnlyDirectory", "readonly",
			&syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, NoSetGroups: true}}, "MMV_TEST_DIRS="+strings.Join(dirs, ":"))
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "the child as nobody: %s", out)
		for _, l := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(l, "true\t") || strings.HasPrefix(l, "false\t") {
				lines = append(lines, l)
			}
		}
	}
	require.Len(t, lines, len(dirs), "results")
	for i, l := range lines {
		t.Log(l)
		is, msg, _ := strings.Cut(l, "\t")
		assert.Equal(t, "true", is, "%s: the error does not wrap os.ErrPermission: %s", dirs[i], msg)
		assert.Contains(t, msg, dirs[i])
		for _, advice := range []string{"PCP's group (pcp)", "PCP_TMP_DIR"} {
			assert.Equal(t, hasPCPConf(), strings.Contains(msg, advice), "%s: the advice %q: %s", dirs[i], advice, msg)
		}
	}
	es, _ := os.ReadDir(filepath.Join(ro, "mmv"))
	assert.Empty(t, es, "files left in the read-only directory")
}
