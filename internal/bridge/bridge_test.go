package bridge_test

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/bridge"
)

// TestMetric: without labels one instrument, the same for any values, that
// Remove leaves; with labels one per values, limited, removed by Remove.
func TestMetric(t *testing.T) {
	r := mmv.NewRegistry("series_test", &mmv.Options{Dir: t.TempDir()})
	one, err := bridge.Declare[mmv.Counter](r, "one", "", mmv.Count, nil, 1)
	require.NoError(t, err)
	c, err := one.Get(nil)
	require.NoError(t, err)
	c.Inc()
	again, err := one.Get([]string{"ignored"})
	require.NoError(t, err)
	assert.Same(t, c, again)
	assert.False(t, one.Remove(nil))
	assert.Same(t, c, one.Single())

	vec, err := bridge.Declare[mmv.Gauge](r, "vec", "", mmv.Count, []string{"k"}, 1)
	require.NoError(t, err)
	assert.Nil(t, vec.Single())
	a, err := vec.Get([]string{"a"})
	require.NoError(t, err)
	a.Set(1)
	_, err = vec.Get([]string{"b"})
	require.ErrorIs(t, err, mmv.ErrTooMany, "past the limit")
	assert.True(t, vec.Remove([]string{"a"}))
	assert.False(t, vec.Remove([]string{"a"}))

	_, err = bridge.Declare[mmv.Counter](r, "one", "", mmv.Count, nil, 1)
	require.ErrorIs(t, err, mmv.ErrDuplicate)
}

// TestCount: what a counter can hold of a float total.
func TestCount(t *testing.T) {
	n, ok := bridge.Count(1.25, 1e9)
	assert.True(t, ok)
	assert.Equal(t, uint64(1250000000), n)
	for _, f := range []float64{-1, 1 << 64, math.NaN()} {
		_, ok := bridge.Count(f, 1)
		assert.False(t, ok, f)
	}
}

// TestHelp: a help text mmv takes whatever its parts: NUL bytes made
// spaces, each part cut to 255 bytes (pcpname.Help), no long help
// without one.
func TestHelp(t *testing.T) {
	assert.Equal(t, "a b", bridge.Help("a\x00b", ""))
	assert.Equal(t, "a\nb c", bridge.Help("a", "b\x00c"))
	long := strings.Repeat("x", mmv.MaxStringLen-1) + "é" // é's second byte past 255
	got := bridge.Help(long, long)
	cut := strings.Repeat("x", mmv.MaxStringLen-3) + "..."
	assert.Equal(t, cut+"\n"+cut, got)
	r := mmv.NewRegistry("help", &mmv.Options{Dir: t.TempDir()})
	_, err := mmv.Declare[mmv.Counter](r, "h", bridge.Help("a\x00"+long, "b\x00"+long), mmv.Count)
	require.NoError(t, err, "mmv takes it")
}

// TestWithdraw: a single instrument withdrawn holds its kind's reserved
// value, which PCP shows as no value with the Sentinel flag; a vector's
// instances stay (Remove takes them out). Withdraws follows the
// registry's flag as Configure changes it.
func TestWithdraw(t *testing.T) {
	r := mmv.NewRegistry("withdraw", &mmv.Options{Dir: t.TempDir(), Flags: mmv.Sentinel})
	require.True(t, bridge.Withdraws(r))
	c, err := bridge.Declare[mmv.Counter](r, "c", "", mmv.Count, nil, 1)
	require.NoError(t, err)
	ig, err := bridge.Declare[mmv.IntGauge](r, "i", "", mmv.Count, nil, 1)
	require.NoError(t, err)
	g, err := bridge.Declare[mmv.Gauge](r, "g", "", mmv.Count, nil, 1)
	require.NoError(t, err)
	vec, err := bridge.Declare[mmv.Counter](r, "v", "", mmv.Count, []string{"k"}, 1)
	require.NoError(t, err)
	a, err := vec.Get([]string{"a"})
	require.NoError(t, err)
	a.Set(3)
	for _, m := range []interface{ Withdraw() }{c, ig, g, vec} {
		m.Withdraw()
	}
	assert.Equal(t, uint64(math.MaxUint64), c.Single().Get())
	assert.Equal(t, int64(-1), ig.Single().Get())
	assert.True(t, math.IsNaN(g.Single().Get()))
	assert.Equal(t, uint64(3), a.Get(), "a vector's instance stays")

	o := r.Options()
	o.Flags &^= mmv.Sentinel
	require.NoError(t, r.Configure(r.Name(), o))
	assert.False(t, bridge.Withdraws(r), "the flag as the registry has it now")
}
