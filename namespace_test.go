package mmv_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
)

// One namespace across the directory's files: PCP's reader builds one
// from every MMV file it reads, so a full name in two files shows one of
// them, and a leaf in one file that is a prefix at a dot in another makes
// its namespace fail whole or drop one of them. Start refuses a registry
// whose names clash so with another live file's.

// reg is a registry a test of the namespace across files declares: its
// name, flags and metric, a counter set to 1.
type reg struct {
	name   string
	flags  mmv.Flags
	metric string
}

// full is the name PCP gives the registry's metric.
func (g reg) full() string {
	if g.flags&mmv.NoPrefix != 0 {
		return "mmv." + g.metric
	}
	return "mmv." + g.name + "." + g.metric
}

// start declares g in dir and starts it, its file of the version forced
// (0: the one its names need, 1 here), returning Start's error.
func (g reg) start(t *testing.T, dir string, version int) error {
	t.Helper()
	r := newRegistry(t, g.name, dir, mmv.Options{Flags: g.flags, Version: version})
	mmv.NewCounter(r, g.metric, "", mmv.Count).Add(1)
	return r.Start()
}

// TestStartRefusesNamesOfAnotherFile: of two registries whose full names
// clash (the same name, or a leaf of one a prefix at a dot of the
// other's), in whichever order they start, the second's Start is refused
// with ErrNamespace naming the other file and both metrics, and PCP shows
// the first's metric; registries whose names do not clash both start, and
// PCP shows both. (A reviewer's test: "nsx" with "http" and "nsx.http" with
// "requests" both started, and PCP showed mmv.nsx.http alone.)
func TestStartRefusesNamesOfAnotherFile(t *testing.T) {
	needFileLayer(t)
	for _, c := range []struct {
		name          string
		first, second reg
		clash         bool
	}{
		{"leaf then prefix", reg{"nsx", 0, "http"}, reg{"nsx.http", 0, "requests"}, true},
		{"prefix then leaf", reg{"nsy.http", 0, "requests"}, reg{"nsy", 0, "http"}, true},
		{"same name, no prefix", reg{"samea", mmv.NoPrefix, "shared.x"}, reg{"sameb", mmv.NoPrefix, "shared.x"}, true},
		{"same name, prefix and none", reg{"samec", 0, "x"}, reg{"samed", mmv.NoPrefix, "samec.x"}, true},
		{"no prefix leaf above a file's names", reg{"abovea", 0, "x"}, reg{"aboveb", mmv.NoPrefix, "abovea"}, true},
		{"no prefix names under a file's leaf", reg{"belowa", 0, "x"}, reg{"belowb", mmv.NoPrefix, "belowa.x.y"}, true},
		{"file names not at a dot", reg{"unrel", 0, "x"}, reg{"unrelated", 0, "x.y"}, false},
		{"no prefix beside a file's names", reg{"besidea", 0, "x"}, reg{"besideb", mmv.NoPrefix, "besidea.y"}, false},
		{"both no prefix, apart", reg{"aparta", mmv.NoPrefix, "q.r"}, reg{"apartb", mmv.NoPrefix, "q.s"}, false},
	} {
		for _, version := range []int{0, mmv.Version2, mmv.Version3} { // names inline, and in string records
			t.Run(fmt.Sprintf("%s, version %d", c.name, version), func(t *testing.T) {
				testNamesOfAnotherFile(t, c.first, c.second, c.clash, version)
			})
		}
	}
}

// testNamesOfAnotherFile starts first, then second, each in a file of
// the version forced, and checks that the second is refused when their
// names clash, and what PCP shows.
func testNamesOfAnotherFile(t *testing.T, first, second reg, clash bool, version int) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "mmv")
	require.NoError(t, first.start(t, dir, version))
	err := second.start(t, dir, version)
	if !clash {
		require.NoError(t, err)
	} else {
		require.ErrorIs(t, err, mmv.ErrNamespace)
		t.Log(err)
		for _, want := range []string{strconv.Quote(first.name), strconv.Quote(first.metric), strconv.Quote(second.metric)} {
			assert.Contains(t, err.Error(), want)
		}
		assert.NoFileExists(t, filepath.Join(dir, second.name), "the refused registry's file")
	}
	if !pcptest.WantPCP(t) {
		return
	}
	ms := pcptest.Info(t, tmp)
	require.NotNil(t, pcptest.Find(ms, first.full()), "the first registry's metric")
	if !clash {
		require.NotNil(t, pcptest.Find(ms, second.full()), "the second registry's metric")
	}
}

