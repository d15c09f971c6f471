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
)

// TestVecFirstUseOnFullDisk: instances first used while the disk is full
// are not refused: their instruments count in memory of their own, and
// once space is freed the next publication puts every one in the file
// with its count.
func TestVecFirstUseOnFullDisk(t *testing.T) {
	_, r, v, filler := fullVec(t, time.Hour, 0)

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
	file := filesValues(t, r)["v"]
	for i := range n {
		assert.Equal(t, uint64(i), file[fmt.Sprint("k=i", i)].Uint, i)
	}
	assert.NotNil(t, v.With("after"), "the next instance takes the next id")
}

// TestVecChurnOnFullDisk: values used once and deleted while new ones wait
// for a full disk: the indom forgets the deleted ones at a failed
// publication, the waiting instruments keep their counts through the
// renumbering, and all of them reach the file once space is freed.
func TestVecChurnOnFullDisk(t *testing.T) {
	_, r, v, filler := fullVec(t, time.Hour, 5)

	const n = 300
	for i := range n {
		v.With(fmt.Sprint("once", i)).Inc()
		require.True(t, v.Delete(fmt.Sprint("once", i)))
		if i%10 == 0 { // fewer kept than deleted: the deleted are forgotten
			c, err := v.Get(fmt.Sprint("i", i))
			require.NoError(t, err)
			c.Add(uint64(i))
		}
		if i%50 == 0 {
			require.ErrorIs(t, r.Flush(), syscall.ENOSPC)
		}
	}
	require.NoError(t, os.Remove(filler))
	require.NoError(t, r.Flush())
	file := filesValues(t, r)["v"]
	for i := 0; i < n; i += 10 {
		assert.Equal(t, uint64(i), file[fmt.Sprint("k=i", i)].Uint, i)
	}
	assert.Equal(t, uint64(5), file["k=declared"].Uint)
	assert.NotContains(t, file, "k=once0", "deleted")
}
