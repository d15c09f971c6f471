package mmv_test

import (
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/mmvfile"
)

// TestStartBuriesNoPrefixLeftovers: a registry with the NoPrefix flag,
// whose overflow files' metric names carry no registry name
// (overflowPrefix), keeps its last run's overflow file as a tombstone too,
// where Start read none of its names as the registry's and removed it (its
// PMIDs then came back with this run's <file>.2, the pmcd crash of
// TestRestartOverflowKeepsPMCD).
func TestStartBuriesNoPrefixLeftovers(t *testing.T) {
	_, dir := pcpDir(t)
	spill := func(count uint64) *mmv.Registry {
		r := mmv.NewRegistry("nptomb", &mmv.Options{Dir: dir, Flags: mmv.NoPrefix})
		mmv.NewCounter(r, "nptomb_count", "", mmv.Count).Add(count)
		for i := range mmv.MaxMetrics + 80 {
			mmv.NewCounter(r, fmt.Sprintf("nptomb_c%04d", i), "", mmv.Count).Inc()
		}
		return r
	}
	last := spill(5)
	startOrSkip(t, last)
	require.NoError(t, last.Close())
	was, err := mmvfile.Open(filepath.Join(dir, "nptomb.2"))
	require.NoError(t, err)
	require.NotNil(t, fileMetric(was, "nptomb_c1102"), "the last run's overflow file")

	r := newRegistry(t, "nptomb", dir, mmv.Options{Flags: mmv.NoPrefix})
	mmv.NewCounter(r, "nptomb_first", "", mmv.Count).Add(1) // none of the last run's names, which keep their files (placeLocked)
	startOrSkip(t, r)
	tomb, err := mmvfile.Open(filepath.Join(dir, "nptomb.2"))
	require.NoError(t, err, "the last run's overflow file, kept as a tombstone: removed, its PMIDs come back with this run's <file>.2")
	assert.NotZero(t, tomb.Header.Flags&mmv.Sentinel)
	assert.NotNil(t, fileMetric(tomb, "nptomb_c1102"))
	for _, v := range tomb.Values {
		assert.Equal(t, uint64(math.MaxUint64), v.Uint)
	}
}

// TestTombstoneRewriteFailureHoldsThePublication: a publication that
// cannot rewrite a tombstone without a name that one this run now
// declares in another file clashes with at a dot (the rename over it
// fails: here the file is immutable; a full disk would do the same) does
// not publish: Flush and Err say why, and the name waits, where it was
// published beside the tombstone's (a leaf and a prefix of one name in
// PCP, which fails its namespace whole) with Flush and Err nil. Once the tombstone
// can be rewritten, the next publication does both.
func TestTombstoneRewriteFailureHoldsThePublication(t *testing.T) {
	_, dir := pcpDir(t)
	closedRun(t, dir, "tfail", 3000)
	tomb := filepath.Join(dir, "tfail.3")
	require.NoError(t, os.Remove(filepath.Join(dir, "tfail"))) // its full first file: Start would keep its items (carry.go), the first file then without room

	r := newRegistry(t, "tfail", dir, mmv.Options{})
	mmv.NewCounter(r, "first", "", mmv.Count).Inc()
	startOrSkip(t, r)
	was, err := mmvfile.Open(tomb)
	require.NoError(t, err)
	require.NotNil(t, fileMetric(was, "tfail.c2999"), "the tombstone holds c2999")
	if err := exec.Command("chattr", "+i", tomb).Run(); err != nil {
		t.Skipf("chattr +i: %v", err)
	}
	immutable := true
	t.Cleanup(func() {
		if immutable {
			exec.Command("chattr", "-i", tomb).Run()
		}
	})

	mmv.NewCounter(r, "c2999.now", "", mmv.Count).Add(2) // in the first file, which has room: c2999 a prefix of it
	ferr := r.Flush()
	require.Error(t, ferr, "a name published while the tombstone shows it")
	assert.Contains(t, ferr.Error(), "tfail.3")
	assert.Error(t, r.Err())
	first, err := mmvfile.Open(r.Path())
	require.NoError(t, err)
	assert.Nil(t, fileMetric(first, "c2999.now"), "not published while the tombstone holds c2999")

	require.NoError(t, exec.Command("chattr", "-i", tomb).Run())
	immutable = false
	require.NoError(t, r.Flush())
	require.NoError(t, r.Err())
	first, err = mmvfile.Open(r.Path())
	require.NoError(t, err)
	assert.NotNil(t, fileMetric(first, "c2999.now"))
	now, err := mmvfile.Open(tomb)
	require.NoError(t, err)
	assert.Nil(t, fileMetric(now, "tfail.c2999"))
}

