package mmv

import (
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv/internal/pcptest"
)

// instrumentKind is a New function, and the metric names it declares for
// an instrument named name.
type instrumentKind struct {
	kind    string
	declare func(r *Registry, name string)
	metrics func(name string) []string
}

// histogramParts are the metric name parts of a histogram with the
// default quantiles.
var histogramParts = []string{"bucket", "count", "sum", "min", "max", "mean", "p50", "p90", "p99", "p999"}

func histogramMetrics(name string) []string {
	ms := make([]string, len(histogramParts))
	for i, p := range histogramParts {
		ms[i] = name + "." + p
	}
	return ms
}

func oneMetric(name string) []string { return []string{name} }

// instrumentKinds lists every New function.
var instrumentKinds = []instrumentKind{
	{"Counter", func(r *Registry, n string) { NewCounter(r, n, "h", Count) }, oneMetric},
	{"Gauge", func(r *Registry, n string) { NewGauge(r, n, "h", Count) }, oneMetric},
	{"IntGauge", func(r *Registry, n string) { NewIntGauge(r, n, "h", Count) }, oneMetric},
	{"Timer", func(r *Registry, n string) { NewTimer(r, n, "h") }, oneMetric},
	{"CounterFunc", func(r *Registry, n string) { NewCounterFunc(r, n, "h", Count, func() uint64 { return 1 }) }, oneMetric},
	{"GaugeFunc", func(r *Registry, n string) { NewGaugeFunc(r, n, "h", Count, func() float64 { return 1 }) }, oneMetric},
	{"IntGaugeFunc", func(r *Registry, n string) { NewIntGaugeFunc(r, n, "h", Count, func() int64 { return 1 }) }, oneMetric},
	{"CounterVec", func(r *Registry, n string) { NewCounterVec(r, n, "h", Count, "k").With("x").Inc() }, oneMetric},
	{"GaugeVec", func(r *Registry, n string) { NewGaugeVec(r, n, "h", Count, "k").With("x").Inc() }, oneMetric},
	{"IntGaugeVec", func(r *Registry, n string) { NewIntGaugeVec(r, n, "h", Count, "k").With("x").Inc() }, oneMetric},
	{"TimerVec", func(r *Registry, n string) { NewTimerVec(r, n, "h", "k").With("x").Observe(1) }, oneMetric},
	{"Histogram", func(r *Registry, n string) { NewHistogram(r, n, "h", Second, nil).Observe(1) }, histogramMetrics},
	{"HistogramVec", func(r *Registry, n string) { NewHistogramVec(r, n, "h", Second, nil, "k").With("x").Observe(1) }, histogramMetrics},
}

// refusal returns the error declare panicked with, nil when it did not.
func refusal(declare func()) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = p.(error)
		}
	}()
	declare()
	return nil
}

// nameOf returns a valid metric name of n bytes.
func nameOf(n int) string { return "a" + strings.Repeat("b", n-1) }

// TestNamesUpToTheLimit declares every kind of instrument under names of
// every length from 1 to 256 bytes: a name is refused, with ErrTooLong,
// only when a metric name it makes passes 255 bytes, never because of a
// help text the registry makes up (an indom's "Instances of " + name took
// vectors' names of 243 bytes and more, histograms' of 228).
func TestNamesUpToTheLimit(t *testing.T) {
	for _, k := range instrumentKinds {
		t.Run(k.kind, func(t *testing.T) {
			for n := 1; n <= MaxStringLen+1; n++ {
				name := nameOf(n)
				valid := true
				for _, m := range k.metrics(name) {
					valid = valid && len(m) <= MaxStringLen
				}
				r := NewRegistry("names", &Options{Dir: t.TempDir()})
				err := refusal(func() { k.declare(r, name) })
				if valid {
					require.NoError(t, err, "a name of %d bytes", n)
					for _, in := range r.indoms {
						assert.LessOrEqual(t, len(in.ShortHelp), MaxStringLen, "indom help, name of %d bytes", n)
					}
				} else {
					require.ErrorIs(t, err, ErrTooLong, "a name of %d bytes", n)
				}
				r.Close()
			}
		})
	}
}

// TestNamesAtTheLimitInPCP declares every kind of instrument under the
// longest names it takes, and a few bytes shorter, and reads the file
// with PCP's reader: every metric is there under its whole name, and the
// indoms' help texts made from the longest names are cut to fit.
func TestNamesAtTheLimitInPCP(t *testing.T) {
	pcptest.MustHavePCP(t)
	tmp := t.TempDir()
	r := NewRegistry("longnames", &Options{Dir: filepath.Join(tmp, "mmv")})
	defer r.Close()
	var want []string
	for i, k := range instrumentKinds {
		longest := MaxStringLen
		for _, m := range k.metrics("") {
			longest = min(longest, MaxStringLen-len(m))
		}
		for n := longest - 2; n <= longest; n++ {
			name := string(rune('a'+i)) + strings.Repeat("b", n-1)
			require.NoError(t, refusal(func() { k.declare(r, name) }), "%s of %d bytes", k.kind, n)
			want = append(want, k.metrics(name)...)
		}
	}
	require.NoError(t, r.Start())
	ms := pcptest.Info(t, tmp)
	for _, name := range want {
		m := pcptest.Find(ms, "mmv.longnames."+name)
		if assert.NotNil(t, m, "PCP shows %s", name) && !m.Singular() {
			assert.NotEmpty(t, m.Instances, "%s has its instances", name)
		}
	}
}

func TestFitHelp(t *testing.T) {
	assert.Equal(t, "short", fitHelp("short"))
	exact := strings.Repeat("x", MaxStringLen)
	assert.Equal(t, exact, fitHelp(exact))
	long := fitHelp(strings.Repeat("x", MaxStringLen+1))
	assert.Len(t, long, MaxStringLen)
	assert.True(t, strings.HasSuffix(long, "..."))
	// A character cut by the limit goes whole.
	cut := fitHelp(strings.Repeat("x", MaxStringLen-4) + "é" + "tail")
	assert.Equal(t, strings.Repeat("x", MaxStringLen-4)+"...", cut)
	assert.True(t, utf8.ValidString(cut))
}
