package prombridge_test

import (
	"math"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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

// TestCloseDuringRefreshCopiesLastValues: a Close that meets a refresh
// whose Gather is running (a big registry's, not stuck) waits for it, and
// its copy is the last: Close skipped its own and marked the bridge
// closed, so the refresh copied nothing either, and PCP kept the values of
// the refresh before.
func TestCloseDuringRefreshCopiesLastValues(t *testing.T) {
	pcptest.MustHavePCP(t)
	var x atomic.Uint64
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
		return []*dto.MetricFamily{gaugeFamily("last", "", "", math.Float64frombits(x.Load()))}, nil
	})
	r, tmp := newRegistry(t)
	x.Store(math.Float64bits(1))
	b := started(t, r, g, &prombridge.Options{Interval: time.Hour})
	require.NoError(t, b.Refresh())
	require.Equal(t, "1", find(t, read(t, r, tmp), "last").Value)

	x.Store(math.Float64bits(2))
	slow.Store(true)
	done := make(chan struct{})
	go func() { defer close(done); b.Refresh() }() // the poll's refresh
	<-entered
	require.NoError(t, b.Close())
	<-done
	assert.Equal(t, "2", find(t, read(t, r, tmp), "last").Value, "Close returned nil; PCP keeps the value of the refresh before Close")
}

// TestCloseCopiesValuesSetBeforeClose: a program sets its last value,
// then closes the bridge while a poll's refresh has begun its Gather
// (which read the value before): Close waits for that refresh, then
// copies anew, where it took the refresh's copy as the last and PCP kept
// the value before the program's last update.
func TestCloseCopiesValuesSetBeforeClose(t *testing.T) {
	pcptest.MustHavePCP(t)
	var x atomic.Uint64
	var slow atomic.Bool
	entered := make(chan struct{}, 1)
	g := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		v := math.Float64frombits(x.Load()) // a collector reads its value
		if slow.Load() {
			select {
			case entered <- struct{}{}:
			default:
			}
			time.Sleep(200 * time.Millisecond) // the other collectors of a big registry
		}
		return []*dto.MetricFamily{gaugeFamily("final", "", "", v)}, nil
	})
	r, tmp := newRegistry(t)
	x.Store(math.Float64bits(1))
	b := started(t, r, g, &prombridge.Options{Interval: time.Hour})
	require.NoError(t, b.Refresh())

	x.Store(math.Float64bits(2))
	slow.Store(true)
	done := make(chan struct{})
	go func() { defer close(done); b.Refresh() }() // the poll's refresh
	<-entered
	slow.Store(false)
	x.Store(math.Float64bits(3)) // the program's last update, then Close
	require.NoError(t, b.Close())
	<-done
	assert.Equal(t, "3", find(t, read(t, r, tmp), "final").Value, "the value set before Close")
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
