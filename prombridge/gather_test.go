package prombridge_test

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
	"weak"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/prombridge"
)

// TestSeriesGatheredTwice: a Gatherer that gathers one series twice in
// one Gather (two registries' families appended, as
// TestNameGatheredWithTwoTypes has with two types; an exposition relayed
// from another process) has two values for one PCP instance: the first
// is copied, the second counted in prombridge.dropped and named by Err,
// as for a name gathered with two types (PCP showed the second, the
// first lost, nothing said).
func TestSeriesGatheredTwice(t *testing.T) {
	pcptest.MustHavePCP(t)
	g := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		return []*dto.MetricFamily{
			gaugeFamily("x", "k", "a", 1), gaugeFamily("x", "k", "a", 2), // a vector's series, twice
			gaugeFamily("y", "", "", 3), gaugeFamily("y", "", "", 4), // a singular family, twice
		}, nil
	})
	r, tmp := newRegistry(t)
	b := started(t, r, g, &prombridge.Options{Interval: time.Hour})
	err := b.Refresh()
	ms := read(t, r, tmp)
	require.Error(t, err, "PCP shows x %v and y=%s; the other values are lost, uncounted", find(t, ms, "x").Instances, find(t, ms, "y").Value)
	assert.ErrorContains(t, err, "family x")
	assert.ErrorContains(t, err, "family y")
	assert.NotZero(t, droppedTotal(t, ms), "the values not shown are counted in prombridge.dropped")
}

// TestStuckGatherIsNamed: a Gather that does not return (a collector
// waiting on a dead connection: client_golang's Gather has no deadline)
// freezes every series of the bridge in PCP at its last value, shown as
// current: Err says so, where it and Stats waited for the bridge's lock
// behind the refresh, a health check calling them hanging as long as the
// Gather (and Close with it).
func TestStuckGatherIsNamed(t *testing.T) {
	pcptest.MustHavePCP(t)
	var stuck atomic.Bool
	release := make(chan struct{})
	g := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		if stuck.Load() {
			<-release
		}
		return []*dto.MetricFamily{gaugeFamily("temp", "zone", "a", 21)}, nil
	})
	r, tmp := newRegistry(t)
	b := started(t, r, g, &prombridge.Options{Interval: 10 * time.Millisecond, Grace: 100 * time.Millisecond})
	t.Cleanup(func() { close(release) }) // before the registry's Close
	require.NoError(t, b.Err())
	require.Equal(t, "21", instance(t, find(t, read(t, r, tmp), "temp"), "zone=a").Value)

	stuck.Store(true)
	time.Sleep(time.Second) // ten times Grace, a hundred intervals
	errc := make(chan error, 1)
	go func() { errc <- b.Err() }()
	select {
	case err := <-errc:
		assert.Error(t, err, "a refresh running for ten times Grace: PCP shows the values of a second ago as current")
	case <-time.After(2 * time.Second):
		t.Fatalf("Err blocked behind a Gather that does not return; PCP shows temp{zone=a}=%s as current",
			instance(t, find(t, read(t, r, tmp), "temp"), "zone=a").Value)
	}
}

// TestCloseDoesNotWaitForStuckGather: Close's last refresh runs its
// Gather on a goroutine of its own, waited for closeWait (5 s) at most: a
// collector that blocks at that moment (a query to a database the
// service already closed: client_golang's Gather has no deadline) held
// Close, and the service's shutdown, for ever.
func TestCloseDoesNotWaitForStuckGather(t *testing.T) {
	var stuck atomic.Bool
	release := make(chan struct{})
	g := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		if stuck.Load() {
			<-release
		}
		return []*dto.MetricFamily{gaugeFamily("temp", "zone", "a", 21)}, nil
	})
	r, _ := newRegistry(t)
	t.Cleanup(func() { close(release) }) // before r.Close (cleanups run last first)
	b := started(t, r, g, &prombridge.Options{Interval: time.Hour})

	stuck.Store(true) // the collector blocks from now on; no refresh is running
	done := make(chan error, 1)
	go func() { done <- b.Close() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second): // closeWait and a margin
		t.Fatal("Bridge.Close has not returned after 10 s: its own Gather never returns, and a service's shutdown hangs")
	}
	start := time.Now()
	require.NoError(t, b.Close(), "closed already")
	assert.Less(t, time.Since(start), time.Second, "a second Close returns at once")
}

