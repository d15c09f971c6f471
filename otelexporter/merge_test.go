package otelexporter

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
)

// TestLateKeyAddsIntoTotals: a key that an instrument's first export did
// not have (the semantic conventions' error.type, on failed requests
// only) no longer loses its points: a counter's and a histogram's points
// carrying it are added into the instance of their other attributes, as
// a View dropping the key would add them, so the totals count the failed
// requests; Err names the key. A gauge's are dropped, counted, as
// before: levels do not add up. The points were dropped, the failed
// requests missing from every total until the process restarted.
func TestLateKeyAddsIntoTotals(t *testing.T) {
	pcptest.NeedFileLayer(t)
	pcptest.MustHavePCP(t)
	p := newProvider(t, Options{})
	ctx := context.Background()
	m := p.Meter("web")
	reqs, err := m.Int64Counter("requests")
	require.NoError(t, err)
	lat, err := m.Float64Histogram("latency", metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(0.1, 1))
	require.NoError(t, err)
	inflight, err := m.Int64Gauge("inflight")
	require.NoError(t, err)
	get := metric.WithAttributes(attribute.String("http.request.method", "GET"))
	failed := metric.WithAttributes(attribute.String("http.request.method", "GET"), attribute.String("error.type", "timeout"))
	reqs.Add(ctx, 10, get)
	lat.Record(ctx, 0.05, get)
	inflight.Record(ctx, 3, get)
	_, _ = p.flush(t)
	require.NoError(t, p.exp.Err())

	reqs.Add(ctx, 2, get)
	reqs.Add(ctx, 3, failed)
	lat.Record(ctx, 0.5, failed)
	lat.Record(ctx, 2, failed)
	inflight.Record(ctx, 4, failed)
	for i := range 2 {
		ms, _ := p.flush(t)
		const inst = "http_request_method=GET"
		assert.Equal(t, map[string]string{inst: "15"}, shownValues(t, ms, "mmv.shop_test.web.requests"), "flush %d", i)
		assert.Equal(t, map[string]string{inst: "3"}, shownValues(t, ms, "mmv.shop_test.web.latency.count"), "flush %d", i)
		assert.Equal(t, map[string]string{inst: "2550000000"}, shownValues(t, ms, "mmv.shop_test.web.latency.sum"), "flush %d: nanoseconds", i)
		assert.Equal(t, map[string]string{inst + ",le=0.1": "1", inst + ",le=1": "1", inst + ",le=+Inf": "1"},
			shownValues(t, ms, "mmv.shop_test.web.latency.bucket"), "flush %d", i)
		assert.Equal(t, map[string]string{inst: "0.05"}, shownValues(t, ms, "mmv.shop_test.web.latency.min"), "flush %d", i)
		assert.Equal(t, map[string]string{inst: "2"}, shownValues(t, ms, "mmv.shop_test.web.latency.max"), "flush %d", i)
		assert.Equal(t, map[string]string{inst: "3"}, shownValues(t, ms, "mmv.shop_test.web.inflight"), "flush %d: the gauge's point with the key is dropped", i)
		assert.Equal(t, fmt.Sprint(i+1), droppedOf(t, ms, "shop_test", "attributes"), "flush %d: the gauge's point, at each export", i)
		err := p.exp.Err()
		require.Error(t, err)
		assert.ErrorContains(t, err, `instrument "requests" of scope "web": attribute keys ["error.type"]`)
		assert.ErrorContains(t, err, `instrument "latency" of scope "web": attribute keys ["error.type"]`)
		assert.ErrorContains(t, err, `instrument "inflight" of scope "web": attribute keys ["error.type" "http.request.method"]`)
	}
}

