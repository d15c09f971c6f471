package mmv_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/mmvfile"
	"github.com/gopcp/mmv/mmvtest"
)

// lastRun runs a registry of name in dir without the Process flag (or
// with flags), once: "count" declared before Start, the counters named
// late after it, each counted to 5, and closes it, leaving its first
// file.
func lastRun(t *testing.T, dir, name string, flags mmv.Flags, late ...string) {
	t.Helper()
	lastRunWith(t, dir, name, flags, func(r *mmv.Registry) {
		for _, n := range late {
			mmv.NewCounter(r, n, "", mmv.Count).Add(5)
		}
	})
}

// lastRunWith is lastRun with what late declares after Start.
func lastRunWith(t *testing.T, dir, name string, flags mmv.Flags, late func(r *mmv.Registry)) {
	t.Helper()
	r := mmv.NewRegistry(name, &mmv.Options{Dir: dir, Flags: flags})
	mmv.NewCounter(r, "count", "", mmv.Count).Add(1)
	startOrSkip(t, r)
	late(r)
	require.NoError(t, r.Flush())
	require.NoError(t, r.Close())
}

// rivalOf returns the first name of prefix and a number whose item
// (itemHash) is name's: a name that would take name's item.
func rivalOf(prefix, name string) string {
	for i := 0; ; i++ {
		if n := fmt.Sprintf("%s%d", prefix, i); itemHash(n) == itemHash(name) {
			return n
		}
	}
}

// TestCarriedShowsNoValue: a metric the last run declared after Start, in
// its first file, is in this run's first file from Start on, its PMID
// kept, showing no value (not 0) through a pmcd, and the other metrics of
// the same fetch show theirs; it is not the program's: not in Gather,
// Snapshot, Registry.Value or mmvtest's listing.
func TestCarriedShowsNoValue(t *testing.T) {
	needFileLayer(t)
	tmp, dir := pcpDir(t)
	lastRun(t, dir, "carry", 0, "late")
	before := get(t, pcptest.Info(t, tmp), "mmv.carry.late")

	r := newRegistry(t, "carry", dir, mmv.Options{})
	mmv.NewCounter(r, "count", "", mmv.Count).Add(2)
	startOrSkip(t, r)
	ms := pcptest.Info(t, tmp)
	late := get(t, ms, "mmv.carry.late")
	assert.Equal(t, before.PMID, late.PMID, "the placeholder's PMID")
	assert.Empty(t, late.Value, "the placeholder shows no value")
	assert.NotEmpty(t, late.NoValue)
	assert.Equal(t, "2", get(t, ms, "mmv.carry.count").Value, "a metric fetched with the placeholder")

	// Through a pmcd: one fetch of both (pminfo fetches its names in one
	// pmFetch).
	p := pcptest.StartPMCD(t)
	lastRun(t, p.Dir, "carryp", 0, "late")
	rp := newRegistry(t, "carryp", p.Dir, mmv.Options{})
	mmv.NewCounter(rp, "count", "", mmv.Count).Add(2)
	startOrSkip(t, rp)
	got, err := p.Fetch(t.Context(), "mmv.carryp.late", "mmv.carryp.count")
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Empty(t, get(t, got, "mmv.carryp.late").Value)
	assert.Equal(t, "2", get(t, got, "mmv.carryp.count").Value)

	var gathered []string
	r.Gather(func(f *mmv.Family) { gathered = append(gathered, f.Name) })
	assert.Equal(t, []string{"count"}, gathered, "Gather")
	snap, err := r.Snapshot()
	require.NoError(t, err)
	require.Len(t, snap, 1, "Snapshot")
	assert.Equal(t, "count", snap[0].Name)
	_, err = r.Value("late", "")
	assert.ErrorIs(t, err, mmv.ErrUnknown, "Registry.Value of a placeholder")
	listing, err := mmvtest.Listing(r)
	require.NoError(t, err)
	assert.NotContains(t, listing, "late")
}

