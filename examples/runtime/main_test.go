package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
)

// TestRun runs the example under a temporary PCP_TMP_DIR: while it runs,
// PCP's reader shows the runtime's metrics, moving; it says where its file
// is and how to read it; once it returns PCP shows none of them (the
// Process flag).
func TestRun(t *testing.T) {
	pcptest.NeedFileLayer(t)
	pcptest.MustHavePCP(t)
	tmp := t.TempDir()
	t.Setenv("PCP_TMP_DIR", tmp)
	ctx, cancel := context.WithCancel(context.Background())
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, &out, 0) }()

	names := []string{"gc.heap.allocs_bytes", "sched.goroutines_goroutines", "gc.cycles.total_gc_cycles", "sched.latencies_seconds.count"}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		ms := pcptest.Info(t, tmp)
		missing := ""
		for _, name := range names {
			if m := pcptest.Find(ms, "mmv.goruntime."+name); m == nil || m.Value == "" || m.Value == "0" {
				missing = name
			}
		}
		h := pcptest.Find(ms, "mmv.goruntime.sched.latencies_seconds.bucket")
		if missing == "" && h != nil && len(h.Instances) >= 10 {
			break
		}
		require.True(t, time.Now().Before(deadline), "PCP shows no value of mmv.goruntime.%s, or too few scheduler latency buckets (%+v), in a minute", missing, h)
		select {
		case err := <-done:
			require.FailNow(t, "the example returned before PCP showed its metrics", "%v", err)
		default:
		}
	}
	cancel()
	require.NoError(t, <-done)
	assert.Contains(t, out.String(), filepath.Join(tmp, "mmv", "goruntime"))
	assert.Contains(t, out.String(), "pminfo -f mmv.goruntime")
	for _, m := range pcptest.Info(t, tmp) {
		assert.False(t, strings.HasPrefix(m.Name, "mmv.goruntime."), "PCP still shows %s after the example returned", m.Name)
	}
}

// TestWithoutFiles: where mmv writes no files, the example stops at once
// with the error Start returned.
func TestWithoutFiles(t *testing.T) {
	require.ErrorIs(t, pcptest.RunWithoutFiles(t, run), mmv.ErrUnsupported)
}
