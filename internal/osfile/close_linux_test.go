//go:build linux && !mmv_noport

package osfile

import (
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
