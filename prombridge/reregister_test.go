package prombridge_test

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/prombridge"
)

// instanceNames returns the names of m's instances.
func instanceNames(m *pcptest.Metric) []string {
	var names []string
	for _, in := range m.Instances {
		names = append(names, in.Name)
	}
	return names
}

// TestBucketlessHistogram: a histogram with no classic bucket (native
// only, or a const histogram with an empty bucket map) publishes the
// +Inf bucket, equal to its count.
func TestBucketlessHistogram(t *testing.T) {
	pcptest.MustHavePCP(t)
	pr := prometheus.NewRegistry()
	native := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "native_seconds", Help: "n", NativeHistogramBucketFactor: 1.1, Buckets: []float64{}})
	native.Observe(3)
	native.Observe(4)
	desc := prometheus.NewDesc("const_bytes", "c", []string{"k"}, nil)
	pr.MustRegister(native, collector(func(ch chan<- prometheus.Metric) {
		ch <- prometheus.MustNewConstHistogram(desc, 5, 50, map[float64]uint64{}, "v")
	}, desc))
	r, tmp := newRegistry(t)
	require.NoError(t, started(t, r, pr, nil).Err())
	ms := read(t, r, tmp)
	assert.Equal(t, []string{"le=+Inf"}, instanceNames(find(t, ms, "native_seconds.bucket")))
	assert.Equal(t, "2", instance(t, find(t, ms, "native_seconds.bucket"), "le=+Inf").Value)
	assert.Equal(t, "5", instance(t, find(t, ms, "const_bytes.bucket"), "k=v,le=+Inf").Value)
}

// collector is a prometheus.Collector of functions.
type collectorFunc struct {
	collect func(chan<- prometheus.Metric)
	descs   []*prometheus.Desc
}

func collector(collect func(chan<- prometheus.Metric), descs ...*prometheus.Desc) prometheus.Collector {
	return &collectorFunc{collect, descs}
}

func (c *collectorFunc) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}
func (c *collectorFunc) Collect(ch chan<- prometheus.Metric) { c.collect(ch) }

// TestReregisteredBuckets: a family registered again with other buckets
// or quantiles leaves none of the old instances in PCP.
func TestReregisteredBuckets(t *testing.T) {
	pcptest.MustHavePCP(t)
	pr := prometheus.NewRegistry()
	h1 := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "lat_seconds", Help: "l", Buckets: []float64{1, 2}}, []string{"route"})
	s1 := prometheus.NewSummary(prometheus.SummaryOpts{Name: "size_bytes", Help: "s", Objectives: map[float64]float64{0.5: 0.05, 0.9: 0.01}})
	pr.MustRegister(h1, s1)
	h1.WithLabelValues("/a").Observe(1.5)
	s1.Observe(10)
	r, tmp := newRegistry(t)
	b := started(t, r, pr, &prombridge.Options{Grace: time.Hour})

	pr.Unregister(h1)
	pr.Unregister(s1)
	h2 := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "lat_seconds", Help: "l", Buckets: []float64{5}}, []string{"route"})
	s2 := prometheus.NewSummary(prometheus.SummaryOpts{Name: "size_bytes", Help: "s", Objectives: map[float64]float64{0.99: 0.001}})
	pr.MustRegister(h2, s2)
	h2.WithLabelValues("/a").Observe(3)
	s2.Observe(20)
	require.NoError(t, b.Refresh())
	ms := read(t, r, tmp)
	assert.ElementsMatch(t, []string{"route=/a,le=5", "route=/a,le=+Inf"}, instanceNames(find(t, ms, "lat_seconds.bucket")))
	assert.ElementsMatch(t, []string{"quantile=0.99"}, instanceNames(find(t, ms, "size_bytes.quantile")))
	assert.Equal(t, "20", instance(t, find(t, ms, "size_bytes.quantile"), "quantile=0.99").Value)
}

