package main

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/mmvtest"
)

// TestServeCounts: every simulated request is counted once, by route and
// status, and timed once, by route, as a unit test reads it from
// mmv.Default: no PCP, no Start (mmvtest). It runs before TestRun (this
// file's name sorts first), which closes mmv.Default.
func TestServeCounts(t *testing.T) {
	routes := [][]string{{"/api", "200"}, {"/api", "500"}, {"/api/orders", "200"}, {"/api/orders", "500"}}
	before := mmvtest.Mark(t, mmv.Default)
	const n = 500
	for range n {
		serve()
	}
	var requests, timed float64
	for _, rs := range routes {
		if _, err := mmvtest.Lookup(mmv.Default, "http.requests", rs...); err == nil {
			requests += before.Delta(t, "http.requests", rs...)
		}
	}
	for _, route := range []string{"/api", "/api/orders"} {
		timed += before.Delta(t, "http.latency.count", route)
	}
	assert.Equal(t, float64(n), requests)
	assert.Equal(t, float64(n), timed)
	assert.Zero(t, mmvtest.Get(t, mmv.Default, "http.in_flight"))
}
