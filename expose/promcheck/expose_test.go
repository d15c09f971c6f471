package promcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/expose"
	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/mmvfile"
)

// shop declares on r one of each kind of metric, with labels and units
// the exposition converts, and updates the instruments.
func shop(t *testing.T, r *mmv.Registry) {
	t.Helper()
	require.NoError(t, r.AddLabel(mmv.Label{Name: "service", Value: "shop"}))
	mmv.NewCounter(r, "requests", "Requests served", mmv.Count).Add(7)
	mmv.NewGauge(r, "temperature", "Room \"temperature\"\nin C, with a \\", mmv.NoUnits).Set(-2.5)
	mmv.NewIntGauge(r, "queue.depth", "Jobs waiting", mmv.Count).Set(-3)
	mmv.NewTimer(r, "busy", "Time busy").Observe(1500 * time.Millisecond)
	hits := mmv.NewCounterVec(r, "hits", "Hits by route", mmv.Count, "route", "code")
	hits.With("/a b", "200").Add(2)
	hits.With(`q"u\o,te=%`, "500").Add(5)
	hits.With("new\nline", "ü").Add(1)
	mmv.NewGaugeVec(r, "size", "Disk used", mmv.Kbyte, "disk").With("sda").Set(1.5)
	h := mmv.NewHistogram(r, "latency", "Request latency", mmv.Millisecond, &mmv.HistogramOptions{Buckets: []float64{10, 100}})
	for _, ms := range []float64{5, 20, 500} {
		h.Observe(ms)
	}
	hv := mmv.NewHistogramVec(r, "rsize", "Response size", mmv.Byte, &mmv.HistogramOptions{Buckets: []float64{100, 1000}}, "route")
	hv.With("/a").Observe(50)
	hv.With("/a").Observe(5000)
	hv.With("/b").Observe(500)
	require.NoError(t, r.AddIndom(mmv.Indom{Serial: 7, Instances: []mmv.Instance{{ID: 1, Name: "eth0"}, {ID: 2, Name: "lo"}}}))
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "net.bytes", Type: mmv.Uint64, Semantics: mmv.SemCounter, Units: mmv.Byte, Indom: 7, ShortHelp: "Bytes received"}))
	require.NoError(t, r.AddInstanceLabel(7, 1, mmv.Label{Name: "speed", Value: 1000}))
}

// instrumented is what shop's instruments show, with both formats' names.
var instrumented = map[string]float64{
	`requests_total{service="shop"}`:                             7,
	`temperature{service="shop"}`:                                -2.5,
	`queue_depth{service="shop"}`:                                -3,
	`busy_seconds_total{service="shop"}`:                         1.5,
	`hits_total{code="200",route="/a b",service="shop"}`:         2,
	`hits_total{code="500",route="q\"u\\o,te=%",service="shop"}`: 5,
	`hits_total{code="ü",route="new\nline",service="shop"}`:      1,
	`size_bytes{disk="sda",service="shop"}`:                      1536,
	`latency_seconds_bucket{le="0.01",service="shop"}`:           1,
	`latency_seconds_bucket{le="0.1",service="shop"}`:            2,
	`latency_seconds_bucket{le="+Inf",service="shop"}`:           3,
	`latency_seconds_sum{service="shop"}`:                        0.525,
	`latency_seconds_count{service="shop"}`:                      3,
	`rsize_bytes_bucket{le="100",route="/a",service="shop"}`:     1,
	`rsize_bytes_bucket{le="1000",route="/a",service="shop"}`:    1,
	`rsize_bytes_bucket{le="+Inf",route="/a",service="shop"}`:    2,
	`rsize_bytes_sum{route="/a",service="shop"}`:                 5050,
	`rsize_bytes_count{route="/a",service="shop"}`:               2,
	`rsize_bytes_bucket{le="1000",route="/b",service="shop"}`:    1,
	`rsize_bytes_count{route="/b",service="shop"}`:               1,
}

func newRegistry(t *testing.T) (*mmv.Registry, string) {
	tmp := t.TempDir()
	name := fmt.Sprintf("expose_%d_%s", os.Getpid(), strings.ToLower(t.Name()))
	r := mmv.NewRegistry(name, &mmv.Options{Dir: filepath.Join(tmp, "mmv")})
	t.Cleanup(func() { r.Close() })
	return r, tmp
}

