package mmv_test

import (
	"encoding/binary"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/mmvfile"
)

// TestSetString: a string value holds at most 255 bytes, NUL-terminated
// in its slot, with its length in the value itself as libpcp keeps it;
// longer strings and other types are refused.
func TestSetString(t *testing.T) {
	needFileLayer(t)
	r := newRegistry(t, "strings", filepath.Join(t.TempDir(), "mmv"), mmv.Options{})
	require.NoError(t, errors.Join(
		r.AddMetric(mmv.Metric{Name: "s", Type: mmv.String, Semantics: mmv.SemDiscrete}),
		r.AddMetric(mmv.Metric{Name: "n", Type: mmv.Uint64, Semantics: mmv.SemCounter}),
		r.Start(),
	))
	s, _ := r.Value("s", "")
	n, _ := r.Value("n", "")
	for _, text := range []string{"a longer string first", "", "short", strings.Repeat("x", 255)} {
		require.NoError(t, s.SetString(text))
		f, err := mmvfile.Open(r.Path())
		require.NoError(t, err)
		v := f.Values[0]
		assert.False(t, v.String != text || s.String() != text, "file holds %q, handle reads %q, want %q", v.String, s.String(), text)
		assert.Equal(t, uint32(len(text)), binary.NativeEndian.Uint32(v.Atom[:]), "value holds length")
	}
	assert.ErrorIs(t, s.SetString(strings.Repeat("x", 256)), mmv.ErrTooLong, "256 bytes")
	assert.Equal(t, strings.Repeat("x", 255), s.String(), "a refused string changed the value")
	assert.ErrorIs(t, n.SetString("x"), mmv.ErrType, "SetString on a number")
}

// TestSetFloatOnUint64: SetFloat and AddFloat convert f to a Uint64
// value's own range, up to 2^64, where a conversion through int64 made
// every value from 2^63 up 2^63.
func TestSetFloatOnUint64(t *testing.T) {
	needFileLayer(t)
	r := newRegistry(t, "floats", filepath.Join(t.TempDir(), "mmv"), mmv.Options{})
	require.NoError(t, errors.Join(
		r.AddMetric(mmv.Metric{Name: "n", Type: mmv.Uint64, Semantics: mmv.SemCounter}),
		r.Start(),
	))
	n, _ := r.Value("n", "")
	read := func() uint64 {
		f, err := mmvfile.Open(r.Path())
		require.NoError(t, err)
		return f.Values[0].Uint
	}
	for _, x := range []float64{1e19, 1 << 63, 1<<63 - 1024, 2.9} {
		n.SetFloat(x)
		assert.Equal(t, uint64(x), read(), "SetFloat(%g)", x)
	}
	n.Set(5)
	n.AddFloat(1.5e19)
	assert.Equal(t, uint64(5+1.5e19), read(), "AddFloat(1.5e19) on 5")
}

// TestElapsedReadsOpenInterval: an Elapsed value reads as PCP reads it,
// its interval open since StartInterval counted up to now, so Snapshot,
// Gather and the exposition agree with PCP while it runs.
func TestElapsedReadsOpenInterval(t *testing.T) {
	needFileLayer(t)
	r := newRegistry(t, "elapsed", filepath.Join(t.TempDir(), "mmv"), mmv.Options{})
	require.NoError(t, errors.Join(
		r.AddMetric(mmv.Metric{Name: "busy", Type: mmv.Elapsed, Semantics: mmv.SemCounter, Units: mmv.Microsecond}),
		r.Start(),
	))
	v, _ := r.Value("busy", "")
	v.AddDuration(time.Second)
	assert.Equal(t, int64(1e6), v.Int())
	v.StartInterval()
	time.Sleep(50 * time.Millisecond)
	open := v.Int()
	assert.GreaterOrEqual(t, open, int64(1.05e6), "the open interval counts")
	time.Sleep(10 * time.Millisecond)
	assert.Greater(t, v.Int(), open, "and grows while open")
	v.EndInterval()
	closed := v.Int()
	time.Sleep(10 * time.Millisecond)
	assert.Equal(t, closed, v.Int(), "closed, it stays")
}

// TestSetStringErrorNamesTheValue: SetString's refusals name the metric
// and instance of the value, read from its file (a Value holds no name):
// they named nothing, and a program with many handles could not tell
// which one it misused.
func TestSetStringErrorNamesTheValue(t *testing.T) {
	for _, version := range []struct {
		name string
		long bool
	}{{"v1", false}, {"v2", true}} {
		t.Run(version.name, func(t *testing.T) {
			_, dir := pcpDir(t)
			r := newRegistry(t, "ss", dir, mmv.Options{})
			inst := "eth0"
			if version.long { // past v1's 63 bytes: a v2 file
				inst = strings.Repeat("e", 70)
			}
			require.NoError(t, r.AddIndom(mmv.Indom{Serial: 1, Instances: []mmv.Instance{{ID: 0, Name: inst}}}))
			require.NoError(t, r.AddMetric(mmv.Metric{Name: "motd", Type: mmv.String, Semantics: mmv.SemDiscrete}))
			require.NoError(t, r.AddMetric(mmv.Metric{Name: "rx_bytes", Type: mmv.Uint64, Semantics: mmv.SemCounter, Indom: 1}))
			startOrSkip(t, r)
			f, err := mmvfile.Open(r.Path())
			require.NoError(t, err)
			require.Equal(t, map[bool]int{false: 1, true: 2}[version.long], f.Header.Version)

			err = value(t, r, "motd", "").SetString(strings.Repeat("x", 300))
			require.ErrorIs(t, err, mmv.ErrTooLong)
			assert.Contains(t, err.Error(), `metric "motd"`)

			err = value(t, r, "rx_bytes", inst).SetString("up")
			require.ErrorIs(t, err, mmv.ErrType)
			assert.Contains(t, err.Error(), `metric "rx_bytes" instance "`+inst+`"`)

			require.ErrorIs(t, (*mmv.Value)(nil).SetString("x"), mmv.ErrType)
		})
	}
}

// TestSetStringErrorNamesOverflowValueAsDeclared: SetString's refusal of
// a value in an overflow file names its metric as declared, where it
// named it as the file spells it, the registry's name first.
func TestSetStringErrorNamesOverflowValueAsDeclared(t *testing.T) {
	_, dir := pcpDir(t)
	r := declareSpilling(dir, "ovname", 1)
	t.Cleanup(func() { r.Close() })
	startOrSkip(t, r)
	v, err := r.Value("count", "") // in ovname.2
	require.NoError(t, err)
	err = v.SetString("x")
	require.ErrorIs(t, err, mmv.ErrType)
	assert.Contains(t, err.Error(), `metric "count"`)
}
