//go:build (linux || darwin || freebsd) && !mmv_noport

// The examples start their registries: they run where files are written
// (the other tests skip elsewhere; an example cannot).

package prombridge_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/prombridge"
)

// A service instrumented with client_golang only, published to PCP.
func Example() {
	pr := prometheus.NewRegistry()
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "http_requests_total", Help: "Requests served."}, []string{"code", "method"})
	latency := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "http_request_duration_seconds", Help: "Latency."})
	pr.MustRegister(requests, latency)

	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	r := mmv.NewRegistry("web", &mmv.Options{Dir: filepath.Join(dir, "mmv")})
	b, err := prombridge.Register(r, pr, nil)
	if err != nil {
		panic(err)
	}
	if err := r.Start(); err != nil {
		panic(err)
	}
	defer r.Close()

	requests.WithLabelValues("200", "GET").Inc()
	latency.Observe(0.042)
	if err := b.Refresh(); err != nil { // what the registry's poll does every second
		panic(err)
	}
	// pminfo -f mmv.web shows mmv.web.http_requests ["code=200,method=GET"],
	// mmv.web.http_request_duration_seconds.bucket ["le=0.005"]...
	st := b.Stats()
	fmt.Printf("%d families, %d series\n", st.Families, st.Series)
	// Output: 2 families, 2 series
}
