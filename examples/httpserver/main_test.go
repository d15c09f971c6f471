package main

import (
	"strconv"
	"testing"
	"time"

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
		if m == nil {
			t.Fatalf("PCP does not show %s%s", prefix, metric)
		}
		v := m.Value
		if inst != "" {
			in := m.Instance(inst)
			if in == nil {
				t.Fatalf("%s%s has no instance %q", prefix, metric, inst)
			}
			v = in.Value
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			t.Fatalf("%s%s[%s] = %q", prefix, metric, inst, v)
		}
		return f
	}
	// The route:status instances appeared as they were first seen: exactly
	// the pairs the server answers with.
	seen := []string{"/hello:200", "/data:200", "/slow:200", "/fail:500", "other:404"}
	if got := len(pcptest.Find(ms, prefix+"requests").Instances); got != len(seen) {
		t.Errorf("requests has %d instances, want %v", got, seen)
	}
	var served float64
	for _, inst := range seen {
		n := value("requests", inst)
		if n == 0 {
			t.Errorf("no request counted for %s", inst)
		}
		served += n
	}
	var latencyCount float64
	for _, rt := range routes {
		latencyCount += value("latency.count", rt)
	}
	if latencyCount != served {
		t.Errorf("latency histograms counted %v requests, requests counted %v", latencyCount, served)
	}
	if p99, mx := value("latency.p99", "/slow"), value("latency.max", "/slow"); p99 < 0.001 || p99 > mx*1.07 {
		t.Errorf("/slow p99 %v s, max %v s: /slow sleeps 1-20 ms", p99, mx)
	}
	if b := value("response_bytes", "/data"); b < 1024 {
		t.Errorf("/data response bytes = %v", b)
	}
	if v := value("in_flight", ""); v != 0 {
		t.Errorf("in flight after the end = %v", v)
	}
	if v := value("handler_time", ""); v <= 0 {
		t.Errorf("handler time = %v", v)
	}
	m := pcptest.Find(ms, prefix+"latency.bucket")
	if m == nil || m.Instance("/slow:+Inf") == nil || m.Units != "count" || m.Semantics != "counter" {
		t.Errorf("latency buckets: %+v", m)
	}
	if m := pcptest.Find(ms, prefix+"latency.p99"); m.Units != "sec" || m.Semantics != "instant" {
		t.Errorf("latency.p99: units %q semantics %q", m.Units, m.Semantics)
	}
	if m := pcptest.Find(ms, prefix+"handler_time"); m.Units != "microsec" || m.Semantics != "counter" {
		t.Errorf("handler_time: units %q semantics %q", m.Units, m.Semantics)
	}
}
