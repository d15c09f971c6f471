package pcptest

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv/internal/osfile"
)

// TestHasFileLayer: HasFileLayer says what creating a file in the file
// layer finds, and NeedFileLayer skips exactly where it is missing.
func TestHasFileLayer(t *testing.T) {
	d, err := osfile.OpenDir(filepath.Join(t.TempDir(), "mmv"), osfile.Format{})
	if err == nil {
		d.Close()
	}
	if errors.Is(err, osfile.ErrUnsupported) {
		require.ErrorIs(t, HasFileLayer(), osfile.ErrUnsupported)
	} else {
		require.NoError(t, err)
		require.NoError(t, HasFileLayer())
	}
	var sub *testing.T
	t.Run("need", func(t *testing.T) { sub = t; NeedFileLayer(t) })
	assert.Equal(t, HasFileLayer() != nil, sub.Skipped())
}

// TestRunWithoutFiles: where there is no file layer, RunWithoutFiles
// returns the error of a run that fails at once.
func TestRunWithoutFiles(t *testing.T) {
	refused := errors.New("refused")
	var sub *testing.T
	t.Run("run", func(t *testing.T) {
		sub = t
		assert.Equal(t, refused, RunWithoutFiles(t, func(context.Context, io.Writer, time.Duration) error { return refused }))
	})
	assert.Equal(t, HasFileLayer() == nil, sub.Skipped(), "skipped where there are files")
}
