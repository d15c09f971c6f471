package expose_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/expose"
	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/mmvfile"
)

func TestNegotiate(t *testing.T) {
	for accept, want := range map[string]expose.Format{
		"":                             expose.Text,
		"*/*":                          expose.Text,
		"text/plain":                   expose.Text,
		"application/openmetrics-text": expose.OpenMetrics,
		"application/openmetrics-text; version=0.0.1":                                                expose.OpenMetrics,
		"application/openmetrics-text; version=2.0.0":                                                expose.Text, // not a version served
		"text/plain;q=0.5, application/openmetrics-text;q=0.9":                                       expose.OpenMetrics,
		"application/openmetrics-text;q=0, text/plain":                                               expose.Text,
		"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited": expose.Text,
		// Prometheus's own scrape header (scrape_protocols' default).
		"application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1": expose.OpenMetrics,
	} {
		h := http.Header{}
		if accept != "" {
			h.Set("Accept", accept)
		}
		assert.Equal(t, want, expose.Negotiate(h), "Accept: %s", accept)
	}
}

func TestHandlerGzip(t *testing.T) {
	r := mmv.NewRegistry("expose_gzip", nil)
	mmv.NewCounter(r, "requests", "Requests", mmv.Count).Add(3)
	for _, c := range []struct {
		encoding string
		zipped   bool
	}{{"", false}, {"gzip", true}, {"deflate, gzip;q=0.5", true}, {"gzip;q=0", false}, {"identity", false}} {
		req := httptest.NewRequest("GET", "/metrics", nil)
		if c.encoding != "" {
			req.Header.Set("Accept-Encoding", c.encoding)
		}
		w := httptest.NewRecorder()
		expose.Handler(r).ServeHTTP(w, req)
		body := w.Body.Bytes()
		if c.zipped {
			assert.Equal(t, "gzip", w.Header().Get("Content-Encoding"), c.encoding)
			z, err := gzip.NewReader(bytes.NewReader(body))
			require.NoError(t, err)
			body, err = io.ReadAll(z)
			require.NoError(t, err)
		} else {
			assert.Empty(t, w.Header().Get("Content-Encoding"), c.encoding)
		}
		assert.Equal(t, "# TYPE requests_total counter\n# HELP requests_total Requests\nrequests_total 3\n", string(body), c.encoding)
	}
}

// TestNamesAndEscapes: names from PCP names and units, HELP and label
// values escaped as each format wants, a metric whose name another took
// left out, String metrics left out, labels inner over outer.
// TestEnergyIsNoTime: a value in watt-hours, whose time dimension goes
// with its extra unit, is exposed as it is, where it was taken for hours:
// energy_seconds, 3,600 times its value.
func TestEnergyIsNoTime(t *testing.T) {
	r := mmv.NewRegistry("expose_energy", &mmv.Options{Dir: t.TempDir()})
	mmv.NewGauge(r, "energy", "Used", mmv.Watt.Mul(mmv.Hour)).Set(2)
	var text bytes.Buffer
	require.NoError(t, expose.Write(&text, r, expose.Text))
	assert.Equal(t, "# TYPE energy gauge\n# HELP energy Used\nenergy 2\n", text.String())
}

