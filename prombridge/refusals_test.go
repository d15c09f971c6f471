package prombridge_test

import (
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/bridge"
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

// TestMistypedMetricNotCopied: a metric that lacks the value of its
// family's type (a custom Gatherer's, one relaying another system's
// families: client_golang's Registry checks this, GathererFunc does not)
// is not copied, counted in prombridge.dropped as type and named by Err,
// and PCP shows no old value for its series; a well-typed metric of the
// same family is copied. A gauge holding an Untyped value showed 0, with
// Err nil and nothing counted; a histogram or summary family whose metric
// held no histogram or summary made Refresh panic on a nil pointer,
// which on the registry's Poll goroutine kills the service.
func TestMistypedMetricNotCopied(t *testing.T) {
	pcptest.MustHavePCP(t)
	var mistyped atomic.Bool
	label := func(v string) []*dto.LabelPair {
		return []*dto.LabelPair{{Name: proto.String("k"), Value: proto.String(v)}}
	}
	g := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		queue := &dto.Metric{Gauge: &dto.Gauge{Value: proto.Float64(5)}}
		jobs := &dto.Metric{Label: label("b"), Counter: &dto.Counter{Value: proto.Float64(4)}}
		wait := &dto.Metric{Histogram: &dto.Histogram{SampleCount: proto.Uint64(1), SampleSum: proto.Float64(1)}}
		size := &dto.Metric{Summary: &dto.Summary{SampleCount: proto.Uint64(1), SampleSum: proto.Float64(1)}}
		if mistyped.Load() {
			queue = &dto.Metric{Untyped: &dto.Untyped{Value: proto.Float64(5)}}
			jobs = &dto.Metric{Label: label("b"), Gauge: &dto.Gauge{Value: proto.Float64(4)}}
			wait = &dto.Metric{Gauge: &dto.Gauge{Value: proto.Float64(5)}}
			size = &dto.Metric{}
		}
		return []*dto.MetricFamily{
			{Name: proto.String("jobs_total"), Help: proto.String("j"), Type: dto.MetricType_COUNTER.Enum(), Metric: []*dto.Metric{
				{Label: label("a"), Counter: &dto.Counter{Value: proto.Float64(3)}}, jobs}},
			{Name: proto.String("queue"), Help: proto.String("q"), Type: dto.MetricType_GAUGE.Enum(), Metric: []*dto.Metric{queue}},
			{Name: proto.String("size_bytes"), Help: proto.String("s"), Type: dto.MetricType_SUMMARY.Enum(), Metric: []*dto.Metric{size}},
			{Name: proto.String("wait_seconds"), Help: proto.String("w"), Type: dto.MetricType_HISTOGRAM.Enum(), Metric: []*dto.Metric{wait}},
		}, nil
	})
	r, tmp := newRegistry(t, mmv.Sentinel)
	// An hour's interval: no refresh of the poll's meets the mistyped
	// metrics (on HEAD it panicked, killing the test binary).
	b := started(t, r, g, &prombridge.Options{Interval: time.Hour})
	require.NoError(t, b.Err())
	ms := read(t, r, tmp)
	require.Equal(t, "5", find(t, ms, "queue").Value)
	require.Equal(t, "4", instance(t, find(t, ms, "jobs"), "k=b").Value)

	mistyped.Store(true)
	var err error
	require.NotPanics(t, func() { err = b.Refresh() }, "a histogram or summary family whose metric holds none")
	for _, f := range []string{"jobs_total", "queue", "size_bytes", "wait_seconds"} {
		assert.ErrorContains(t, err, "family "+f+":")
	}
	assert.ErrorContains(t, err, "a gauge family's metric holds no gauge value (it holds untyped)")
	ms = read(t, r, tmp)
	assert.True(t, find(t, ms, "queue").Value == "" || find(t, ms, "queue").Value == "nan", "queue shows %s, gathered as an Untyped", find(t, ms, "queue").Value)
	assert.Equal(t, []string{"k=a"}, instanceNames(find(t, ms, "jobs")), "the counter's well-typed series is copied; the gauge value in it is not")
	assert.Empty(t, find(t, ms, "wait_seconds.count").Value)
	assert.Empty(t, find(t, ms, "size_bytes.sum").Value)
	// 1 (queue) + 1 (jobs{k=b}) + 3 (wait: +Inf, sum, count) + 2 (size: sum, count)
	assert.Equal(t, "7", instance(t, find(t, ms, "prombridge.dropped"), "reason=type").Value)

	mistyped.Store(false)
	require.NoError(t, b.Refresh())
	ms = read(t, r, tmp)
	assert.Equal(t, "5", find(t, ms, "queue").Value)
	assert.Equal(t, "4", instance(t, find(t, ms, "jobs"), "k=b").Value)
	assert.Equal(t, "1", find(t, ms, "wait_seconds.count").Value)
}

