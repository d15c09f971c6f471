package main

import (
	"bytes"
	"context"
	"os"
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

// TestReadHint: the example says to read its file with pminfo where the
// file is in PCP's directory, and with mmvdump, which needs no PCP, where
// it is in a directory of os.TempDir() (mmv.Dir's), as on a machine
// without PCP; and that either works only while it runs: mmv.Default's
// Process flag removes the file when it ends, and a newcomer who ran it
// -for 30s, then the command it printed, met "no such file".
func TestReadHint(t *testing.T) {
	t.Setenv("PCP_TMP_DIR", "")
	noPCP := filepath.Join(os.TempDir(), "mmv-1000", "quickstart")
	assert.Equal(t, "No PCP here: while it runs (the file goes when it ends), read it with: go run ./cmd/mmvdump "+noPCP+"\n", readHint("quickstart", noPCP))
	hint := readHint("quickstart", "/var/lib/pcp/tmp/mmv/quickstart")
	assert.True(t, strings.HasPrefix(hint, "While it runs (its metrics leave PCP when it ends), read it with: "), "%q", hint)
	assert.Contains(t, hint, "pminfo -f mmv.quickstart ")
	assert.Contains(t, hint, "go run ./cmd/mmvdump /var/lib/pcp/tmp/mmv/quickstart")
	t.Setenv("PCP_TMP_DIR", os.TempDir())
	assert.Contains(t, readHint("quickstart", noPCP), "pminfo -f mmv.quickstart ")
}

// TestWithoutFiles: where mmv writes no files, the example stops at once
// with the error Start returned.
func TestWithoutFiles(t *testing.T) {
	require.ErrorIs(t, pcptest.RunWithoutFiles(t, run), mmv.ErrUnsupported)
}
