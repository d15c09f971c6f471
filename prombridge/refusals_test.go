package prombridge_test

import (
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/prombridge"
)

// TestNameRefusals: families whose PCP names would clash or poison the
// namespace are skipped and counted, and PCP still loads the others.
func TestNameRefusals(t *testing.T) {
	pcptest.MustHavePCP(t)
	pr := prometheus.NewRegistry()
	gauge := func(name string) prometheus.Gauge {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: name})
		pr.MustRegister(g)
		g.Set(1)
		return g
	}
	gauge("a:b")
	gauge("a_b")     // a:b's PCP name: skipped
	gauge("program") // the program's own metric has the name: skipped
	gauge("foo")
	gauge("foo_total") // a gauge keeps _total
	gauge("foo_bar")   // '_' is no dot: published
	// mmv_total is mmv, which mmv keeps for its own metrics: skipped.
	pr.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "mmv_total", Help: "reserved"}, func() float64 { return 1 }))
	// A counter bar_total gathered with a histogram bar keeps its _total:
	// bar_total, bar.bucket, bar.sum, bar.count.
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "bar_total", Help: "c"})
	pr.MustRegister(c)
	c.Inc()
	hb := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "bar", Help: "h"})
	pr.MustRegister(hb)
	hb.Observe(1)

	r, tmp := newRegistry(t)
	mmv.NewGauge(r, "program", "the program's own", mmv.NoUnits)
	b, err := prombridge.Register(r, pr, nil)
	require.NoError(t, err)
	pcptest.NeedFileLayer(t)
	require.NoError(t, r.Start())
	err = b.Refresh()
	require.Error(t, err)
	t.Log(err)
	assert.ErrorContains(t, err, "family a_b not published: its PCP name a_b is family a:b's")
	assert.ErrorContains(t, err, "family program not published")
	assert.ErrorIs(t, err, mmv.ErrDuplicate)
	assert.ErrorContains(t, err, "family mmv_total not published as mmv")
	assert.ErrorIs(t, err, mmv.ErrNamespace)
	st := b.Stats()
	assert.Equal(t, 3, st.Skipped, "a_b, program, mmv_total")
	assert.Equal(t, 6, st.Families, "a:b, foo, foo_total, foo_bar, bar_total, bar")

	// Growth: a counter baz_total takes baz; a histogram baz added later
	// would make baz a prefix of baz.bucket at a dot: it is skipped.
	baz := prometheus.NewCounter(prometheus.CounterOpts{Name: "baz_total", Help: "c"})
	pr.MustRegister(baz)
	require.Error(t, b.Refresh())
	hz := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "baz", Help: "h"})
	pr.MustRegister(hz)
	hz.Observe(1)
	err = b.Refresh()
	assert.ErrorContains(t, err, "family baz not published: its PCP name baz is family baz_total's")
	st = b.Stats()
	assert.Equal(t, 4, st.Skipped)
	assert.Equal(t, 7, st.Families)

	ms := read(t, r, tmp)
	for _, name := range []string{"a_b", "program", "foo", "foo_total", "foo_bar", "bar_total", "bar.bucket", "bar.sum", "bar.count", "baz"} {
		find(t, ms, name)
	}
	for _, name := range []string{"mmv", "baz.bucket", "baz.count"} {
		assert.Nil(t, pcptest.Find(ms, "mmv."+file+"."+name), name)
	}
}

// TestNameOfAnotherFileRetried: a family declared after Start that mmv
// refuses with ErrNamespace, another live file of the directory holding
// its name, is counted and named; once that file is gone (its registry
// closed with the Process flag) the family is published at the next
// refresh. It was refused for good, though the refusal depended on
// another program's file, not on the family.
func TestNameOfAnotherFileRetried(t *testing.T) {
	pcptest.MustHavePCP(t)
	r, tmp := newRegistry(t)
	other := mmv.NewRegistry("other", &mmv.Options{Dir: filepath.Join(tmp, "mmv"), Cluster: 322, Flags: mmv.NoPrefix | mmv.Process})
	mmv.NewGauge(other, file+".late", "another program's", mmv.NoUnits).Set(7)
	pr := prometheus.NewRegistry()
	early := prometheus.NewGauge(prometheus.GaugeOpts{Name: "early", Help: "e"})
	pr.MustRegister(early)
	b := started(t, r, pr, nil)
	require.NoError(t, other.Start())

	late := prometheus.NewGauge(prometheus.GaugeOpts{Name: "late", Help: "l"})
	pr.MustRegister(late)
	late.Set(42)
	require.ErrorIs(t, b.Refresh(), mmv.ErrNamespace, "refused, named")
	require.ErrorIs(t, b.Refresh(), mmv.ErrNamespace, "tried again, refused again while the file lives")
	require.Equal(t, 1, b.Stats().Skipped)

	require.NoError(t, other.Close()) // its file is removed: the name is free
	require.NoError(t, b.Refresh(), "the family is still refused after the clashing file is gone")
	st := b.Stats()
	assert.Equal(t, 0, st.Skipped)
	assert.Equal(t, 2, st.Families)
	ms := read(t, r, tmp)
	assert.Equal(t, "42", find(t, ms, "late").Value)
}