func TestNamesAndEscapes(t *testing.T) {
	r := mmv.NewRegistry("expose_names", &mmv.Options{Dir: t.TempDir()})
	require.NoError(t, r.AddLabel(mmv.Label{Name: "zone", Value: "outer"}))
	mmv.NewGauge(r, "a.b_c", "first", mmv.NoUnits).Set(1)
	mmv.NewGauge(r, "a_b.c", "second, same Prometheus name", mmv.NoUnits).Set(2)
	mmv.NewCounter(r, "sent_total", "Already _total", mmv.Count).Add(4)
	mmv.NewCounter(r, "sent.bytes", "In bytes", mmv.Kbyte).Add(2)
	mmv.NewGauge(r, "wait", "Wait\\ \"q\"\nthe long help, left out", mmv.Microsecond).Set(250)
	v := mmv.NewGaugeVec(r, "temp", "By room", mmv.NoUnits, "room")
	v.With("in\"ner\\\n").Set(20)
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "version", Type: mmv.String, Semantics: mmv.SemDiscrete}))
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "hex", Type: mmv.Uint64, Semantics: mmv.SemInstant}))
	pcptest.NeedFileLayer(t) // hex's value is the file's
	require.NoError(t, r.Start())
	defer r.Close()
	hv, err := r.Value("hex", "")
	require.NoError(t, err)
	hv.Set(-1) // all bits: exact as an integer
	var text, om bytes.Buffer
	require.NoError(t, expose.Write(&text, r, expose.Text))
	require.NoError(t, expose.Write(&om, r, expose.OpenMetrics))
	assert.Equal(t, `# TYPE a_b_c gauge
# HELP a_b_c first
a_b_c{zone="outer"} 1
# TYPE sent_total counter
# HELP sent_total Already _total
sent_total{zone="outer"} 4
# TYPE sent_bytes_total counter
# HELP sent_bytes_total In bytes
sent_bytes_total{zone="outer"} 2048
# TYPE wait_seconds gauge
# HELP wait_seconds Wait\\ "q"
wait_seconds{zone="outer"} 0.00025
# TYPE temp gauge
# HELP temp By room
temp{zone="outer",room="in\"ner\\\n"} 20
# TYPE hex gauge
hex{zone="outer"} 18446744073709551615
`, text.String())
	assert.Equal(t, `# TYPE a_b_c gauge
# HELP a_b_c first
a_b_c{zone="outer"} 1
# TYPE sent counter
# HELP sent Already _total
sent_total{zone="outer"} 4
# TYPE sent_bytes counter
# UNIT sent_bytes bytes
# HELP sent_bytes In bytes
sent_bytes_total{zone="outer"} 2048
# TYPE wait_seconds gauge
# UNIT wait_seconds seconds
# HELP wait_seconds Wait\\ \"q\"
wait_seconds{zone="outer"} 0.00025
# TYPE temp gauge
# HELP temp By room
temp{zone="outer",room="in\"ner\\\n"} 20
# TYPE hex gauge
hex{zone="outer"} 18446744073709551615
# EOF
`, om.String())
}

// TestLabelValuesAsTheirJSON: a PCP label value that is not a string is
// scraped as its JSON text, byte for byte as the file holds it and PCP
// shows it: a float64 of 1234567 (any number decoded from JSON is one)
// is 1234567, where strconv's 'g' made 1.234567e+06, another series than
// the one PCP, pmseries and Grafana name; an HTML character in a list
// is itself, as mmv writes it, not \u003c.
func TestLabelValuesAsTheirJSON(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "mmv")
	pcptest.WantPCP(t) // PCP's view is checked where it is installed (pcptest.Info reads tmp/mmv)
	r := mmv.NewRegistry("jsonlabels", &mmv.Options{Dir: dir})
	t.Cleanup(func() { r.Close() })
	mmv.NewCounter(r, "requests", "Requests", mmv.Count).Add(2)
	for name, v := range map[string]any{"max_bytes": 1048576.0, "shards": 1234567.0, "tiny": 0.00001, "huge": 1e21,
		"ratio": float32(0.1), "tags": []string{"a<b", "c&d"}, "on": true, "n": 7} {
		require.NoError(t, r.AddLabel(mmv.Label{Name: name, Value: v}))
	}
	pcptest.NeedFileLayer(t)
	require.NoError(t, r.Start())

	// What the file holds, which PCP's reader takes as the labels' JSON.
	f, err := mmvfile.Open(r.Path())
	require.NoError(t, err)
	want := map[string]string{}
	for _, l := range f.Labels {
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(l.Payload), &m))
		for k, v := range m {
			want[k] = string(v)
		}
	}
	require.Len(t, want, 8, "the file's labels")
	require.Equal(t, "1234567", want["shards"], "the file's payload")
	if pcptest.HasPCP() == nil {
		m := pcptest.Find(pcptest.Info(t, tmp), "mmv.jsonlabels.requests")
		require.NotNil(t, m)
		for name, text := range want {
			got, ok := m.Label(name)
			require.True(t, ok, "PCP shows label %s", name)
			require.Equal(t, text, got, "PCP's label %s", name)
		}
	}

	scrape := string(expose.Append(nil, r, expose.Text))
	for name, text := range want {
		assert.Contains(t, scrape, name+`="`+strings.ReplaceAll(text, `"`, `\"`)+`"`, "label %s in the scrape:\n%s", name, strings.TrimSpace(scrape))
	}
}

