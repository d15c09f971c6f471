package mmv_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/mmvtest"
)

// TestVecExpiryThroughPCP: with real sweeps, an idle instance of a
// counter vector and of a histogram vector leaves PCP at the next
// publication, the busy ones stay, mmv.expired counts the expired, and the
// idle values back are the same PCP instances, from zero.
func TestVecExpiryThroughPCP(t *testing.T) {
	tmp, dir := pcpDir(t)
	r := newRegistry(t, "expiry_pcp", dir, mmv.Options{})
	c := mmv.NewCounterVec(r, "hits", "Hits", mmv.Count, "k")
	h := mmv.NewHistogramVec(r, "lat", "Latency", mmv.Second, &mmv.HistogramOptions{Buckets: []float64{1}}, "k")
	const d = 200 * time.Millisecond
	c.SetExpiry(d) // before Start: sweeps begin at Start
	startOrSkip(t, r)
	h.SetExpiry(d)         // after
	lastIdle := time.Now() // no later than the idle updates
	c.With("idle").Add(5)
	h.With("idle").Observe(1)
	require.NoError(t, r.Flush())
	before := pcptest.Info(t, tmp)
	idleID := instanceIDs(t, before, "mmv.expiry_pcp.hits")["k=idle"]
	idleStat := instanceIDs(t, before, "mmv.expiry_pcp.lat.count")["k=idle"]

	busy := func() { c.With("busy").Inc(); h.With("busy").Observe(0.5) }
	waitGone(t, c, "k=idle", busy)
	assert.GreaterOrEqual(t, time.Since(lastIdle), d, "expired no sooner than its expiry")
	waitGone(t, h, "k=idle", busy)
	// busy is idle from here: left to expire with d, its instances went
	// while pminfo read them under a loaded CI, which printed one with no
	// name.
	c.SetExpiry(time.Hour)
	h.SetExpiry(time.Hour)
	require.NoError(t, r.Flush())
	ms := pcptest.Info(t, tmp)
	assert.Equal(t, []string{"k=busy"}, slices.Sorted(maps.Keys(instanceIDs(t, ms, "mmv.expiry_pcp.hits"))))
	assert.Equal(t, []string{"k=busy"}, slices.Sorted(maps.Keys(instanceIDs(t, ms, "mmv.expiry_pcp.lat.count"))))
	assert.Equal(t, []string{"k=busy,le=+Inf", "k=busy,le=1"}, slices.Sorted(maps.Keys(instanceIDs(t, ms, "mmv.expiry_pcp.lat.bucket"))))
	exp := get(t, ms, "mmv.expiry_pcp.mmv.expired")
	assert.Equal(t, "2", exp.Instance("expired").Value)
	assert.Equal(t, "0", exp.Instance("late").Value)

	c.With("idle").Inc()
	h.With("idle").Observe(1)
	require.NoError(t, r.Flush())
	ms = pcptest.Info(t, tmp)
	assert.Equal(t, idleID, instanceIDs(t, ms, "mmv.expiry_pcp.hits")["k=idle"], "the same PCP instance")
	hits := get(t, ms, "mmv.expiry_pcp.hits")
	assert.Equal(t, "1", hits.Instance("k=idle").Value, "from zero")
	assert.Equal(t, idleStat, instanceIDs(t, ms, "mmv.expiry_pcp.lat.count")["k=idle"])
}

// TestVecExpiryRacesUpdates: updates through With and through kept
// instruments race sweeps every millisecond, publications, snapshots and
// churn (run under -race, which checks the sweep's reads against the
// updates). No instance id ever moves, PCP's reader shows exactly the
// vector's live instances with their ids, the live instances never hold
// more than the updates made, and expiries are counted.
func TestVecExpiryRacesUpdates(t *testing.T) {
	tmp, dir := pcpDir(t)
	r := newRegistry(t, "expiry_race", dir, mmv.Options{PublishDelay: time.Millisecond})
	c := mmv.NewCounterVec(r, "hits", "Hits", mmv.Count, "k")
	h := mmv.NewHistogramVec(r, "lat", "Latency", mmv.Second, &mmv.HistogramOptions{Buckets: []float64{1}}, "k")
	c.SetExpiry(4 * time.Millisecond)
	h.SetExpiry(4 * time.Millisecond)
	startOrSkip(t, r)

	var made atomic.Uint64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				k := fmt.Sprint("v", rng.IntN(40), "_", i/500) // churn: new values every 500 rounds
				kept := c.With(k)
				for range 1 + rng.IntN(3) {
					kept.Inc()
					made.Add(1)
					h.With(k).Observe(0.5)
					if rng.IntN(8) == 0 {
						time.Sleep(time.Duration(rng.IntN(6)) * time.Millisecond)
					}
				}
			}
		}()
	}
	ids := map[string]int32{}
	for deadline := time.Now().Add(1500 * time.Millisecond); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		snap, err := r.Snapshot()
		require.NoError(t, err)
		for _, m := range snap {
			if m.Name != "hits" {
				continue
			}
			for _, iv := range m.Values {
				if id, ok := ids[iv.Instance]; ok {
					require.Equal(t, id, iv.ID, "the id of %s moved", iv.Instance)
				}
				ids[iv.Instance] = iv.ID
			}
		}
	}
	close(stop)
	wg.Wait()
	c.SetExpiry(0) // the instances stay still while compared
	h.SetExpiry(0)
	time.Sleep(10 * time.Millisecond) // a sweep scheduled before ends
	require.NoError(t, r.Flush())

	snap, err := r.Snapshot()
	require.NoError(t, err)
	var live uint64
	want := map[string]int{}
	for _, m := range snap {
		if m.Name == "hits" {
			for _, iv := range m.Values {
				live += iv.Value.(uint64)
				want[iv.Instance] = int(iv.ID)
			}
		}
	}
	assert.LessOrEqual(t, live, made.Load())
	ms := pcptest.Info(t, tmp)
	assert.Equal(t, want, instanceIDs(t, ms, "mmv.expiry_race.hits"), "PCP shows exactly the live instances, with their ids")
	exp := get(t, ms, "mmv.expiry_race.mmv.expired")
	assert.NotEqual(t, "0", exp.Instance("expired").Value)
	t.Logf("updates %d, in live instances %d, expired %s, late %s, ids seen %d",
		made.Load(), live, exp.Instance("expired").Value, exp.Instance("late").Value, len(ids))
}

// TestSetExpiryChangedAfterStart: an expiry shortened after Start sweeps
// at its own pace from then on: an instance idle past the new expiry
// leaves within it and half again, where the sweep scheduled for the old
// expiry, an hour's, was waited for.
func TestSetExpiryChangedAfterStart(t *testing.T) {
	r := mmvtest.Started(t, nil)
	v := mmv.NewCounterVec(r, "hits", "Hits", mmv.Count, "k")
	v.SetExpiry(time.Hour)
	v.With("idle").Inc()
	const d = 100 * time.Millisecond
	v.SetExpiry(d)
	require.Equal(t, d, v.Expiry())
	deadline := time.Now().Add(20 * d)
	for slices.Contains(v.Instances(), "k=idle") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	assert.NotContains(t, v.Instances(), "k=idle", "idle for %v with an expiry of %v", 20*d, d)
}
