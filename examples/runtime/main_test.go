package main

import (
	"testing"
	"time"

	"github.com/gopcp/mmv/internal/pcptest"
)

// TestRun runs the example for 2s and reads its file with PCP's reader.
func TestRun(t *testing.T) {
	ms := pcptest.RunExample(t, run, 2*time.Second, "goruntime")
	for _, name := range []string{"gc.heap.allocs_bytes", "sched.goroutines_goroutines", "gc.cycles.total_gc_cycles", "sched.latencies_seconds.count"} {
		m := pcptest.Find(ms, "mmv.goruntime."+name)
		if m == nil {
			t.Errorf("PCP does not show mmv.goruntime.%s", name)
		} else if m.Value == "" || m.Value == "0" {
			t.Errorf("mmv.goruntime.%s = %q", name, m.Value)
		}
	}
	h := pcptest.Find(ms, "mmv.goruntime.sched.latencies_seconds.bucket")
	if h == nil || len(h.Instances) < 10 {
		t.Fatalf("scheduler latency buckets through PCP: %+v", h)
	}
}
