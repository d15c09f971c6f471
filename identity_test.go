package mmv_test

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
)

// identities returns what PCP's reader shows of the file vec in tmp: per
// metric below mmv.vec, its indom and its instances' ids by name.
func identities(t *testing.T, tmp string) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, m := range pcptest.Info(t, tmp) {
		got[m.Name] = m.PMID + " " + m.Indom
		for _, in := range m.Instances {
			got[m.Name+"["+in.Name+"]"] = strconv.Itoa(in.ID)
		}
	}
	return got
}

// vecService is a service with three vectors, declared in the order of
// decl (a permutation of 0..2), whose label values arrive in the order of
// values, some before Start and the others after.
func vecService(t *testing.T, decl []int, values []string, beforeStart int) map[string]string {
	t.Helper()
	tmp, dir := pcpDir(t)
	r := newRegistry(t, "vec", dir, mmv.Options{Cluster: 310, PublishDelay: time.Hour})
	var hits, sizes *mmv.Vec[mmv.Counter]
	var lat *mmv.Vec[mmv.Histogram]
	for _, d := range decl {
		switch d {
		case 0:
			hits = mmv.NewCounterVec(r, "hits", "", mmv.Count, "route", "status")
		case 1:
			sizes = mmv.NewCounterVec(r, "sizes", "", mmv.Count, "route")
		case 2:
			lat = mmv.NewHistogramVec(r, "lat", "", mmv.Second, &mmv.HistogramOptions{Buckets: []float64{1, 2}}, "route")
		}
	}
	for i, v := range values {
		if i == beforeStart {
			require.NoError(t, r.Start())
		}
		hits.With(v, "200").Inc()
		sizes.With(v).Add(10)
		lat.With(v).Observe(1)
	}
	if len(values) <= beforeStart {
		require.NoError(t, r.Start())
	}
	require.NoError(t, r.Flush())
	return identities(t, tmp)
}

// TestVecIdentityOnRestart: a service restarted with its vectors declared,
// and its label values arriving, in another order publishes the same
// indoms and the same instance ids, as PCP's reader shows them. Vectors
// numbered their instances in order of first use and took serials in
// order of declaration: route=/a had another id, and two indoms swapped.
func TestVecIdentityOnRestart(t *testing.T) {
	routes := []string{"/a", "/b", "/c", "/d", "/e"}
	first := vecService(t, []int{0, 1, 2}, routes, 2)
	reversed := slices.Clone(routes)
	slices.Reverse(reversed)
	again := vecService(t, []int{2, 1, 0}, reversed, 0)
	require.NotEmpty(t, first)
	assert.Equal(t, first, again)
}

// TestVecIdentityAnyOrder: whatever the order of declarations and values,
// and whether they come before or after Start, PCP shows the same ids.
func TestVecIdentityAnyOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 21))
	var values []string
	for i := range 40 {
		values = append(values, "/r"+strconv.Itoa(i))
	}
	want := vecService(t, []int{0, 1, 2}, values, 0)
	for range 3 {
		decl, vals := []int{0, 1, 2}, slices.Clone(values)
		rng.Shuffle(len(decl), func(i, j int) { decl[i], decl[j] = decl[j], decl[i] })
		rng.Shuffle(len(vals), func(i, j int) { vals[i], vals[j] = vals[j], vals[i] })
		before := rng.IntN(len(vals) + 1)
		assert.Equal(t, want, vecService(t, decl, vals, before), "declared %v, values %v, %d before Start", decl, vals, before)
	}
}

// TestVecIDCollision: two values whose names derive the same id: the one
// used first keeps it, the other takes the next, so a restart where they
// come in the other order swaps them; a value alone on its hash has its
// derived id whatever else is there.
func TestVecIDCollision(t *testing.T) {
	a, b := idColliders()
	home := strconv.FormatInt(idHome("k="+a, 1<<30), 10)
	next := strconv.FormatInt(idHome("k="+a, 1<<30)+1, 10)
	run := func(values ...string) map[string]string {
		tmp, dir := pcpDir(t)
		r := newRegistry(t, "vec", dir, mmv.Options{Cluster: 311})
		v := mmv.NewCounterVec(r, "hits", "", mmv.Count, "k")
		require.NoError(t, r.Start())
		for _, x := range values {
			v.With(x).Inc()
		}
		require.NoError(t, r.Flush())
		ids := map[string]string{}
		for name, in := range instances(t, tmp, "hits") {
			ids[name] = strconv.Itoa(in.ID)
		}
		return ids
	}
	assert.Equal(t, map[string]string{"k=" + a: home, "k=" + b: next, "k=alone": strconv.FormatInt(idHome("k=alone", 1<<30), 10)}, run(a, "alone", b))
	assert.Equal(t, map[string]string{"k=" + b: home, "k=" + a: next}, run(b, a), "in the other order they swap")
	assert.Equal(t, map[string]string{"k=" + b: home}, run(b), "alone")
}

// TestVecIDNeverReused: a vector that forgets a deleted value keeps its
// id from every other value, a colliding one included, and gives it back
// to the value when it comes again; once it has forgotten more values than
// its limit, and 64, it counts new values' ids in the upper half, and no id
// ever names two values (PCP's reader shows them, publication after
// publication).
func TestVecIDNeverReused(t *testing.T) {
	tmp, dir := pcpDir(t)
	r := newRegistry(t, "vec", dir, mmv.Options{Cluster: 312, PublishDelay: time.Hour})
	v := mmv.NewCounterVec(r, "hits", "", mmv.Count, "k")
	v.SetLimit(200)
	require.NoError(t, r.Start())
	named := map[int]string{} // every id PCP showed, and its name
	idOf := func(value string) int {
		t.Helper()
		require.NoError(t, r.Flush())
		for name, in := range instances(t, tmp, "hits") {
			if o, ok := named[in.ID]; ok {
				require.Equal(t, o, name, "id %d", in.ID)
			}
			named[in.ID] = name
		}
		id, ok := instances(t, tmp, "hits")["k="+value]
		require.True(t, ok, "k=%s not shown", value)
		return id.ID
	}
	a, b := idColliders()
	v.With(a).Inc()
	idA := idOf(a)
	assert.EqualValues(t, idHome("k="+a, 1<<30), idA)
	// a deleted, then enough values used and deleted that a is forgotten.
	churn := func(from, n int) {
		for i := from; i < from+n; i++ {
			v.With("x" + strconv.Itoa(i)).Inc()
			require.True(t, v.Delete("x"+strconv.Itoa(i)))
			if i%20 == 0 {
				require.NoError(t, r.Flush())
			}
		}
	}
	require.True(t, v.Delete(a))
	churn(0, 150) // the vector forgets the deleted values, a too
	v.With(b).Inc()
	assert.Equal(t, idA+1, idOf(b), "b does not take a's id")
	v.With(a).Inc()
	assert.Equal(t, idA, idOf(a), "a comes back with its id")

	// Past the limit of forgotten values, new ones are counted.
	require.True(t, v.Delete(a))
	churn(150, 500)
	v.With("late").Inc()
	late := idOf("late")
	assert.GreaterOrEqual(t, late, 1<<30, "counted")
	v.With(a).Inc()
	assert.Equal(t, late+1, idOf(a), "a, forgotten, is new")
	assert.Equal(t, idA+1, idOf(b), "b, never deleted, keeps its id")
}