// TestStartRefusesNamesOfOverflowFile: another registry's overflow file
// (<file>.2, NoPrefix, its names <file>.<metric>) counts: a registry
// whose names clash with its names is refused, naming it.
func TestStartRefusesNamesOfOverflowFile(t *testing.T) {
	needFileLayer(t)
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "mmv")
	spill := declareSpilling(dir, "spill", 7) // "count" goes to spill.2
	defer spill.Close()
	require.NoError(t, spill.Start())
	for _, g := range []reg{
		{"spillover", mmv.NoPrefix, "spill.count"},      // the same name
		{"spillunder", mmv.NoPrefix, "spill.count.sub"}, // under its leaf
		{"spill.count", 0, "sub"},                       // a file's names under its leaf
	} {
		err := g.start(t, dir, 0)
		require.ErrorIs(t, err, mmv.ErrNamespace, g.name)
		assert.Contains(t, err.Error(), `"spill.2"`, "names the overflow file")
		assert.Contains(t, err.Error(), `"spill.count"`, "its metric, named in its file so")
	}
	if !pcptest.WantPCP(t) {
		return
	}
	m := pcptest.Find(pcptest.Info(t, tmp), "mmv.spill.count")
	require.NotNil(t, m)
	assert.Equal(t, "7", m.Value)
}

// TestStartSkipsDeadProcessFile: a Process file whose writer is gone,
// which PCP's reader skips, clashes with nothing.
func TestStartSkipsDeadProcessFile(t *testing.T) {
	needFileLayer(t)
	dir := filepath.Join(t.TempDir(), "mmv")
	w := newRegistry(t, "deadw", dir, mmv.Options{Flags: mmv.Process})
	mmv.NewCounter(w, "x", "", mmv.Count).Inc()
	require.NoError(t, w.Start())
	b, err := os.ReadFile(w.Path())
	require.NoError(t, err)
	require.NoError(t, w.Close()) // removes it: Process
	putPid(b, deadPid(t))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "deadw"), b, 0o644))
	require.NoError(t, reg{"deadw.x", 0, "y"}.start(t, dir, 0), "under the dead file's leaf mmv.deadw.x")
}

// TestStartKeepsOwnNames: the files at the registry's own names, its last
// run's first and overflow files, which it replaces, clash with nothing.
func TestStartKeepsOwnNames(t *testing.T) {
	needFileLayer(t)
	_, dir := t.TempDir(), filepath.Join(t.TempDir(), "mmv")
	for run := range 2 {
		r := declareSpilling(dir, "own", uint64(run))
		require.NoError(t, r.Start(), "run %d", run)
		require.NoError(t, r.Close())
	}
	for run := range 2 { // NoPrefix: its names are not under its file's
		r := newRegistry(t, "ownnp", dir, mmv.Options{Flags: mmv.NoPrefix})
		mmv.NewCounter(r, "own.np", "", mmv.Count).Inc()
		require.NoError(t, r.Start(), "run %d", run)
		require.NoError(t, r.Close())
	}
}

// TestRefusedStartLeavesNothing: a Start refused for a name of another
// file leaves the last run's file at its name as it was, and no
// temporary.
func TestRefusedStartLeavesNothing(t *testing.T) {
	needFileLayer(t)
	dir := filepath.Join(t.TempDir(), "mmv")
	last := newRegistry(t, "keep", dir, mmv.Options{})
	mmv.NewCounter(last, "m", "", mmv.Count).Add(3)
	require.NoError(t, last.Start())
	require.NoError(t, last.Close()) // no Process flag: its file stays
	lastFile, err := os.ReadFile(filepath.Join(dir, "keep"))
	require.NoError(t, err)
	require.NoError(t, reg{"keepother", mmv.NoPrefix, "keep.n"}.start(t, dir, 0))

	r := newRegistry(t, "keep", dir, mmv.Options{})
	mmv.NewCounter(r, "m", "", mmv.Count).Add(4)
	mmv.NewCounter(r, "n", "", mmv.Count).Add(5)
	err = r.Start()
	require.ErrorIs(t, err, mmv.ErrNamespace)
	assert.Contains(t, err.Error(), `"keepother"`)
	now, err := os.ReadFile(filepath.Join(dir, "keep"))
	require.NoError(t, err)
	assert.Equal(t, lastFile, now, "the last run's file as it was")
	assert.ElementsMatch(t, []string{"keep", "keepother"}, entries(t, dir), "no temporary left")
	assert.ErrorIs(t, r.Err(), mmv.ErrNotStarted, "the registry stays declaring")
}

// TestStartRefusesLiveRegistryNamedAsOverflow: a live NoPrefix file named
// as an overflow file of another's would be ("nsapp.2") is another
// program's file, not an earlier run's: its names count (osfile.Dir.Held),
// where Start of "nsapp" skipped it as its own by name and flag, and both
// registries showed mmv.nsapp.x in PCP.
func TestStartRefusesLiveRegistryNamedAsOverflow(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mmv")
	other := newRegistry(t, "nsappother", dir, mmv.Options{Flags: mmv.NoPrefix})
	mmv.NewCounter(other, "nsapp.x", "", mmv.Count).Add(1)
	startOrSkip(t, other)
	renamedTo(t, other, "nsapp.2") // another writer's, live: mmv names no NoPrefix registry so

	r := newRegistry(t, "nsapp", dir, mmv.Options{})
	mmv.NewCounter(r, "x", "", mmv.Count).Add(2)
	err := r.Start()
	require.ErrorIs(t, err, mmv.ErrNamespace, "mmv.nsapp.x in both nsapp.2 (live, another registry's) and nsapp")
}

