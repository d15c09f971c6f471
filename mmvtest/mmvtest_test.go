package mmvtest_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/mmvtest"
)

// wantService is the listing of newService after serveThree.
const wantService = `
answer: instant int64 (count) = 42
busy: counter uint64 (nanosec) = 2750000000
in_flight: instant int64 (count) = 3
latency.bucket: counter uint64 (count)
  "0.1" = 0
  "1" = 2
  "+Inf" = 1
latency.count: counter uint64 (count) = 3
latency.max: instant double (sec) = 2
latency.mean: instant double (sec) = 0.9166666666666666
latency.min: instant double (sec) = 0.25
latency.p50: instant double (sec) = 0.625
latency.sum: counter double (sec) = 2.75
requests: counter uint64 (count)
  "route=/api,status=200" {route="/api",status="200"} = 2
  "route=/a%2Cb,status=500" {route="/a,b",status="500"} = 1
temp: instant double (none) = 21.5
`

func serveThree(s *service) {
	s.serve("/api", "200", 250*time.Millisecond)
	s.serve("/api", "200", 500*time.Millisecond)
	s.serve("/a,b", "500", 2*time.Second)
}

// TestReadsWhetherStartedOrNot: the same updates read the same, through
// Get, Lookup and Compare, on a registry never started, on one started
// before them, and on one started after them.
func TestReadsWhetherStartedOrNot(t *testing.T) {
	for _, when := range []string{"never", "before", "after"} {
		t.Run(when, func(t *testing.T) {
			r := mmvtest.NewRegistry(t, nil)
			if when != "never" {
				pcptest.NeedFileLayer(t)
			}
			s := newService(r)
			if when == "before" {
				require.NoError(t, r.Start())
			}
			serveThree(s)
			if when == "after" {
				require.NoError(t, r.Start())
			}
			assert.Equal(t, 2.0, mmvtest.Get(t, r, "requests", "/api", "200"))
			assert.Equal(t, 1.0, mmvtest.Get(t, r, "requests", "/a,b", "500"))
			assert.Equal(t, 1.0, mmvtest.Get(t, r, "requests", "route=/a%2Cb,status=500"), "by instance name")
			assert.Equal(t, 3.0, mmvtest.Get(t, r, "latency.count"))
			assert.Equal(t, 42.0, mmvtest.Get(t, r, "answer"))
			assert.Equal(t, 2.75, mmvtest.ToFloat64(s.busy))
			require.NoError(t, mmvtest.Compare(r, wantService))
		})
	}
}

// TestReadsUnpublished: an instance added after Start reads at once,
// before the publication that puts it in the file, and the same after.
func TestReadsUnpublished(t *testing.T) {
	r := mmvtest.Started(t, &mmv.Options{PublishDelay: time.Hour})
	s := newService(r)
	s.requests.With("/new", "201").Add(7)
	assert.Equal(t, 7.0, mmvtest.Get(t, r, "requests", "/new", "201"))
	require.NoError(t, r.Flush())
	s.requests.With("/new", "201").Add(1)
	assert.Equal(t, 8.0, mmvtest.Get(t, r, "requests", "/new", "201"))
}

// TestCompareDiff: a mismatch names the lines that differ, -expected and
// +got, with the lines around them.
func TestCompareDiff(t *testing.T) {
	r := mmvtest.NewRegistry(t, nil)
	serveThree(newService(r))
	want := `
		requests: counter uint64 (count)
		  "route=/api,status=200" {route="/api",status="200"} = 3
		  "route=/a%2Cb,status=500" {route="/a,b",status="500"} = 1
	`
	err := mmvtest.Compare(r, want, "requests")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `
  requests: counter uint64 (count)
- "route=/api,status=200" {route="/api",status="200"} = 3
+ "route=/api,status=200" {route="/api",status="200"} = 2
  "route=/a%2Cb,status=500" {route="/a,b",status="500"} = 1
`)
	// Selecting: a histogram's name selects its metrics, nothing else.
	got, err := mmvtest.Listing(r, "latency")
	require.NoError(t, err)
	var names []string
	for _, l := range strings.Split(strings.TrimSpace(got), "\n") {
		if name, _, ok := strings.Cut(l, ":"); ok && !strings.HasPrefix(l, " ") {
			names = append(names, name)
		}
	}
	assert.Equal(t, []string{"latency.bucket", "latency.count", "latency.max", "latency.mean", "latency.min", "latency.p50", "latency.sum"}, names)
	require.NoError(t, mmvtest.Compare(r, "temp: instant double (none) = 21.5", "temp"))
	assert.Error(t, mmvtest.Compare(r, "", "temp"), "a metric not expected")
	require.NoError(t, mmvtest.Compare(r, "temp: instant double (none) = 21.500000000001", "temp"), "within 1e-9")
	assert.Error(t, mmvtest.Compare(r, "temp: instant double (none) = 21.50001", "temp"), "beyond 1e-9")
	assert.Error(t, mmvtest.Compare(r, "temp: instant int64 (none) = 21.5", "temp"), "not a value")
	assert.Error(t, mmvtest.Compare(r, "temp: instant double (none) = 21.5\nx: instant double (none) = 1", "temp", "x"), "a metric expected that r has not")
}

