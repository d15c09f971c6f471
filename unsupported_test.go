//go:build !(linux || darwin || freebsd) || mmv_noport

package mmv_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
)

// TestUnsupported: on a system with no port of the file layer (on Linux,
// built with -tags mmv_noport), declarations and updates work and Start
// fails with ErrUnsupported naming the file; the registry closes cleanly.
func TestUnsupported(t *testing.T) {
	r := mmv.NewRegistry("unsupported_app", &mmv.Options{Dir: t.TempDir()})
	c := mmv.NewCounter(r, "requests", "Requests served.", mmv.Count)
	c.Inc()
	err := r.Start()
	require.ErrorIs(t, err, mmv.ErrUnsupported)
	assert.Contains(t, err.Error(), `"unsupported_app"`)
	c.Inc()
	assert.Equal(t, "", r.Path())
	assert.NoError(t, r.Close())
}