// TestDeclarationAfterStartRefusesNamesOfAnotherFile: a declaration after
// Start, as every bridge makes, is checked against the directory's other
// live files as Start checks the registry: registry "svc" declaring "db"
// while the live registry "svc.db" shows mmv.svc.db.q is refused with
// ErrNamespace (mmv.svc.db, a leaf, would be a prefix of mmv.svc.db.q),
// and PCP goes on showing both registries. It was accepted, and every MMV
// metric of the host vanished, no one told.
func TestDeclarationAfterStartRefusesNamesOfAnotherFile(t *testing.T) {
	tmp, dir := pcpDir(t)
	db := newRegistry(t, "svc.db", dir, mmv.Options{})
	mmv.NewCounter(db, "q", "", mmv.Count).Add(5)
	startOrSkip(t, db)

	svc := newRegistry(t, "svc", dir, mmv.Options{})
	mmv.NewCounter(svc, "up", "", mmv.Count).Inc()
	require.NoError(t, svc.Start())
	get(t, pcptest.Info(t, tmp), "mmv.svc.db.q")

	err := svc.AddMetric(mmv.Metric{Name: "db", Type: mmv.Uint64, Semantics: mmv.SemCounter})
	require.ErrorIs(t, err, mmv.ErrNamespace)
	assert.ErrorContains(t, err, `metric "q" of file "svc.db"`)
	require.NoError(t, svc.Flush())
	require.NoError(t, svc.Err())
	out, shown := pcptest.Pminfo(t, tmp, "-f", "mmv.svc.db.q", "mmv.svc.up")
	assert.True(t, shown, "PCP shows another registry's mmv.svc.db.q after svc declared db: pminfo says %s", out)
	out, whole := pcptest.Pminfo(t, tmp, "mmv")
	assert.True(t, whole, "PCP lists the mmv namespace: pminfo says %s", out)
}

// TestDeclarationAfterDeadProcessFile: a name refused after Start for a
// live Process file's is free once that writer dies, which PCP's reader
// then no longer shows, though the directory is as it was: the files
// read for the check were kept while the directory's stamp stayed.
func TestDeclarationAfterDeadProcessFile(t *testing.T) {
	needFileLayer(t)
	if childRole() == "deadproc" {
		r := mmv.NewRegistry("svc.db", &mmv.Options{Dir: os.Getenv("MMV_DEADPROC_DIR"), Flags: mmv.Process})
		mmv.NewCounter(r, "x", "", mmv.Count).Inc()
		if err := r.Start(); err != nil {
			fmt.Println("failed", err)
			os.Exit(1)
		}
		fmt.Println("ready")
		select {}
	}
	dir := filepath.Join(t.TempDir(), "mmv")
	svc := newRegistry(t, "svc", dir, mmv.Options{})
	mmv.NewCounter(svc, "a", "", mmv.Count).Inc()
	startOrSkip(t, svc)

	child, _ := startChild(t, "TestDeclarationAfterDeadProcessFile", "deadproc", "MMV_DEADPROC_DIR="+dir)
	time.Sleep(100 * time.Millisecond) // the directory's stamp settles
	err := svc.AddMetric(mmv.Metric{Name: "db", Type: mmv.Uint64, Semantics: mmv.SemCounter})
	require.ErrorIs(t, err, mmv.ErrNamespace, "mmv.svc.db beside a live svc.db's mmv.svc.db.x")

	require.NoError(t, child.Process.Kill())
	child.Wait()
	require.FileExists(t, filepath.Join(dir, "svc.db"), "a killed Process writer's file stays; PCP drops it")
	assert.NoError(t, svc.AddMetric(mmv.Metric{Name: "db", Type: mmv.Uint64, Semantics: mmv.SemCounter}),
		"the clashing file's writer is dead, PCP no longer shows it")
}