// TestLateKeyAcrossBatches: an export that continues a collection (the
// SDK's batches) and carries a late key's point adds it to the value its
// instance got from the collection's earlier batch, and the next
// collection's first batch keeps it: a counter never goes down. The
// late point's value alone, then the first batch's alone, would read in
// PCP as two counter wraps.
func TestLateKeyAcrossBatches(t *testing.T) {
	exp, tmp := pcpExporter(t, Options{})
	counter := func(at time.Time, pts ...metricdata.DataPoint[int64]) *metricdata.ResourceMetrics {
		for i := range pts {
			pts[i].Time = at
		}
		return &metricdata.ResourceMetrics{Resource: testResource, ScopeMetrics: []metricdata.ScopeMetrics{{
			Scope: instrumentation.Scope{Name: "s"},
			Metrics: []metricdata.Metrics{{Name: "requests", Data: metricdata.Sum[int64]{
				Temporality: metricdata.CumulativeTemporality, IsMonotonic: true, DataPoints: pts}}},
		}}}
	}
	get := attribute.String("method", "GET")
	ctx := context.Background()
	shown := func(what string) string {
		require.NoError(t, exp.ForceFlush(ctx))
		return shownValues(t, pcptest.Info(t, tmp), "mmv.shop_test.s.requests")["method=GET"] + " " + what
	}
	at := time.Now()
	require.NoError(t, exp.Export(ctx, counter(at, point(10, get))))
	assert.Equal(t, "10 first", shown("first"))
	at = at.Add(time.Second)
	require.NoError(t, exp.Export(ctx, counter(at, point(11, get))))
	require.NoError(t, exp.Export(ctx, counter(at, point(3, get, attribute.String("error.type", "timeout")))))
	assert.Equal(t, "14 batches", shown("batches"))
	at = at.Add(time.Second)
	require.NoError(t, exp.Export(ctx, counter(at, point(12, get))))
	assert.Equal(t, "15 next", shown("next"))
	require.NoError(t, exp.Export(ctx, counter(at, point(4, get, attribute.String("error.type", "timeout")))))
	assert.Equal(t, "16 next batch", shown("next batch"))
}

// TestKeysOfOneLabel: two attribute keys that make one PCP label name
// (a.b and a_b: '.' is made '_') are two labels, the one not spelt as
// the label renamed as a scrape renames a label that clashes
// (exported_a_b): the vector, given a label twice, was refused, and every
// point of the instrument dropped for the registry's life. The key spelt
// as the label keeps it whatever the other keys of the first export, so
// its label is the same across restarts: the second in key order was
// renamed, a_b's label a_b in a run whose first export lacked a.b and
// exported_a_b in one whose first export had it.
func TestKeysOfOneLabel(t *testing.T) {
	requests, sizes := clashing(t, "requests", []add{
		{1, []attribute.KeyValue{attribute.String("a.b", "x"), attribute.String("a_b", "y")}},
		{2, []attribute.KeyValue{attribute.String("a.b", "x")}},
	}, attribute.String("le", "x"), attribute.String("exported_le", "y"))
	assert.Equal(t, map[string]string{"exported_a_b=x,a_b=y": "1", "exported_a_b=x,a_b=": "2"}, requests)
	assert.Equal(t, map[string]string{"exported_le=y,exported_exported_le=x": "1"}, sizes)
	assert.Equal(t, []string{"a_b"}, unclash([]attribute.Key{"a_b"}, nil), "a run whose first export has a_b alone")
}

// TestKeyNamedAsResourceLabel: an attribute key that makes the label of a
// resource attribute the registry carries (service.name on a client's
// calls, naming the service called) is exported_<label>, as Prometheus
// renames a target's label a series has. mmv refuses a vector whose
// label the registry has (PCP shows the registry's value on each
// instance without a label of its own), which dropped every point.
func TestKeyNamedAsResourceLabel(t *testing.T) {
	calls, sizes := clashing(t, "calls", []add{
		{3, []attribute.KeyValue{attribute.String("service.name", "db"), attribute.String("host.name", "h1")}},
	}, attribute.String("service_name", "cache"))
	assert.Equal(t, map[string]string{"exported_host_name=h1,exported_service_name=db": "3"}, calls)
	assert.Equal(t, map[string]string{"exported_service_name=cache": "1"}, sizes)
	// The key spelt as the label keeps its first rename whatever the
	// other keys: exported_exported_service_name beside service.name, in
	// key order.
	reserved := []string{"service_name"}
	assert.Equal(t, []string{"exported_service_name"}, unclash([]attribute.Key{"service_name"}, reserved))
	assert.Equal(t, []string{"exported_exported_service_name", "exported_service_name"}, unclash([]attribute.Key{"service.name", "service_name"}, reserved))
}

