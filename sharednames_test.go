package mmv_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/mmvfile"
)

// TestInstanceNamesShared: the instances of the indoms the registry makes
// for instruments share one string record per name, in a first file and
// in a grown one, while an indom the program declares keeps a record per
// instance, as libpcp_mmv writes it; PCP's reader and its mmvdump read
// every name and value (with MMV_PCP_ROOT, PCP 7.2's too).
func TestInstanceNamesShared(t *testing.T) {
	needFileLayer(t)
	tmp, dir := pcpDir(t)
	// One file: at the default budget each vector, reserving room for its
	// default limit, would take a file of its own.
	r := newRegistry(t, "sharednames", dir, mmv.Options{MaxFileValues: -1})
	require.NoError(t, r.AddIndom(mmv.Indom{Serial: 1, ShortHelp: "Routes", Instances: []mmv.Instance{{ID: 0, Name: "route=/a"}, {ID: 1, Name: "route=/b"}}}))
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "low", Item: 1, Type: mmv.Uint64, Semantics: mmv.SemCounter, Indom: 1}))
	vecs := make([]*mmv.Vec[mmv.Counter], 3)
	for i := range vecs {
		vecs[i] = mmv.NewCounterVec(r, fmt.Sprintf("v%d", i), "Requests", mmv.Count, "route")
		vecs[i].With("/a").Add(uint64(10*i + 1))
		vecs[i].With("/b").Add(uint64(10*i + 2))
	}
	hv := mmv.NewHistogramVec(r, "h", "Sizes", mmv.Byte, &mmv.HistogramOptions{Buckets: []float64{10}}, "route")
	hv.With("/a").Observe(5)
	require.NoError(t, r.Start())

	check := func(when string, routes ...string) {
		t.Helper()
		f, err := mmvfile.Open(r.Path())
		require.NoError(t, err, when)
		at := map[string]uint64{} // a shared name's string record
		low := map[uint64]bool{}  // the program's indom's records
		for _, in := range f.Indoms {
			for _, inst := range in.Instances {
				require.NotZero(t, inst.NameOffset, "%s: v2 or v3, names in string records", when)
				if in.Serial == 1 {
					low[inst.NameOffset] = true
					continue
				}
				if off, ok := at[inst.Name]; ok {
					assert.Equal(t, off, inst.NameOffset, "%s: %q in two string records", when, inst.Name)
				}
				at[inst.Name] = inst.NameOffset
			}
		}
		assert.Len(t, low, 2, "%s: the program's indom keeps a record per instance", when)
		helps, vs := map[uint64]bool{}, 0
		for _, m := range f.Metrics {
			if strings.HasPrefix(m.Name, "v") {
				helps[m.ShortHelp.Offset] = true
				vs++
			}
		}
		require.Equal(t, len(vecs), vs, "%s: every vector in the first file", when)
		assert.Len(t, helps, 1, "%s: the vectors' help, %q, in one string record", when, "Requests")
		for off := range low {
			for name, shared := range at {
				assert.NotEqual(t, shared, off, "%s: the program's indom shares %q's record", when, name)
			}
		}
		ms := pcptest.Info(t, tmp)
		for i := range vecs {
			m := get(t, ms, fmt.Sprintf("mmv.sharednames.v%d", i))
			require.Len(t, m.Instances, len(routes), when)
			assert.Equal(t, "Requests", m.ShortHelp, when)
			for j, route := range routes {
				want := fmt.Sprint(10*i + j + 1)
				found := false
				for _, inst := range m.Instances {
					if inst.Name == "route="+route {
						found = true
						assert.Equal(t, want, inst.Value, "%s: v%d %s", when, i, route)
					}
				}
				assert.True(t, found, "%s: v%d has no instance route=%s: %v", when, i, route, m.Instances)
			}
		}
		assert.Len(t, get(t, ms, "mmv.sharednames.low").Instances, 2, when)
		assert.Equal(t, "1", get(t, ms, "mmv.sharednames.h.count").Instances[0].Value, when)
		dump := pcptest.Dump(t, r.Path())
		assert.NotContains(t, dump, "Bad", when)
		named := map[string]int{}
		for _, inst := range f.Instances {
			named[inst.Name]++
		}
		for _, route := range routes {
			n := named["route="+route]
			assert.GreaterOrEqual(t, n, len(vecs), "%s: route=%s", when, route)
			assert.Equal(t, n, len(regexp.MustCompile(`instance = \[\d+ or "route=`+regexp.QuoteMeta(route)+`"\]`).FindAllString(dump, -1)), "%s: mmvdump's instances named route=%s\n%s", when, route, dump)
		}
	}
	check("first file", "/a", "/b")
	for i, v := range vecs {
		v.With("/c").Add(uint64(10*i + 3))
	}
	require.NoError(t, r.Flush())
	check("grown file", "/a", "/b", "/c")
}