// both parses r's exposition in both formats with Prometheus's parsers,
// checks they read the same samples, and returns them.
func both(t *testing.T, r *mmv.Registry) exposition {
	t.Helper()
	text := parseText(t, scrape(t, r, expose.Text))
	om := parseOpenMetrics(t, scrape(t, r, expose.OpenMetrics))
	require.Equal(t, text.samples, om.samples, "the text format and OpenMetrics disagree")
	return text
}

func checkInstrumented(t *testing.T, e exposition) {
	t.Helper()
	for k, want := range instrumented {
		got, ok := e.samples[canonical(t, k)]
		if assert.True(t, ok, "%s missing from\n%v", k, e.samples) {
			assert.True(t, near(want, got), "%s: %v, want %v", k, got, want)
		}
	}
	for fam, typ := range map[string]string{"requests_total": "counter", "temperature": "gauge", "latency_seconds": "histogram", "rsize_bytes": "histogram", "size_bytes": "gauge"} {
		got, ok := e.types[fam]
		if !ok { // OpenMetrics names a counter's family without _total
			got = e.types[strings.TrimSuffix(fam, "_total")]
		}
		assert.Equal(t, typ, got, fam)
	}
}

// canonical turns a key written by hand into key's form.
func canonical(t *testing.T, k string) string {
	name, rest, _ := strings.Cut(k, "{")
	ls := map[string]string{}
	rest = strings.TrimSuffix(rest, "}")
	for rest != "" {
		n, v, ok := strings.Cut(rest, "=")
		require.True(t, ok, k)
		q, err := strconv.QuotedPrefix(v)
		require.NoError(t, err, k)
		ls[n], _ = strconv.Unquote(q)
		rest = strings.TrimPrefix(v[len(q):], ",")
	}
	return key(name, ls)
}

// TestNeverStarted: a registry never started serves its instruments from
// their memory, in both formats, parsed by Prometheus's parsers; the
// low-level API's metrics have no value yet and are left out.
func TestNeverStarted(t *testing.T) {
	r, _ := newRegistry(t)
	shop(t, r)
	e := both(t, r)
	checkInstrumented(t, e)
	for k := range e.samples {
		assert.False(t, strings.HasPrefix(k, "net_bytes"), k)
	}
}

// TestStartedMatchesPCP: a started registry's exposition, parsed by
// Prometheus's parsers in both formats, has every value PCP's reader
// (pmda_mmv.so in pminfo) shows of its file, with the same labels,
// histogram buckets cumulated, and nothing PCP does not show; and the
// instruments' values.
func TestStartedMatchesPCP(t *testing.T) {
	pcptest.MustHavePCP(t)
	r, tmp := newRegistry(t)
	shop(t, r)
	pcptest.NeedFileLayer(t)
	require.NoError(t, r.Start())
	v, err := r.Value("net.bytes", "eth0")
	require.NoError(t, err)
	v.Add(100)
	e := both(t, r)
	checkInstrumented(t, e)

	ms := pcptest.Info(t, tmp)
	prefix := "mmv." + r.Name() + "."
	compared := 0
	inPCP := map[string]bool{}
	for _, m := range ms {
		if !strings.HasPrefix(m.Name, prefix) {
			continue
		}
		for _, s := range fromPCP(t, m, strings.TrimPrefix(m.Name, prefix)) {
			inPCP[s.key] = true
			got, ok := e.samples[s.key]
			if assert.True(t, ok, "%s (PCP %s) missing from the exposition", s.key, m.Name) {
				assert.True(t, near(s.value, got), "%s: %v, PCP shows %v", s.key, got, s.value)
			}
			compared++
		}
	}
	assert.Greater(t, compared, 40)
	for k := range e.samples {
		assert.True(t, inPCP[k], "%s: not a value PCP shows", k)
	}
	assert.Equal(t, 100.0, e.samples[canonical(t, `net_bytes_total{instname="eth0",service="shop",speed="1000"}`)])
}

type pcpSample struct {
	key   string
	value float64
}

// scales are the units pminfo prints for shop's metrics, in Prometheus's
// base unit.
var scales = map[string]struct {
	unit  string
	scale float64
}{
	"count": {}, "none": {}, "": {},
	"nanosec":  {"seconds", 1e-9},
	"millisec": {"seconds", 1e-3},
	"byte":     {"bytes", 1},
	"Kbyte":    {"bytes", 1024},
}