// TestKeyNamedAsProgramsRegistryLabelExported: an attribute key that
// makes the label of one the program added to the exporter's registry
// (Registry().AddLabel) is exported_<label>, as one of a resource
// attribute's is: the exporter renamed only those of its resource, and
// mmv refused the instrument's vector, every point dropped for good.
func TestKeyNamedAsProgramsRegistryLabelExported(t *testing.T) {
	pcptest.NeedFileLayer(t)
	pcptest.MustHavePCP(t)
	p := newProvider(t, Options{})
	ctx := context.Background()
	c, err := p.Meter("s").Int64Counter("calls")
	require.NoError(t, err)
	c.Add(ctx, 1)
	p.flush(t) // the first export makes the registry
	require.NoError(t, p.exp.Registry().AddLabel(mmv.Label{Name: "version", Value: "1.2.3"}))
	b, err := p.Meter("s").Int64Counter("builds")
	require.NoError(t, err)
	b.Add(ctx, 2, metric.WithAttributes(attribute.String("version", "go1.26")))
	ms, _ := p.flush(t)
	require.NoError(t, p.exp.Err())
	assert.Equal(t, map[string]string{"exported_version=go1.26": "2"}, shownValues(t, ms, "mmv.shop_test.s.builds"))
}

// TestLateSetsPrintingAlikeAddUp: two attribute sets whose keys
// past the labels print alike (error.code an int 1 in one code path, a
// string "1" in another) are two series of the instance, and both add
// into it, as a View dropping the key adds them; they took the instance
// out of PCP, the successful requests' too, every point counted.
func TestLateSetsPrintingAlikeAddUp(t *testing.T) {
	s := newStamped(t, Options{})
	get := attribute.String("method", "GET")
	s.counters(point(10, get))
	for i := range 2 {
		s.next().counters(point(11, get), point(2, get, attribute.Int("error.code", 1)), point(int64(3+i), get, attribute.String("error.code", "1")))
		ms := s.shown()
		assert.Equal(t, map[string]string{"method=GET": fmt.Sprint(16 + i)}, shownValues(t, ms, "mmv.shop_test.s.requests"), "export %d", i)
		assert.Equal(t, "0", droppedOf(t, ms, "shop_test", "attributes"), "export %d", i)
	}
}

// TestSeededLateMemberKeepsMinMax: a histogram's set whose late-key
// point comes in a later batch of the collection than its own point
// shows the least min and greatest max of both: the instance's value
// from the earlier batch seeds its member with its min and max, where
// it showed the late point's alone.
func TestSeededLateMemberKeepsMinMax(t *testing.T) {
	s := newStamped(t, Options{})
	get := attribute.String("method", "GET")
	b := []float64{1}
	s.histograms(hpoint(b, []uint64{1, 0}, 0.05, 0.05, 0.05, get))
	s.next().histograms(hpoint(b, []uint64{2, 0}, 0.1, 0.05, 0.05, get))
	s.histograms(hpoint(b, []uint64{0, 1}, 2, 2, 2, get, attribute.String("error.type", "timeout")))
	ms := s.shown()
	assert.Equal(t, map[string]string{"method=GET": "3"}, shownValues(t, ms, "mmv.shop_test.s.lat.count"))
	assert.Equal(t, map[string]string{"method=GET": "0.05"}, shownValues(t, ms, "mmv.shop_test.s.lat.min"))
	assert.Equal(t, map[string]string{"method=GET": "2"}, shownValues(t, ms, "mmv.shop_test.s.lat.max"))
}

// TestBadLateMemberCountedAsValue: a late-key point whose value no
// counter holds takes its instance out of PCP, its points counted as
// dropped for their value, not their attributes.
func TestBadLateMemberCountedAsValue(t *testing.T) {
	s := newStamped(t, Options{})
	get := attribute.String("method", "GET")
	s.counters(point(10, get))
	s.next().counters(point(11, get), point(-1, get, attribute.String("error.type", "x")))
	ms := s.shown()
	assert.Empty(t, shownValues(t, ms, "mmv.shop_test.s.requests"))
	assert.Equal(t, "2", droppedOf(t, ms, "shop_test", "value"))
	assert.Equal(t, "0", droppedOf(t, ms, "shop_test", "attributes"))
	assert.ErrorContains(t, s.exp.Err(), "value -1 is not a counter's")
}

