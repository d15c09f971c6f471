package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/mmvtest"
)

// TestServeCounts: every simulated request is counted once, by route and
// status, and timed once, by route, read from mmv.Default before any
// Start: no PCP needed (mmvtest).
func TestServeCounts(t *testing.T) {
	const n = 500
	for range n {
		serve()
	}
	snap, err := mmv.Default.Snapshot()
	require.NoError(t, err)
	counted := map[string]float64{}
	for _, m := range snap {
		for _, iv := range m.Values {
			counted[m.Name] += mmvtest.ToFloat64(iv.Value)
		}
	}
	assert.Equal(t, float64(n), counted["http.requests"])
	assert.Equal(t, float64(n), counted["http.latency.count"])
	assert.Equal(t, float64(n), counted["http.latency.bucket"])
	assert.Equal(t, 0.0, counted["http.in_flight"])
	assert.Greater(t, mmvtest.Get(t, mmv.Default, "http.requests", "/api", "200"), 0.0)
}
