package expose_test

import (
	"log"
	"net/http"
	"os"
	"time"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/expose"
)

// A registry never started serves its instruments from their memory.
func Example() {
	r := mmv.NewRegistry("example_expose", nil)
	requests := mmv.NewCounterVec(r, "requests", "Requests served", mmv.Count, "route", "code")
	latency := mmv.NewHistogram(r, "latency", "Request latency", mmv.Millisecond, &mmv.HistogramOptions{Buckets: []float64{10, 100}})
	requests.With("/api", "200").Add(3)
	latency.ObserveDuration(20 * time.Millisecond)
	expose.Write(os.Stdout, r, expose.OpenMetrics)
	// Output:
	// # TYPE requests counter
	// # HELP requests Requests served
	// requests_total{route="/api",code="200"} 3
	// # TYPE latency_seconds histogram
	// # UNIT latency_seconds seconds
	// # HELP latency_seconds Request latency
	// latency_seconds_bucket{le="0.01"} 0
	// latency_seconds_bucket{le="0.1"} 1
	// latency_seconds_bucket{le="+Inf"} 1
	// latency_seconds_sum 0.02
	// latency_seconds_count 1
	// # EOF
}

// A service serves its instruments to PCP, through the file Start writes,
// and to Prometheus, on /metrics, from the same values.
func ExampleHandler() {
	requests := mmv.NewCounterVec(nil, "requests", "Requests served", mmv.Count, "route")
	if err := mmv.Default.Start(); err != nil {
		log.Print(err) // not in PCP, but served to Prometheus from memory all the same
	}
	defer mmv.Default.Close()
	http.Handle("/metrics", expose.Handler(mmv.Default))
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		requests.With(r.URL.Path).Inc()
	})
	// log.Fatal(http.ListenAndServe(":8080", nil))
}