// fromPCP is what the exposition must hold for a metric as pminfo shows
// it: its name made as package expose documents, its labels from PCP's
// (the file's "service", the instances'), its values scaled; a histogram's
// .bucket cumulated over its bounds. A histogram's .count and .sum are in
// its family.
func fromPCP(t *testing.T, m pcptest.Metric, name string) []pcpSample {
	t.Helper()
	u, ok := scales[m.Units]
	require.True(t, ok, "%s: units %q", m.Name, m.Units)
	if u.scale == 0 {
		u.scale = 1
	}
	service, ok := m.Label("service")
	require.True(t, ok, "%s: no service label in %s", m.Name, m.Labels)
	base := strings.ReplaceAll(name, ".", "_")
	hist := strings.HasSuffix(name, ".bucket")
	if hist {
		base = strings.TrimSuffix(base, "_bucket")
	}
	if strings.HasSuffix(name, ".count") || strings.HasSuffix(name, ".sum") {
		for _, h := range []string{"latency", "rsize"} {
			if strings.HasPrefix(name, h+".") {
				sfx := name[len(h)+1:]
				base, u = h+map[string]string{"latency": "_seconds", "rsize": "_bytes"}[h], scales[map[string]string{"latency": "millisec", "rsize": "byte"}[h]]
				if sfx == "count" {
					u.scale = 1
				}
				return instances(t, m, base+"_"+sfx, service, u.scale)
			}
		}
	}
	if u.unit != "" && !hist && !strings.HasSuffix(base, "_"+u.unit) {
		base += "_" + u.unit
	}
	if m.Semantics == "counter" && !hist {
		base += "_total"
	}
	if !hist {
		return instances(t, m, base, service, u.scale)
	}
	// Buckets: instances "bound" or "route=/a,le=bound", per bucket.
	unit := map[string]string{"latency": "_seconds", "rsize": "_bytes"}[base]
	hu := scales[map[string]string{"latency": "millisec", "rsize": "byte"}[base]]
	type bucket struct {
		series, bound string
		upper, count  float64
	}
	var bs []bucket
	for _, in := range m.Instances {
		series, bound := "", in.Name
		if i := strings.LastIndex(in.Name, ",le="); i >= 0 {
			series, bound = in.Name[:i], in.Name[i+len(",le="):]
		}
		upper, err := strconv.ParseFloat(bound, 64)
		require.NoError(t, err, in.Name)
		c, err := strconv.ParseFloat(in.Value, 64)
		require.NoError(t, err, in.Value)
		bs = append(bs, bucket{series, bound, upper, c})
	}
	slices.SortStableFunc(bs, func(a, b bucket) int {
		if c := strings.Compare(a.series, b.series); c != 0 {
			return c
		}
		return int(math.Copysign(1, a.upper-b.upper))
	})
	var out []pcpSample
	var cum float64
	for i, b := range bs {
		if i == 0 || bs[i-1].series != b.series {
			cum = 0
		}
		cum += b.count
		ls := vecLabels(t, b.series)
		ls["service"] = unquote(t, service)
		ls["le"] = strconv.FormatFloat(b.upper*hu.scale, 'g', -1, 64)
		out = append(out, pcpSample{key(base+unit+"_bucket", ls), cum})
	}
	return out
}

func instances(t *testing.T, m pcptest.Metric, name, service string, scale float64) []pcpSample {
	t.Helper()
	if m.Singular() {
		v, err := strconv.ParseFloat(m.Value, 64)
		require.NoError(t, err, "%s = %s", m.Name, m.Value)
		return []pcpSample{{key(name, map[string]string{"service": unquote(t, service)}), v * scale}}
	}
	var out []pcpSample
	for _, in := range m.Instances {
		v, err := strconv.ParseFloat(in.Value, 64)
		require.NoError(t, err, "%s[%s] = %s", m.Name, in.Name, in.Value)
		ls := map[string]string{"service": unquote(t, service)}
		if strings.Contains(in.Name, "=") {
			// A vector's: its labels are PCP's instance labels.
			for n := range vecLabels(t, in.Name) {
				j, ok := in.Label(n)
				require.True(t, ok, "%s[%s]: no label %s in %s", m.Name, in.Name, n, in.Labels)
				ls[n] = unquote(t, j)
			}
		} else {
			ls["instname"] = in.Name
			if s, ok := in.Label("speed"); ok {
				ls["speed"] = s
			}
		}
		out = append(out, pcpSample{key(name, ls), v * scale})
	}
	return out
}