// TestCloseDuringRefreshCopiesNothing: a Close that meets a refresh whose
// Gather is running (a big registry's) waits for no Gather, and that
// refresh copies nothing once it returns: nothing of the bridge's comes
// back into PCP after Close.
func TestCloseDuringRefreshCopiesNothing(t *testing.T) {
	pcptest.MustHavePCP(t)
	var slow atomic.Bool
	entered := make(chan struct{}, 1)
	g := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		if slow.Load() {
			select {
			case entered <- struct{}{}:
			default:
			}
			time.Sleep(200 * time.Millisecond) // a big registry's Gather
		}
		return []*dto.MetricFamily{gaugeFamily("vec", "k", "a", 1), gaugeFamily("one", "", "", 2)}, nil
	})
	r, tmp := newRegistry(t, mmv.Sentinel)
	b := started(t, r, g, &prombridge.Options{Interval: time.Hour})
	require.Equal(t, "1", instance(t, find(t, read(t, r, tmp), "vec"), "k=a").Value)

	slow.Store(true)
	done := make(chan struct{})
	go func() { defer close(done); b.Refresh() }() // the poll's refresh
	<-entered
	require.NoError(t, b.Close())
	select {
	case <-done:
		t.Fatal("Close returned after the Gather running: it waited for it")
	default:
	}
	<-done
	ms := read(t, r, tmp)
	assert.Empty(t, find(t, ms, "vec").Instances, "the refresh running at Close copied its values after it")
	assert.True(t, find(t, ms, "one").Value == "" || find(t, ms, "one").Value == "nan", "one shows %s after Close", find(t, ms, "one").Value)
}

// TestRegistryClosedFirstKeepsLastValues: a program that ends closes its
// registry (before the bridge, or alone): the registry's file, without
// the Process flag, keeps the values of the bridge's last refresh, and a
// Bridge.Close after it takes nothing out of the file.
func TestRegistryClosedFirstKeepsLastValues(t *testing.T) {
	pcptest.MustHavePCP(t)
	reg := prometheus.NewRegistry()
	jobs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "jobs_total", Help: "j"}, []string{"kind"})
	done := prometheus.NewCounter(prometheus.CounterOpts{Name: "batches_total", Help: "b"})
	reg.MustRegister(jobs, done)
	r, tmp := newRegistry(t, mmv.Sentinel)
	b := started(t, r, reg, &prombridge.Options{Interval: time.Hour})
	jobs.WithLabelValues("x").Add(7)
	done.Inc()
	require.NoError(t, b.Refresh(), "the latest values, before the registry's Close")
	require.NoError(t, r.Close())
	require.NoError(t, b.Close())
	ms := pcptest.Info(t, tmp)
	assert.Equal(t, "7", instance(t, find(t, ms, "jobs"), "kind=x").Value)
	assert.Equal(t, "1", find(t, ms, "batches").Value)
}