// TestClashes: a name an earlier family writes is left out, a histogram's
// PCP label le (its indom's here; a histogram vector refuses a label le
// of its own) is its exported_le, bytes that are not UTF-8 (of a PCP
// label's value, as PCP's JSON writes them; a vector refuses such values)
// are U+FFFD.
func TestClashes(t *testing.T) {
	r := mmv.NewRegistry("expose_clashes", nil)
	mmv.NewCounter(r, "sent", "A counter", mmv.Count).Add(1)
	mmv.NewGauge(r, "sent_total", "Its name is the counter's sample's", mmv.NoUnits).Set(9)
	hv := mmv.NewHistogramVec(r, "h", "Labelled le", mmv.NoUnits, &mmv.HistogramOptions{Buckets: []float64{1}}, "k")
	hv.With("v").Observe(0.5)
	require.NoError(t, r.AddIndomLabel(hv.Indom(), mmv.Label{Name: "le", Value: "x"}))
	mmv.NewGauge(r, "h_count", "Its name is the histogram's count's", mmv.NoUnits).Set(9)
	mmv.NewGauge(r, "temp", "A room's", mmv.NoUnits).Set(21)
	require.NoError(t, r.AddMetricLabel("temp", mmv.Label{Name: "zone", Value: "bad\xff"}))
	for _, f := range []expose.Format{expose.Text, expose.OpenMetrics} {
		var b bytes.Buffer
		require.NoError(t, expose.Write(&b, r, f))
		out := b.String()
		assert.NotContains(t, out, " 9\n", f)
		assert.Contains(t, out, "sent_total 1\n", f)
		assert.Contains(t, out, `h_bucket{exported_le="x",k="v",le="1"} 1`+"\n", f)
		assert.Contains(t, out, `h_count{exported_le="x",k="v"} 1`+"\n", f)
		assert.Contains(t, out, "temp{zone=\"bad\uFFFD\"} 21\n", f)
	}
}

// TestLifecycle: a registry serves its instruments never started, started
// and its low-level metrics once started; closed, nothing (an empty
// exposition, valid in both formats).
func TestLifecycle(t *testing.T) {
	r := mmv.NewRegistry("expose_lifecycle", &mmv.Options{Dir: t.TempDir()})
	c := mmv.NewCounter(r, "hits", "Hits", mmv.Count)
	c.Add(2)
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "raw", Type: mmv.Int64, Semantics: mmv.SemInstant}))
	assert.Equal(t, "# TYPE hits_total counter\n# HELP hits_total Hits\nhits_total 2\n", text(t, r))
	pcptest.NeedFileLayer(t) // the rest is of the registry started
	require.NoError(t, r.Start())
	c.Add(1)
	v, err := r.Value("raw", "")
	require.NoError(t, err)
	v.Set(-5)
	assert.Equal(t, "# TYPE hits_total counter\n# HELP hits_total Hits\nhits_total 3\n# TYPE raw gauge\nraw -5\n", text(t, r))
	require.NoError(t, r.Close())
	assert.Equal(t, "", text(t, r))
	var om bytes.Buffer
	require.NoError(t, expose.Write(&om, r, expose.OpenMetrics))
	assert.Equal(t, "# EOF\n", om.String())
}