// TestLateDeclarationTakesCarriedPMID: declared after Start, by a New
// function or AddMetric, a placeholder's name takes its PMID, in the
// first file, with its value, at the next publication; a name hashing to
// the same item that sorts first does not take it.
func TestLateDeclarationTakesCarriedPMID(t *testing.T) {
	needFileLayer(t)
	tmp, dir := pcpDir(t)
	lastRun(t, dir, "taker", 0, "late", "low")
	before := pcptest.Info(t, tmp)

	r := newRegistry(t, "taker", dir, mmv.Options{})
	startOrSkip(t, r)
	rival := rivalOf("a", "late")
	mmv.NewCounter(r, rival, "", mmv.Count).Add(1) // would have taken late's item
	mmv.NewCounter(r, "late", "", mmv.Count).Add(7)
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "low", Type: mmv.Uint64, Semantics: mmv.SemCounter, Units: mmv.Count}))
	require.NoError(t, r.Flush())
	ms := pcptest.Info(t, tmp)
	for _, n := range []string{"late", "low"} {
		m := get(t, ms, "mmv.taker."+n)
		assert.Equal(t, get(t, before, "mmv.taker."+n).PMID, m.PMID, "%s's PMID", n)
	}
	assert.Equal(t, "7", get(t, ms, "mmv.taker.late").Value)
	assert.NotEqual(t, get(t, before, "mmv.taker.late").PMID, get(t, ms, "mmv.taker."+rival).PMID)
}

// TestCarriedClashDropped: a name declared after Start that a placeholder
// is a prefix of at a dot (or the reverse) drops the placeholder in the
// publication that shows the name, so PCP's namespace holds no leaf that
// is also a prefix; its item stays the last run's, no other name's.
func TestCarriedClashDropped(t *testing.T) {
	needFileLayer(t)
	tmp, dir := pcpDir(t)
	lastRun(t, dir, "clash", 0, "a.b")
	old := get(t, pcptest.Info(t, tmp), "mmv.clash.a.b")

	r := newRegistry(t, "clash", dir, mmv.Options{})
	startOrSkip(t, r)
	get(t, pcptest.Info(t, tmp), "mmv.clash.a.b") // the placeholder
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "a", Type: mmv.Uint64, Semantics: mmv.SemCounter}))
	rival := rivalOf("z", "a.b")
	mmv.NewCounter(r, rival, "", mmv.Count).Add(3)
	require.NoError(t, r.Flush())
	require.NoError(t, r.Err())
	ms := pcptest.Info(t, tmp)
	assert.Nil(t, pcptest.Find(ms, "mmv.clash.a.b"), "the placeholder clashing with a")
	get(t, ms, "mmv.clash.a")
	for _, m := range ms {
		assert.False(t, m.PMID == old.PMID, "a.b's PMID %s is %s's", old.PMID, m.Name)
	}
}

// TestProcessRestartCarriesClosedRun: a registry with the Process flag
// renames its first file to its closed record at Close (.proc.closed),
// which PCP ignores, and a restart carries it as it carries a file left
// at the name: the late metric of the last run is in the new file with
// no value, its PMID kept, and Start removes the record. The restart
// found nothing to carry, and a name declared with another descriptor
// took its old PMID (TestClosedProcessRunKeepsIdentities).
func TestProcessRestartCarriesClosedRun(t *testing.T) {
	needFileLayer(t)
	tmp, dir := pcpDir(t)
	lastRun(t, dir, "proc", mmv.Process, "late")
	require.Equal(t, []string{".proc.closed"}, entries(t, dir), "what Close left")
	findings, err := mmvfile.LintDir(dir)
	require.NoError(t, err)
	assert.Empty(t, findings, "lint of a directory holding a closed record, which PCP ignores")
	f, err := mmvfile.Open(filepath.Join(dir, ".proc.closed"))
	require.NoError(t, err)
	var late uint32
	for _, m := range f.Metrics {
		if m.Name == "late" {
			late = m.Item
		}
	}
	require.NotZero(t, late, "the closed record's late metric")
	r := newRegistry(t, "proc", dir, mmv.Options{Flags: mmv.Process})
	mmv.NewCounter(r, "count", "", mmv.Count).Add(1)
	startOrSkip(t, r)
	assert.Equal(t, []string{"proc"}, entries(t, dir), "the closed record, carried, is removed")
	ms := pcptest.Info(t, tmp)
	assert.Len(t, under(ms, "mmv.proc."), 2)
	assert.Equal(t, "1", get(t, ms, "mmv.proc.count").Value)
	m := get(t, ms, "mmv.proc.late")
	assert.Empty(t, m.Value, "the last run's late metric, not declared")
	assert.True(t, strings.HasSuffix(m.PMID, fmt.Sprintf(".%d", late)), "late's PMID %s, was item %d", m.PMID, late)
}