// vecLabels returns the label names of an instance name of a vector's form,
// with the values of the simple ones (the test's histogram routes).
func vecLabels(t *testing.T, inst string) map[string]string {
	ls := map[string]string{}
	if inst == "" {
		return ls
	}
	for _, p := range strings.Split(inst, ",") {
		n, v, ok := strings.Cut(p, "=")
		require.True(t, ok, inst)
		ls[n] = v
	}
	return ls
}

func unquote(t *testing.T, j string) string {
	var s string
	require.NoError(t, json.Unmarshal([]byte(j), &s), j)
	return s
}

// TestHandlerNegotiates: the handler serves OpenMetrics when the Accept
// header prefers it, the text format otherwise, gzipped when asked, and
// what it serves parses.
func TestHandlerNegotiates(t *testing.T) {
	r, _ := newRegistry(t)
	shop(t, r)
	srv := httptest.NewServer(expose.Handler(r))
	defer srv.Close()
	for _, c := range []struct {
		accept, want string
	}{
		{"", "text/plain; version=0.0.4"},
		{"application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1", "application/openmetrics-text; version=1.0.0"},
		{"text/plain;version=0.0.4;q=0.9,application/openmetrics-text;q=0.5", "text/plain; version=0.0.4"},
		{"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited", "text/plain; version=0.0.4"},
	} {
		req, err := http.NewRequest("GET", srv.URL, nil)
		require.NoError(t, err)
		if c.accept != "" {
			req.Header.Set("Accept", c.accept)
		}
		resp, err := http.DefaultClient.Do(req) // asks for gzip and unzips
		require.NoError(t, err)
		body := new(strings.Builder)
		_, err = io_Copy(body, resp)
		require.NoError(t, err)
		assert.True(t, resp.Uncompressed, "not gzipped for %q", c.accept)
		assert.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), c.want), "%q: %s", c.accept, resp.Header.Get("Content-Type"))
		if strings.HasPrefix(c.want, "application/openmetrics-text") {
			checkInstrumented(t, parseOpenMetrics(t, []byte(body.String())))
		} else {
			checkInstrumented(t, parseText(t, []byte(body.String())))
		}
	}
}

// TestLogLinearAndClosed: a log-linear histogram (242 buckets) parses in
// both formats, cumulative up to its count at +Inf; a closed registry's
// empty exposition parses too.
func TestLogLinearAndClosed(t *testing.T) {
	r, _ := newRegistry(t)
	h := mmv.NewHistogram(r, "work", "Work done", mmv.Second, &mmv.HistogramOptions{SubBuckets: 8})
	for i := range 1000 {
		h.Observe(math.Ldexp(1, i%40-15)) // under, in and over the range
	}
	e := both(t, r)
	var last float64
	buckets := 0
	for k, v := range e.samples {
		if strings.HasPrefix(k, "work_seconds_bucket") {
			buckets++
			last = max(last, v)
		}
	}
	assert.Equal(t, 242, buckets)
	assert.Equal(t, 1000.0, last)
	assert.Equal(t, 1000.0, e.samples[`work_seconds_bucket{le="+Inf"}`])
	assert.Equal(t, 1000.0, e.samples[`work_seconds_count{}`])
	require.NoError(t, r.Close())
	assert.Empty(t, both(t, r).samples)
}

// TestPCPLabelLeOnHistogram: a PCP label le (a histogram vector's
// statistics' indom's, series labels in the exposition; the registry
// refuses one PCP would show on the buckets) is exported_le on a
// histogram, as a vector's label le is (TestClashes), where
// h_bucket{le="x",le="1"} failed the text format's scrape of the whole
// registry and gave OpenMetrics series le twice.
func TestPCPLabelLeOnHistogram(t *testing.T) {
	r, _ := newRegistry(t)
	mmv.NewCounter(r, "requests", "Requests", mmv.Count).Add(1)
	hv := mmv.NewHistogramVec(r, "h", "H", mmv.NoUnits, &mmv.HistogramOptions{Buckets: []float64{1}}, "k")
	hv.With("v").Observe(0.5)
	assert.NoError(t, r.AddIndomLabel(hv.Indom(), mmv.Label{Name: "le", Value: "x"}))

	txt := scrape(t, r, expose.Text)
	tp := expfmt.NewTextParser(model.UTF8Validation)
	_, err := tp.TextToMetricFamilies(bytes.NewReader(txt))
	assert.NoError(t, err, "the text format's parser refuses:\n%s", txt)

	om := scrape(t, r, expose.OpenMetrics)
	p := textparse.NewOpenMetricsParser(om, labels.NewSymbolTable())
	for {
		entry, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if !assert.NoError(t, err, "OpenMetrics' parser refuses:\n%s", om) {
			break
		}
		if entry == textparse.EntrySeries {
			var ls labels.Labels
			p.Labels(&ls)
			name, dup := ls.HasDuplicateLabelNames()
			assert.False(t, dup, "series %s has label %s twice", ls, name)
		}
	}
}