// TestClosedBridgeLeavesPCP: Close takes the bridge out of a registry
// that lives on (a service that swaps its Gatherer, or stops bridging a
// subsystem): every series leaves PCP, its vectors' instances deleted and
// its singular metrics showing no value (Sentinel; without the flag Close
// names them), and its poll does nothing. A new bridge of the same prefix
// takes its metrics over, where Register refused it with ErrDuplicate
// ("every family would be refused"), mmv never undeclaring a metric; a
// family declared otherwise under a name they hold is refused, named and
// counted. Close stopped the refreshes, and PCP showed every series at
// its last value as current for as long as the registry lived.
func TestClosedBridgeLeavesPCP(t *testing.T) {
	pcptest.MustHavePCP(t)
	reg := prometheus.NewRegistry()
	depth := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "depth", Help: "queue depth"}, []string{"queue"})
	jobs := prometheus.NewCounter(prometheus.CounterOpts{Name: "jobs_total", Help: "jobs"})
	lat := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "lat_seconds", Help: "latency", Buckets: []float64{1}}, []string{"route"})
	reg.MustRegister(depth, jobs, lat)
	depth.WithLabelValues("a").Set(1)
	jobs.Add(5)
	lat.WithLabelValues("/a").Observe(0.5)
	r, tmp := newRegistry(t, mmv.Sentinel)
	b := started(t, r, reg, &prombridge.Options{Interval: 10 * time.Millisecond})
	require.Equal(t, "1", instance(t, find(t, read(t, r, tmp), "depth"), "queue=a").Value)

	require.NoError(t, b.Close())
	depth.WithLabelValues("a").Set(2)
	refreshes := b.Stats().Refreshes
	time.Sleep(100 * time.Millisecond) // ten intervals of the poll
	assert.Equal(t, refreshes, b.Stats().Refreshes, "the closed bridge's poll does nothing")
	ms := read(t, r, tmp)
	for _, name := range []string{"depth", "lat_seconds.bucket", "lat_seconds.sum", "lat_seconds.count", "prombridge.dropped"} {
		assert.Empty(t, find(t, ms, name).Instances, "%s after Close, the registry running", name)
	}
	assert.Empty(t, find(t, ms, "jobs").Value, "the singular counter shows no value")
	st := b.Stats()
	assert.Equal(t, 0, st.Series)
	assert.Equal(t, 0, st.Families)

	runtime.GC() // the hand-over holds the closed bridge weakly: the registry's poll keeps it
	b2, err := prombridge.Register(r, reg, &prombridge.Options{Interval: time.Hour})
	require.NoError(t, err, "a new bridge of the closed one's prefix")
	require.NoError(t, b2.Refresh())
	ms = read(t, r, tmp)
	assert.Equal(t, "2", instance(t, find(t, ms, "depth"), "queue=a").Value)
	assert.Equal(t, "5", find(t, ms, "jobs").Value)
	assert.Equal(t, "1", instance(t, find(t, ms, "lat_seconds.bucket"), "route=/a,le=1").Value)
	assert.Equal(t, "500000", instance(t, find(t, ms, "lat_seconds.sum"), "route=/a").Value)
	assert.Equal(t, "0", instance(t, find(t, ms, "prombridge.dropped"), "reason=declaration").Value)
	assert.Equal(t, 3, b2.Stats().Families)

	// Closed again, and a third bridge gathering families declared
	// otherwise: a gauge depth of another label (refused), a counter
	// lat_seconds_total, whose PCP name lat_seconds is the closed bridge's
	// histogram (it keeps its _total).
	require.NoError(t, b2.Close())
	other := prometheus.NewRegistry()
	pools := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "depth", Help: "by pool"}, []string{"pool"})
	spent := prometheus.NewCounter(prometheus.CounterOpts{Name: "lat_seconds_total", Help: "time spent"})
	other.MustRegister(pools, spent)
	pools.WithLabelValues("p").Set(4)
	spent.Add(2)
	b3, err := prombridge.Register(r, other, &prombridge.Options{Interval: time.Hour})
	require.NoError(t, err)
	err = b3.Refresh()
	assert.ErrorIs(t, err, mmv.ErrDuplicate)
	assert.ErrorContains(t, err, `family depth not published as depth: duplicate: a closed bridge of this registry and prefix declared it for family depth, a gauge of labels ["queue"] in none, where this is family depth, a gauge of labels ["pool"] in none, and mmv cannot undeclare a metric`)
	ms = read(t, r, tmp)
	assert.Empty(t, find(t, ms, "depth").Instances)
	assert.Equal(t, "2000000", find(t, ms, "lat_seconds_total").Value)
	assert.Equal(t, strconv.FormatUint(b3.Stats().Refreshes, 10), instance(t, find(t, ms, "prombridge.dropped"), "reason=declaration").Value,
		"depth's sample, at every refresh")
	assert.Empty(t, find(t, ms, "jobs").Value, "the first bridge's counter, gathered by none since")
	require.NoError(t, b3.Close())
}