// TestStartRemovesLeftoverOverflowFiles: a Start removes the overflow
// files an earlier run of its name left past its own whose every metric
// this run declares in another file or clashes with at a dot (kept, PCP
// showed them as this run's metrics with that run's values, and a prefix
// made PCP's namespace fail whole where this run declares the same name
// as a leaf); those with other metrics stay as tombstones
// (TestStartBuriesLeftoverOverflowFiles). A file of such a name that a
// live registry holds, or that has no NoPrefix flag (another registry's
// file, put there), stays.
func TestStartRemovesLeftoverOverflowFiles(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "mmv")
	opts := mmv.Options{Dir: dir, MaxFileValues: 1}
	// The first run: lat.x is a metric of app.3, whose lat is a prefix.
	r := newRegistry(t, "app", dir, opts)
	for _, name := range []string{"a", "b", "lat.x", "lat.y"} {
		mmv.NewCounter(r, name, "", mmv.Count).Add(7)
	}
	startOrSkip(t, r)
	require.NoError(t, r.Close())
	require.Equal(t, []string{"app", "app.2", "app.3", "app.4"}, entries(t, dir))
	// Another writer's file, live, named as an overflow file would be, and
	// a closed registry's without NoPrefix, moved to such a name.
	live := newRegistry(t, "applive", dir, mmv.Options{Dir: dir, Flags: mmv.NoPrefix})
	mmv.NewCounter(live, "app.c", "", mmv.Count).Add(3)
	startOrSkip(t, live)
	renamedTo(t, live, "app.4")
	other := newRegistry(t, "appfive", dir, mmv.Options{Dir: dir}) // no registry is named app.5
	mmv.NewCounter(other, "d", "", mmv.Count).Add(4)
	startOrSkip(t, other)
	require.NoError(t, other.Close())
	renamedTo(t, other, "app.5")

	// The next run: a and lat, a leaf, in two files.
	r = newRegistry(t, "app", dir, opts)
	mmv.NewCounter(r, "a", "", mmv.Count).Add(1)
	mmv.NewGauge(r, "lat", "", mmv.Count).Set(2)
	startOrSkip(t, r)
	assert.Equal(t, []string{"app", "app.2", "app.4", "app.5"}, entries(t, dir), "app.3 removed")
	got := map[string]string{}
	for _, m := range pcptest.Info(t, tmp) {
		if !strings.HasPrefix(m.Name, "mmv.control.") {
			got[m.Name] = m.Value
		}
	}
	// b, of the last run's app.2, which this run makes at Start: kept there
	// with no value, its PMID the last run's (carry.go).
	assert.Equal(t, map[string]string{"mmv.app.a": "1", "mmv.app.b": "", "mmv.app.lat": "2", "mmv.app.c": "3", "mmv.app.5.d": "4"}, got)
}