// TestFailedStartKeepsClosedRecord: a Start that fails (a directory
// planted at the file's name) leaves the closed record of the last
// Process run, and the next Start, without the flag, carries it and
// removes it.
func TestFailedStartKeepsClosedRecord(t *testing.T) {
	needFileLayer(t)
	tmp, dir := pcpDir(t)
	lastRun(t, dir, "rec", mmv.Process, "late")
	require.NoError(t, os.Mkdir(filepath.Join(dir, "rec"), 0o755))
	r := newRegistry(t, "rec", dir, mmv.Options{})
	mmv.NewCounter(r, "count", "", mmv.Count).Add(1)
	require.Error(t, r.Start())
	assert.ElementsMatch(t, []string{".rec.closed", "rec"}, entries(t, dir), "what the failed Start left")
	require.NoError(t, os.Remove(filepath.Join(dir, "rec")))
	startOrSkip(t, r)
	assert.Equal(t, []string{"rec"}, entries(t, dir))
	ms := pcptest.Info(t, tmp)
	assert.Empty(t, get(t, ms, "mmv.rec.late").Value, "the last run's late metric, carried")
	require.NoError(t, r.Close())
	assert.Equal(t, []string{"rec"}, entries(t, dir), "no Process flag: the file stays, no record")
}

// TestCarriedLongNameMakesVersion2: a placeholder whose name is longer
// than a version 1 file holds (63 bytes: the last run declared it after
// Start, its first file grew to version 2) makes this run's first file
// version 2 from Start, as a metric's name does: the version is chosen
// once the placeholders are carried. Chosen before, the file was version
// 1 and the name cut in its 64-byte field: PCP showed the PMID under
// another name, or not at all.
func TestCarriedLongNameMakesVersion2(t *testing.T) {
	needFileLayer(t)
	tmp, dir := pcpDir(t)
	long := "late_" + strings.Repeat("x", 70)
	lastRun(t, dir, "v1carry", 0, long)
	before := get(t, pcptest.Info(t, tmp), "mmv.v1carry."+long)

	r := newRegistry(t, "v1carry", dir, mmv.Options{})
	mmv.NewCounter(r, "count", "", mmv.Count).Add(2)
	startOrSkip(t, r)
	ms := pcptest.Info(t, tmp)
	for _, m := range ms {
		assert.False(t, m.PMID == before.PMID && m.Name != before.Name, "PMID %s was %s; after the restart PCP names it %q", before.PMID, before.Name, m.Name)
	}
	assert.Equal(t, before.PMID, get(t, ms, before.Name).PMID)
	f, err := mmvfile.Open(filepath.Join(dir, "v1carry"))
	require.NoError(t, err)
	assert.Equal(t, mmv.Version2, f.Header.Version)
}

