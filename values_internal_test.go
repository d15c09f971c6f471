package mmv

import (
	"os"
	"sync/atomic"
	"testing"

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