// TestStartBuriesLeftoverOverflowFiles: a Start keeps an overflow file
// its last run made past its own parts as a tombstone: its metrics, their
// PMIDs kept, showing no value (it showed the last run's values as this
// run's), but those whose names clash at a dot with one this run declares
// in another file, before Start or after it (PCP would lose its namespace
// whole over a prefix; a name of the tombstone itself keeps its file,
// TestIdentityAcrossDeclarationTiming); the file this run makes at its name later is
// renamed over it, its PMIDs the tombstone's. Removed, its PMIDs vanished
// and came back, which crashes pmcd (TestRestartOverflowKeepsPMCD).
func TestStartBuriesLeftoverOverflowFiles(t *testing.T) {
	tmp, dir := pcpDir(t)
	last := declareSpilling(dir, "tomb", 5)
	startOrSkip(t, last)
	require.NoError(t, last.Close())
	was, err := mmvfile.Open(filepath.Join(dir, "tomb.2"))
	require.NoError(t, err)
	require.NotNil(t, fileMetric(was, "tomb.count"), "the last run's count in its overflow file")
	require.NotNil(t, fileMetric(was, "tomb.c1102"))
	require.NoError(t, os.Remove(filepath.Join(dir, "tomb"))) // its full first file: Start would keep its items (carry.go), the first file then without room

	r := newRegistry(t, "tomb", dir, mmv.Options{})
	mmv.NewCounter(r, "count.now", "", mmv.Count).Add(1) // in the first file: count a prefix of it
	startOrSkip(t, r)
	tomb, err := mmvfile.Open(filepath.Join(dir, "tomb.2"))
	require.NoError(t, err)
	assert.NotZero(t, tomb.Header.Flags&mmv.Sentinel, "a tombstone shows no value")
	require.NotEmpty(t, tomb.Values)
	for _, v := range tomb.Values {
		assert.Equal(t, uint64(math.MaxUint64), v.Uint, "%s: the Sentinel flag's no value", v.Metric.Name)
	}
	if pcptest.WantPCP(t) {
		shown := pcptest.Find(pcptest.Info(t, tmp), "mmv.tomb.c1102")
		require.NotNil(t, shown)
		assert.Empty(t, shown.Value, "PCP shows no value")
	}
	assert.Nil(t, fileMetric(tomb, "tomb.count"), "a name this run's first file clashes with at a dot")
	assert.Len(t, tomb.Metrics, len(was.Metrics)-1)
	assert.Equal(t, was.Header.Cluster, tomb.Header.Cluster)

	// Declared after Start in the first file, which has room, a name
	// c1101 is a prefix of: the tombstone loses c1101 before it is
	// published.
	mmv.NewCounter(r, "c1101.now", "", mmv.Count).Add(2)
	require.NoError(t, r.Flush())
	tomb, err = mmvfile.Open(filepath.Join(dir, "tomb.2"))
	require.NoError(t, err)
	assert.Nil(t, fileMetric(tomb, "tomb.c1101"))
	assert.NotNil(t, fileMetric(tomb, "tomb.c1102"))
	findings, err := mmvfile.LintDir(dir)
	require.NoError(t, err)
	for _, f := range findings {
		assert.NotContains(t, []mmvfile.Rule{mmvfile.RuleDuplicateName, mmvfile.RuleNamePrefix}, f.Rule, "%v", f)
	}

	// This run's own overflow file replaces it, the PMIDs kept.
	for i := range mmv.MaxMetrics + 80 {
		if name := fmt.Sprintf("c%04d", i); name != "c1101" {
			mmv.NewCounter(r, name, "", mmv.Count).Add(3)
		}
	}
	require.NoError(t, r.Flush())
	now, err := mmvfile.Open(filepath.Join(dir, "tomb.2"))
	require.NoError(t, err)
	m := fileMetric(now, "tomb.c1102")
	require.NotNil(t, m, "c1102 in this run's overflow file")
	assert.Equal(t, was.Header.Cluster, now.Header.Cluster)
	assert.Equal(t, fileMetric(was, "tomb.c1102").Item, m.Item, "its PMID the tombstone's")
	if pcptest.WantPCP(t) {
		shown := pcptest.Find(pcptest.Info(t, tmp), "mmv.tomb.c1102")
		require.NotNil(t, shown)
		assert.Equal(t, "3", shown.Value)
	}
}