// TestCarriedWhateverPidTheFileNames: the last run's first file is
// carried whatever pid its header names, a live process's too: without
// the Process flag PCP ignores that pid, and it is often alive (the last
// writer draining after its Close while its successor starts, or its pid
// reused after a reboot). Start holds the name (osfile's lock): a live
// registry's file is refused there, not carried. Skipped for a live pid,
// the late metric's PMID vanished at Start and came back at its
// declaration.
func TestCarriedWhateverPidTheFileNames(t *testing.T) {
	needFileLayer(t)
	tmp, dir := pcpDir(t)
	lastRun(t, dir, "livepid", 0, "late")
	before := get(t, pcptest.Info(t, tmp), "mmv.livepid.late")
	setFilePid(t, filepath.Join(dir, "livepid"), livePid())

	r := newRegistry(t, "livepid", dir, mmv.Options{})
	mmv.NewCounter(r, "count", "", mmv.Count).Add(2)
	startOrSkip(t, r)
	m := pcptest.Find(pcptest.Info(t, tmp), "mmv.livepid.late")
	if assert.NotNil(t, m, "the last run's late metric, PMID %s, vanished at Start", before.PMID) {
		assert.Equal(t, before.PMID, m.PMID)
		assert.Empty(t, m.Value)
	}
}

// indomSerial returns the serial of the indom PCP describes m over: the
// low 11 bits of its id (cluster<<11 | serial), 0 when m is singular.
func indomSerial(t *testing.T, m pcptest.Metric) uint32 {
	t.Helper()
	if m.Singular() {
		return 0
	}
	var domain, id uint32
	_, err := fmt.Sscanf(m.Indom, "%d.%d ", &domain, &id)
	require.NoError(t, err, "indom %q", m.Indom)
	return id & mmv.MaxSerial
}

// TestCarriedOverEmptyIndom: a placeholder is written over an indom of no
// instances, so PCP fetches no instance of it (on PCP 7, a singular
// metric with no value record logged a line per fetch): a vector's keeps
// its indom, its PMID described as before (a pmlogger that writes the
// descriptor then, and pmlogextract merging its archives, see no change
// of indom); a singular metric's shares an indom of a serial none of the
// registry's indoms has, and is singular again once declared. The next
// run carries it over the same indom.
func TestCarriedOverEmptyIndom(t *testing.T) {
	needFileLayer(t)
	tmp, dir := pcpDir(t)
	lastRunWith(t, dir, "empty", 0, func(r *mmv.Registry) {
		mmv.NewCounterVec(r, "vlate", "Requests by route", mmv.Count, "route").With("/a").Add(5)
		mmv.NewGauge(r, "late", "", mmv.Byte).Set(3)
	})
	ms := pcptest.Info(t, tmp)
	vbefore, before := get(t, ms, "mmv.empty.vlate"), get(t, ms, "mmv.empty.late")
	require.False(t, vbefore.Singular())
	require.True(t, before.Singular())

	restart := func() *mmv.Registry {
		r := newRegistry(t, "empty", dir, mmv.Options{})
		mmv.NewCounter(r, "count", "", mmv.Count).Add(2)
		startOrSkip(t, r)
		ms := pcptest.Info(t, tmp)
		v, m := get(t, ms, "mmv.empty.vlate"), get(t, ms, "mmv.empty.late")
		assert.Equal(t, vbefore.PMID, v.PMID)
		assert.Equal(t, vbefore.Indom, v.Indom, "the vector's placeholder keeps its indom")
		assert.Equal(t, vbefore.Semantics+" "+vbefore.Type+" "+vbefore.Units, v.Semantics+" "+v.Type+" "+v.Units)
		assert.Equal(t, before.PMID, m.PMID)
		assert.Equal(t, uint32(1023), indomSerial(t, m), "the singular metric's placeholder: over %s", m.Indom)
		for _, p := range []pcptest.Metric{v, m} {
			assert.Empty(t, p.Instances, p.Name)
			assert.Empty(t, p.Value, p.Name)
			assert.NotEmpty(t, p.NoValue, p.Name)
		}
		assert.Equal(t, "2", get(t, ms, "mmv.empty.count").Value)
		return r
	}
	r := restart()
	require.NoError(t, r.Close())
	r = restart() // carried from a file where it was a placeholder
	mmv.NewCounterVec(r, "vlate", "Requests by route", mmv.Count, "route").With("/b").Add(1)
	mmv.NewGauge(r, "late", "", mmv.Byte).Set(4)
	require.NoError(t, r.Flush())
	ms = pcptest.Info(t, tmp)
	v, m := get(t, ms, "mmv.empty.vlate"), get(t, ms, "mmv.empty.late")
	assert.Equal(t, vbefore.Indom, v.Indom)
	if assert.Len(t, v.Instances, 1) {
		assert.Equal(t, "1", v.Instances[0].Value)
	}
	assert.True(t, m.Singular(), "declared again: %s", m.Indom)
	assert.Equal(t, "4", m.Value)
}

