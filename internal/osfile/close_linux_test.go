//go:build linux && !mmv_noport

package osfile

import (
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCloseWaitsForReplacedFiles: the files Create and Replace rename
// over are closed off their callers' path (letGo), and every descriptor
// of them is closed when Close returns. They are 16 MB, so that their
// closes, which free their page cache, are still running when a Close that
// did not wait for them returned.
func TestCloseWaitsForReplacedFiles(t *testing.T) {
	d := openTestDir(t, t.TempDir())
	const size = 16 << 20
	before := openDescriptors(t)
	last := create(t, d, "app", size) // the file a last run left
	require.NoError(t, last.Close(false))
	f := create(t, d, "app", size)
	for i := range 2 {
		require.NoError(t, f.Replace(size+int64(i+1)*8192, 8192, 4096, 0, fillHead, func(_, _ []byte) {}, nil))
	}
	require.NoError(t, f.Close(true))
	assert.Equal(t, before, openDescriptors(t))
}

// TestCloseFreesNameHeldByAChild: a descriptor of the file's lock that a
// child of the process holds (one forked between the open and its exec,
// which closes it; here passed on to a child that sleeps) no longer keeps
// the name once Close returns: the next owner of the name takes it at
// once, where it waited for the child's exec, past lockAttempts under load,
// and failed with an *InUseError naming this process.
func TestCloseFreesNameHeldByAChild(t *testing.T) {
	d := openTestDir(t, t.TempDir())
	f := create(t, d, "app", 8192)
	child := exec.Command("sleep", "30")
	child.ExtraFiles = []*os.File{os.NewFile(uintptr(f.named), "lock")} // the child's fd 3: the same open file
	require.NoError(t, child.Start())
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })
	require.NoError(t, f.Close(false))
	next, err := Create(d, "app", 8192, 4096, 4096, fillHead)
	require.NoError(t, err, "the name is free once its holder closed it")
	require.NoError(t, next.Close(true))
}