// TestClosedBridgeNamesStaleSingular: on a registry without the Sentinel
// flag, PCP cannot withdraw a singular metric: Close names those that
// keep their last values, and so does every refresh of the next bridge of
// the prefix while it does not gather them.
func TestClosedBridgeNamesStaleSingular(t *testing.T) {
	pcptest.MustHavePCP(t)
	reg := prometheus.NewRegistry()
	jobs := prometheus.NewCounter(prometheus.CounterOpts{Name: "jobs_total", Help: "jobs"})
	reg.MustRegister(jobs)
	jobs.Add(5)
	r, _ := newRegistry(t)
	b := started(t, r, reg, &prombridge.Options{Interval: time.Hour})
	err := b.Close()
	assert.ErrorContains(t, err, "family jobs_total: its singular metric jobs keeps an old value after Close")
	assert.Equal(t, err, b.Err())
	b2, err := prombridge.Register(r, prometheus.NewRegistry(), &prombridge.Options{Interval: time.Hour})
	require.NoError(t, err)
	assert.ErrorContains(t, b2.Refresh(), "family jobs_total: its singular metric jobs keeps an old value since a bridge closed")
}

// TestRegisterDoesNotWaitForGather: Register gathers nothing itself (the
// registry's poll does, Start waiting for it 1 s at most), so a Gather
// that never returns does not hold it: its own refresh, unbounded, held
// Register for ever.
func TestRegisterDoesNotWaitForGather(t *testing.T) {
	r, _ := newRegistry(t)
	release := make(chan struct{})
	defer close(release)
	g := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		<-release
		return []*dto.MetricFamily{gaugeFamily("g", "", "", 1)}, nil
	})
	done := make(chan error, 1)
	go func() {
		_, err := prombridge.Register(r, g, nil)
		done <- err
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(3 * time.Second):
		t.Fatal("Register still waiting for a stuck Gather after 3 s (Start gives up on it after 1 s)")
	}
}

// TestFamiliesBeforeFirstFile: without a refresh of Register's, the
// families gathered are declared by the registry's Gather before Start,
// and by Start before it makes its file, not later on the poll's
// goroutine.
func TestFamiliesBeforeFirstFile(t *testing.T) {
	pr := prometheus.NewRegistry()
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "early", Help: "e"})
	pr.MustRegister(g)
	g.Set(3)
	r, _ := newRegistry(t)
	b, err := prombridge.Register(r, pr, &prombridge.Options{Interval: time.Hour})
	require.NoError(t, err)
	snap, err := r.Snapshot()
	require.NoError(t, err)
	require.True(t, slices.ContainsFunc(snap, func(m mmv.MetricSnapshot) bool { return m.Name == "early" && m.Values[0].Value == 3.0 }),
		"the registry's Snapshot before Start runs the poll")

	r2, _ := newRegistry(t)
	b, err = prombridge.Register(r2, pr, &prombridge.Options{Interval: time.Hour})
	require.NoError(t, err)
	pcptest.NeedFileLayer(t)
	require.NoError(t, r2.Start())
	assert.Equal(t, 1, b.Stats().Families, "declared by Start, before its file")
}