// TestScrapesRaceUpdates: a deleted vector value leaves the exposition, and
// scrapes racing updates, new label values and deletions are safe (run
// with -race).
func TestScrapesRaceUpdates(t *testing.T) {
	r := mmv.NewRegistry("expose_race", &mmv.Options{Dir: t.TempDir(), PublishDelay: 1})
	v := mmv.NewCounterVec(r, "hits", "Hits", mmv.Count, "route")
	h := mmv.NewHistogramVec(r, "lat", "Latency", mmv.Second, nil, "route")
	v.With("/gone").Inc()
	assert.Contains(t, text(t, r), `hits_total{route="/gone"} 1`)
	v.Delete("/gone")
	assert.NotContains(t, text(t, r), "/gone")

	var wg sync.WaitGroup
	stop := make(chan struct{})
	for g := range 2 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				route := "/" + string(rune('a'+(i+g)%20))
				v.With(route).Inc()
				h.With(route).Observe(float64(i%7) / 100)
				if i%50 == 0 {
					v.Delete(route)
				}
				if i == 100 && g == 0 {
					// Where there are no files the instruments go on in memory.
					if err := r.Start(); pcptest.HasFileLayer() == nil {
						assert.NoError(t, err)
					} else {
						assert.ErrorIs(t, err, mmv.ErrUnsupported)
					}
				}
			}
		})
	}
	for range 50 {
		for _, f := range []expose.Format{expose.Text, expose.OpenMetrics} {
			var b bytes.Buffer
			require.NoError(t, expose.Write(&b, r, f))
		}
	}
	close(stop)
	wg.Wait()
	require.NoError(t, r.Close())
}

func text(t *testing.T, r *mmv.Registry) string {
	t.Helper()
	var b strings.Builder
	require.NoError(t, expose.Write(&b, r, expose.Text))
	return b.String()
}

// sampleValue returns the value of the sample line named name (labels
// included) in a text exposition, and whether there is one.
func sampleValue(t *testing.T, exposition, name string) (float64, bool) {
	t.Helper()
	for sc := bufio.NewScanner(strings.NewReader(exposition)); sc.Scan(); {
		if n, v, ok := strings.Cut(sc.Text(), " "); ok && n == name {
			f, err := strconv.ParseFloat(v, 64)
			require.NoError(t, err, sc.Text())
			return f, true
		}
	}
	return 0, false
}

// TestElapsedAsPCPReadsIt: an Elapsed value is exposed as PCP's reader
// exports it, a counter in microseconds whatever its metric declares, in
// seconds (2 s declared in Millisecond was served as 2,000 seconds, and
// with no units and instant semantics as a gauge of 2,000,000), its
// interval open since StartInterval counted (Value.Int), where the
// exposition showed no progress until EndInterval.
func TestElapsedAsPCPReadsIt(t *testing.T) {
	pcptest.NeedFileLayer(t)
	pcptest.MustHavePCP(t)
	tmp := t.TempDir()
	r := mmv.NewRegistry("expose_elapsed", &mmv.Options{Dir: filepath.Join(tmp, "mmv")})
	defer r.Close()
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "wait", Type: mmv.Elapsed, Semantics: mmv.SemCounter, Units: mmv.Millisecond}))
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "held", Type: mmv.Elapsed, Semantics: mmv.SemInstant}))
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "busy", Type: mmv.Elapsed, Semantics: mmv.SemCounter, Units: mmv.Microsecond}))
	require.NoError(t, r.Start())
	for _, name := range []string{"wait", "held", "busy"} {
		v, err := r.Value(name, "")
		require.NoError(t, err)
		v.AddDuration(2 * time.Second)
		if name == "busy" {
			v.StartInterval()
		}
	}
	time.Sleep(300 * time.Millisecond)
	ms := pcptest.Info(t, tmp)
	for _, name := range []string{"wait", "held"} {
		m := pcptest.Find(ms, "mmv.expose_elapsed."+name)
		require.NotNil(t, m, name)
		require.Equal(t, []string{"counter", "microsec", "2000000"}, []string{m.Semantics, m.Units, m.Value}, "%s as PCP reads it: 2 s", name)
	}
	m := pcptest.Find(ms, "mmv.expose_elapsed.busy")
	require.NotNil(t, m)
	pcp, err := strconv.ParseFloat(m.Value, 64)
	require.NoError(t, err)
	require.GreaterOrEqual(t, pcp, 2.3e6, "PCP counts the open interval")

	out := text(t, r)
	for _, name := range []string{"wait", "held"} {
		v, ok := sampleValue(t, out, name+"_seconds_total")
		assert.True(t, ok && v == 2, "%s: want a counter %s_seconds_total of 2 (PCP: 2000000 microsec); got\n%s", name, name, out)
	}
	busy, ok := sampleValue(t, out, "busy_seconds_total")
	require.True(t, ok)
	assert.GreaterOrEqual(t, busy, pcp/1e6, "exposed %v s while PCP read %v microsec before", busy, pcp)
}

