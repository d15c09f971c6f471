package mmv_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/mmvfile"
)

// headerCluster returns the cluster in the header of the file at path.
func headerCluster(t *testing.T, path string) uint32 {
	t.Helper()
	f, err := mmvfile.Open(path)
	require.NoError(t, err)
	return f.Header.Cluster
}

// startedCluster starts a registry of that name with one metric in dir,
// with the options given, and returns the cluster of its file after
// closing it.
func startedCluster(t *testing.T, name, dir string, opts mmv.Options) uint32 {
	t.Helper()
	r := startReg(t, name, dir, opts, func(r *mmv.Registry) { mmv.NewCounter(r, "c", "c", mmv.Count) })
	defer r.Close()
	return headerCluster(t, r.Path())
}

// TestDerivedCluster: with no cluster given, a file's cluster is derived
// from its name, so it is the same on every restart and in every
// directory (as on every host), and PCP's PMIDs carry it; it avoids the
// clusters of the directory's other live files, and only those;
// ReaderCluster writes 0, for PCP's reader to choose.
func TestDerivedCluster(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "mmv")
	r := startReg(t, "svc", dir, mmv.Options{}, func(r *mmv.Registry) {
		mmv.NewCounterVec(r, "c", "c", mmv.Count, "route").With("/a") // an indom: the cluster must be at most 2047
		require.NoError(t, r.AddLabel(mmv.Label{Name: "service", Value: "svc"}))
	})
	c := headerCluster(t, r.Path())
	require.True(t, c >= 1 && c <= 2047, "cluster %d, want 1..2047", c)
	if pcptest.WantPCP(t) {
		m := get(t, pcptest.Info(t, tmp), "mmv.svc.c")
		assert.Equal(t, fmt.Sprint(c), strings.Split(m.PMID, ".")[1], "the cluster of PCP's PMID %s", m.PMID)
		l, _ := m.Label("service")
		assert.Equal(t, `"svc"`, l, "the cluster label")
	}
	require.NoError(t, r.Close())

	again := startedCluster(t, "svc", dir, mmv.Options{})
	elsewhere := startedCluster(t, "svc", filepath.Join(t.TempDir(), "mmv"), mmv.Options{})
	assert.Equal(t, c, again, "the cluster on a restart")
	assert.Equal(t, c, elsewhere, "the cluster in another directory")
	assert.NotEqual(t, c, startedCluster(t, "other", dir, mmv.Options{}), "another name's cluster")

	// A file in the directory on that cluster, from a started registry,
	// and another on the next, from a registry closed without the Process
	// flag, which PCP goes on reading: the one after.
	shared := filepath.Join(t.TempDir(), "mmv")
	old := startReg(t, "left", shared, mmv.Options{Cluster: c%2047 + 1}, func(r *mmv.Registry) {})
	require.NoError(t, old.Close())
	startReg(t, "holder", shared, mmv.Options{Cluster: c}, func(r *mmv.Registry) {})
	assert.Equal(t, c%2047+2, startedCluster(t, "svc", shared, mmv.Options{}), "the cluster when the directory's files have the derived one and the next")
	// The files of another directory do not count, though this process
	// holds them: PCP reads one directory.
	assert.Equal(t, c, startedCluster(t, "svc", filepath.Join(t.TempDir(), "mmv"), mmv.Options{}), "the cluster beside another directory's")

	assert.Zero(t, startedCluster(t, "reader", dir, mmv.Options{Cluster: mmv.ReaderCluster}), "ReaderCluster's cluster")
}

// TestConfigure: a registry configured after its instruments were
// declared publishes them under its new name and options; Configure is
// refused once started or closed, and refused without changing anything
// when the options break a rule the declarations need.
func TestConfigure(t *testing.T) {
	tmp, dir := pcpDir(t)
	r := mmv.NewRegistry("before", nil) // as Default, declared on by package-level variables
	defer r.Close()
	requests := mmv.NewCounter(r, "requests", "Requests", mmv.Count)
	requests.Add(7)
	o := r.Options()
	o.Dir, o.Cluster = dir, 42
	require.NoError(t, r.Configure("after", o))
	assert.Equal(t, "after", r.Name())
	require.NoError(t, r.AddLabel(mmv.Label{Name: "service", Value: "after"}))
	startOrSkip(t, r)
	requests.Inc()

	ms := pcptest.Info(t, tmp)
	m := get(t, ms, "mmv.after.requests")
	assert.Equal(t, "8", m.Value, "the counter declared before Configure")
	assert.Equal(t, "70.42", m.PMID[:strings.LastIndexByte(m.PMID, '.')], "the PMID's cluster")
	l, _ := m.Label("service")
	assert.Equal(t, `"after"`, l, "the cluster label")
	assert.Empty(t, under(ms, "mmv.before"), "metrics under the name before Configure")

	assert.ErrorIs(t, r.Configure("", o), mmv.ErrStarted)
	require.NoError(t, r.Close())
	assert.ErrorIs(t, r.Configure("", o), mmv.ErrClosed)
}