// TestLookupErrors: what is not there wraps mmv.ErrUnknown and says what
// is.
func TestLookupErrors(t *testing.T) {
	r := mmvtest.NewRegistry(t, nil)
	serveThree(newService(r))
	_, err := mmvtest.Lookup(r, "nope")
	assert.True(t, errors.Is(err, mmv.ErrUnknown), "%v", err)
	_, err = mmvtest.Lookup(r, "requests", "/api", "404")
	assert.True(t, errors.Is(err, mmv.ErrUnknown), "%v", err)
	assert.ErrorContains(t, err, "route=/api,status=200")
	_, err = mmvtest.Lookup(r, "requests")
	assert.ErrorContains(t, err, "give label values")
	_, err = mmvtest.Lookup(r, "requests", "/api")
	assert.True(t, errors.Is(err, mmv.ErrUnknown), "one value for two labels: %v", err)
	assert.Equal(t, []string{"route=/api,status=200", "route=/a%2Cb,status=500"}, mmvtest.Instances(r, "requests"))

	// A value that is another instance's name: label values first.
	k := mmv.NewCounterVec(r, "k", "", mmv.Count, "k")
	k.With("x").Add(1)
	k.With("k=x").Add(2)
	assert.Equal(t, 2.0, mmvtest.Get(t, r, "k", "k=x"))
	assert.Equal(t, 1.0, mmvtest.Get(t, r, "k", "x"))
	assert.Equal(t, 2.0, mmvtest.Get(t, r, "k", "k=k%3Dx"), "by name")
	// A low-level metric has no value before Start: none to read.
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "raw", Type: mmv.Uint64, Semantics: mmv.SemCounter}))
	iv, err := mmvtest.Lookup(r, "raw")
	require.NoError(t, err)
	assert.Nil(t, iv.Value)
	require.NoError(t, mmvtest.Compare(r, "raw: counter uint64 (none) = (no value)", "raw"))

	require.NoError(t, r.Close())
	_, err = r.Snapshot()
	assert.True(t, errors.Is(err, mmv.ErrClosed), "%v", err)
}

// TestRegistryLifecycle: NewRegistry's file is in the test's directory,
// named after the test, and gone with the registry closed at cleanup.
func TestRegistryLifecycle(t *testing.T) {
	pcptest.NeedFileLayer(t)
	var r *mmv.Registry
	t.Run("inner/with spaces", func(t *testing.T) {
		r = mmvtest.Started(t, &mmv.Options{Flags: mmv.Process})
		assert.Contains(t, r.Path(), "/mmv/t_TestRegistryLifecycle_inner_with_")
	})
	assert.ErrorIs(t, r.Err(), mmv.ErrClosed, "closed at the subtest's cleanup")
}

// TestStartedSkipsWithoutFiles: where mmv writes no files, Started skips
// the test instead of failing it.
func TestStartedSkipsWithoutFiles(t *testing.T) {
	if pcptest.HasFileLayer() == nil {
		t.Skip("mmv writes files here")
	}
	var sub *testing.T
	reached := false
	t.Run("started", func(t *testing.T) {
		sub = t
		mmvtest.Started(t, nil)
		reached = true
	})
	assert.True(t, sub.Skipped(), "Started did not skip")
	assert.False(t, reached, "the test went on past Started")
}

// TestDelta: Delta reads the change since Mark, from zero for an instance
// new since.
func TestDelta(t *testing.T) {
	r := mmvtest.NewRegistry(t, nil)
	s := newService(r)
	serveThree(s)
	b := mmvtest.Mark(t, r)
	serveThree(s)
	s.serve("/new", "200", time.Second)
	assert.Equal(t, 2.0, b.Delta(t, "requests", "/api", "200"))
	assert.Equal(t, 1.0, b.Delta(t, "requests", "/new", "200"))
	assert.Equal(t, 4.0, b.Delta(t, "latency.count"))
	assert.Equal(t, 4.0, b.Delta(t, "in_flight"))
}

