//go:build linux

package mmv_test

import (
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
)

// TestVecFirstUseOnFullDisk: an instance whose growth the full disk
// refuses makes Get return ENOSPC and With nil; once space is freed and
// the registry publishes, the same name gets its instrument (the instance
// was declared, with its id, the first time).
func TestVecFirstUseOnFullDisk(t *testing.T) {
	dir := smallTmpfs(t, "64k")
	r := mmv.NewRegistry("full", &mmv.Options{Dir: dir, PublishDelay: time.Hour})
	defer r.Close()
	v := mmv.NewCounterVec(r, "v", "", mmv.Count, "declared")
	require.NoError(t, r.Start())
	filler := fill(t, dir)

	var failed string
	var err error
	for i := 0; i < 10000 && err == nil; i++ {
		failed = fmt.Sprint("i", i)
		var c *mmv.Counter
		if c, err = v.Get(failed); err == nil {
			c.Inc() // in the spare room: live at once
		}
	}
	require.ErrorIs(t, err, syscall.ENOSPC)
	assert.Nil(t, v.With(failed))
	n := len(v.Instances())

	require.NoError(t, os.Remove(filler))
	require.NoError(t, r.Flush())
	c, err := v.Get(failed)
	require.NoError(t, err)
	c.Add(7)
	require.NoError(t, r.Flush())
	assert.Len(t, v.Instances(), n+1)
	for in, want := range map[string]int64{failed: 7, "i0": 1, "declared": 0} {
		val, err := r.Value("v", in)
		require.NoError(t, err)
		assert.Equal(t, want, val.Int(), in)
	}
	assert.NotNil(t, v.With("after"), "the next instance takes the next id")
}