// TestStartKeepsNoPrefixRegistryNamedAsOverflow: another writer's file
// "web.3" with the NoPrefix flag, its writer gone, named as registry
// "web"'s overflow file would be: a later Start of "web" leaves it, its
// names not "web"'s (bury), and PCP shows its mmv.jobs. Start took it for
// an earlier run's overflow file, kept none of its metrics, and removed
// it. (A NoPrefix registry of mmv's cannot be named so: for a NoPrefix
// "web", whose overflow files carry no prefix, nothing tells them apart.)
func TestStartKeepsNoPrefixRegistryNamedAsOverflow(t *testing.T) {
	tmp, dir := pcpDir(t)
	other := newRegistry(t, "webother", dir, mmv.Options{Flags: mmv.NoPrefix})
	mmv.NewCounter(other, "jobs", "", mmv.Count).Add(42)
	startOrSkip(t, other)
	require.NoError(t, other.Close()) // no Process flag: its file stays, PCP shows it
	renamedTo(t, other, "web.3")
	get(t, pcptest.Info(t, tmp), "mmv.jobs")

	web := newRegistry(t, "web", dir, mmv.Options{})
	mmv.NewCounter(web, "requests", "", mmv.Count).Inc()
	require.NoError(t, web.Start())
	assert.FileExists(t, filepath.Join(dir, "web.3"), "another registry's file, left for PCP, removed by an unrelated Start")
	m := pcptest.Find(pcptest.Info(t, tmp), "mmv.jobs")
	if assert.NotNil(t, m, "PCP shows the other registry's mmv.jobs after web's Start") {
		assert.Equal(t, "42", m.Value)
	}
}

// TestProcessRunClosesTombstones: a registry with the Process flag,
// started over a last run (without it) that had an overflow file made
// after its Start, keeps that file as a tombstone with its own flag and
// pid, which PCP drops with the process, and its Close takes it from PCP
// with its own files, renamed to its closed record for the next run. It
// kept the dead writer's header, and PCP listed the last run's names,
// with no value, for good.
func TestProcessRunClosesTombstones(t *testing.T) {
	tmp, dir := pcpDir(t)
	const name = "procts"
	r := startOverLateOverflow(t, dir, name, mmv.Process)
	f, err := mmvfile.Open(filepath.Join(dir, name+".2"))
	require.NoError(t, err, "the tombstone")
	assert.Equal(t, mmv.Process|mmv.Sentinel, f.Header.Flags&(mmv.Process|mmv.Sentinel), "the tombstone's flags")
	assert.EqualValues(t, os.Getpid(), f.Header.PID, "the tombstone's pid")
	require.NoError(t, r.Close())
	assert.Equal(t, []string{".procts.2.closed", ".procts.closed"}, entries(t, dir), "files left after the Close of a Process registry but the closed records of its first file and its tombstone")
	assert.Zero(t, len(under(pcptest.Info(t, tmp), "mmv."+name+".")), "names PCP shows after the Close of a Process registry")
}

// TestProcessCloseKeepsFileAtTombstoneName: a Process registry's Close
// removes its tombstones only while they are what it wrote (their
// generation): another registry that started at a tombstone's name (held
// by no one) and left its file for PCP keeps it. Close removed whatever
// was at the name.
func TestProcessCloseKeepsFileAtTombstoneName(t *testing.T) {
	tmp, dir := pcpDir(t)
	const name = "procts"
	r := startOverLateOverflow(t, dir, name, mmv.Process)

	// Another writer's file takes the name (the tombstone is held by no
	// one), and stays for PCP.
	other := newRegistry(t, "proctsother", dir, mmv.Options{Flags: mmv.NoPrefix})
	mmv.NewCounter(other, "jobs", "", mmv.Count).Add(42)
	require.NoError(t, other.Start())
	require.NoError(t, other.Close())
	renamedTo(t, other, name+".2")
	get(t, pcptest.Info(t, tmp), "mmv.jobs")

	require.NoError(t, r.Close())
	assert.FileExists(t, filepath.Join(dir, name+".2"), "another registry's file, removed as r's tombstone by r's Close")
	assert.NotNil(t, pcptest.Find(pcptest.Info(t, tmp), "mmv.jobs"), "PCP shows the other registry's mmv.jobs after r's Close")
}