// TestCompareInfinityIsNoNumber: a gauge that went to +Inf (a
// division by zero) does not match an expected finite value, nor -Inf
// +Inf, where same() compared |x-y| <= 1e-9*max(|x|,|y|), Inf <= Inf.
func TestCompareInfinityIsNoNumber(t *testing.T) {
	r := mmvtest.NewRegistry(t, nil)
	g := mmv.NewGauge(r, "ratio", "Hit ratio", 0)
	g.Set(math.Inf(1))
	assert.Error(t, mmvtest.Compare(r, `ratio: instant double (none) = 0.5`, "ratio"), "+Inf matched 0.5")
	g.Set(math.Inf(-1))
	assert.Error(t, mmvtest.Compare(r, `ratio: instant double (none) = +Inf`, "ratio"), "-Inf matched +Inf")

	v := mmv.NewGaugeVec(r, "load", "Load", 0, "cpu")
	v.With("0").Set(math.Inf(1))
	assert.Error(t, mmvtest.Compare(r, `
		load: instant double (none)
		  "cpu=0" {cpu="0"} = 1
	`, "load"), "an instance's +Inf matched 1")
}

// TestCompareCountsExactly: integer values (counters, int gauges)
// compare exactly; the relative 1e-9 is for float sums. A counter off by
// one at a billion, or a uint64 past 2^53, matched.
func TestCompareCountsExactly(t *testing.T) {
	r := mmvtest.NewRegistry(t, nil)
	c := mmv.NewCounter(r, "sent", "Bytes sent", mmv.Byte)
	c.Add(1_000_000_001)
	assert.Error(t, mmvtest.Compare(r, `sent: counter uint64 (byte) = 1000000000`, "sent"), "1000000001 matched 1000000000")

	v := mmv.NewCounterVec(r, "ops", "Ops", mmv.Count, "kind")
	v.With("read").Add(1 << 53)
	v.With("read").Inc()
	assert.Error(t, mmvtest.Compare(r, `
		ops: counter uint64 (count)
		  "kind=read" {kind="read"} = 9007199254740992
	`, "ops"), "2^53+1 matched 2^53")
}

// TestListingShowsElapsedAsPCPDoes: PCP's reader exports an Elapsed
// value as a counter in microseconds whatever its record says (package
// expose does the same); Listing printed the record's semantics and
// units, so Compare accepted "instant ... (sec) = 2500000" for 2.5 s,
// where pminfo shows "counter", "microsec".
func TestListingShowsElapsedAsPCPDoes(t *testing.T) {
	pcptest.NeedFileLayer(t)
	r := mmvtest.NewRegistry(t, nil)
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "wait", Type: mmv.Elapsed, Semantics: mmv.SemInstant,
		Units: mmv.Second, ShortHelp: "Time waited"}))
	require.NoError(t, r.Start())
	v, err := r.Value("wait", "")
	require.NoError(t, err)
	v.AddDuration(2500 * time.Millisecond)
	assert.Error(t, mmvtest.Compare(r, `wait: instant elapsed (sec) = 2500000`, "wait"),
		"a listing that says 2500000 seconds, where PCP shows 2500000 microseconds")
	assert.NoError(t, mmvtest.Compare(r, `wait: counter elapsed (microsec) = 2500000`, "wait"))
}

// TestNewRegistryNamesDiffer: NewRegistry promises a name "made
// from the test's (so parallel tests never share one)", where fileName cut
// it to 40 bytes, and the subtests of a long test name shared one: their
// Compare errors, Lookup errors and PCP names (mmv.<name>.*) said the same
// registry.
func TestNewRegistryNamesDiffer(t *testing.T) {
	names := map[string]string{}
	for _, sub := range []string{"requests_by_route_first", "requests_by_route_second"} {
		t.Run(sub, func(t *testing.T) {
			names[sub] = mmvtest.NewRegistry(t, nil).Name()
		})
	}
	assert.NotEqual(t, names["requests_by_route_first"], names["requests_by_route_second"])
}