// TestFuncMetricsBeforeStart: a registry never started (a host without
// PCP) serves its callback metrics' values, where it served 0 for ever.
func TestFuncMetricsBeforeStart(t *testing.T) {
	r := mmv.NewRegistry("expose_funcs", &mmv.Options{Dir: t.TempDir()})
	defer r.Close()
	mmv.NewGaugeFunc(r, "pool.open", "Open connections", mmv.Count, func() float64 { return 42 })
	mmv.NewCounterFunc(r, "lib.calls", "Calls a library counted", mmv.Count, func() uint64 { return 7 })
	mmv.NewIntGaugeFunc(r, "queue.len", "Jobs queued", mmv.Count, func() int64 { return 3 })

	out := text(t, r)
	for name, want := range map[string]float64{"pool_open": 42, "lib_calls_total": 7, "queue_len": 3} {
		got, ok := sampleValue(t, out, name)
		assert.True(t, ok && got == want, "%s: want %v, exposed %v (served: %v)", name, want, got, ok)
	}
}

// TestBucketBoundsInBaseUnits: a histogram's bounds, in PCP 700
// millisec and 10 and 100 microsec (its .bucket instances "700", "10",
// "100"), are le="0.7", le="1e-05" and le="0.0001" in seconds; the
// exposition multiplied them by an inexact 1e-3 or 1e-6 and wrote
// le="0.7000000000000001", le="9.999999999999999e-06" and
// le="9.999999999999999e-05": series a PromQL selector on le="0.7"
// never finds, and that change name should the scale be fixed.
func TestBucketBoundsInBaseUnits(t *testing.T) {
	r := mmv.NewRegistry("bounds", &mmv.Options{Dir: t.TempDir()})
	defer r.Close()
	mmv.NewHistogram(r, "db", "DB time", mmv.Millisecond, &mmv.HistogramOptions{Buckets: []float64{700}}).Observe(5)
	mmv.NewHistogram(r, "rpc", "RPC time", mmv.Microsecond, &mmv.HistogramOptions{Buckets: []float64{10, 100}}).Observe(50)
	out := string(expose.Append(nil, r, expose.Text))
	assert.Contains(t, out, `db_seconds_bucket{le="0.7"} 1`+"\n", out)
	assert.Contains(t, out, `rpc_seconds_bucket{le="1e-05"} 0`+"\n", out)
	assert.Contains(t, out, `rpc_seconds_bucket{le="0.0001"} 1`+"\n", out)
}