// TestSeriesNotUTF8Refused: a Gatherer that is not client_golang's
// registry (which refuses them) may gather a label value that is not
// UTF-8; mmv's vectors refuse it, as PCP's JSON labels and a Prometheus
// scrape would show "/caf\xe9" and "/caf\xe8" as one value: the series
// is refused, counted by the bridge (series) and the registry
// (mmv.dropped), and named by Err; the family's other series are copied.
func TestSeriesNotUTF8Refused(t *testing.T) {
	pcptest.MustHavePCP(t)
	g := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		f := gaugeFamily("x", "path", "/caf\xe9", 1)
		f.Metric = append(f.Metric, gaugeFamily("x", "path", "/café", 2).Metric...)
		return []*dto.MetricFamily{f}, nil
	})
	r, tmp := newRegistry(t)
	b := started(t, r, g, &prombridge.Options{Interval: time.Hour})
	var err error
	require.NotPanics(t, func() { err = b.Refresh() })
	assert.ErrorIs(t, err, mmv.ErrLabel)
	assert.ErrorContains(t, err, "not UTF-8")
	assert.Equal(t, uint64(1), b.Stats().DroppedSeries)
	ms := read(t, r, tmp)
	x := find(t, ms, "x")
	require.Len(t, x.Instances, 1)
	assert.Equal(t, "2", instance(t, x, "path=/café").Value)
	assert.Equal(t, "1", instance(t, find(t, ms, "mmv.dropped"), "refused").Value, "the registry counts its refusal once")
	assert.NotZero(t, droppedTotal(t, ms), "the bridge counts the sample")
}

// TestClosedBridgeReleasesGatherer: a closed bridge lets its Gatherer
// go. The registry's Poll holds the closed bridge until the next bridge
// of its prefix takes its leftovers; the bridge held the
// Gatherer, so a service swapping its Gatherer kept every old one, with
// its collectors and their series, for good.
func TestClosedBridgeReleasesGatherer(t *testing.T) {
	r, _ := newRegistry(t)
	pr := prometheus.NewRegistry()
	v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "temp", Help: "t"}, []string{"zone"})
	pr.MustRegister(v)
	v.WithLabelValues("a").Set(21)
	b := started(t, r, pr, &prombridge.Options{Interval: time.Millisecond})
	gone := weak.Make(pr)
	pr, v = nil, nil
	require.NoError(t, b.Close())
	require.Eventually(t, func() bool { runtime.GC(); return gone.Value() == nil }, 10*time.Second, 10*time.Millisecond,
		"the closed bridge holds its Gatherer")
	runtime.KeepAlive(b)
}

// TestSwappedBridgesLeaveOnePoll: a service swapping its Gatherer, the
// bridge closed and another registered on the registry each time, keeps
// one poll's goroutine of the closed bridges at most (the last one's,
// which holds its leftovers until the next bridge of its prefix takes
// them): each closed bridge's poll ticked on for the registry's life.
func TestSwappedBridgesLeaveOnePoll(t *testing.T) {
	pcptest.NeedFileLayer(t)
	r, _ := newRegistry(t)
	base := pcptest.Pollers()
	for i := range 10 {
		pr := prometheus.NewRegistry()
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "temp", Help: "t"}, []string{"zone"})
		pr.MustRegister(g)
		g.WithLabelValues("a").Set(float64(i))
		b, err := prombridge.Register(r, pr, &prombridge.Options{Interval: time.Millisecond})
		require.NoError(t, err)
		if i == 0 {
			require.NoError(t, r.Start())
		}
		require.NoError(t, b.Refresh())
		require.NoError(t, b.Close())
	}
	require.Eventually(t, func() bool { return pcptest.Pollers() <= base+1 }, 10*time.Second, time.Millisecond,
		"poll goroutines of 10 closed bridges: %d", pcptest.Pollers()-base)
}