// TestLateMembersSumPastCounter: members whose sum a counter cannot
// hold (2^64 and beyond) take the instance out of PCP, counted as
// values, where the sum wrapped, a counter wrap to PCP.
func TestLateMembersSumPastCounter(t *testing.T) {
	s := newStamped(t, Options{})
	get := attribute.String("method", "GET")
	s.counters(point(math.MaxInt64, get))
	s.next().counters(point(math.MaxInt64, get), point(math.MaxInt64, get, attribute.String("error.type", "x")), point(2, get, attribute.String("error.type", "y")))
	ms := s.shown()
	assert.Empty(t, shownValues(t, ms, "mmv.shop_test.s.requests"))
	assert.Equal(t, "3", droppedOf(t, ms, "shop_test", "value"))
}

// TestLateBoundsChangeKeepsTotals: a histogram whose bounds change (a
// producer's) while a member of its instance comes in a later batch of
// the collection than the others never shows a count or sum lower than
// before: the member of the old bounds stays in the totals until its
// point of the new bounds comes, where it was forgotten.
func TestLateBoundsChangeKeepsTotals(t *testing.T) {
	s := newStamped(t, Options{})
	get := attribute.String("method", "GET")
	failed := []attribute.KeyValue{get, attribute.String("error.type", "timeout")}
	b1, b2 := []float64{1}, []float64{1, 10}
	shown := func(metric string) map[string]string { return shownValues(t, s.shown(), "mmv.shop_test.s.lat."+metric) }
	s.histograms(hpoint(b1, []uint64{1, 0}, 0.5, 0.5, 0.5, get))
	s.next().histograms(hpoint(b1, []uint64{1, 0}, 0.5, 0.5, 0.5, get), hpoint(b1, []uint64{0, 5}, 25, 5, 5, failed...))
	assert.Equal(t, "6", shown("count")["method=GET"])
	s.next().histograms(hpoint(b2, []uint64{1, 1, 0}, 3.5, 0.5, 3, get))
	assert.Equal(t, "7", shown("count")["method=GET"], "the member of the old bounds, in a later batch, stays in the count")
	assert.Equal(t, "28500", shown("sum")["method=GET"])
	assert.Equal(t, map[string]string{"method=GET,le=1": "1", "method=GET,le=10": "1", "method=GET,le=+Inf": "5"}, shown("bucket"),
		"its buckets in the first at or above theirs")
	s.histograms(hpoint(b2, []uint64{0, 5, 1}, 45, 5, 20, failed...))
	assert.Equal(t, "8", shown("count")["method=GET"])
}

// TestManyVanishedLateMembersFolded: an observable counter whose late key
// is a request id brings a new member each collection, the old ones no
// longer observed: the instance keeps their last values in its total,
// which never goes down, but not each apart, for good, where it kept
// every one (201 after 200 collections); past maxMembers, those absent
// from a whole collection are folded. A folded member exported again is
// a new one, its value added anew, as a set that left PCP and comes back
// starts anew. A member skipped for collections while the instance has
// few comes back exact: folded, it counted twice.
func TestManyVanishedLateMembersFolded(t *testing.T) {
	s := newStamped(t, Options{})
	get := attribute.String("method", "GET")
	timeout := attribute.String("error.type", "timeout")
	s.counters(point(10, get)) // its first export: label method alone
	s.next().counters(point(10, get), point(3, get, timeout))
	s.next().counters(point(10, get))
	s.next().counters(point(10, get))
	s.next().counters(point(10, get), point(4, get, timeout))
	assert.Equal(t, map[string]string{"method=GET": "14"}, shownValues(t, s.shown(), "mmv.shop_test.s.requests"), "a member skipped for two collections, back")
	const n = 200
	for i := range n {
		s.next().counters(point(10, get), point(1, get, attribute.Int("request.id", i)))
	}
	assert.Equal(t, map[string]string{"method=GET": fmt.Sprint(14 + n)}, shownValues(t, s.shown(), "mmv.shop_test.s.requests"))
	in := s.exp.instruments["s.requests"]
	require.NotNil(t, in)
	assert.LessOrEqual(t, len(in.setOf([]string{"GET"}).members.others), maxMembers+2, "the members kept apart")
	s.next().counters(point(10, get), point(1, get, attribute.Int("request.id", 0)))
	assert.Equal(t, map[string]string{"method=GET": fmt.Sprint(14 + n + 1)}, shownValues(t, s.shown(), "mmv.shop_test.s.requests"))
}