// TestLabelPrecedenceAsPCP: a label name given at two levels is
// scraped with the value PCP shows, whose precedence is indom, then
// registry (cluster), then metric (item), then instance (pmLookupLabels'
// order): a metric's label beats its indom's namesake and the
// registry's. The scrape let the indom's beat the registry's and the
// metric's, and so named lo's series x="indom" where PCP showed
// x="registry"; an indom's label named as the registry's, which PCP
// never shows, is refused now.
func TestLabelPrecedenceAsPCP(t *testing.T) {
	tmp := t.TempDir()
	pcptest.WantPCP(t)
	r := mmv.NewRegistry("precedence", &mmv.Options{Dir: filepath.Join(tmp, "mmv")})
	t.Cleanup(func() { r.Close() })
	require.NoError(t, r.AddIndom(mmv.Indom{Serial: 7, Instances: []mmv.Instance{{ID: 1, Name: "eth0"}, {ID: 2, Name: "lo"}}}))
	for _, name := range []string{"in", "out"} {
		require.NoError(t, r.AddMetric(mmv.Metric{Name: name, Type: mmv.Uint64, Semantics: mmv.SemCounter, Indom: 7}))
	}
	require.NoError(t, r.AddLabel(mmv.Label{Name: "x", Value: "registry"}))
	require.NoError(t, r.AddLabel(mmv.Label{Name: "y", Value: "registry"}))
	require.ErrorIs(t, r.AddIndomLabel(7, mmv.Label{Name: "x", Value: "indom"}), mmv.ErrDuplicate)
	require.NoError(t, r.AddIndomLabel(7, mmv.Label{Name: "z", Value: "indom"}))
	require.NoError(t, r.AddMetricLabel("out", mmv.Label{Name: "y", Value: "metric"}))
	require.NoError(t, r.AddMetricLabel("out", mmv.Label{Name: "z", Value: "metric"}))
	require.NoError(t, r.AddInstanceLabel(7, 1, mmv.Label{Name: "x", Value: "instance"}))
	pcptest.NeedFileLayer(t)
	require.NoError(t, r.Start())

	// What PCP shows, by instance of each metric.
	want := map[string]string{
		"in/eth0":  `{"x":"instance","y":"registry","z":"indom"}`,
		"in/lo":    `{"x":"registry","y":"registry","z":"indom"}`,
		"out/eth0": `{"x":"instance","y":"metric","z":"metric"}`,
		"out/lo":   `{"x":"registry","y":"metric","z":"metric"}`,
	}
	if pcptest.HasPCP() == nil {
		ms := pcptest.Info(t, tmp)
		for key, labels := range want {
			metric, inst, _ := strings.Cut(key, "/")
			m := pcptest.Find(ms, "mmv.precedence."+metric)
			require.NotNil(t, m, metric)
			in := m.Instance(inst)
			require.NotNil(t, in, key)
			var shown map[string]string
			require.NoError(t, json.Unmarshal([]byte(labels), &shown))
			for n, v := range shown {
				got, ok := in.Label(n)
				assert.True(t, ok && got == strconv.Quote(v), "%s: PCP shows label %s %s, want %q", key, n, got, v)
			}
		}
	}
	out := text(t, r)
	for key, labels := range want {
		metric, inst, _ := strings.Cut(key, "/")
		var ls map[string]string
		require.NoError(t, json.Unmarshal([]byte(labels), &ls))
		series := metric + `_total{z="` + ls["z"] + `",x="` + ls["x"] + `",y="` + ls["y"] + `",instname="` + inst + `"}` // in PCP's order: the indom's z first
		_, ok := sampleValue(t, out, series)
		assert.True(t, ok, "%s: want %s, as PCP shows it, in\n%s", key, series, out)
	}
}

// TestHistogramLabelsAsPCP: a histogram vector's _count and _sum
// carry the labels PCP shows on its .count and .sum: those of the
// vector's indom (Vec.Indom, which the doc gives for labels of one's
// own) and of each metric. The scrape took the histogram's labels from
// its .bucket metric alone, over another indom, and so left out of the
// whole histogram a label PCP shows on h.count, h.sum and every
// statistic, which the statistics' gauges had.
func TestHistogramLabelsAsPCP(t *testing.T) {
	tmp := t.TempDir()
	pcptest.WantPCP(t)
	r := mmv.NewRegistry("histlabels", &mmv.Options{Dir: filepath.Join(tmp, "mmv")})
	t.Cleanup(func() { r.Close() })
	hv := mmv.NewHistogramVec(r, "h", "Latency", mmv.NoUnits, &mmv.HistogramOptions{Buckets: []float64{1}}, "route")
	hv.With("/a").Observe(0.5)
	require.NoError(t, r.AddIndomLabel(hv.Indom(), mmv.Label{Name: "tier", Value: "web"}))
	require.NoError(t, r.AddMetricLabel("h.count", mmv.Label{Name: "of_count", Value: "c"}))
	require.NoError(t, r.AddMetricLabel("h.sum", mmv.Label{Name: "of_sum", Value: "s"}))
	pcptest.NeedFileLayer(t)
	require.NoError(t, r.Start())

	want := map[string]map[string]string{ // what PCP shows of instance route=/a
		"h_count": {"tier": "web", "of_count": "c", "route": "/a"},
		"h_sum":   {"tier": "web", "of_sum": "s", "route": "/a"},
		"h_p99":   {"tier": "web", "route": "/a"},
	}
	if pcptest.HasPCP() == nil {
		ms := pcptest.Info(t, tmp)
		for series, labels := range want {
			m := pcptest.Find(ms, "mmv.histlabels."+strings.ReplaceAll(series, "_", "."))
			require.NotNil(t, m, series)
			in := m.Instance("route=/a")
			require.NotNil(t, in, series)
			for n, v := range labels {
				got, ok := in.Label(n)
				assert.True(t, ok && got == strconv.Quote(v), "%s: PCP shows label %s %s, want %q", series, n, got, v)
			}
		}
	}
	out := text(t, r)
	for series, labels := range want {
		var line string
		for sc := bufio.NewScanner(strings.NewReader(out)); sc.Scan(); {
			if strings.HasPrefix(sc.Text(), series+"{") {
				line = sc.Text()
			}
		}
		require.NotEmpty(t, line, "%s in\n%s", series, out)
		for n, v := range labels {
			assert.Contains(t, line, n+`="`+v+`"`, "%s: PCP shows label %s %q; the scrape\n%s", series, n, v, out)
		}
	}
}

