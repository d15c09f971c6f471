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

// TestVecFirstUseOnFullDisk: instances first used while the disk is full
// are not refused: their instruments count in memory of their own, and
// once space is freed the next publication puts every one in the file
// with its count.
func TestVecFirstUseOnFullDisk(t *testing.T) {
	dir := smallTmpfs(t, "256k") // room for the instances' labels once freed
	r := mmv.NewRegistry("full", &mmv.Options{Dir: dir, PublishDelay: time.Hour})
	defer r.Close()
	v := mmv.NewCounterVec(r, "v", "", mmv.Count, "k")
	v.With("declared")
	require.NoError(t, r.Start())
	filler := fill(t, dir)

	const n = 300
	for i := range n {
		c, err := v.Get(fmt.Sprint("i", i))
		require.NoError(t, err)
		c.Add(uint64(i))
	}
	require.ErrorIs(t, r.Flush(), syscall.ENOSPC)
	assert.Len(t, v.Instances(), n+1)

	require.NoError(t, os.Remove(filler))
	require.NoError(t, r.Flush())
	for i := range n {
		val, err := r.Value("v", fmt.Sprint("k=i", i))
		require.NoError(t, err)
		assert.Equal(t, int64(i), val.Int(), i)
	}
	assert.NotNil(t, v.With("after"), "the next instance takes the next id")
}