// TestLateKeyAllocations: an export whose points carry late keys
// allocates no more for 1,000 of them than for 10: the members are found
// without building their keys, and Err's note of the keys is kept while
// they are the same.
func TestLateKeyAllocations(t *testing.T) {
	pcptest.NeedFileLayer(t)
	allocs := func(n int) float64 {
		exp := New(&Options{Limit: n, Registry: mmv.Options{Dir: filepath.Join(t.TempDir(), "mmv")}})
		defer exp.Shutdown(context.Background())
		ctx := context.Background()
		var plain, late []metricdata.DataPoint[int64]
		for i := range n {
			id := attribute.String("id", strconv.Itoa(i))
			plain = append(plain, point(int64(i), id))
			late = append(late, point(int64(i), id), point(1, id, attribute.String("error.type", "timeout")))
		}
		require.NoError(t, exp.Export(ctx, scopeExport(sum("requests", metricdata.CumulativeTemporality, plain...))))
		rm := scopeExport(sum("requests", metricdata.CumulativeTemporality, late...))
		require.NoError(t, exp.Export(ctx, rm))
		return testing.AllocsPerRun(20, func() { require.NoError(t, exp.Export(ctx, rm)) })
	}
	few, many := allocs(10), allocs(1000)
	assert.Equal(t, few, many, "allocations of an export of 20 points, of 2,000")
}

// TestLateKeyTotalsNeverGoDown: observable instruments whose late
// keys' sets come and go, their points in batches of any order and
// size, a histogram's bounds changing once: while an instance stays in
// PCP (read by PCP's reader after every export), its counter's total
// and its histogram's count and sum never go down, its min never goes up
// and its max never down; after a collection's last batch, each is at
// least the sum of the collection's members; nothing is dropped.
func TestLateKeyTotalsNeverGoDown(t *testing.T) {
	pcptest.NeedFileLayer(t)
	pcptest.MustHavePCP(t)
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			st := newStamped(t, Options{})
			r := rand.New(rand.NewPCG(seed, 3))
			type series struct {
				attrs  attribute.Set
				n      int64
				counts [3]uint64
				sum    float64
				lo, hi float64
			}
			var all []*series
			for _, m := range []string{"GET", "POST"} {
				method := attribute.String("method", m)
				for _, late := range [][]attribute.KeyValue{nil, {attribute.String("error.type", "a")}, {attribute.String("error.type", "b")},
					{attribute.Int("error.code", 1)}, {attribute.String("error.code", "1")}} {
					all = append(all, &series{attrs: attribute.NewSet(append(late, method)...), lo: math.Inf(1), hi: math.Inf(-1)})
				}
			}
			bounds := []float64{1}
			change := 2 + r.IntN(8)
			last := map[string]float64{}
			for coll := range 12 {
				st.next()
				if coll == change {
					bounds = []float64{1, 10}
				}
				var shown []*series
				want := map[string]float64{}
				for i, s := range all {
					if coll == 0 && i%5 != 0 || coll > 0 && r.IntN(4) == 0 {
						continue // the first export's are the plain sets; then observed or not
					}
					s.n += int64(r.IntN(4))
					s.counts[r.IntN(2)]++
					v := float64(r.IntN(20))
					s.sum, s.lo, s.hi = s.sum+v, min(s.lo, v), max(s.hi, v)
					shown = append(shown, s)
					m, _ := s.attrs.Value("method")
					want["requests[method="+m.Emit()+"]"] += float64(s.n)
				}
				r.Shuffle(len(shown), func(i, j int) { shown[i], shown[j] = shown[j], shown[i] })
				for len(shown) > 0 {
					k := 1 + r.IntN(len(shown))
					var cs []metricdata.DataPoint[int64]
					var hs []metricdata.HistogramDataPoint[float64]
					for _, s := range shown[:k] {
						cs = append(cs, metricdata.DataPoint[int64]{Attributes: s.attrs, Value: s.n, Time: st.at})
						counts := slices.Clone(s.counts[:len(bounds)+1])
						if len(bounds) == 1 {
							counts[1] += s.counts[2]
						}
						h := hpoint(bounds, counts, s.sum, s.lo, s.hi, s.attrs.ToSlice()...)
						h.Time = st.at
						hs = append(hs, h)
					}
					shown = shown[k:]
					rm := scopeExport(sum("requests", metricdata.CumulativeTemporality, cs...),
						metricdata.Metrics{Name: "lat", Data: metricdata.Histogram[float64]{Temporality: metricdata.CumulativeTemporality, DataPoints: hs}})
					require.NoError(t, st.exp.Export(context.Background(), rm))
					ms := st.shown()
					now := map[string]float64{}
					for _, metric := range []string{"requests", "lat.count", "lat.sum", "lat.min", "lat.max"} {
						for inst, v := range shownValues(t, ms, "mmv.shop_test.s."+metric) {
							f, err := strconv.ParseFloat(v, 64)
							require.NoError(t, err)
							key := metric + "[" + inst + "]"
							now[key] = f
							before, ok := last[key]
							switch {
							case !ok:
							case metric == "lat.min":
								require.LessOrEqual(t, f, before, "collection %d: %s went up", coll, key)
							default:
								require.GreaterOrEqual(t, f, before, "collection %d: %s went down", coll, key)
							}
						}
					}
					last = now
					for _, reason := range reasonNames {
						require.Equal(t, "0", droppedOf(t, ms, "shop_test", reason), "collection %d: %s", coll, reason)
					}
				}
				for key, w := range want {
					if got, ok := last[key]; ok {
						require.GreaterOrEqual(t, got, w, "collection %d: %s", coll, key)
					}
				}
			}
		})
	}
}