// TestHistogramLabelsLeAndExportedLe: a histogram whose PCP label le
// (its indom's) meets its vector's label exported_le has its le renamed
// to a name none of its labels has (exported_exported_le, as Prometheus
// renames a clash again), so that its instances, two in PCP, are two
// series, and the PCP label is kept beside the vector's. When the
// vector's labels were le and exported_le (a histogram vector now refuses
// le), its instances "le=a,exported_le=b" and "le=b,exported_le=b" were
// both h_bucket{exported_le="b",le="1"}, each series twice, one value
// lost.
func TestHistogramLabelsLeAndExportedLe(t *testing.T) {
	r := mmv.NewRegistry("expose_exported_le", &mmv.Options{Dir: t.TempDir()})
	defer r.Close()
	hv := mmv.NewHistogramVec(r, "h", "H", mmv.NoUnits, &mmv.HistogramOptions{Buckets: []float64{1}}, "exported_le")
	require.NoError(t, r.AddIndomLabel(hv.Indom(), mmv.Label{Name: "le", Value: "a"}))
	hv.With("b").Observe(0.5)
	hv.With("c").Observe(2)
	for _, f := range []expose.Format{expose.Text, expose.OpenMetrics} {
		out := scrapeOnce(t, r, f)
		assert.Contains(t, out, `h_count{exported_exported_le="a",exported_le="b"} 1`+"\n", f)
		assert.Contains(t, out, `h_bucket{exported_exported_le="a",exported_le="c",le="+Inf"} 1`+"\n", f)
	}
}

// tier is a label value of a named string type, as a program's enums are.
type tier string

// TestLabelValueMarshalsToString: a label value that is no Go
// string but is a JSON string in the file (a named string type, a
// time.Time, any json.Marshaler or TextMarshaler writing one) is the
// string PCP shows, tier="web", where the scrape wrote its JSON text,
// tier="\"web\"": another series than PCP's, quotes included.
func TestLabelValueMarshalsToString(t *testing.T) {
	tmp := t.TempDir()
	pcptest.WantPCP(t)
	r := mmv.NewRegistry("stringlike", &mmv.Options{Dir: filepath.Join(tmp, "mmv")})
	t.Cleanup(func() { r.Close() })
	mmv.NewCounter(r, "requests", "Requests", mmv.Count).Add(2)
	require.NoError(t, r.AddLabel(mmv.Label{Name: "tier", Value: tier("web")}))
	require.NoError(t, r.AddLabel(mmv.Label{Name: "since", Value: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}))
	want := map[string]string{"tier": "web", "since": "2026-01-02T03:04:05Z"}
	if pcptest.HasPCP() == nil && pcptest.HasFileLayer() == nil {
		require.NoError(t, r.Start())
		m := pcptest.Find(pcptest.Info(t, tmp), "mmv.stringlike.requests")
		require.NotNil(t, m)
		for name, v := range want {
			got, _ := m.Label(name)
			require.Equal(t, strconv.Quote(v), got, "PCP's label %s, a JSON string", name)
		}
	}
	out := text(t, r)
	for name, v := range want {
		assert.Contains(t, out, name+`="`+v+`"`, "label %s as PCP shows it, in\n%s", name, out)
	}
}

