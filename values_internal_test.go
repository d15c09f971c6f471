package mmv

import (
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSetStringWithoutRecordIsDropped: a String value's handle writes its
// text where its record's string offset points only when that is one of
// the file's string records. An offset of 0, what a record held before a
// publication laid out its string record, made SetString write over the
// file's header and TOC, and String read the header; any offset that is
// not a string record's start (the TOC, mid-record, past the file) is
// now a dropped write and reads "".
func TestSetStringWithoutRecordIsDropped(t *testing.T) {
	r := newTestRegistry(t, "strrec")
	require.NoError(t, r.AddMetric(Metric{Name: "s", Type: String, Semantics: SemDiscrete}))
	startOrSkip(t, r)
	v := mustValue(t, r, "s", "")
	require.NoError(t, v.SetString("good"))
	good := atomic.LoadInt64(v.extra())
	before, err := os.ReadFile(r.Path())
	require.NoError(t, err)
	for _, off := range []int64{0, headerSize, good + 1, int64(len(before)), -1} {
		atomic.StoreInt64(v.extra(), off)
		require.NoError(t, v.SetString("bad"), "offset %d", off)
		assert.Equal(t, "", v.String(), "offset %d", off)
		atomic.StoreInt64(v.extra(), good)
		after, err := os.ReadFile(r.Path())
		require.NoError(t, err)
		assert.Equal(t, before, after, "the file after SetString through offset %d", off)
	}
	assert.Equal(t, "good", v.String())
}

// TestDetachedHandlesKeepTheirOwnValues: the handles a vector's Delete
// detaches from their slots, and those Close detaches, each keep their
// own last value, in records made an array at a time: Close of 1,000
// handles makes one.
func TestDetachedHandlesKeepTheirOwnValues(t *testing.T) {
	r := NewRegistry("detach", &Options{Dir: t.TempDir(), PublishDelay: time.Hour})
	t.Cleanup(func() { r.Close() })
	v := NewCounterVec(r, "c", "", Count, "k")
	startOrSkip(t, r)
	for i := range 1000 {
		v.With(strconv.Itoa(i)).Add(uint64(i))
	}
	require.NoError(t, r.Flush())
	r.mu.Lock()
	m := r.named("c")
	handles := make([]*Value, 1000)
	for i := range handles {
		handles[i] = r.handleOfLocked(m, vecIDLocked(v, "k="+strconv.Itoa(i)), -1)
		require.NotNil(t, handles[i])
	}
	r.mu.Unlock()

	require.True(t, v.Delete("1"))
	require.True(t, v.Delete("2"))
	handles[1].Add(10)
	assert.EqualValues(t, 11, handles[1].Int(), "a deleted instance's handle, its last value and what was added through it")
	assert.EqualValues(t, 2, handles[2].Int(), "another deleted instance's handle")

	r.mu.Lock()
	p := r.parts[0]
	allocs := testing.AllocsPerRun(1, func() {
		p.detach() // what Close does, twice: each handle at a new record, with its value
	})
	r.mu.Unlock()
	assert.LessOrEqual(t, allocs, 1.0, "allocations of detaching 998 handles")
	require.NoError(t, r.Close())
	for i, h := range handles {
		want := uint64(i)
		if i == 1 {
			want = 11
		}
		assert.EqualValues(t, want, h.Int(), "handle %d after Close", i)
	}
}