// TestNamesSharedWhereverFirstLaidOut: a name shares one string record
// with every equal one of its kind (whole, or a histogram's bucket's),
// whichever indom lays it out first: here names first met in the middle
// and last of the vectors, and buckets of two histogram vectors, in a
// first file and in a grown one, which a file of one vector lays out with
// no lookup (newPlan).
func TestNamesSharedWhereverFirstLaidOut(t *testing.T) {
	needFileLayer(t)
	_, dir := pcpDir(t)
	r := newRegistry(t, "sharedfirst", dir, mmv.Options{MaxFileValues: -1})
	routes := [][]string{{"/a"}, {"/a", "/b"}, {"/b", "/c"}, {"/d"}, {"/c", "/d"}}
	vecs := make([]*mmv.Vec[mmv.Counter], len(routes))
	for i := range vecs {
		vecs[i] = mmv.NewCounterVec(r, fmt.Sprintf("v%d", i), "Requests", mmv.Count, "route")
		for _, route := range routes[i] {
			vecs[i].With(route).Inc()
		}
	}
	hs := []*mmv.Vec[mmv.Histogram]{
		mmv.NewHistogramVec(r, "h0", "Sizes", mmv.Byte, &mmv.HistogramOptions{Buckets: []float64{10}}, "route"),
		mmv.NewHistogramVec(r, "h1", "Sizes", mmv.Byte, &mmv.HistogramOptions{Buckets: []float64{10}}, "route"),
	}
	hs[0].With("/a").Observe(5)
	hs[1].With("/b").Observe(5)
	require.NoError(t, r.Start())
	check := func(when string, names int) {
		t.Helper()
		f, err := mmvfile.Open(r.Path())
		require.NoError(t, err, when)
		type key struct {
			name   string
			bucket bool
		}
		at := map[key]map[uint64]bool{}
		for _, inst := range f.Instances {
			k := key{inst.Name, strings.Contains(inst.Name, ",le=")}
			if at[k] == nil {
				at[k] = map[uint64]bool{}
			}
			at[k][inst.NameOffset] = true
		}
		for k, offs := range at {
			assert.Len(t, offs, 1, "%s: %+v in %d string records", when, k, len(offs))
		}
		assert.Len(t, at, names, "%s: distinct names", when)
	}
	// route=/a to /d, which the histograms' statistics share, and their
	// buckets' route=/a,le=10, /a,le=+Inf, /b,le=10 and /b,le=+Inf.
	check("first file", 8)
	vecs[3].With("/e").Inc()
	vecs[4].With("/e").Inc()
	hs[0].With("/b").Observe(5)
	hs[1].With("/c").Observe(5)
	require.NoError(t, r.Flush())
	check("grown file", 11) // route=/e, and route=/c's buckets
}

// TestDerivedNameBesideWhole: a histogram vector's bucket names, which
// its indom derives from the label values (two parts in the encoder's
// plan), are not shared with an equal name another vector stores whole,
// here a counter vector of labels route and le: the file holds the text
// in two string records, and PCP's reader shows each metric's instance
// with its own value.
func TestDerivedNameBesideWhole(t *testing.T) {
	needFileLayer(t)
	tmp, dir := pcpDir(t)
	r := newRegistry(t, "derivednames", dir, mmv.Options{MaxFileValues: -1})
	hv := mmv.NewHistogramVec(r, "h", "Sizes", mmv.Byte, &mmv.HistogramOptions{Buckets: []float64{10}}, "route")
	cv := mmv.NewCounterVec(r, "c", "Requests", mmv.Count, "route", "le")
	hv.With("/a").Observe(5)
	cv.With("/a", "10").Add(7)
	require.NoError(t, r.Start())
	f, err := mmvfile.Open(r.Path())
	require.NoError(t, err)
	offsets := map[uint64]bool{}
	for _, inst := range f.Instances {
		if inst.Name == "route=/a,le=10" {
			offsets[inst.NameOffset] = true
		}
	}
	assert.Len(t, offsets, 2, "the bucket's name and the counter's, each in a string record")
	ms := pcptest.Info(t, tmp)
	for metric, want := range map[string]string{"mmv.derivednames.h.bucket": "1", "mmv.derivednames.c": "7"} {
		found := false
		for _, inst := range get(t, ms, metric).Instances {
			if inst.Name == "route=/a,le=10" {
				found = true
				assert.Equal(t, want, inst.Value, metric)
			}
		}
		assert.True(t, found, "%s has no instance route=/a,le=10", metric)
	}
	assert.NotContains(t, pcptest.Dump(t, r.Path()), "Bad")
}
