//go:build !(linux || darwin || freebsd) || mmv_noport

package osfile

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestUnsupported: without a port, the directory and the file refuse with
// ErrUnsupported.
func TestUnsupported(t *testing.T) {
	_, err := OpenDir(t.TempDir(), Format{})
	require.ErrorIs(t, err, ErrUnsupported)
	_, err = Create(&Dir{path: t.TempDir()}, "app", 4096, 0, 0, func([]byte) {})
	require.ErrorIs(t, err, ErrUnsupported)
	_, err = (&Dir{}).LockClaims(0)
	require.ErrorIs(t, err, ErrUnsupported)
}