// TestOldSampleAbsent: a sample carrying its own timestamp
// (prometheus.NewMetricWithTimestamp: a federated or pushed value a
// collector relays) older than Options.MaxSampleAge (5 minutes) is absent
// from the refresh, as Prometheus, honouring timestamps, stops returning
// it after its lookback delta: a labelled series leaves PCP, a singular
// family shows no value (mmv.Sentinel), never a zero of its declaration
// when first gathered old; the samples are counted as stale in
// prombridge.dropped and named by Err. A sample 10 seconds old, one
// without a timestamp and one in the future show. PCP showed an hour-old
// value as current at every refresh.
func TestOldSampleAbsent(t *testing.T) {
	pcptest.MustHavePCP(t)
	var backupAge, siteAge atomic.Int64 // time.Duration
	backupAge.Store(int64(10 * time.Second))
	siteAge.Store(int64(10 * time.Second))
	backup := prometheus.NewDesc("last_backup_bytes", "size of the last backup", nil, nil)
	relayed := prometheus.NewDesc("relayed", "a federated value", []string{"site"}, nil)
	first := prometheus.NewDesc("first_old", "old from the start", nil, nil)
	g := prometheus.NewRegistry()
	g.MustRegister(collector(func(ch chan<- prometheus.Metric) {
		now := time.Now()
		ch <- prometheus.NewMetricWithTimestamp(now.Add(-time.Duration(backupAge.Load())), prometheus.MustNewConstMetric(backup, prometheus.GaugeValue, 42))
		ch <- prometheus.MustNewConstMetric(relayed, prometheus.GaugeValue, 1, "a") // no timestamp
		ch <- prometheus.NewMetricWithTimestamp(now.Add(-time.Duration(siteAge.Load())), prometheus.MustNewConstMetric(relayed, prometheus.GaugeValue, 2, "b"))
		ch <- prometheus.NewMetricWithTimestamp(now.Add(time.Hour), prometheus.MustNewConstMetric(relayed, prometheus.GaugeValue, 3, "c"))
		ch <- prometheus.NewMetricWithTimestamp(now.Add(-time.Hour), prometheus.MustNewConstMetric(first, prometheus.GaugeValue, 7))
	}, backup, relayed, first))
	r, tmp := newRegistry(t, mmv.Sentinel)
	b := started(t, r, g, &prombridge.Options{Interval: time.Hour})
	err := b.Refresh()
	assert.ErrorContains(t, err, "family first_old: series [] not copied: its own timestamp is 1h0m0s old, past Options.MaxSampleAge (5m0s)")
	ms := read(t, r, tmp)
	assert.Equal(t, "42", find(t, ms, "last_backup_bytes").Value, "10 seconds old")
	assert.Equal(t, "1", instance(t, find(t, ms, "relayed"), "site=a").Value)
	assert.Equal(t, "2", instance(t, find(t, ms, "relayed"), "site=b").Value, "10 seconds old")
	assert.Equal(t, "3", instance(t, find(t, ms, "relayed"), "site=c").Value, "in the future")
	assert.Contains(t, []string{"", "nan"}, find(t, ms, "first_old").Value, "gathered an hour old from the start: no value, not its declaration's zero")
	dropped := instance(t, find(t, ms, "prombridge.dropped"), "reason=stale")
	assert.Equal(t, strconv.FormatUint(b.Stats().Refreshes, 10), dropped.Value, "first_old's sample at every refresh")
	series := b.Stats().Series

	backupAge.Store(int64(time.Hour))
	siteAge.Store(int64(time.Hour))
	err = b.Refresh()
	assert.ErrorContains(t, err, "family last_backup_bytes: series [] not copied: its own timestamp is 1h0m0s old, past Options.MaxSampleAge (5m0s)")
	assert.ErrorContains(t, err, `family relayed: series ["b"] not copied: its own timestamp is 1h0m0s old`)
	ms = read(t, r, tmp)
	assert.Contains(t, []string{"", "nan"}, find(t, ms, "last_backup_bytes").Value, "an hour old: no value")
	assert.Nil(t, find(t, ms, "relayed").Instance("site=b"), "an hour old: left PCP")
	assert.Equal(t, "1", instance(t, find(t, ms, "relayed"), "site=a").Value)
	assert.Equal(t, strconv.FormatUint(b.Stats().Refreshes+2, 10), instance(t, find(t, ms, "prombridge.dropped"), "reason=stale").Value,
		"first_old's at every refresh, and two more")
	assert.Equal(t, series-2, b.Stats().Series)

	// Fresh again: back, as a series absent that comes back.
	backupAge.Store(0)
	siteAge.Store(0)
	require.ErrorContains(t, b.Refresh(), "family first_old")
	ms = read(t, r, tmp)
	assert.Equal(t, "42", find(t, ms, "last_backup_bytes").Value)
	assert.Equal(t, "2", instance(t, find(t, ms, "relayed"), "site=b").Value)
	assert.Equal(t, series, b.Stats().Series)
}