// TestCarriedIndomSerialTaken: a placeholder whose indom serial this
// run's registry gives another indom, at Start or after, is written over
// an empty indom of another serial: two indoms of one serial in the
// first file, which holds every indom of the registry, are one to PCP,
// which would fetch the other's instances for the placeholder.
func TestCarriedIndomSerialTaken(t *testing.T) {
	needFileLayer(t)
	tmp, dir := pcpDir(t)
	lastRunWith(t, dir, "taken", 0, func(r *mmv.Registry) {
		mmv.NewCounterVec(r, "vlate", "", mmv.Count, "route").With("/a").Add(5)
	})
	before := get(t, pcptest.Info(t, tmp), "mmv.taken.vlate")
	serial := indomSerial(t, before)
	require.NotZero(t, serial)

	r := newRegistry(t, "taken", dir, mmv.Options{})
	require.NoError(t, r.AddIndom(mmv.Indom{Serial: serial, Instances: []mmv.Instance{{ID: 1, Name: "q1"}}}))
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "depth", Type: mmv.Uint32, Semantics: mmv.SemInstant, Indom: serial}))
	startOrSkip(t, r)
	check := func(not uint32) {
		t.Helper()
		ms := pcptest.Info(t, tmp)
		v := get(t, ms, "mmv.taken.vlate")
		assert.Equal(t, before.PMID, v.PMID)
		assert.NotZero(t, indomSerial(t, v), v.Indom)
		assert.NotEqual(t, not, indomSerial(t, v), "the placeholder's indom serial, the registry's")
		assert.NotEqual(t, serial, indomSerial(t, v))
		assert.Empty(t, v.Instances)
		assert.NotEmpty(t, v.NoValue)
		if d := get(t, ms, "mmv.taken.depth"); assert.Len(t, d.Instances, 1) {
			assert.Equal(t, "q1", d.Instances[0].Name)
		}
	}
	check(serial)
	moved := indomSerial(t, get(t, pcptest.Info(t, tmp), "mmv.taken.vlate"))
	require.NoError(t, r.AddIndom(mmv.Indom{Serial: moved, Instances: []mmv.Instance{{ID: 2, Name: "w2"}}}))
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "busy", Type: mmv.Uint32, Semantics: mmv.SemInstant, Indom: moved}))
	require.NoError(t, r.Flush())
	check(moved)
	if b := get(t, pcptest.Info(t, tmp), "mmv.taken.busy"); assert.Len(t, b.Instances, 1) {
		assert.Equal(t, "w2", b.Instances[0].Name)
	}
}

// TestPlaceholderFetchLogsNothing: a client fetching placeholders, a
// singular metric's and a vector's, back to back through a pmcd makes it
// log nothing about them. Written singular with no value record, PCP
// 7.2's pmdaFetch logged "Instance -1 of PMID ... not handled by fetch
// callback" at each fetch (6.0.3 nothing): a line per fetch for as long
// as the program had not declared the metric. Run it with
// MMV_PCP_ROOT=/var/cache/mmv-pcp7 too.
func TestPlaceholderFetchLogsNothing(t *testing.T) {
	needFileLayer(t)
	p := pcptest.StartPMCD(t)
	lastRunWith(t, p.Dir, "carrylog", 0, func(r *mmv.Registry) {
		mmv.NewCounter(r, "late", "", mmv.Count).Add(5)
		mmv.NewCounterVec(r, "vlate", "", mmv.Count, "route").With("/a").Add(5)
	})
	r := newRegistry(t, "carrylog", p.Dir, mmv.Options{})
	mmv.NewCounter(r, "count", "", mmv.Count).Add(2)
	startOrSkip(t, r)
	for _, name := range []string{"mmv.carrylog.late", "mmv.carrylog.vlate"} {
		f := p.FetchLoop(t, name, 500*time.Millisecond)
		t.Logf("PCP %s, %s: fetches %+v", pcptest.Version(), name, f)
		assert.Positive(t, f.N)
		assert.Zero(t, f.Values, name)
	}
	log := p.Log()
	assert.NotContains(t, log, "not handled by fetch callback")
	if t.Failed() {
		lines := strings.Split(strings.TrimSpace(log), "\n")
		t.Logf("pmcd.log ends:\n%s", strings.Join(lines[max(0, len(lines)-3):], "\n"))
	}
}