// scrapeOnce returns r's exposition in format f, checking that no series
// is written twice.
func scrapeOnce(t *testing.T, r *mmv.Registry, f expose.Format) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, expose.Write(&b, r, f))
	out := b.String()
	seen := map[string]bool{}
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, "#") {
			continue
		}
		series, _, _ := strings.Cut(line, " ")
		assert.False(t, seen[series], "%v: series %s twice in\n%s", f, series, out)
		seen[series] = true
	}
	return out
}

// TestInstanceLabelInstnameExported: an instance that is not a vector's
// is named by label instname, and a PCP label of that name, its own or
// the registry's, is exported_instname, as a histogram's le is: an
// instance labelled instname="b" in an indom with an instance b was
// scraped as that instance, one series twice, the value of one of them
// lost; the registry's label instname was replaced on every instance.
func TestInstanceLabelInstnameExported(t *testing.T) {
	r := mmv.NewRegistry("expose_instname", &mmv.Options{Dir: t.TempDir()})
	defer r.Close()
	require.NoError(t, r.AddIndom(mmv.Indom{Serial: 7, Instances: []mmv.Instance{{ID: 1, Name: "a"}, {ID: 2, Name: "b"}}}))
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "net", Type: mmv.Uint64, Semantics: mmv.SemInstant, Units: mmv.Count, Indom: 7}))
	require.NoError(t, r.AddInstanceLabel(7, 1, mmv.Label{Name: "instname", Value: "b"}))
	mmv.NewGauge(r, "single", "", mmv.NoUnits).Set(1)
	require.NoError(t, r.AddLabel(mmv.Label{Name: "instname", Value: "reg"}))
	pcptest.NeedFileLayer(t) // the indom's values have storage once started
	require.NoError(t, r.Start())
	for _, f := range []expose.Format{expose.Text, expose.OpenMetrics} {
		out := scrapeOnce(t, r, f)
		assert.Contains(t, out, `net{exported_instname="b",instname="a"} 0`+"\n", f)
		assert.Contains(t, out, `net{exported_instname="reg",instname="b"} 0`+"\n", f)
		assert.Contains(t, out, `single{instname="reg"} 1`+"\n", f, "a singular metric's label, no instance's name")
	}
}

// TestLeOutsideHistograms: le names a Prometheus histogram's cumulative
// bucket bound, which histogram_quantile reads as such. A family that is
// not a histogram (a counter vector of per-bucket counts labelled le, as
// goruntime's NAME.bucket and the bridges' are in PCP) has its label le
// exported_le, where it was served as le: a quantile over
// go_sched_latencies_seconds_bucket_total{le=...} read per-bucket counts
// as cumulative, a wrong answer with no word.
func TestLeOutsideHistograms(t *testing.T) {
	r := mmv.NewRegistry("expose_le", &mmv.Options{Dir: t.TempDir()})
	v := mmv.NewCounterVec(r, "lat.bucket", "Per bucket", mmv.Count, "le")
	v.With("0.1").Add(5)
	v.With("+Inf").Add(1)
	g := mmv.NewGaugeVec(r, "g", "A gauge labelled le and exported_le", mmv.NoUnits, "le", "exported_le")
	g.With("1", "x").Set(2)
	for _, f := range []expose.Format{expose.Text, expose.OpenMetrics} {
		out := scrapeOnce(t, r, f)
		assert.Contains(t, out, `lat_bucket_total{exported_le="0.1"} 5`+"\n", f)
		assert.Contains(t, out, `lat_bucket_total{exported_le="+Inf"} 1`+"\n", f)
		assert.Contains(t, out, `g{exported_exported_le="1",exported_le="x"} 2`+"\n", f)
		assert.NotContains(t, out, `{le=`, f)
	}
}