// TestRetyped: a family registered again with another type keeps none of
// its old values in PCP: its series are removed, a singular one shows no
// value (on a registry with the Sentinel flag), and Err says so; a
// family of the new type whose PCP name is free is published.
func TestRetyped(t *testing.T) {
	pcptest.MustHavePCP(t)
	pr := prometheus.NewRegistry()
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "x", Help: "x"}, []string{"k"})
	y := prometheus.NewCounter(prometheus.CounterOpts{Name: "y_total", Help: "y"})
	pr.MustRegister(g, y)
	g.WithLabelValues("a").Set(5)
	y.Add(7)
	r, tmp := newRegistry(t, mmv.Sentinel)
	b := started(t, r, pr, &prombridge.Options{Grace: time.Hour})
	require.NoError(t, b.Err())
	ms := read(t, r, tmp)
	assert.Equal(t, "5", instance(t, find(t, ms, "x"), "k=a").Value)
	assert.Equal(t, "7", find(t, ms, "y").Value)

	pr.Unregister(g)
	pr.Unregister(y)
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "x", Help: "x"}, []string{"k"}) // PCP name x: taken
	yg := prometheus.NewGauge(prometheus.GaugeOpts{Name: "y_total", Help: "y"})                // PCP name y_total: free
	pr.MustRegister(c, yg)
	c.WithLabelValues("a").Add(9)
	yg.Set(3)
	err := b.Refresh()
	require.Error(t, err)
	assert.ErrorContains(t, err, "family x")
	ms = read(t, r, tmp)
	assert.Empty(t, find(t, ms, "x").Instances, "the gauge's series are gone")
	assert.Empty(t, find(t, ms, "y").Value, "the counter y_total shows no value")
	assert.Equal(t, "3", find(t, ms, "y_total").Value)
}

// TestTotalOnPCPNames: the rule that keeps a counter's _total compares
// the PCP names it makes: counter a:b_total beside gauge a_b.
func TestTotalOnPCPNames(t *testing.T) {
	pcptest.MustHavePCP(t)
	pr := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "a:b_total", Help: "c"})
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "a_b", Help: "g"})
	pr.MustRegister(c, g)
	c.Add(2)
	g.Set(3)
	r, tmp := newRegistry(t)
	require.NoError(t, started(t, r, pr, nil).Err())
	ms := read(t, r, tmp)
	assert.Equal(t, "2", find(t, ms, "a_b_total").Value)
	assert.Equal(t, "3", find(t, ms, "a_b").Value)
}

// TestErrNamesAll: Err names every family it refuses, once per family and
// reason, up to its bound, then says how many more.
func TestErrNamesAll(t *testing.T) {
	pcptest.MustHavePCP(t)
	for _, n := range []int{20, 40} {
		pr := prometheus.NewRegistry()
		for i := range n {
			for _, name := range []string{fmt.Sprintf("g:%02d", i), fmt.Sprintf("g_%02d", i)} {
				pr.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: name}, func() float64 { return 1 }))
			}
		}
		r, _ := newRegistry(t)
		b, err := prombridge.Register(r, pr, nil)
		require.NoError(t, err)
		err = b.Refresh()
		require.Error(t, err)
		named := 0
		for i := range n {
			if strings.Contains(err.Error(), fmt.Sprintf("family g_%02d ", i)) {
				named++
			}
		}
		if n <= 32 {
			assert.Equal(t, n, named, "every skipped family named")
		} else {
			assert.Equal(t, 32, named)
			assert.ErrorContains(t, err, fmt.Sprintf("and %d more", n-32))
		}
		require.NoError(t, r.Close())
	}
}

// TestPrefixRefused: a prefix under which every family would be refused
// is refused by Register: mmv's own namespace, a program's metric.
func TestPrefixRefused(t *testing.T) {
	for _, p := range []string{"mmv", "mmv.prom", "program", "program.x", strings.Repeat("p", 250)} {
		r, _ := newRegistry(t)
		mmv.NewGauge(r, "program", "the program's own", mmv.NoUnits)
		_, err := prombridge.Register(r, prometheus.NewRegistry(), &prombridge.Options{Prefix: p})
		assert.Error(t, err, "prefix %q", p)
	}
}

