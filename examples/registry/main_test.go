package main

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/golden"
	"github.com/gopcp/mmv/internal/pcptest"
)

// start declares and starts the example's registry in tmp/mmv.
func start(t *testing.T, tmp string) *mmv.Registry {
	t.Helper()
	pcptest.NeedFileLayer(t)
	r, err := declare(&mmv.Options{Cluster: 42, Flags: mmv.Process, Dir: filepath.Join(tmp, "mmv")})
	if err == nil {
		err = r.Start()
	}
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	return r
}

// TestSameAsLibpcp: the example's file is byte for byte the file
// libpcp_mmv writes for the same declarations (testdata/golden/quickstart.mmv).
func TestSameAsLibpcp(t *testing.T) {
	r := start(t, t.TempDir())
	got, err := os.ReadFile(r.Path())
	require.NoError(t, err)
	want, err := os.ReadFile("../../testdata/golden/quickstart.mmv")
	require.NoError(t, err)
	require.Empty(t, golden.Diff(got, want), "the file differs from libpcp_mmv's")
}

// TestPCPReadsBothAlike: PCP's reader describes our file and libpcp_mmv's
// the same way, and sees the simulated server's updates.
func TestPCPReadsBothAlike(t *testing.T) {
	pcptest.MustHavePCP(t)
	ours, theirs := t.TempDir(), t.TempDir()
	start(t, ours)

	// libpcp's file names its writer's pid, long gone, and PROCESS is set:
	// put ours in, as the reader drops files of dead processes.
	b, err := os.ReadFile("../../testdata/golden/quickstart.mmv")
	require.NoError(t, err)
	binary.NativeEndian.PutUint32(b[32:], uint32(os.Getpid()))
	os.MkdirAll(filepath.Join(theirs, "mmv"), 0o755)
	require.NoError(t, os.WriteFile(filepath.Join(theirs, "mmv", "registry"), b, 0o644))

	got, want := pcptest.Info(t, ours), pcptest.Info(t, theirs)
	controls := 3 // mmv.control.*: 7.2 adds mmv.control.metrics
	if pcptest.AtLeast(7, 2) {
		controls = 4
	}
	require.Len(t, want, 6+controls, "libpcp's: six metrics and mmv.control.*")
	require.Len(t, got, len(want), "ours")
	for i := range want {
		g, w := got[i], want[i]
		g.Labels, w.Labels = "", "" // PCP's own labels hold the host
		if g.Name == "mmv.control.files" || g.Name == "mmv.control.metrics" {
			continue
		}
		assert.False(t, g.Name != w.Name || g.PMID != w.PMID || g.Type != w.Type || g.Indom != w.Indom || g.Semantics != w.Semantics ||
			g.Units != w.Units || g.ShortHelp != w.ShortHelp || g.LongHelp != w.LongHelp || g.Value != w.Value ||
			len(g.Instances) != len(w.Instances), "PCP describes them differently:\nours    %+v\nlibpcp's %+v", g, w)
	}
	m := pcptest.Find(got, "mmv.registry.requests.bytes")
	require.False(t, m == nil || m.Units != "byte" || m.Instance("DELETE") == nil, "requests.bytes as PCP shows it: %+v", m)
}

// TestServeUpdates runs the simulated server briefly and reads its
// metrics back through PCP.
func TestServeUpdates(t *testing.T) {
	pcptest.MustHavePCP(t)
	tmp := t.TempDir()
	r := start(t, tmp)
	s, err := handles(r)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	s.serve(ctx)

	ms := pcptest.Info(t, tmp)
	var total int64
	for _, in := range pcptest.Find(ms, "mmv.registry.requests.total").Instances {
		n, _ := strconv.ParseInt(in.Value, 10, 64)
		total += n
	}
	var want int64
	for _, v := range s.total {
		want += v.Int()
	}
	assert.False(t, total == 0 || total != want, "PCP reads %d requests, the server counted %d", total, want)
	assert.Equal(t, `"1.0.0"`, pcptest.Find(ms, "mmv.registry.version").Value, "version")
	assert.Equal(t, "0", pcptest.Find(ms, "mmv.registry.inflight").Value, "inflight")
	busy, _ := strconv.ParseInt(pcptest.Find(ms, "mmv.registry.busy.time").Value, 10, 64)
	assert.Positive(t, busy, "busy.time")
}

// TestRun runs the example briefly: it says where its file is and how to
// read it, and, with the Process flag, leaves no file for PCP once it
// returns.
func TestRun(t *testing.T) {
	for _, m := range pcptest.RunExample(t, run, 300*time.Millisecond, "registry") {
		assert.False(t, strings.HasPrefix(m.Name, "mmv.registry."), "PCP still shows %s after the example returned", m.Name)
	}
}

// TestWithoutFiles: where mmv writes no files, the example stops at once
// with the error Start returned.
func TestWithoutFiles(t *testing.T) {
	require.ErrorIs(t, pcptest.RunWithoutFiles(t, run), mmv.ErrUnsupported)
}
