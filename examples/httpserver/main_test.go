package main

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
)

// TestRun runs the example for 2s and reads its metrics with PCP's reader.
func TestRun(t *testing.T) {
	name := mmv.Default.Name() // httpserver_test: named after the test binary
	ms := pcptest.RunExample(t, run, 2*time.Second, name)
	prefix := "mmv." + name + ".http."
	value := func(metric, inst string) float64 {
		t.Helper()
		m := pcptest.Find(ms, prefix+metric)
		require.NotNil(t, m, "PCP does not show %s%s", prefix, metric)
		v := m.Value
		if inst != "" {
			in := m.Instance(inst)
			require.NotNil(t, in, "%s%s has no instance %q", prefix, metric, inst)
			v = in.Value
		}
		f, err := strconv.ParseFloat(v, 64)
		require.NoError(t, err, "%s%s[%s] = %q", prefix, metric, inst, v)
		return f
	}
	// The route:status instances appeared as they were first seen: exactly
	// the pairs the server answers with.
	seen := []string{"/hello:200", "/data:200", "/slow:200", "/fail:500", "other:404"}
	assert.Len(t, pcptest.Find(ms, prefix+"requests").Instances, len(seen), "requests' instances, want %v", seen)
	var served float64
	for _, inst := range seen {
		n := value("requests", inst)
		assert.NotEqualValues(t, 0, n, "no request counted for %s", inst)
		served += n
	}
	var latencyCount float64
	for _, rt := range routes {
		latencyCount += value("latency.count", rt)
	}
	assert.Equal(t, served, latencyCount, "latency histograms counted")
	p99, mx := value("latency.p99", "/slow"), value("latency.max", "/slow")
	assert.False(t, p99 < 0.001 || p99 > mx*1.07, "/slow p99 %v s, max %v s: /slow sleeps 1-20 ms", p99, mx)
	assert.GreaterOrEqual(t, value("response_bytes", "/data"), 1024.0, "/data response bytes")
	assert.EqualValues(t, 0, value("in_flight", ""), "in flight after the end")
	assert.Positive(t, value("handler_time", ""), "handler time")
	m := pcptest.Find(ms, prefix+"latency.bucket")
	assert.False(t, m == nil || m.Instance("/slow:+Inf") == nil || m.Units != "count" || m.Semantics != "counter", "latency buckets: %+v", m)
	m = pcptest.Find(ms, prefix+"latency.p99")
	assert.Equal(t, [2]string{"sec", "instant"}, [2]string{m.Units, m.Semantics}, "latency.p99: units, semantics")
	m = pcptest.Find(ms, prefix+"handler_time")
	assert.Equal(t, [2]string{"microsec", "counter"}, [2]string{m.Units, m.Semantics}, "handler_time: units, semantics")
}