// TestCarriedClashWithAnotherFileDropped: a name of the last run's first
// file that clashes at a dot with a name of another live file (NoPrefix:
// the last run's "foo.bar" beside another writer's "foo", a file no
// registry checked against it: libpcp_mmv's, or one made while the last
// run's was away) is not carried: Start checks the registry's own names
// against the other files before it carries, and the placeholder, a
// metric nobody declares, hid the other writer's live "foo" (PCP 6.0.3
// keeps the name it reads first). Its item is kept all the same.
func TestCarriedClashWithAnotherFileDropped(t *testing.T) {
	needFileLayer(t)
	tmp, dir := pcpDir(t)
	lastRun(t, dir, "npa", mmv.NoPrefix, "foo.bar")
	old := get(t, pcptest.Info(t, tmp), "mmv.foo.bar")
	// Another writer's file, made elsewhere and put in place as a writer
	// that checks nothing would, while the last run's file was away.
	elsewhere := filepath.Join(t.TempDir(), "mmv")
	other := mmv.NewRegistry("npc", &mmv.Options{Dir: elsewhere, Flags: mmv.NoPrefix})
	mmv.NewCounter(other, "foo", "", mmv.Count).Add(3)
	mmv.NewCounter(other, "cother", "", mmv.Count).Add(4)
	startOrSkip(t, other)
	require.NoError(t, other.Close())
	last := filepath.Join(t.TempDir(), "npa")
	require.NoError(t, os.Rename(filepath.Join(dir, "npa"), last))
	require.NoError(t, copyFile(filepath.Join(elsewhere, "npc"), filepath.Join(dir, "npc")))
	require.NoError(t, copyFile(last, filepath.Join(dir, "npa")))

	r := newRegistry(t, "npa", dir, mmv.Options{Flags: mmv.NoPrefix})
	mmv.NewCounter(r, "acount", "", mmv.Count).Add(2)
	startOrSkip(t, r)
	f, err := mmvfile.Open(filepath.Join(dir, "npa"))
	require.NoError(t, err)
	for _, m := range f.Metrics {
		assert.False(t, m.Name == "foo" || strings.HasPrefix(m.Name, "foo."), "this run's file holds %q, clashing with the other live file's foo", m.Name)
	}
	ms := pcptest.Info(t, tmp)
	assert.Equal(t, "2", get(t, ms, "mmv.acount").Value)
	assert.Equal(t, "4", get(t, ms, "mmv.cother").Value)
	assert.Equal(t, "3", get(t, ms, "mmv.foo").Value, "the other file's foo")
	get(t, ms, "mmv.count") // the last run's count, carried
	rival := rivalOf("z", "foo.bar")
	mmv.NewCounter(r, rival, "", mmv.Count).Add(1)
	require.NoError(t, r.Flush())
	for _, m := range pcptest.Info(t, tmp) {
		assert.False(t, m.PMID == old.PMID, "foo.bar's PMID %s is %s's", old.PMID, m.Name)
	}
}

// TestCarriedInOverflowFile: an overflow file this run makes again after
// Start, renamed over the tombstone of the last run's, keeps the
// tombstone's metrics this run has not declared again as placeholders,
// their PMIDs kept, written with the registry's prefix; a later
// declaration of one takes its item. The file held only the metrics this
// run had declared by its first publication: the others vanished and
// came back at the next, which crashed pmcd (TestRestartOverflowKeepsPMCD).
func TestCarriedInOverflowFile(t *testing.T) {
	carriedInOverflow(t, "ovc", false)
}

