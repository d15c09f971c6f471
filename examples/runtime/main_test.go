package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
)

// TestRun runs the example for 2s and reads its file with PCP's reader.
func TestRun(t *testing.T) {
	ms := pcptest.RunExample(t, run, 2*time.Second, "goruntime")
	for _, name := range []string{"gc.heap.allocs_bytes", "sched.goroutines_goroutines", "gc.cycles.total_gc_cycles", "sched.latencies_seconds.count"} {
		m := pcptest.Find(ms, "mmv.goruntime."+name)
		if assert.NotNil(t, m, "PCP does not show mmv.goruntime.%s", name) {
			assert.NotContains(t, []string{"", "0"}, m.Value, "mmv.goruntime.%s", name)
		}
	}
	h := pcptest.Find(ms, "mmv.goruntime.sched.latencies_seconds.bucket")
	require.False(t, h == nil || len(h.Instances) < 10, "scheduler latency buckets through PCP: %+v", h)
}

// TestWithoutFiles: where mmv writes no files, the example stops at once
// with the error Start returned.
func TestWithoutFiles(t *testing.T) {
	require.ErrorIs(t, pcptest.RunWithoutFiles(t, run), mmv.ErrUnsupported)
}