// TestValueNotCopied: a counter value (or a histogram's or summary's sum)
// that no PCP counter holds (negative, NaN, beyond a uint64) is counted
// and named, and PCP shows no old value for it: the series' instances
// leave, a singular one shows no value (Sentinel); a good value brings it
// back.
func TestValueNotCopied(t *testing.T) {
	pcptest.MustHavePCP(t)
	v := 5.0
	g := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		return []*dto.MetricFamily{
			{Name: proto.String("c_total"), Help: proto.String("c"), Type: dto.MetricType_COUNTER.Enum(), Metric: []*dto.Metric{
				{Label: []*dto.LabelPair{{Name: proto.String("k"), Value: proto.String("a")}}, Counter: &dto.Counter{Value: proto.Float64(v)}}}},
			{Name: proto.String("h"), Help: proto.String("h"), Type: dto.MetricType_HISTOGRAM.Enum(), Metric: []*dto.Metric{
				{Label: []*dto.LabelPair{{Name: proto.String("k"), Value: proto.String("a")}}, Histogram: &dto.Histogram{SampleCount: proto.Uint64(1), SampleSum: proto.Float64(v)}}}},
			{Name: proto.String("s_total"), Help: proto.String("s"), Type: dto.MetricType_COUNTER.Enum(), Metric: []*dto.Metric{
				{Counter: &dto.Counter{Value: proto.Float64(v)}}}},
		}, nil
	})
	r, tmp := newRegistry(t, mmv.Sentinel)
	b := started(t, r, g, &prombridge.Options{Interval: time.Hour})
	require.NoError(t, b.Err())
	ms := read(t, r, tmp)
	assert.Equal(t, "5", instance(t, find(t, ms, "c"), "k=a").Value)
	assert.Equal(t, "5", find(t, ms, "s").Value)

	for _, bad := range []float64{-1, math.NaN(), math.Inf(1), 1e20} {
		v = bad
		err := b.Refresh()
		assert.ErrorContains(t, err, "family c_total", "%v", bad)
		assert.ErrorContains(t, err, "family h", "%v", bad)
		assert.ErrorContains(t, err, "family s_total", "%v", bad)
		ms = read(t, r, tmp)
		assert.Empty(t, find(t, ms, "c").Instances, "%v", bad)
		assert.Empty(t, find(t, ms, "h.sum").Instances, "%v", bad)
		assert.Empty(t, find(t, ms, "h.bucket").Instances, "%v", bad)
		assert.Empty(t, find(t, ms, "s").Value, "%v", bad)
	}
	assert.Equal(t, "20", instance(t, find(t, ms, "prombridge.dropped"), "reason=value").Value, "1 + 3 + 1 samples, 4 refreshes")

	v = 7
	require.NoError(t, b.Refresh())
	ms = read(t, r, tmp)
	assert.Equal(t, "7", instance(t, find(t, ms, "c"), "k=a").Value)
	assert.Equal(t, "7", find(t, ms, "s").Value)
	assert.Equal(t, "7000", instance(t, find(t, ms, "h.sum"), "k=a").Value, "in thousandths")
}

// TestFloatCountsNotCopied: a histogram of float counts (a Gatherer
// relaying them) whose count no PCP counter holds is not copied, counted
// and named as a total is, where uint64 of it made 2^63 or all ones of
// its count and buckets.
func TestFloatCountsNotCopied(t *testing.T) {
	pcptest.MustHavePCP(t)
	count := 3.0
	g := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		return []*dto.MetricFamily{{Name: proto.String("h"), Help: proto.String("h"), Type: dto.MetricType_HISTOGRAM.Enum(),
			Metric: []*dto.Metric{{Histogram: &dto.Histogram{SampleCountFloat: proto.Float64(count), SampleSum: proto.Float64(1),
				Bucket: []*dto.Bucket{{UpperBound: proto.Float64(1), CumulativeCountFloat: proto.Float64(count)}}}}}}}, nil
	})
	r, tmp := newRegistry(t, mmv.Sentinel)
	b := started(t, r, g, &prombridge.Options{Interval: time.Hour})
	require.NoError(t, b.Err())
	ms := read(t, r, tmp)
	require.Equal(t, "3", find(t, ms, "h.count").Value)
	require.Equal(t, "3", instance(t, find(t, ms, "h.bucket"), "le=1").Value)
	for _, bad := range []float64{1e20, math.NaN(), -1} {
		count = bad
		assert.ErrorContains(t, b.Refresh(), "family h", "%v", bad)
		ms = read(t, r, tmp)
		assert.Empty(t, find(t, ms, "h.count").Value, "%v", bad)
		assert.Empty(t, find(t, ms, "h.bucket").Instances, "%v", bad)
	}
	count = 4.4
	require.NoError(t, b.Refresh())
	ms = read(t, r, tmp)
	assert.Equal(t, "4", find(t, ms, "h.count").Value)
	assert.Equal(t, "4", instance(t, find(t, ms, "h.bucket"), "le=1").Value)
}

