package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
)

const prefix = "mmv.httpserver."

// childEnv makes the test binary run the example itself, until killed.
const childEnv = "HTTPSERVER_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		if err := run(context.Background(), io.Discard, 0); err != nil {
			panic(err)
		}
		return
	}
	os.Exit(m.Run())
}

// TestRun runs the service and reads every one of its metrics with PCP's
// reader while it serves, labels included; when it ends its file is gone.
func TestRun(t *testing.T) {
	pcptest.NeedFileLayer(t)
	pcptest.MustHavePCP(t)
	tmp := t.TempDir()
	t.Setenv("PCP_TMP_DIR", tmp)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, io.Discard, 0) }()

	// The route and status instances appear as they are first seen:
	// exactly the pairs the server answers with.
	seen := []string{"route=/hello,status=200", "route=/data,status=200", "route=/slow,status=200",
		"route=/fail,status=500", "route=other,status=404"}
	// A fetch racing the file's growth can miss a value of an instance it
	// lists: read until one shows every instance with its value.
	var ms []pcptest.Metric
	require.Eventually(t, func() bool {
		select {
		case err := <-done: // a failed run ends the wait: put back for below
			done <- err
			return true
		default:
		}
		ms = pcptest.Info(t, tmp)
		m := pcptest.Find(ms, prefix+"http.requests")
		if m == nil || len(m.Instances) != len(seen) || pcptest.Find(ms, prefix+"http.latency.count") == nil {
			return false
		}
		return pcptest.Valued(ms)
	}, 20*time.Second, 200*time.Millisecond, "the service's requests in PCP")
	cancel()
	require.NoError(t, <-done)

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
	requests := pcptest.Find(ms, prefix+"http.requests")
	for _, inst := range seen {
		assert.NotZero(t, value("http.requests", inst), "no request counted for %s", inst)
		in := requests.Instance(inst)
		route, _ := in.Label("route")
		status, _ := in.Label("status")
		assert.NotEmpty(t, route, "%s: route label", inst)
		assert.NotEmpty(t, status, "%s: status label", inst)
	}
	service, _ := requests.Label("service")
	assert.Equal(t, `"httpserver"`, service, "the registry's label")
	assert.GreaterOrEqual(t, value("http.response_bytes", "route=/data"), 1024.0, "/data response bytes")
	assert.GreaterOrEqual(t, value("http.in_flight", ""), 0.0)
	assert.Positive(t, value("app.work_time", ""), "work time")
	for _, m := range []struct{ name, units, sem string }{
		{"http.requests", "count", "counter"},
		{"http.latency.p99", "sec", "instant"},
		{"http.latency.bucket", "count", "counter"},
		{"app.work_time", "nanosec", "counter"},
		{"go.gc.cycles.total_gc_cycles", "count", "counter"},
	} {
		got := pcptest.Find(ms, prefix+m.name)
		if assert.NotNil(t, got, m.name) {
			assert.Equal(t, [2]string{m.units, m.sem}, [2]string{got.Units, got.Semantics}, "%s: units, semantics", m.name)
		}
	}
	assert.NotNil(t, pcptest.Find(ms, prefix+"http.latency.bucket").Instance("route=/slow,le=+Inf"), "latency buckets")
	// The Process flag: the file went with Close.
	assert.NoFileExists(t, filepath.Join(tmp, "mmv", "httpserver"))
}

// TestKilled: a service killed with SIGKILL vanishes from PCP, though its
// file stays: PCP's reader drops a Process file whose writer is gone.
func TestKilled(t *testing.T) {
	pcptest.NeedFileLayer(t)
	pcptest.MustHavePCP(t)
	tmp := t.TempDir()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1", "PCP_TMP_DIR="+tmp)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	defer cmd.Process.Kill()
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	require.Eventually(t, func() bool {
		select {
		case <-exited: // a child that died ends the wait
			return true
		default:
		}
		return pcptest.Find(pcptest.Info(t, tmp), prefix+"http.requests") != nil
	}, 20*time.Second, 200*time.Millisecond, "the child's metrics in PCP")
	select {
	case <-exited:
		require.FailNow(t, "the child exited before it was killed", "%s\n%s", cmd.ProcessState, stderr.String())
	default:
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	<-exited
	assert.FileExists(t, filepath.Join(tmp, "mmv", "httpserver"), "SIGKILL left the file")
	for _, m := range pcptest.Info(t, tmp) {
		assert.NotContains(t, m.Name, prefix, "PCP still shows the killed service")
	}
}

// TestWithoutFiles: where mmv writes no files, the example stops at once
// with the error Start returned.
func TestWithoutFiles(t *testing.T) {
	require.ErrorIs(t, pcptest.RunWithoutFiles(t, run), mmv.ErrUnsupported)
}