// TestLookupErrorNamesMetric: every other Lookup error names the
// metric asked for; on a registry that cannot be read (closed) it said
// only `mmv: file "t_...": registry closed`, and Get's and Delta's
// t.Fatalf the same, leaving a test of several metrics to guess which
// read failed.
func TestLookupErrorNamesMetric(t *testing.T) {
	r := mmvtest.NewRegistry(t, nil)
	mmv.NewCounter(r, "requests", "Requests", mmv.Count).Inc()
	require.NoError(t, r.Close())
	_, err := mmvtest.Lookup(r, "requests")
	require.ErrorIs(t, err, mmv.ErrClosed)
	assert.Contains(t, err.Error(), `"requests"`)
}

// TestListingLabelsAsPCP: a label name the registry, the metric's
// indom and the metric each give is listed once, with the value PCP
// shows (the metric's over the registry's and the indom's), where
// Listing wrote each, {zone="indom",zone="registry",zone="metric"}, and
// Compare wanted the labels PCP does not show. (An indom's label named
// as the registry's takes its value: of another, mmv refuses it.)
func TestListingLabelsAsPCP(t *testing.T) {
	pcptest.NeedFileLayer(t)
	r := mmvtest.NewRegistry(t, nil)
	require.NoError(t, r.AddIndom(mmv.Indom{Serial: 3, Instances: []mmv.Instance{{ID: 0, Name: "eth0"}}}))
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "in", Type: mmv.Uint64, Semantics: mmv.SemCounter, Indom: 3}))
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "out", Type: mmv.Uint64, Semantics: mmv.SemCounter, Indom: 3}))
	require.NoError(t, r.AddIndomLabel(3, mmv.Label{Name: "zone", Value: "registry"}))
	require.NoError(t, r.AddIndomLabel(3, mmv.Label{Name: "nic", Value: "intel"}))
	require.NoError(t, r.AddIndomLabel(3, mmv.Label{Name: "rack", Value: "indom"}))
	require.NoError(t, r.AddLabel(mmv.Label{Name: "zone", Value: "registry"}))
	require.NoError(t, r.AddMetricLabel("out", mmv.Label{Name: "zone", Value: "metric"}))
	require.NoError(t, r.AddMetricLabel("out", mmv.Label{Name: "rack", Value: "metric"}))
	require.NoError(t, r.Start())
	if pcptest.WantPCP(t) {
		ms := pcptest.Info(t, tmpDir(t, r))
		for name, want := range map[string][2]string{"in": {`"registry"`, `"indom"`}, "out": {`"metric"`, `"metric"`}} {
			m := pcptest.Find(ms, "mmv."+r.Name()+"."+name)
			require.NotNil(t, m, name)
			zone, _ := m.Label("zone")
			rack, _ := m.Label("rack")
			require.Equal(t, want, [2]string{zone, rack}, "PCP's labels zone and rack of %s", name)
		}
	}
	assert.NoError(t, mmvtest.Compare(r, `
		in: counter uint64 (none) {nic="intel",rack="indom",zone="registry"}
		  "eth0" = 0
		out: counter uint64 (none) {nic="intel",zone="metric",rack="metric"}
		  "eth0" = 0
	`, "in", "out"))
}

// TestListingLabelsAsPCPWrites: a label value is listed as PCP
// writes it, HTML's characters as they are: a vector's value
// "/search?q=a&b<c>" was listed route="/search?q=a\u0026b\u003cc\u003e"
// (json.Marshal's escapes), where pminfo shows "/search?q=a&b<c>" and the
// scrape route="/search?q=a&b<c>", so that a listing copied from either
// did not compare equal.
func TestListingLabelsAsPCPWrites(t *testing.T) {
	r := mmvtest.NewRegistry(t, nil)
	mmv.NewCounterVec(r, "hits", "Hits", mmv.Count, "route").With("/search?q=a&b<c>").Inc()
	require.NoError(t, r.AddLabel(mmv.Label{Name: "tags", Value: []string{"a<b", "c&d"}}))
	assert.NoError(t, mmvtest.Compare(r, `
		hits: counter uint64 (count) {tags=["a<b","c&d"]}
		  "route=/search?q%3Da&b<c>" {route="/search?q=a&b<c>"} = 1
	`, "hits"))
	if pcptest.WantPCP(t) && pcptest.HasFileLayer() == nil {
		require.NoError(t, r.Start())
		m := pcptest.Find(pcptest.Info(t, tmpDir(t, r)), "mmv."+r.Name()+".hits")
		require.NotNil(t, m)
		tags, _ := m.Label("tags")
		assert.Equal(t, `["a<b","c&d"]`, tags, "PCP's")
		route, _ := m.Instances[0].Label("route")
		assert.Equal(t, `"/search?q=a&b<c>"`, route, "PCP's")
	}
}