// TestValuesNotUTF8Refused: a vector refuses a label value that is not
// UTF-8 (a Latin-1 path, "/caf\xe9"), as client_golang's vectors do,
// counted in mmv.dropped{refused}: PCP's JSON labels and the scrape write
// such bytes as U+FFFD, so "/caf\xe9" and "/caf\xe8" were two PCP
// instances but one series, which Prometheus's parsers read twice and a
// scrape keeps one of. The file, PCP, Gather and the scrape agree: the
// values that are UTF-8 are there, each its own series.
func TestValuesNotUTF8Refused(t *testing.T) {
	r, tmp := newRegistry(t)
	v := mmv.NewCounterVec(r, "requests", "Requests", mmv.Count, "path")
	v.With("/caf\xe9").Add(1)
	_, err := v.Get("/caf\xe8")
	require.ErrorIs(t, err, mmv.ErrLabel)
	assert.ErrorIs(t, v.Err(), mmv.ErrLabel)
	v.With("/café").Add(4)
	v.With("/cafe").Add(8)
	pcptest.NeedFileLayer(t)
	require.NoError(t, r.Start())

	f, err := mmvfile.Open(r.Path())
	require.NoError(t, err)
	var names []string
	for _, val := range f.Values {
		if val.Metric.Name == "requests" {
			names = append(names, val.Instance.Name)
		}
	}
	assert.Equal(t, []string{"path=/café", "path=/cafe"}, names, "the file's instances")
	if pcptest.WantPCP(t) {
		ms := pcptest.Info(t, tmp)
		m := pcptest.Find(ms, "mmv."+r.Name()+".requests")
		require.NotNil(t, m)
		require.Len(t, m.Instances, 2, "PCP's instances")
		d := pcptest.Find(ms, "mmv."+r.Name()+".mmv.dropped")
		require.NotNil(t, d)
		require.NotNil(t, d.Instance("refused"))
		assert.Equal(t, "2", d.Instance("refused").Value, "PCP's count of the values refused")
	}

	e := both(t, r)
	assert.Equal(t, 4.0, e.samples[canonical(t, `requests_total{path="/café"}`)])
	assert.Equal(t, 8.0, e.samples[canonical(t, `requests_total{path="/cafe"}`)])
	assert.Equal(t, 2.0, e.samples[canonical(t, `mmv_dropped_total{instname="refused"}`)], "the scrape's count of the values refused")
}

// TestInstanceNamesNotUTF8: two instances of an indom of one's own
// whose names differ only in bytes that are not UTF-8 ("caf\xe9",
// "caf\xe8", Latin-1) are two instances in PCP and must be two series
// (or refused, as a vector refuses such values), never one series twice:
// the scrape wrote both as instname="caf\uFFFD", a series Prometheus's
// parsers read twice and a scrape keeps one of.
func TestInstanceNamesNotUTF8(t *testing.T) {
	r, tmp := newRegistry(t)
	err := r.AddIndom(mmv.Indom{Serial: 7, Instances: []mmv.Instance{{ID: 1, Name: "caf\xe9"}, {ID: 2, Name: "caf\xe8"}, {ID: 3, Name: "café"}}})
	if err != nil {
		require.ErrorIs(t, err, mmv.ErrName, "refused, then as a vector's values are")
		require.NoError(t, r.AddIndom(mmv.Indom{Serial: 7, Instances: []mmv.Instance{{ID: 3, Name: "café"}}}))
	}
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "reads", Type: mmv.Uint64, Semantics: mmv.SemCounter, Indom: 7}))
	pcptest.NeedFileLayer(t)
	require.NoError(t, r.Start())
	e := both(t, r)
	n := 0
	for k := range e.samples {
		if strings.HasPrefix(k, "reads_total{") {
			n++
		}
	}
	if pcptest.WantPCP(t) {
		m := pcptest.Find(pcptest.Info(t, tmp), "mmv."+r.Name()+".reads")
		require.NotNil(t, m)
		assert.Len(t, m.Instances, n, "PCP's instances, the scrape's series")
	}
}