// TestSeriesCountedWhileShown: Stats.Series counts the series whose
// values are in PCP: one whose first value was not copied counts once it
// is, and not while a value is not; it counted only when new, so that one
// first refused was never counted, and its removal took the count below
// zero.
func TestSeriesCountedWhileShown(t *testing.T) {
	pcptest.MustHavePCP(t)
	v, gathered := -1.0, true
	g := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		if !gathered {
			return nil, nil
		}
		return []*dto.MetricFamily{{Name: proto.String("c_total"), Help: proto.String("c"), Type: dto.MetricType_COUNTER.Enum(),
			Metric: []*dto.Metric{{Label: []*dto.LabelPair{{Name: proto.String("k"), Value: proto.String("a")}},
				Counter: &dto.Counter{Value: proto.Float64(v)}}}}}, nil
	})
	r, tmp := newRegistry(t)
	b := started(t, r, g, &prombridge.Options{Interval: time.Hour, Grace: time.Nanosecond})
	require.Error(t, b.Err())
	assert.Equal(t, 0, b.Stats().Series, "not copied")
	v = 3
	require.NoError(t, b.Refresh())
	assert.Equal(t, "3", instance(t, find(t, read(t, r, tmp), "c"), "k=a").Value)
	assert.Equal(t, 1, b.Stats().Series, "copied")
	v = -1
	require.Error(t, b.Refresh())
	assert.Equal(t, 0, b.Stats().Series, "not copied again")
	gathered = false
	require.NoError(t, b.Refresh())
	assert.Equal(t, 0, b.Stats().Series, "gone")
}

// TestStaleNamed: on a registry without the Sentinel flag, a singular
// family no longer gathered keeps its value in PCP, which cannot withdraw
// it: Err names it at every refresh, until it is gathered again.
func TestStaleNamed(t *testing.T) {
	pcptest.MustHavePCP(t)
	pr := prometheus.NewRegistry()
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "temp", Help: "t"})
	pr.MustRegister(g)
	r, _ := newRegistry(t)
	b, err := prombridge.Register(r, pr, &prombridge.Options{Grace: time.Nanosecond, Interval: time.Hour})
	require.NoError(t, err)
	require.NoError(t, b.Refresh())
	pr.Unregister(g)
	for range 2 {
		assert.ErrorContains(t, b.Refresh(), "family temp: its singular metric temp keeps an old value")
	}
	pr.MustRegister(g)
	assert.NoError(t, b.Refresh())
}

// TestWithdrawFollowsConfigure: the Sentinel flag that withdraws a
// singular metric is the registry's when the bridge withdraws it, not at
// Register: configured away before Start, a withdrawn counter keeps its
// value, named by Err, where PCP read it as 2^64-1.
func TestWithdrawFollowsConfigure(t *testing.T) {
	pcptest.MustHavePCP(t)
	pr := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "jobs_total", Help: "j"})
	pr.MustRegister(c)
	c.Add(5)
	r, tmp := newRegistry(t, mmv.Sentinel)
	b, err := prombridge.Register(r, pr, &prombridge.Options{Grace: time.Nanosecond, Interval: time.Hour})
	require.NoError(t, err)
	o := r.Options()
	o.Flags &^= mmv.Sentinel
	require.NoError(t, r.Configure(r.Name(), o))
	pcptest.NeedFileLayer(t)
	require.NoError(t, r.Start())
	require.NoError(t, b.Refresh())
	require.Equal(t, "5", find(t, read(t, r, tmp), "jobs").Value)
	pr.Unregister(c)
	assert.ErrorContains(t, b.Refresh(), "family jobs_total: its singular metric jobs keeps an old value")
	assert.Equal(t, "5", find(t, read(t, r, tmp), "jobs").Value)
}