// TestManyKeysOfOneLabel: three keys that make one label, with a
// key named as the renamed one already, and a histogram's le among
// them: every key is a label of its own, and PCP shows each point.
func TestManyKeysOfOneLabel(t *testing.T) {
	requests, sizes := clashing(t, "requests", []add{
		{1, []attribute.KeyValue{attribute.String("a-b", "1"), attribute.String("a.b", "2"), attribute.String("a_b", "3"), attribute.String("exported_a_b", "4")}},
	}, attribute.String("le", "1"), attribute.String("l.e", "2"), attribute.String("exported.le", "3"), attribute.String("exported_le", "4"))
	assert.Equal(t, map[string]string{"exported_exported_a_b=1,exported_exported_exported_a_b=2,a_b=3,exported_a_b=4": "1"}, requests)
	assert.Equal(t, map[string]string{"exported_exported_exported_le=3,exported_le=4,l_e=2,exported_exported_le=1": "1"}, sizes)
}

// TestSingularKeepsLateMembers: a singular metric (its first export
// had no attributes) adds up the points with attributes; a member of no
// valid value keeps it at its last value, PCP cannot withdraw it, and
// its next value counts the members of before: it never goes down,
// where the members were forgotten and it went from 16 to 13.
func TestSingularKeepsLateMembers(t *testing.T) {
	s := newStamped(t, Options{})
	shown := func() string { return pcptest.Find(s.shown(), "mmv.shop_test.s.requests").Value }
	s.counters(point(10))
	s.next().counters(point(11), point(5, attribute.String("error.type", "x")))
	assert.Equal(t, "16", shown())
	s.next().counters(point(12), point(-1, attribute.String("error.type", "x")))
	assert.Equal(t, "16", shown())
	assert.ErrorContains(t, s.exp.Err(), "PCP cannot withdraw a singular metric")
	s.next().counters(point(13))
	assert.Equal(t, "18", shown(), "the member's last value stays in it")
}

// TestLateKeyNamedForTheCollection: Err names a late key for the
// whole collection, as it names its drops, when the SDK splits the
// collection (WithMaxExportBatchSize) and the key's points come in
// another batch than the last; it named it only when the last batch
// carried them.
func TestLateKeyNamedForTheCollection(t *testing.T) {
	s := newStamped(t, Options{})
	get := attribute.String("method", "GET")
	other := func(v int64) *metricdata.ResourceMetrics {
		return scopeExport(sum("other", metricdata.CumulativeTemporality, metricdata.DataPoint[int64]{Value: v, Time: s.at}))
	}
	s.counters(point(10, get))
	require.NoError(t, s.exp.Export(context.Background(), other(1)))
	s.next().counters(point(11, get), point(1, get, attribute.String("error.type", "x")))
	require.NoError(t, s.exp.Export(context.Background(), other(2)))
	assert.ErrorContains(t, s.exp.Err(), `instrument "requests" of scope "s": attribute keys ["error.type"] have no label`)
}
