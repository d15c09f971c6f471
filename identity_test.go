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
