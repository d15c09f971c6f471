package mmvtest_test

import (
	"fmt"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/mmvtest"
)

// A service's test reads what its handler counted, by metric name and
// label values, and compares the metrics with a listing: no PCP needed,
// and the registry need not be started. In a test, mmvtest.NewRegistry(t,
// nil) makes the registry, and mmvtest.Get(t, r, "requests", "/api")
// reads a value as a float64.
func ExampleCompare() {
	r := mmv.NewRegistry("web", nil)
	requests := mmv.NewCounterVec(r, "requests", "Requests served", mmv.Count, "route")
	requests.With("/api").Add(2)

	v, _ := mmvtest.Lookup(r, "requests", "/api")
	fmt.Println(v.Instance, v.Value)
	err := mmvtest.Compare(r, `
		requests: counter uint64 (count)
		  "route=/api" {route="/api"} = 3
	`)
	fmt.Println(err)
	// Output:
	// route=/api 2
	// mmvtest: registry "web" does not hold the metrics expected (-expected +got):
	//   requests: counter uint64 (count)
	// - "route=/api" {route="/api"} = 3
	// + "route=/api" {route="/api"} = 2
}

// Listing shows what a registry holds, as Compare expects it.
func ExampleListing() {
	r := mmv.NewRegistry("example", nil) // never started: counts in memory
	mmv.NewIntGauge(r, "queue.depth", "Jobs waiting", mmv.Count).Set(4)
	h := mmv.NewHistogram(r, "size", "Sizes", mmv.Byte, &mmv.HistogramOptions{Buckets: []float64{512}, Quantiles: []float64{0.5}})
	h.Observe(100)
	h.Observe(1000)
	s, _ := mmvtest.Listing(r)
	fmt.Print(s)
	// Output:
	// queue.depth: instant int64 (count) = 4
	// size.bucket: counter uint64 (count)
	//   "512" = 1
	//   "+Inf" = 1
	// size.count: counter uint64 (count) = 2
	// size.max: instant double (byte) = 1000
	// size.mean: instant double (byte) = 550
	// size.min: instant double (byte) = 100
	// size.p50: instant double (byte) = 100
	// size.sum: counter double (byte) = 1100
}