// TestHistogramLabelledLeNotPublished: client_golang refuses a label le
// on the histograms it makes (a HistogramVec's at its first value, not
// at NewHistogramVec), not on a collector's const histogram, which its
// Registry gathers: the bridge's buckets, named by the family's labels
// then le, would have le twice, so mmv refuses the family's metrics and
// the bridge skips it, its samples counted as declaration at each refresh
// and named by Err, nothing of it in PCP.
func TestHistogramLabelledLeNotPublished(t *testing.T) {
	pcptest.MustHavePCP(t)
	hv := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "h", Help: "h"}, []string{"le"})
	assert.Panics(t, func() { hv.WithLabelValues("x") }, "client_golang's own histograms")
	pr := prometheus.NewRegistry()
	desc := prometheus.NewDesc("lat_seconds", "l", []string{"le"}, nil)
	pr.MustRegister(collector(func(ch chan<- prometheus.Metric) {
		ch <- prometheus.MustNewConstHistogram(desc, 2, 3, map[float64]uint64{1: 1}, "x")
	}, desc))
	r, tmp := newRegistry(t)
	b := started(t, r, pr, &prombridge.Options{Interval: time.Hour})
	err := b.Refresh()
	require.ErrorIs(t, err, mmv.ErrDuplicate)
	assert.ErrorContains(t, err, `family lat_seconds not published`)
	assert.ErrorContains(t, err, `vector "lat_seconds.bucket" label "le"`)
	assert.Equal(t, 1, b.Stats().Skipped)
	ms := read(t, r, tmp)
	assert.Nil(t, pcptest.Find(ms, "mmv.promtest.lat_seconds.count"))
	assert.Equal(t, "12", instance(t, find(t, ms, "prombridge.dropped"), "reason=declaration").Value,
		"4 samples (2 buckets, sum, count) at each of 3 refreshes")
}

// TestFamilyLabelNamedAsRegistrysExported: a family's label that the
// registry has (a program's AddLabel(version), beside client_golang's
// go_info{version}) is exported_<label>, as a Prometheus scrape renames
// a series' label that a target label has. mmv refuses a vector labelled
// as its registry (PCP would show the registry's value on every bucket,
// and on each series past the label budget), so the family was skipped
// at every refresh; so was one of two label names making one PCP label.
func TestFamilyLabelNamedAsRegistrysExported(t *testing.T) {
	pcptest.MustHavePCP(t)
	pr := prometheus.NewRegistry()
	hv := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "lat_seconds", Help: "l", Buckets: []float64{1}}, []string{"region", "exported_region"})
	pr.MustRegister(hv)
	hv.WithLabelValues("eu", "x").Observe(0.5)
	info := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "build_info", Help: "b"}, []string{"version"})
	pr.MustRegister(info)
	info.WithLabelValues("go1.26").Set(1)
	// A summary's quantiles are a vector of its labels and quantile, which
	// a registry labelled quantile had mmv refuse, every summary skipped:
	// quantile too is exported_quantile, as a scrape renames it.
	sv := prometheus.NewSummaryVec(prometheus.SummaryOpts{Name: "size_bytes", Help: "s", Objectives: map[float64]float64{0.5: 0.05}},
		[]string{"exported_quantile"})
	pr.MustRegister(sv)
	sv.WithLabelValues("x").Observe(3)
	// Two label names that make one PCP label (UTF-8 a.b and a_b, which
	// client_golang takes; _a and x_a, x put before a name not starting
	// with a letter) are two labels, the one spelt as the label keeping
	// it, as otelexporter names such keys: the vector, given a label
	// twice, was refused and the family skipped at every refresh.
	dotted := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "dotted", Help: "d"}, []string{"a.b", "a_b"})
	pr.MustRegister(dotted)
	dotted.WithLabelValues("1", "2").Set(3)
	under := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "under_seconds", Help: "u", Buckets: []float64{1}}, []string{"_a", "x_a"})
	pr.MustRegister(under)
	under.WithLabelValues("1", "2").Observe(0.5)
	r, tmp := newRegistry(t)
	for _, l := range []mmv.Label{{Name: "region", Value: "us"}, {Name: "version", Value: "1.2.3"}, {Name: "quantile", Value: "q"}} {
		require.NoError(t, r.AddLabel(l))
	}
	b := started(t, r, pr, &prombridge.Options{Interval: time.Hour})
	require.NoError(t, b.Refresh())
	ms := read(t, r, tmp)
	assert.Equal(t, "1", instance(t, find(t, ms, "lat_seconds.count"), "exported_region=x,exported_exported_region=eu").Value)
	assert.Equal(t, "1", instance(t, find(t, ms, "build_info"), "exported_version=go1.26").Value)
	assert.Equal(t, "1", instance(t, find(t, ms, "size_bytes.count"), "exported_quantile=x").Value)
	assert.Equal(t, "3", instance(t, find(t, ms, "size_bytes.quantile"), "exported_quantile=x,exported_exported_quantile=0.5").Value)
	assert.Equal(t, "3", instance(t, find(t, ms, "dotted"), "exported_a_b=1,a_b=2").Value)
	assert.Equal(t, "1", instance(t, find(t, ms, "under_seconds.bucket"), "exported_x_a=1,x_a=2,le=1").Value)
}

