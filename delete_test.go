package mmv_test

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/mmvfile"
)

// instances returns the instances PCP's reader shows for a metric of the
// file vec, by name, with their ids and values.
func instances(t *testing.T, tmp, metric string) map[string]pcptest.Instance {
	t.Helper()
	got := map[string]pcptest.Instance{}
	if m := pcptest.Find(pcptest.Info(t, tmp), "mmv.vec."+metric); m != nil {
		for _, in := range m.Instances {
			got[in.Name] = in
		}
	}
	return got
}

// TestVecDelete: a deleted instance is gone from PCP after the next
// publication, the others keep their values, its slot serves a later
// instance, and the same values again make the same instance, from zero.
func TestVecDelete(t *testing.T) {
	tmp, dir := pcpDir(t)
	r := newRegistry(t, "vec", dir, mmv.Options{Cluster: 303})
	v := mmv.NewCounterVec(r, "hits", "", mmv.Count, "k")
	h := mmv.NewHistogramVec(r, "lat", "", mmv.Second, &mmv.HistogramOptions{Buckets: []float64{1, 2}}, "k")
	v.With("early").Inc()
	assert.True(t, v.Delete("early"), "before Start")
	startOrSkip(t, r)
	for i, k := range []string{"a", "b", "c"} {
		v.With(k).Add(uint64(10 * (i + 1)))
		h.With(k).Observe(1.5)
	}
	require.NoError(t, r.Flush())
	before := instances(t, tmp, "hits")
	require.Len(t, before, 3)
	assert.NotContains(t, before, "k=early")

	kept := v.With("b")
	assert.True(t, v.Delete("b"))
	assert.False(t, v.Delete("b"), "twice")
	assert.False(t, v.Delete("nowhere"))
	assert.True(t, h.Delete("b"))
	kept.Inc() // counts in memory, published no more
	require.NoError(t, r.Flush())
	after := instances(t, tmp, "hits")
	assert.Equal(t, map[string]string{"k=a": "10", "k=c": "30"}, values(after))
	assert.Len(t, instances(t, tmp, "lat.count"), 2)
	assert.Len(t, instances(t, tmp, "lat.bucket"), 2*3)
	assert.Equal(t, []string{"k=a", "k=c"}, v.Instances())

	// A new instance takes b's freed slot; the file stays valid.
	v.With("d").Add(4)
	// The same values again: the same instance id, from zero.
	again := v.With("b")
	assert.NotSame(t, kept, again)
	assert.Zero(t, again.Get())
	again.Add(2)
	require.NoError(t, r.Flush())
	f, err := mmvfile.Open(r.Path())
	require.NoError(t, err)
	assert.NotNil(t, f)
	final := instances(t, tmp, "hits")
	assert.Equal(t, map[string]string{"k=a": "10", "k=b": "2", "k=c": "30", "k=d": "4"}, values(final))
	assert.Equal(t, before["k=b"].ID, final["k=b"].ID, "b's instance id")

	v.Reset()
	require.NoError(t, r.Flush())
	assert.Empty(t, instances(t, tmp, "hits"), "after Reset")
	assert.Empty(t, v.Instances())
}

// TestVecDeleteWhileWaiting: an instrument deleted while its value waits
// for storage (before Start) is never bound to it: the same values made
// again count alone in the file, whatever the deleted one counts after.
func TestVecDeleteWhileWaiting(t *testing.T) {
	tmp, dir := pcpDir(t)
	r := newRegistry(t, "vec", dir, mmv.Options{Cluster: 304})
	v := mmv.NewCounterVec(r, "hits", "", mmv.Count, "k")
	old := v.With("w")
	old.Add(1)
	require.True(t, v.Delete("w"))
	again := v.With("w")
	require.NotSame(t, old, again)
	again.Add(5)
	startOrSkip(t, r)
	old.Add(100)
	require.NoError(t, r.Flush())
	assert.Equal(t, map[string]string{"k=w": "5"}, values(instances(t, tmp, "hits")))
	assert.EqualValues(t, 101, old.Get(), "the deleted one counts in its own memory")
	require.NoError(t, r.Close())
	assert.EqualValues(t, 5, again.Get(), "unbound at Close with its last value")
}

// values maps instance names to their values.
func values(in map[string]pcptest.Instance) map[string]string {
	m := map[string]string{}
	for n, i := range in {
		m[n] = i.Value
	}
	return m
}

// TestVecDeleteRacing: instances deleted and made again, or used once and
// forgotten, while others count and the file grows: the race detector sees
// nothing, every file stays valid, and the instances never deleted end
// exact.
func TestVecDeleteRacing(t *testing.T) {
	_, dir := pcpDir(t)
	r := newRegistry(t, "vec", dir, mmv.Options{})
	v := mmv.NewCounterVec(r, "hits", "", mmv.Count, "k")
	startOrSkip(t, r)
	const rounds = 300
	var wg sync.WaitGroup
	wg.Go(func() { // steady instances
		for range rounds {
			for i := range 4 {
				v.With(fmt.Sprint("steady", i)).Inc()
			}
		}
	})
	wg.Go(func() { // churn
		for i := range rounds {
			k := fmt.Sprint("churn", i%7)
			v.With(k).Inc()
			v.Delete(k)
		}
	})
	wg.Go(func() { // values used once: the indom forgets them as files grow
		for i := range rounds {
			k := fmt.Sprint("once", i)
			v.With(k).Inc()
			v.Delete(k)
		}
	})
	wg.Go(func() { // growth
		for i := range rounds / 10 {
			mmv.NewCounter(r, fmt.Sprint("g", i), "", mmv.Count)
			assert.NoError(t, r.Flush())
			_, err := mmvfile.Open(r.Path())
			assert.NoError(t, err)
		}
	})
	wg.Wait()
	for i := range 4 {
		assert.Equal(t, uint64(rounds), v.With(fmt.Sprint("steady", i)).Get())
	}
}