// TestConfigureRefused: options that break a rule the declarations made
// so far need are refused, naming what is at fault, and change nothing.
func TestConfigureRefused(t *testing.T) {
	for _, c := range []struct {
		name   string
		file   string
		opts   mmv.Options
		want   error
		reason string
	}{
		{"invalid name", "9lives", mmv.Options{}, mmv.ErrName, `file "9lives"`},
		{"cluster past 4095", "", mmv.Options{Cluster: 4096}, mmv.ErrRange, "cluster 4096"},
		{"indom on a cluster past 2047", "", mmv.Options{Cluster: 2048}, mmv.ErrRange, "cluster 2048 is more than 2047"},
		{"cluster label on the reader's cluster", "", mmv.Options{Cluster: mmv.ReaderCluster}, mmv.ErrLabel, `label "service"`},
		{"instances over a lowered cap", "", mmv.Options{MaxIndomInstances: 1}, mmv.ErrTooMany, "per indom"},
		{"labels on a forced version 2", "", mmv.Options{Version: mmv.Version2}, mmv.ErrRange, "version 2"},
		{"the agent's namespace under NoPrefix", "", mmv.Options{Flags: mmv.NoPrefix}, mmv.ErrNamespace, `metric "control.x"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "mmv")
			r := newRegistry(t, "app", dir, mmv.Options{Cluster: 5})
			requests := mmv.NewCounterVec(r, "requests", "Requests", mmv.Count, "route")
			requests.With("/a")
			requests.With("/b")
			mmv.NewCounter(r, "control.x", "x", mmv.Count)
			require.NoError(t, r.AddLabel(mmv.Label{Name: "service", Value: "app"}))
			c.opts.Dir = dir
			err := r.Configure(c.file, c.opts)
			require.ErrorIs(t, err, c.want)
			assert.ErrorContains(t, err, c.reason)
			assert.Equal(t, "app", r.Name(), "the name after a refused Configure")
			assert.Equal(t, mmv.Options{Cluster: 5, Dir: dir}, r.Options(), "the options after a refused Configure")
			startOrSkip(t, r)
			assert.Equal(t, uint32(5), headerCluster(t, r.Path()))
		})
	}
}

// TestConfigureRenamesOverflowFiles: a registry spread over files is
// renamed whole.
func TestConfigureRenamesOverflowFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mmv")
	r := newRegistry(t, "wide", dir, mmv.Options{})
	for i := range mmv.MaxMetrics + 1 {
		mmv.NewCounter(r, fmt.Sprintf("m%d", i), "m", mmv.Count)
	}
	require.NoError(t, r.Configure("renamed", mmv.Options{Dir: dir}))
	startOrSkip(t, r)
	assert.ElementsMatch(t, []string{"renamed", "renamed.2"}, entries(t, dir))
}

// TestConfigureLowerBudgetAfterVectors: Configure lowering
// Options.MaxFileValues after vectors were declared (Default's
// package-level variables) accepts what the same declarations made after
// it are accepted with, laying the metrics out over files anew, as Start
// does: it checked the files as laid out under the budget of before, and
// refused a histogram vector's statistics, 10 metrics reserving 107
// values each in one file, under a budget of 1,000 values.
func TestConfigureLowerBudgetAfterVectors(t *testing.T) {
	tmp, dir := pcpDir(t)
	declare := func(r *mmv.Registry) (*mmv.Vec[mmv.Counter], *mmv.Vec[mmv.Histogram]) {
		return mmv.NewCounterVec(r, "requests", "", mmv.Count, "route"),
			mmv.NewHistogramVec(r, "latency", "", mmv.Second, nil, "route")
	}
	lower := mmv.Options{Dir: dir, MaxFileValues: 1000}
	after := newRegistry(t, "after", dir, lower)
	declare(after) // under the lowered budget: accepted

	r := newRegistry(t, "before", dir, mmv.Options{Dir: dir})
	requests, latency := declare(r)
	requests.With("/a").Add(2)
	latency.With("/a").Observe(0.3)
	require.NoError(t, r.Configure("", lower), "the declarations made after Configure are accepted")
	startOrSkip(t, r)
	ms := pcptest.Info(t, tmp)
	for name, want := range map[string]string{"requests": "2", "latency.count": "1"} {
		m := get(t, ms, "mmv.before."+name)
		in := m.Instance("route=/a")
		require.NotNil(t, in, name)
		assert.Equal(t, want, in.Value, name)
	}
}

// TestConfigureAtValuesCapAfterDrops: a registry at its
// Options.MaxValues cap whose vector refused values (declaring the
// registry's own mmv.dropped, beyond the caps) is configured with the
// same cap: its own values are no declaration of the program's, as for
// the caps on instances. Configure counted them, and refused every
// Configure after the first refusal.
func TestConfigureAtValuesCapAfterDrops(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mmv")
	r := newRegistry(t, "atcap", dir, mmv.Options{MaxValues: 3})
	v := mmv.NewCounterVec(r, "requests", "", mmv.Count, "route")
	for _, route := range []string{"/a", "/b", "/c"} {
		require.NotNil(t, v.With(route))
	}
	require.NoError(t, r.Configure("renamed", r.Options()), "at the cap, before any refusal")
	assert.Nil(t, v.With("/d"), "past the cap")
	assert.NoError(t, r.Configure("again", r.Options()), "at the cap, after a refusal")
}