// TestRegistryLabelAddedWhileFamilyDeclaredExported: a registry label
// added after a family's declaration read the registry's labels, before
// its transaction, named as the family's label, made mmv refuse the
// family's vector, a refusal for good: the family was skipped for as
// long as the bridge ran, where a label added a moment earlier had it
// renamed. The declaration is tried again on the labels it missed.
func TestRegistryLabelAddedWhileFamilyDeclaredExported(t *testing.T) {
	pcptest.MustHavePCP(t)
	pr := prometheus.NewRegistry()
	info := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "build_info", Help: "b"}, []string{"version"})
	pr.MustRegister(info)
	info.WithLabelValues("go1.26").Set(1)
	r, tmp := newRegistry(t)
	var added atomic.Bool
	bridge.LabelsRead = func() {
		if !added.Swap(true) { // another goroutine's, between the read and the transaction
			assert.NoError(t, r.AddLabel(mmv.Label{Name: "version", Value: "1.2.3"}))
		}
	}
	defer func() { bridge.LabelsRead = nil }()
	b := started(t, r, pr, &prombridge.Options{Interval: time.Hour})
	require.True(t, added.Load())
	require.NoError(t, b.Refresh())
	ms := read(t, r, tmp)
	assert.Equal(t, "1", instance(t, find(t, ms, "build_info"), "exported_version=go1.26").Value)
}

// TestFamilyLabelNamedAsPCPsExported: a family's label named as one PCP
// puts on every metric itself (hostname, agent...) is exported_<name>,
// as a scrape renames a label a target label has: a histogram's buckets
// carry their labels in their names alone, and PCP showed its own
// hostname on the bucket hostname=web1,le=1; mmv refuses such a vector.
func TestFamilyLabelNamedAsPCPsExported(t *testing.T) {
	pcptest.MustHavePCP(t)
	pr := prometheus.NewRegistry()
	hv := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "lat_seconds", Help: "l", Buckets: []float64{1}}, []string{"hostname"})
	pr.MustRegister(hv)
	hv.WithLabelValues("web1").Observe(0.5)
	ua := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "requests_total", Help: "r"}, []string{"agent"})
	pr.MustRegister(ua)
	ua.WithLabelValues("curl").Inc()
	r, tmp := newRegistry(t)
	b := started(t, r, pr, &prombridge.Options{Interval: time.Hour})
	require.NoError(t, b.Refresh())
	ms := read(t, r, tmp)
	bucket := instance(t, find(t, ms, "lat_seconds.bucket"), "exported_hostname=web1,le=1")
	assert.Equal(t, "1", bucket.Value)
	_, ok := bucket.Label("exported_hostname")
	assert.False(t, ok, "a bucket carries its labels in its name")
	assert.Equal(t, "1", instance(t, find(t, ms, "requests"), "exported_agent=curl").Value)
}