// TestVecDeleteIsNotLinear: deleting an instance of a large vector marks
// its entry dead instead of copying every entry (a rebuild once half the
// table's entries are dead), and lookups stay right: the remaining instances keep their
// instruments, a deleted one comes back as a new instrument.
func TestVecDeleteIsNotLinear(t *testing.T) {
	const n = 10000
	r := newRegistry(t, "churn", t.TempDir(), mmv.Options{MaxIndomInstances: -1, MaxInstances: -1, MaxFileValues: -1, MaxValues: -1, PublishDelay: time.Hour})
	v := mmv.NewCounterVec(r, "v", "", mmv.Count, "k")
	v.SetLimit(n)
	startOrSkip(t, r)
	key := func(i int) string { return "k" + strconv.Itoa(i) }
	was := make([]*mmv.Counter, n)
	for i := range n {
		was[i] = v.With(key(i))
		require.NotNil(t, was[i], v.Err())
	}
	next := 0
	allocs := testing.AllocsPerRun(300, func() {
		v.Delete(key(next))
		next++
	})
	// Copying the vector's map at each Delete took about n allocations.
	assert.Less(t, allocs, float64(n/10), "allocations per Delete of %d instances", n)
	for i := range n {
		c := v.With(key(i))
		if i < next {
			assert.NotSame(t, was[i], c, "%s, deleted, comes back new", key(i))
		} else {
			assert.Same(t, was[i], c, "%s keeps its instrument", key(i))
		}
	}
}

// TestVecChurn: a vector whose label values churn, each used a while and
// deleted, forgets the deleted instances once they outnumber its live ones
// (and 64): PCP's reader sees exactly the live instances with their
// values, an instance alive throughout keeps its id, and one deleted
// lately comes back with its id of before.
func TestVecChurn(t *testing.T) {
	tmp, dir := pcpDir(t)
	r := newRegistry(t, "vec", dir, mmv.Options{Cluster: 304, PublishDelay: time.Hour})
	v := mmv.NewCounterVec(r, "hits", "", mmv.Count, "k")
	h := mmv.NewHistogramVec(r, "lat", "", mmv.Second, &mmv.HistogramOptions{Buckets: []float64{1, 2}}, "k")
	startOrSkip(t, r)
	v.With("kept").Add(7)
	h.With("kept").Observe(1.5)
	require.NoError(t, r.Flush())
	keptID := instances(t, tmp, "hits")["k=kept"].ID

	const live, total = 20, 1500
	key := func(i int) string { return "r" + strconv.Itoa(i) }
	for i := range total {
		v.With(key(i)).Add(uint64(i))
		h.With(key(i)).Observe(0.5)
		if i >= live {
			require.True(t, v.Delete(key(i-live)))
			require.True(t, h.Delete(key(i-live)))
		}
		if i%50 == 0 {
			require.NoError(t, r.Flush())
		}
	}
	require.NoError(t, r.Flush())
	lately := instances(t, tmp, "hits")["k="+key(total-1)].ID
	require.True(t, v.Delete(key(total-1)))
	require.NoError(t, r.Flush())
	v.With(key(total - 1)).Add(1)
	require.NoError(t, r.Flush())

	got := instances(t, tmp, "hits")
	want := map[string]string{"k=kept": "7", "k=" + key(total-1): "1"}
	for i := total - live; i < total-1; i++ {
		want["k="+key(i)] = strconv.Itoa(i)
	}
	assert.Equal(t, want, values(got))
	assert.Equal(t, keptID, got["k=kept"].ID, "an instance alive throughout keeps its id")
	assert.Equal(t, lately, got["k="+key(total-1)].ID, "an instance deleted lately comes back with its id")
	order := []string{"k=kept"}
	for i := total - live; i < total; i++ {
		order = append(order, "k="+key(i))
	}
	assert.Equal(t, order, v.Instances(), "in order of first use")
	assert.Len(t, instances(t, tmp, "lat.count"), live+1)
	assert.Len(t, instances(t, tmp, "lat.bucket"), 3*(live+1))
}

// TestDeleteTakesHandLabels: a label added by hand to a vector's instance
// (AddInstanceLabel) goes with the instance at Delete: the values used
// again come back with their own labels alone, as Delete and
// AddInstanceLabel say.
func TestDeleteTakesHandLabels(t *testing.T) {
	r := newRegistry(t, "handdelete", t.TempDir(), mmv.Options{})
	v := mmv.NewCounterVec(r, "req", "", mmv.Count, "route")
	v.With("/a").Inc()
	at := instanceAt{indomOf(t, r, "req"), firstInstanceID(t, r, "req")}
	require.NoError(t, r.AddInstanceLabel(at.serial, at.id, mmv.Label{Name: "team", Value: "web"}))
	assert.ElementsMatch(t, []string{`{"route":"/a"}`, `{"team":"web"}`}, snapshotInstanceLabels(t, r)[at])
	require.True(t, v.Delete("/a"))
	v.With("/a").Inc()
	require.Equal(t, at.id, firstInstanceID(t, r, "req"), "the same instance again")
	assert.Equal(t, []string{`{"route":"/a"}`}, snapshotInstanceLabels(t, r)[at])
}
