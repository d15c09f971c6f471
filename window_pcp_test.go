package mmv_test

import (
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
)

// After 100,000 observations of 2 ms, 500 of 2 s move p99 to 2 s once
// the window has passed, as PCP's reader shows it, while a histogram over
// everything since Start still reads 2 ms and the counts stay cumulative.
// (The 2 s are 0.5% of all: under the top 1% since Start, all of the
// window. Ten times as many of each, as the test once had, is the same
// proof at 2.5 s of observing under -race.)
func TestQuantileWindowThroughPCP(t *testing.T) {
	pcptest.MustHavePCP(t)
	tmp := t.TempDir()
	const window, interval = time.Second, 50 * time.Millisecond
	r := mmv.NewRegistry("win", &mmv.Options{Dir: filepath.Join(tmp, "mmv")})
	recent := mmv.NewHistogram(r, "recent", "Latency", mmv.Second, &mmv.HistogramOptions{Window: window, Interval: interval})
	all := mmv.NewHistogram(r, "all", "Latency", mmv.Second, &mmv.HistogramOptions{Window: mmv.SinceStart, Interval: interval})
	startOrSkip(t, r)
	defer r.Close()
	value := func(ms []pcptest.Metric, name, inst string) string {
		m := pcptest.Find(ms, "mmv.win."+name)
		require.NotNil(t, m, "PCP shows %s", name)
		if inst == "" {
			return m.Value
		}
		in := m.Instance(inst)
		require.NotNil(t, in, "%s[%s]", name, inst)
		return in.Value
	}
	// published waits until both histograms' refreshes have written count
	// n into the file (a refresh writes a histogram's statistics together,
	// under its lock, so PCP's reader started after sees them whole), and
	// fails the test if they never do.
	published := func(n int64) {
		t.Helper()
		require.Eventually(t, func() bool {
			for _, h := range []string{"recent", "all"} {
				v, err := r.Value(h+".count", "")
				if err != nil || v.Int() != n {
					return false
				}
			}
			return true
		}, 30*time.Second, interval/5, "count %d never published", n)
	}

	for range 100_000 {
		recent.Observe(0.002)
		all.Observe(0.002)
	}
	published(100_000)
	ms := pcptest.Info(t, tmp)
	assert.Equal(t, "0.002", value(ms, "recent.p99", ""))
	assert.Equal(t, "0.002", value(ms, "all.p99", ""))

	time.Sleep(window) // the 2 ms leave the window
	for range 500 {
		recent.Observe(2)
		all.Observe(2)
	}
	published(100_500)
	ms = pcptest.Info(t, tmp)
	assert.Equal(t, "2", value(ms, "recent.p99", ""), "p99 over the window")
	assert.Equal(t, "2", value(ms, "recent.p50", ""))
	assert.Equal(t, "2", value(ms, "recent.min", ""))
	// The quantiles above are narrowed to the window's min and max, both
	// 2 s: they would read 2 even if the window kept every count. The
	// mean is of the window's counts and sum alone.
	mean, err := strconv.ParseFloat(value(ms, "recent.mean", ""), 64)
	require.NoError(t, err)
	assert.InDelta(t, 2, mean, 1e-9, "mean over the window")
	// Since Start, p99 is still in the 2 ms bucket (0.001, 0.0025]: its
	// middle, narrowed to the min.
	assert.Equal(t, "0.00225", value(ms, "all.p99", ""), "p99 since Start")
	assert.Equal(t, "0.002", value(ms, "all.min", ""))
	for _, h := range []string{"recent", "all"} {
		assert.Equal(t, "100500", value(ms, h+".count", ""), "%s.count cumulative", h)
		assert.Equal(t, "100000", value(ms, h+".bucket", "0.0025"), "%s.bucket cumulative", h)
		assert.Equal(t, "500", value(ms, h+".bucket", "2.5"))
	}
}
