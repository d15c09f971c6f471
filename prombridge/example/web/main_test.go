package main

import (
	"context"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
)

// TestRun runs the service and reads its client_golang metrics, and the Go
// and process collectors', with PCP's reader while it serves.
func TestRun(t *testing.T) {
	pcptest.NeedFileLayer(t)
	pcptest.MustHavePCP(t)
	tmp := t.TempDir()
	t.Setenv("PCP_TMP_DIR", tmp)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, io.Discard, 0) }()
	defer func() {
		cancel()
		require.NoError(t, <-done)
	}()

	want := []string{"code=200,method=GET", "code=500,method=GET"}
	var ms []pcptest.Metric
	require.Eventually(t, func() bool {
		select {
		case err := <-done: // a failed run ends the wait: put back for the deferred check
			done <- err
			return true
		default:
		}
		// The bridge's first copy runs as Start makes the file, racing the
		// first requests: it may hold /hello's and /fail's, not yet /slow's.
		ms = pcptest.Info(t, tmp)
		m := pcptest.Find(ms, "mmv.web.http_requests")
		b := pcptest.Find(ms, "mmv.web.http_request_duration_seconds.bucket")
		if m == nil || len(m.Instances) != len(want) || b == nil || b.Instance("route=/slow,le=+Inf") == nil {
			return false
		}
		return pcptest.Valued(ms)
	}, 20*time.Second, 200*time.Millisecond, "the service's requests in PCP")
	select {
	case err := <-done:
		done <- err
		require.FailNow(t, "the service stopped before PCP showed its requests", "%v", err)
	default:
	}

	requests := pcptest.Find(ms, "mmv.web.http_requests")
	assert.Equal(t, "counter", requests.Semantics)
	for _, inst := range want {
		in := requests.Instance(inst)
		if assert.NotNil(t, in, inst) {
			n, err := strconv.Atoi(in.Value)
			assert.NoError(t, err, inst)
			assert.Positive(t, n, inst)
			code, _ := in.Label("code")
			assert.NotEmpty(t, code, "%s: code label", inst)
		}
	}
	buckets := pcptest.Find(ms, "mmv.web.http_request_duration_seconds.bucket")
	assert.NotNil(t, buckets.Instance("route=/slow,le=+Inf"), "latency buckets by route")
	for _, name := range []string{"mmv.web.go_goroutines", "mmv.web.process_resident_memory_bytes"} {
		assert.NotNil(t, pcptest.Find(ms, name), "%s: the default registry's collectors", name)
	}
}

// TestWithoutFiles: where mmv writes no files, the example stops at once
// with the error Start returned.
func TestWithoutFiles(t *testing.T) {
	require.ErrorIs(t, pcptest.RunWithoutFiles(t, run), mmv.ErrUnsupported)
}
