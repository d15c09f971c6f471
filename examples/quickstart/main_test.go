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
// PCP's reader shows the quick start's metrics, counting; it says where
// its file is and how to read it; once it returns PCP shows none of them
// (mmv.Default has the Process flag).
func TestRun(t *testing.T) {
	pcptest.NeedFileLayer(t)
	pcptest.MustHavePCP(t)
	tmp := t.TempDir()
	t.Setenv("PCP_TMP_DIR", tmp)
	const prefix = "mmv.quickstart_test." // mmv.Default is named after the program, quickstart.test
	ctx, cancel := context.WithCancel(context.Background())
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, &out, 0) }()

	var shown map[string]pcptest.Metric
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		shown = map[string]pcptest.Metric{}
		for _, m := range pcptest.Info(t, tmp) {
			shown[strings.TrimPrefix(m.Name, prefix)] = m
		}
		if r, ok := shown["http.requests"]; ok && r.Instance("route=/api,status=200") != nil && r.Instance("route=/api,status=200").Value != "0" {
			break
		}
		require.True(t, time.Now().Before(deadline), "PCP shows no request counted in a minute: %v", shown)
		select {
		case err := <-done:
			require.FailNow(t, "the example returned before PCP showed a request", "%v", err)
		default:
		}
	}
	for _, name := range []string{"http.in_flight", "http.latency.count", "http.latency.p99", "http.latency.bucket"} {
		assert.Contains(t, shown, name)
	}
	cancel()
	require.NoError(t, <-done)
	assert.Contains(t, out.String(), filepath.Join(tmp, "mmv", "quickstart_test"))
	assert.Contains(t, out.String(), "pminfo -f "+strings.TrimSuffix(prefix, "."))
	for _, m := range pcptest.Info(t, tmp) {
		assert.False(t, strings.HasPrefix(m.Name, prefix), "PCP still shows %s after the example returned", m.Name)
	}
}

// TestWithoutFiles: where mmv writes no files, the example stops at once
// with the error Start returned.
func TestWithoutFiles(t *testing.T) {
	require.ErrorIs(t, pcptest.RunWithoutFiles(t, run), mmv.ErrUnsupported)
}
