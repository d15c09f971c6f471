package compare

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/expose"
	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// scrapeVecs and scrapeValues make the scraped registries: 10 vectors (5
// of counters, 5 of gauges) of 1,000 label values each, 10,000 series.
const scrapeVecs, scrapeValues = 10, 1000

// scrapeHandlers returns the same 10,000 series served by promhttp from a
// client_golang registry, and by package expose from an mmv registry,
// never started and started.
func scrapeHandlers(tb testing.TB) map[string]http.Handler {
	tb.Helper()
	preg := prometheus.NewRegistry()
	declaring := mmv.NewRegistry("bench_expose_declaring", &mmv.Options{MaxInstances: -1})
	started := mmv.NewRegistry("bench_expose_started", &mmv.Options{Dir: filepath.Join(tmpDir, "mmv"), MaxInstances: -1})
	for i := range scrapeVecs {
		name, help := "series_"+strconv.Itoa(i), "Series for the scrape benchmark"
		var pc *prometheus.CounterVec
		var pg *prometheus.GaugeVec
		var mc [2]*mmv.Vec[mmv.Counter]
		var mg [2]*mmv.Vec[mmv.Gauge]
		if i%2 == 0 {
			pc = prometheus.NewCounterVec(prometheus.CounterOpts{Name: name + "_total", Help: help}, []string{"id", "kind"})
			preg.MustRegister(pc)
			for j, r := range []*mmv.Registry{declaring, started} {
				mc[j] = mmv.NewCounterVec(r, name, help, mmv.Count, "id", "kind")
			}
		} else {
			pg = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, []string{"id", "kind"})
			preg.MustRegister(pg)
			for j, r := range []*mmv.Registry{declaring, started} {
				mg[j] = mmv.NewGaugeVec(r, name, help, mmv.NoUnits, "id", "kind")
			}
		}
		for k := range scrapeValues {
			id := strconv.Itoa(k)
			if pc != nil {
				pc.WithLabelValues(id, "request").Add(float64(k))
				for _, v := range mc {
					v.With(id, "request").Add(uint64(k))
				}
			} else {
				pg.WithLabelValues(id, "request").Set(float64(k) / 3)
				for _, v := range mg {
					v.With(id, "request").Set(float64(k) / 3)
				}
			}
		}
	}
	pcptest.NeedFileLayer(tb)
	check(tb, started.Start())
	tb.Cleanup(func() { started.Close() })
	return map[string]http.Handler{
		"promhttp":         promhttp.HandlerFor(preg, promhttp.HandlerOpts{EnableOpenMetrics: true}),
		"expose/declaring": expose.Handler(declaring),
		"expose/started":   expose.Handler(started),
	}
}

// serve scrapes h once as Prometheus does, in format accept (and gzip when
// zip), and returns the body.
func serve(h http.Handler, accept string, zip bool) *bytes.Buffer {
	req := httptest.NewRequest("GET", "/metrics", nil)
	req.Header.Set("Accept", accept)
	if zip {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w.Body
}

const (
	acceptText        = "text/plain;version=0.0.4;q=1,*/*;q=0.1"
	acceptOpenMetrics = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"
)

// TestScrapeSameSeries: the handlers of BenchmarkScrape serve the same
// number of samples, so that it compares like with like.
func TestScrapeSameSeries(t *testing.T) {
	hs := scrapeHandlers(t)
	for _, accept := range []string{acceptText, acceptOpenMetrics} {
		for name, h := range hs {
			n := 0
			for _, line := range bytes.Split(serve(h, accept, false).Bytes(), []byte("\n")) {
				if len(line) > 0 && line[0] != '#' {
					n++
				}
			}
			if n != scrapeVecs*scrapeValues {
				t.Errorf("%s, Accept %s: %d samples, want %d", name, accept, n, scrapeVecs*scrapeValues)
			}
		}
	}
}

// BenchmarkScrape: one scrape of 10,000 series (10 vectors of 1,000),
// served by promhttp from client_golang and by package expose from an mmv
// registry never started and started, in the text format and OpenMetrics,
// plain and gzipped. Compare ns/op and allocs/op within one run.
func BenchmarkScrape(b *testing.B) {
	hs := scrapeHandlers(b)
	for _, f := range []struct{ name, accept string }{{"text", acceptText}, {"openmetrics", acceptOpenMetrics}} {
		for _, zip := range []bool{false, true} {
			for _, name := range []string{"promhttp", "expose/declaring", "expose/started"} {
				sub := f.name + "/" + name
				if zip {
					sub = f.name + "-gzip/" + name
				}
				h := hs[name]
				b.Run(sub, func(b *testing.B) {
					b.ReportAllocs()
					var n int
					for b.Loop() {
						n = serve(h, f.accept, zip).Len()
					}
					b.ReportMetric(float64(n), "bytes/scrape")
				})
			}
		}
	}
}