// TestOldSingularNamedWithoutSentinel: without the mmv.Sentinel flag PCP
// cannot withdraw a singular metric whose sample is older than
// Options.MaxSampleAge: it keeps its last value, and Err says so beside
// the stale sample.
func TestOldSingularNamedWithoutSentinel(t *testing.T) {
	var age atomic.Int64 // time.Duration
	desc := prometheus.NewDesc("last_backup_bytes", "size of the last backup", nil, nil)
	g := prometheus.NewRegistry()
	g.MustRegister(collector(func(ch chan<- prometheus.Metric) {
		ch <- prometheus.NewMetricWithTimestamp(time.Now().Add(-time.Duration(age.Load())), prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, 42))
	}, desc))
	r, _ := newRegistry(t)
	b := started(t, r, g, &prombridge.Options{Interval: time.Hour})
	require.NoError(t, b.Refresh())
	age.Store(int64(time.Hour))
	err := b.Refresh()
	assert.ErrorContains(t, err, "family last_backup_bytes: series [] not copied: its own timestamp is 1h0m0s old")
	assert.ErrorContains(t, err, "family last_backup_bytes: its singular metric last_backup_bytes keeps an old value")
}

// TestMaxSampleAgeNegativeCopiesOld: a negative Options.MaxSampleAge
// turns the check off: an hour-old sample is shown as current, as a
// Prometheus scrape with honor_timestamps false stores it.
func TestMaxSampleAgeNegativeCopiesOld(t *testing.T) {
	pcptest.MustHavePCP(t)
	desc := prometheus.NewDesc("last_backup_bytes", "size of the last backup", nil, nil)
	g := prometheus.NewRegistry()
	g.MustRegister(collector(func(ch chan<- prometheus.Metric) {
		ch <- prometheus.NewMetricWithTimestamp(time.Now().Add(-time.Hour), prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, 42))
	}, desc))
	r, tmp := newRegistry(t, mmv.Sentinel)
	b := started(t, r, g, &prombridge.Options{Interval: time.Hour, MaxSampleAge: -1})
	require.NoError(t, b.Refresh())
	ms := read(t, r, tmp)
	assert.Equal(t, "42", find(t, ms, "last_backup_bytes").Value)
	assert.Equal(t, "0", instance(t, find(t, ms, "prombridge.dropped"), "reason=stale").Value)
}

// TestOldSampleLeavesDespiteGatherError: a series gathered too old leaves
// PCP at once even from a Gather that reported an error, where a series
// absent from it stays for Options.Grace (for good while Grace is
// negative): it was gathered, so no collector's failure hid it, and its
// last value is not current.
func TestOldSampleLeavesDespiteGatherError(t *testing.T) {
	pcptest.MustHavePCP(t)
	for _, grace := range []time.Duration{0, -1} {
		t.Run(fmt.Sprint("grace", grace), func(t *testing.T) {
			var old atomic.Bool
			g := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
				if !old.Load() {
					return []*dto.MetricFamily{gaugeFamily("x", "k", "a", 1)}, nil
				}
				f := gaugeFamily("x", "k", "a", 1)
				f.Metric[0].TimestampMs = proto.Int64(time.Now().Add(-time.Hour).UnixMilli())
				return []*dto.MetricFamily{f}, errors.New("another collector failed")
			})
			r, tmp := newRegistry(t)
			b := started(t, r, g, &prombridge.Options{Interval: time.Hour, Grace: grace})
			require.Equal(t, "1", instance(t, find(t, read(t, r, tmp), "x"), "k=a").Value)
			old.Store(true)
			err := b.Refresh()
			assert.ErrorContains(t, err, "another collector failed")
			assert.ErrorContains(t, err, `family x: series ["a"] not copied: its own timestamp is 1h0m0s old`)
			assert.Empty(t, find(t, read(t, r, tmp), "x").Instances)
			assert.Equal(t, 0, b.Stats().Series)
		})
	}
}
