//go:build linux

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
)

// requireFileError checks that err wraps ErrFile and errno, and names
// the file and what the registry was doing.
func requireFileError(t *testing.T, err error, errno syscall.Errno, name, doing string) {
	t.Helper()
	t.Log(err)
	require.ErrorIs(t, err, mmv.ErrFile)
	require.ErrorIs(t, err, errno)
	assert.Contains(t, err.Error(), "file "+fmt.Sprintf("%q", name))
	assert.Contains(t, err.Error(), doing)
}

// TestFileErrorDiskFull: ENOSPC, at Start and at a growth step, wraps
// ErrFile and the system's error.
func TestFileErrorDiskFull(t *testing.T) {
	needFileLayer(t)
	t.Run("start", func(t *testing.T) {
		dir := pcptest.SmallTmpfs(t, "64k")
		pcptest.Fill(t, dir)
		r := diskRegistry(t, dir, 20)
		requireFileError(t, r.Start(), syscall.ENOSPC, "full", "cannot start")
		require.NoError(t, r.Close())
	})
	t.Run("growth", func(t *testing.T) {
		dir := pcptest.SmallTmpfs(t, "64k")
		r := diskRegistry(t, dir, 1)
		startOrSkip(t, r)
		defer r.Close()
		pcptest.Fill(t, dir)
		var err error
		for i := 1; i < 20 && err == nil; i++ {
			err = r.AddMetric(mmv.Metric{Name: "m" + string(rune('a'+i)), Type: mmv.Uint64, Semantics: mmv.SemCounter,
				ShortHelp: strings.Repeat("h", 200), LongHelp: strings.Repeat("l", 200)})
			if err == nil {
				err = r.Flush()
			}
		}
		requireFileError(t, err, syscall.ENOSPC, "full", "cannot grow")
	})
}

// TestFileErrorPermission: a directory the process may not write to gives
// an error wrapping ErrFile and EACCES, which advises PCP's group only on a
// machine with PCP (a pcp.conf): without, there is none to join. Root
// writes anywhere, so as root the registry starts in a child process as
// the user nobody.
func TestFileErrorPermission(t *testing.T) {
	needFileLayer(t)
	if childRole() == "eacces" {
		r := appRegistry(t, os.Getenv("MMV_TEST_DIR"), 0)
		err := r.Start()
		fmt.Printf("%t\t%t\t%v\n", errors.Is(err, mmv.ErrFile), errors.Is(err, syscall.EACCES), err)
		return
	}
	t.Parallel() // as root, it waits on its child
	base := t.TempDir()
	dir := filepath.Join(base, "ro")
	require.NoError(t, os.Mkdir(dir, 0o555))
	require.NoError(t, os.Chmod(filepath.Dir(base), 0o755))
	require.NoError(t, os.Chmod(base, 0o755))
	withPCP := hasPCPConf()
	if os.Geteuid() != 0 {
		err := appRegistry(t, dir, 0).Start()
		requireFileError(t, err, syscall.EACCES, "app", "cannot start")
		assert.Equal(t, withPCP, strings.Contains(err.Error(), "PCP's group"), "the advice: %v", err)
		return
	}
	cmd := childCmd(t, "TestFileErrorPermission", "eacces",
		&syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, NoSetGroups: true}}, "MMV_TEST_DIR="+dir)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	var line string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Count(l, "\t") == 2 {
			line = l
		}
	}
	t.Log(line)
	f := strings.SplitN(line, "\t", 3)
	require.Len(t, f, 3)
	assert.Equal(t, "true", f[0], "the error does not wrap ErrFile")
	assert.Equal(t, "true", f[1], "the error does not wrap EACCES")
	assert.Contains(t, f[2], `file "app"`)
	assert.Contains(t, f[2], "cannot start")
	assert.Equal(t, withPCP, strings.Contains(f[2], "PCP's group"), "the advice: %s", f[2])
}