// TestStartKeepsLiveForeignNoPrefixFile: a file at an overflow name of a
// NoPrefix registry whose writer is alive (another program's, libpcp_mmv's,
// which takes no lock of mmv's) is not an earlier run's: Start leaves it,
// where it rewrote it as a tombstone, its values gone.
func TestStartKeepsLiveForeignNoPrefixFile(t *testing.T) {
	if childRole() == "writer" { // a live writer, until the test kills it
		os.Stdout.WriteString("ready\n")
		io.Copy(io.Discard, os.Stdin)
		return
	}
	dir := filepath.Join(t.TempDir(), "mmv")
	other := newRegistry(t, "zzforeign", dir, mmv.Options{Flags: mmv.NoPrefix | mmv.Process})
	mmv.NewCounter(other, "foreign.x", "", mmv.Count).Add(7)
	startOrSkip(t, other)
	writer, _ := startChild(t, "TestStartKeepsLiveForeignNoPrefixFile", "writer")
	before, err := os.ReadFile(other.Path())
	require.NoError(t, err)
	putPid(before, writer.Process.Pid) // the live writer's file, with no lock of mmv's
	path := filepath.Join(dir, "svc.2")
	require.NoError(t, os.WriteFile(path, before, 0o644))

	svc := newRegistry(t, "svc", dir, mmv.Options{Flags: mmv.NoPrefix})
	mmv.NewCounter(svc, "mine", "", mmv.Count).Inc()
	require.NoError(t, svc.Start())
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, before, after, "a live writer's NoPrefix file at svc.2, rewritten by svc's Start")
}

// TestEmptyOverflowFileKeepsLaterHomes: an overflow file left with
// no metric (a part made empty before a name's file, its last run's names
// declared elsewhere or clashing at a dot with one this run declares) is
// removed by the next Start that does not make it (buryLocked keeps no
// empty tombstone), and the names of the files past it keep their files
// all the same. Start read which file held each name only up to the first
// missing one (lastHomes): c, in emp.3 behind an empty emp.2 that a run
// declaring neither removed, went to emp.2 at the next run, its PMID with
// the cluster of emp.2.
func TestEmptyOverflowFileKeepsLaterHomes(t *testing.T) {
	needFileLayer(t)
	tmp, dir := pcpDir(t)
	run := func(before, after []string) {
		r := newRegistry(t, "emp", dir, mmv.Options{MaxFileValues: 1})
		for _, n := range before {
			mmv.NewCounter(r, n, "", mmv.Count).Inc()
		}
		startOrSkip(t, r)
		for _, n := range after {
			mmv.NewCounter(r, n, "", mmv.Count).Inc()
		}
		require.NoError(t, r.Flush())
		require.NoError(t, r.Close())
	}
	run([]string{"a", "b", "c"}, nil) // a in emp, b in emp.2, c in emp.3
	was := get(t, pcptest.Info(t, tmp), "mmv.emp.c")
	run([]string{"b.x", "c"}, nil) // b renamed: emp.2 is made for c to stay in emp.3, b no longer in it
	emptied, err := mmvfile.Open(filepath.Join(dir, "emp.2"))
	require.NoError(t, err)
	require.Empty(t, emptied.Metrics)
	run([]string{"b.x"}, nil) // c not declared: emp.2 removed, emp.3 a tombstone
	require.NoFileExists(t, filepath.Join(dir, "emp.2"))
	run([]string{"b.x"}, []string{"c"})
	assert.Equal(t, was.PMID, get(t, pcptest.Info(t, tmp), "mmv.emp.c").PMID, "c's PMID")
}