// TestCarriedInOverflowFileMadeAtStart: an overflow file this run makes at
// Start (declarations before Start past the first file) replaces the last
// run's file at its name, with no tombstone between: it keeps that file's
// metrics this run has not declared yet as placeholders, as the first
// file does (TestRestartOverflowMadeAtStartKeepsPMCD).
func TestCarriedInOverflowFileMadeAtStart(t *testing.T) {
	carriedInOverflow(t, "ovs", true)
}

// carriedInOverflow runs a registry of name whose last run's <name>.2
// held c1102: this run declares <name>.2's metrics before c1102 before
// Start (atStart) or after it, then c1102, which takes its item.
func carriedInOverflow(t *testing.T, name string, atStart bool) {
	needFileLayer(t)
	tmp, dir := pcpDir(t)
	lastRunWith(t, dir, name, 0, func(r *mmv.Registry) {
		for i := range mmv.MaxMetrics + 80 {
			mmv.NewCounter(r, fmt.Sprintf("c%04d", i), "", mmv.Count).Add(5)
		}
	})
	was, err := mmvfile.Open(filepath.Join(dir, name+".2"))
	require.NoError(t, err)
	last := fileMetric(was, name+".c1102")
	require.NotNil(t, last, "the last run's c1102 in its overflow file")

	r := newRegistry(t, name, dir, mmv.Options{})
	mmv.NewCounter(r, "count", "", mmv.Count).Add(1)
	declare := func() {
		for i := range mmv.MaxMetrics + 40 { // into <name>.2, c1102 not yet
			mmv.NewCounter(r, fmt.Sprintf("c%04d", i), "", mmv.Count).Add(3)
		}
	}
	if atStart {
		declare()
		startOrSkip(t, r)
	} else {
		startOrSkip(t, r)
		declare()
		require.NoError(t, r.Flush())
	}
	now, err := mmvfile.Open(filepath.Join(dir, name+".2"))
	require.NoError(t, err)
	assert.Zero(t, now.Header.Flags&mmv.Sentinel, "this run's file, no tombstone")
	kept := fileMetric(now, name+".c1102")
	require.NotNil(t, kept, "the last run's c1102 kept, with the registry's prefix")
	assert.Equal(t, last.Item, kept.Item, "its PMID the last run's")
	assert.Equal(t, was.Header.Cluster, now.Header.Cluster)
	for _, v := range now.Values {
		assert.NotEqual(t, name+".c1102", v.Metric.Name, "a placeholder has no value")
	}
	findings, err := mmvfile.LintDir(dir)
	require.NoError(t, err)
	for _, f := range findings {
		assert.NotContains(t, []mmvfile.Rule{mmvfile.RuleDuplicateName, mmvfile.RuleNamePrefix}, f.Rule, "%v", f)
	}
	if pcptest.WantPCP(t) {
		shown := pcptest.Find(pcptest.Info(t, tmp), "mmv."+name+".c1102")
		require.NotNil(t, shown)
		assert.Empty(t, shown.Value, "PCP shows no value")
	}

	mmv.NewCounter(r, "c1102", "", mmv.Count).Add(7)
	require.NoError(t, r.Flush())
	now, err = mmvfile.Open(filepath.Join(dir, name+".2"))
	require.NoError(t, err)
	m := fileMetric(now, name+".c1102")
	require.NotNil(t, m)
	assert.Equal(t, last.Item, m.Item, "the declaration takes the placeholder's item")
	n := 0
	for _, o := range now.Metrics {
		if o.Name == name+".c1102" {
			n++
		}
	}
	assert.Equal(t, 1, n, "the placeholder dropped in the publication that shows the metric")
	if pcptest.WantPCP(t) {
		shown := pcptest.Find(pcptest.Info(t, tmp), "mmv."+name+".c1102")
		require.NotNil(t, shown)
		assert.Equal(t, "7", shown.Value)
	}
}