// TestDeclarationChecksFileAtTombstoneName: the registry's tombstones are
// left out of the check of a name declared after Start only while they
// are what it wrote: another registry that took a tombstone's name (held
// by no one) counts, and a clashing leaf is refused.
func TestDeclarationChecksFileAtTombstoneName(t *testing.T) {
	_, dir := pcpDir(t)
	const name = "tombns"
	r := startOverLateOverflow(t, dir, name, 0)

	other := newRegistry(t, "tombnsother", dir, mmv.Options{Flags: mmv.NoPrefix})
	mmv.NewCounter(other, name+".zzz.y", "", mmv.Count).Inc() // mmv.tombns.zzz.y
	require.NoError(t, other.Start())
	renamedTo(t, other, name+".2") // another writer's file, live, over the tombstone
	time.Sleep(50 * time.Millisecond)

	err := r.AddMetric(mmv.Metric{Name: "zzz", Type: mmv.Uint64, Semantics: mmv.SemCounter}) // mmv.tombns.zzz, a leaf
	assert.ErrorIs(t, err, mmv.ErrNamespace, "mmv.%s.zzz beside live %s.2's mmv.%s.zzz.y", name, name, name)
}

// TestNewAfterStartKeepsNameOfAnotherFileOut: a New function declaring,
// after Start, a name another program's live file holds does not panic,
// as it does on a programming error: the instrument counts in memory of
// its own, PCP does not show it, and Err says why. It panicked, so a
// program crashed for another's file.
func TestNewAfterStartKeepsNameOfAnotherFileOut(t *testing.T) {
	tmp, dir := pcpDir(t)
	other := newRegistry(t, "svc.db", dir, mmv.Options{})
	mmv.NewCounter(other, "x", "", mmv.Count).Inc()
	startOrSkip(t, other)

	svc := newRegistry(t, "svc", dir, mmv.Options{})
	mmv.NewCounter(svc, "a", "", mmv.Count).Inc()
	require.NoError(t, svc.Start())
	time.Sleep(50 * time.Millisecond)
	var db *mmv.Counter
	require.NotPanics(t, func() { db = mmv.NewCounter(svc, "db", "", mmv.Count) },
		"another program's file panics this one's instrument declaration after Start")
	db.Add(3)
	assert.EqualValues(t, 3, db.Get(), "the instrument counts in memory of its own")
	require.NoError(t, svc.Flush())
	assert.ErrorIs(t, svc.Err(), mmv.ErrNamespace, "Err says why mmv.svc.db is not in PCP")
	assert.ErrorContains(t, svc.Err(), `metric "x" of file "svc.db"`)
	assert.Nil(t, pcptest.Find(pcptest.Info(t, tmp), "mmv.svc.db"), "PCP shows the refused name")
	var vec *mmv.Vec[mmv.Counter]
	require.NotPanics(t, func() { vec = mmv.NewCounterVec(svc, "db", "", mmv.Count, "route") })
	assert.Nil(t, vec.With("/"), "a refused vector's With")
	require.NotPanics(t, func() { mmv.NewHistogram(svc, "db", "", mmv.Second, nil).Observe(1) })
}

// TestCallbackNewFunctionsKeepNameOfAnotherFileOut: the callback New
// functions, as the others, do not panic on a name another program's
// live file holds after Start, and Err says why (they panicked: funcs.go
// did not go through must).
func TestCallbackNewFunctionsKeepNameOfAnotherFileOut(t *testing.T) {
	svc, _, _ := startBesideClash(t)
	assert.NotPanics(t, func() { mmv.NewCounterFunc(svc, "db", "", mmv.Count, func() uint64 { return 1 }) },
		"NewCounterFunc panics on another program's file after Start")
	assert.NotPanics(t, func() { mmv.NewGaugeFunc(svc, "db", "", mmv.Count, func() float64 { return 1 }) },
		"NewGaugeFunc panics on another program's file after Start")
	assert.NotPanics(t, func() { mmv.NewIntGaugeFunc(svc, "db", "", mmv.Count, func() int64 { return 1 }) },
		"NewIntGaugeFunc panics on another program's file after Start")
	assert.ErrorIs(t, svc.Err(), mmv.ErrNamespace, "Err says why mmv.svc.db is not in PCP")
}

// TestErrForgetsRefusalOnceDeclared: Err says a New function's refusal
// for another program's file until the name is declared: once that file
// is gone and the name declared again, in the file, Err is nil (it kept
// every refusal for good).
func TestErrForgetsRefusalOnceDeclared(t *testing.T) {
	svc, other, dir := startBesideClash(t)
	mmv.NewCounter(svc, "db", "", mmv.Count)
	require.ErrorIs(t, svc.Err(), mmv.ErrNamespace)

	require.NoError(t, other.Close())
	require.NoError(t, os.Remove(filepath.Join(dir, "svc.db"))) // the other program's file is gone
	time.Sleep(50 * time.Millisecond)
	c := mmv.NewCounter(svc, "db", "", mmv.Count) // now declared, in the file
	c.Inc()
	require.NoError(t, svc.Flush())
	v, err := svc.Value("db", "")
	require.NoError(t, err, "db is in the file now")
	require.NotNil(t, v)
	assert.NoError(t, svc.Err(), "every instrument is in PCP, yet Err keeps the old refusal")
}