// TestNameGatheredWithTwoTypes: a Gatherer that gathers one name twice in
// one Gather with two types (out of client_golang's contract: two
// registries' families appended) has the first copied, the second counted
// and named, where the second retired the first at every refresh and the
// first's samples were counted nowhere.
func TestNameGatheredWithTwoTypes(t *testing.T) {
	pcptest.MustHavePCP(t)
	g := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		return []*dto.MetricFamily{
			{Name: proto.String("x"), Help: proto.String("g"), Type: dto.MetricType_GAUGE.Enum(), Metric: []*dto.Metric{
				{Label: []*dto.LabelPair{{Name: proto.String("k"), Value: proto.String("a")}}, Gauge: &dto.Gauge{Value: proto.Float64(5)}}}},
			{Name: proto.String("x"), Help: proto.String("c"), Type: dto.MetricType_COUNTER.Enum(), Metric: []*dto.Metric{
				{Label: []*dto.LabelPair{{Name: proto.String("k"), Value: proto.String("b")}}, Counter: &dto.Counter{Value: proto.Float64(7)}}}},
		}, nil
	})
	r, tmp := newRegistry(t)
	b := started(t, r, g, &prombridge.Options{Interval: time.Hour})
	assert.ErrorContains(t, b.Refresh(), "family x: gathered twice in one Gather, as a gauge and as a counter")
	ms := read(t, r, tmp)
	assert.Equal(t, "5", instance(t, find(t, ms, "x"), "k=a").Value)
	assert.Equal(t, []string{"k=a"}, instanceNames(find(t, ms, "x")))
	assert.Equal(t, strconv.FormatUint(b.Stats().Refreshes, 10), instance(t, find(t, ms, "prombridge.dropped"), "reason=name").Value, "the counter's sample, every refresh")
}

// TestRegistryLabelledReasonRefusedForIt: a registry with a label reason
// (AddLabel), the label of the bridge's counter prombridge.dropped, which
// mmv refuses then, is refused by Register for that label, not as a
// prefix under which every family would be refused: any prefix met it.
func TestRegistryLabelledReasonRefusedForIt(t *testing.T) {
	r, _ := newRegistry(t)
	require.NoError(t, r.AddLabel(mmv.Label{Name: "reason", Value: "batch"}))
	_, err := prombridge.Register(r, prometheus.NewRegistry(), &prombridge.Options{Prefix: "prom"})
	require.ErrorIs(t, err, mmv.ErrDuplicate)
	assert.ErrorContains(t, err, `label "reason"`)
	assert.NotContains(t, err.Error(), "every family would be refused")
}

// TestStaleMetricsOfOneFamilyEachNamed: a family's counter published as
// x by a closed bridge and as x_total by the new one (x taken by a gauge
// gathered with it), both left with an old value on a registry without
// Sentinel: Err names each, where it named the family once, the first.
func TestStaleMetricsOfOneFamilyEachNamed(t *testing.T) {
	pcptest.MustHavePCP(t)
	counter := func() *dto.MetricFamily {
		return &dto.MetricFamily{Name: proto.String("x_total"), Help: proto.String("x"), Type: dto.MetricType_COUNTER.Enum(),
			Metric: []*dto.Metric{{Counter: &dto.Counter{Value: proto.Float64(3)}}}}
	}
	mfs := []*dto.MetricFamily{counter()}
	g := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) { return mfs, nil })
	r, _ := newRegistry(t)
	b := started(t, r, g, &prombridge.Options{Interval: time.Hour})
	require.NoError(t, b.Err())
	require.ErrorContains(t, b.Close(), "its singular metric x keeps an old value after Close")

	mfs = []*dto.MetricFamily{gaugeFamily("x", "", "", 1), counter()}
	b, err := prombridge.Register(r, g, &prombridge.Options{Interval: time.Hour})
	require.NoError(t, err)
	// The refresh the started registry's poll runs at once, before mfs
	// changes under it.
	require.Eventually(t, func() bool { return b.Stats().Refreshes >= 1 }, 10*time.Second, time.Millisecond)
	require.Error(t, b.Refresh(), "the gauge x refused: x is the closed bridge's counter")
	mfs = nil
	err = b.Refresh()
	require.ErrorContains(t, err, "family x_total: its singular metric x_total keeps an old value no longer gathered")
	require.ErrorContains(t, err, "family x_total: its singular metric x keeps an old value since a bridge closed")
	require.ErrorContains(t, b.Close(), "its singular metric x keeps an old value after Close")
}
