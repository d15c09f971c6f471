package mmvfile_test

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/mmvfile"
)

// lintOne checks that LintDir of dir reports exactly one finding of rule,
// on file, at record, with a message holding msg, and returns it.
func lintOne(t *testing.T, dir string, rule mmvfile.Rule, file, record, msg string) mmvfile.Finding {
	t.Helper()
	fds, err := mmvfile.LintDir(dir)
	require.NoError(t, err)
	got := findings(fds, rule)
	require.Len(t, got, 1, "%s findings among %v", rule, fds)
	assert.Equal(t, file, got[0].File)
	assert.Equal(t, record, got[0].Record)
	assert.Contains(t, got[0].Msg, msg)
	return got[0]
}

func TestLintSharedCluster(t *testing.T) {
	dir := t.TempDir()
	a := writeFile(t, dir, "a", mmv.Options{Cluster: 40}, singular("x", "y"), nil)
	b := writeFile(t, dir, "b", mmv.Options{Cluster: 41}, singular("z"), func(b []byte, f *mmvfile.File) { put32(b, 36, 40) })
	lintOne(t, dir, mmvfile.RuleSharedCluster, b, "header", "cluster 40 is also "+a+"'s")
	fds, err := mmvfile.LintDir(dir)
	require.NoError(t, err)
	pmids := findings(fds, mmvfile.RulePMID)
	assert.Empty(t, pmids, "our writer's items differ: %v", pmids)

	// b's z on a's item of x: one PMID.
	item := sharePMID(t, dir, a)
	lintOne(t, dir, mmvfile.RulePMID, b, "metric [0] at offset 72 (z)",
		"PMID 70.40."+strconv.Itoa(int(item))+" is also "+a+"'s metric [0] at offset 72 (x): PCP shows the value of the file it reads first under both names")
}

// sharePMID writes file b of dir, whose metric z has the cluster and item
// of the first metric of file a, and the value 9; it returns the item.
func sharePMID(t *testing.T, dir, a string) uint32 {
	fa, err := mmvfile.Open(a)
	require.NoError(t, err)
	writeFile(t, dir, "b", mmv.Options{Cluster: 41}, singular("z"), func(b []byte, f *mmvfile.File) {
		put32(b, 36, fa.Header.Cluster)
		put32(b, metricField(f, f.Metrics[0], 0), fa.Metrics[0].Item)
		put64(b, f.Values[0].Offset, 9)
	})
	return fa.Metrics[0].Item
}

// TestSharedPMIDInPCP: PCP shows the value of one file of a cluster under
// the name of another file's metric with the same item, as RulePMID says.
func TestSharedPMIDInPCP(t *testing.T) {
	pcptest.MustHavePCP(t)
	dir := t.TempDir()
	a := writeFile(t, dir, "a", mmv.Options{Cluster: 40}, singular("x"), func(b []byte, f *mmvfile.File) { put64(b, f.Values[0].Offset, 7) })
	sharePMID(t, dir, a)
	fds, err := mmvfile.LintDir(dir)
	require.NoError(t, err)
	require.Len(t, findings(fds, mmvfile.RulePMID), 1)
	tmp := t.TempDir()
	require.NoError(t, os.Rename(dir, filepath.Join(tmp, "mmv")))
	ms := pcptest.Info(t, tmp)
	x, z := pcptest.Find(ms, "mmv.a.x"), pcptest.Find(ms, "mmv.b.z")
	require.NotNil(t, x)
	require.NotNil(t, z)
	// Which file PCP reads first is the directory's order.
	assert.Contains(t, []string{"7", "9"}, x.Value)
	assert.Equal(t, x.Value, z.Value, "both names show one file's value")
}

func TestLintIndomCollision(t *testing.T) {
	dir := t.TempDir()
	// 12<<11 | 3000 is 13<<11 | 952.
	a := writeFile(t, dir, "a", mmv.Options{Cluster: 12}, counterOver("m", 5, 2), func(b []byte, f *mmvfile.File) {
		put32(b, f.Indoms[0].Offset, 3000)
		put32(b, metricField(f, f.Metrics[0], 16), 3000)
	})
	b := writeFile(t, dir, "b", mmv.Options{Cluster: 13}, counterOver("n", 952, 2), nil)
	fd := lintOne(t, dir, mmvfile.RuleIndomCollision, b, "indom [0] at offset 104", "indom id 27576 (cluster 13, serial 952) is also "+a+"'s indom [0]")
	assert.Equal(t, uint64(104), fd.Offset)
	fds, err := mmvfile.LintDir(dir)
	require.NoError(t, err)
	assert.Len(t, findings(fds, mmvfile.RuleSerial), 1, "a's serial 3000")
}

func TestLintNames(t *testing.T) {
	dir := t.TempDir()
	a := writeFile(t, dir, "a", mmv.Options{Cluster: 50, Flags: mmv.NoPrefix}, singular("app.req", "app.dup"), nil)
	b := writeFile(t, dir, "b", mmv.Options{Cluster: 51, Flags: mmv.NoPrefix}, singular("app.req.total", "app.dup"), nil)
	fds, err := mmvfile.LintDir(dir)
	require.NoError(t, err)
	prefix := findings(fds, mmvfile.RuleNamePrefix)
	require.Len(t, prefix, 1, "%v", fds)
	assert.Equal(t, b, prefix[0].File)
	assert.Contains(t, prefix[0].Record, "(app.req.total)")
	assert.Contains(t, prefix[0].Msg, "mmv.app.req ("+a+" metric [0] at offset 72 (app.req)) is a leaf and a prefix of mmv.app.req.total: as PCP reads the directory, in no set order, it skips the leaf, or its namespace build fails")
	dup := findings(fds, mmvfile.RuleDuplicateName)
	require.Len(t, dup, 1, "%v", fds)
	assert.Equal(t, b, dup[0].File)
	assert.Contains(t, dup[0].Msg, "mmv.app.dup is also "+a+"'s metric [1] at offset 176 (app.dup): PCP skips the one it reads second")

	// A file name PCP refuses loses every metric.
	dir = t.TempDir()
	c := writeFile(t, dir, "my_app", mmv.Options{Cluster: 52}, singular("x", "y"), nil)
	require.NoError(t, os.Rename(c, filepath.Join(dir, "my-app"))) // our writer refuses the name
	c = filepath.Join(dir, "my-app")
	fds, err = mmvfile.LintDir(dir)
	require.NoError(t, err)
	names := findings(fds, mmvfile.RuleName)
	require.Len(t, names, 2)
	assert.Equal(t, c, names[0].File)
	assert.Contains(t, names[0].Msg, `"mmv.my-app.x" does not start with a letter or holds more`)
}

func TestLintCost(t *testing.T) {
	dir := t.TempDir()
	big := writeFile(t, dir, "big", mmv.Options{Cluster: 60, MaxIndomInstances: -1, MaxInstances: -1, MaxFileValues: -1}, counterOver("m", 1, 12000), nil)
	writeFile(t, dir, "small", mmv.Options{Cluster: 61}, counterOver("m", 1, 100), nil)
	fd := lintOne(t, dir, mmvfile.RuleCost, big, "values", "12000 values: a fetch of the file takes an estimated 0.036 to 0.14 s")
	assert.Contains(t, fd.Msg, "every client of pmcd waits")
	f, err := mmvfile.Open(big)
	require.NoError(t, err)
	low, high := f.FetchCost()
	assert.InDelta(t, 0.036, low, 0.001)
	assert.InDelta(t, 0.144, high, 0.001)
}

func TestLintProcesses(t *testing.T) {
	dir := t.TempDir()
	pid := deadPID(t)
	dead := writeFile(t, dir, "dead", mmv.Options{Cluster: 70, Flags: mmv.Process}, singular("x"), func(b []byte, f *mmvfile.File) { put32(b, 32, uint32(pid)) })
	writeFile(t, dir, "alive", mmv.Options{Cluster: 71, Flags: mmv.Process}, singular("x"), nil)
	// Without the Process flag a file of a dead writer is its to leave.
	writeFile(t, dir, "kept", mmv.Options{Cluster: 72}, singular("x"), func(b []byte, f *mmvfile.File) { put32(b, 32, uint32(pid)) })
	// Temporaries named as the writer names them (osfile.ParseTemp): one
	// its writer left, its lock free; one this process has just created
	// and not yet locked, empty (a locked one: osfile's TestTempAbandoned).
	tmp := filepath.Join(dir, ".app."+strconv.Itoa(pid)+".0123abcd")
	require.NoError(t, os.WriteFile(tmp, []byte("partial"), 0o644))
	ours := filepath.Join(dir, ".app."+strconv.Itoa(os.Getpid())+".89abcdef")
	require.NoError(t, os.WriteFile(ours, nil, 0o644))
	// Not a temporary: 16 random digits, which the writer never makes.
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".app."+strconv.Itoa(pid)+".0123456789abcdef"), []byte("partial"), 0o644))
	lintOne(t, dir, mmvfile.RuleDeadProcess, dead, "header", "process "+strconv.Itoa(pid)+" is gone")
	lintOne(t, dir, mmvfile.RuleTemporary, tmp, "file", "a temporary of app left by process "+strconv.Itoa(pid)+", its writer: no process holds its lock")
}

// TestLintReportsKilledWritersTemporaries: a writer SIGKILLed while it
// grows its files (metrics declared after Start) leaves the temporary it
// was writing; LintDir reports every one. It looked for names with 16
// random hex digits, where the writer writes 8, and reported none.
func TestLintReportsKilledWritersTemporaries(t *testing.T) {
	if dir := os.Getenv("MMVFILE_TEST_GROWER"); dir != "" { // the writer, until killed
		r := mmv.NewRegistry("grower", &mmv.Options{Dir: dir, Flags: mmv.Process, MaxFileValues: 200})
		mmv.NewCounter(r, "first", "", mmv.Count).Inc()
		require.NoError(t, r.Start())
		os.Stdout.WriteString("ready\n")
		for i := 0; ; i++ {
			mmv.NewCounter(r, fmt.Sprintf("late%05d", i), "", mmv.Count).Inc()
			if i%50 == 0 {
				r.Flush()
			}
		}
	}
	pcptest.NeedFileLayer(t)
	bin, err := os.Executable()
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "mmv")
	temporaries := func() []string {
		es, err := os.ReadDir(dir)
		require.NoError(t, err)
		var names []string
		for _, e := range es {
			if strings.HasPrefix(e.Name(), ".") {
				names = append(names, e.Name())
			}
		}
		return names
	}
	var temps []string
	for round := 0; round < 40 && len(temps) == 0; round++ {
		cmd := exec.Command(bin, "-test.run=^TestLintReportsKilledWritersTemporaries$", "-test.count=1")
		cmd.Env = append(os.Environ(), "MMVFILE_TEST_GROWER="+dir, "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		ready, _ := bufio.NewReader(out).ReadString('\n')
		require.Equal(t, "ready\n", ready)
		// Killed as soon as a temporary is seen, not after a sleep: the
		// publications are paced, and 40 kills at times of their own left
		// none in a CI run.
		for end := time.Now().Add(time.Second); time.Now().Before(end) && len(temporaries()) == 0; {
		}
		require.NoError(t, cmd.Process.Kill())
		cmd.Wait()
		temps = temporaries()
	}
	require.NotEmpty(t, temps, "no kill left a temporary in 40 rounds")
	fds, err := mmvfile.LintDir(dir)
	require.NoError(t, err)
	reported := map[string]bool{}
	for _, f := range findings(fds, mmvfile.RuleTemporary) {
		reported[filepath.Base(f.File)] = true
	}
	for _, tmp := range temps {
		assert.True(t, reported[tmp], "LintDir does not report %s, a temporary its writer, killed, left; findings: %v", tmp, fds)
	}
}

func TestLintInFluxAndRefused(t *testing.T) {
	dir := t.TempDir()
	flux := writeFile(t, dir, "flux", mmv.Options{Cluster: 80}, singular("x"), func(b []byte, f *mmvfile.File) { put64(b, 16, 0) })
	bad := writeFile(t, dir, "bad", mmv.Options{Cluster: 81}, singular("x"), func(b []byte, f *mmvfile.File) { b[0] = 'X' })
	lintOne(t, dir, mmvfile.RuleInFlux, flux, "header", "gen1 ")
	lintOne(t, dir, mmvfile.RuleRefused, bad, "file", "mmvfile: bad magic")
}

func TestLintGroup(t *testing.T) {
	g, err := user.LookupGroup("pcp")
	if err != nil {
		t.Skip("no group pcp here")
	}
	pcpGID, err := strconv.Atoi(g.Gid)
	require.NoError(t, err)
	dir := t.TempDir()
	path := writeFile(t, dir, "grouped", mmv.Options{Cluster: 90}, singular("x"), nil)
	other := os.Getgid()
	if other == pcpGID {
		t.Skip("this process runs in group pcp")
	}
	require.NoError(t, os.Chown(path, -1, other))
	lintOne(t, dir, mmvfile.RuleGroup, path, "file", "group id "+strconv.Itoa(other)+" is not PCP's ("+g.Gid+"); others may read it, so PCP does")
	require.NoError(t, os.Chmod(path, 0o640))
	lintOne(t, dir, mmvfile.RuleGroup, path, "file", "others may not read it")
	if os.Geteuid() == 0 {
		require.NoError(t, os.Chown(path, -1, pcpGID))
		fds, err := mmvfile.LintDir(dir)
		require.NoError(t, err)
		assert.Empty(t, findings(fds, mmvfile.RuleGroup))
	}
}

// TestLintClean: our writer's files, each on its own cluster, have no
// hazard.
func TestLintClean(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a", mmv.Options{Cluster: 100}, counterOver("m", 1, 3), nil)
	writeFile(t, dir, "b", mmv.Options{Cluster: 101}, singular("x", "y.z"), nil)
	g, err := user.LookupGroup("pcp")
	if err == nil && os.Geteuid() == 0 {
		gid, _ := strconv.Atoi(g.Gid)
		for _, n := range []string{"a", "b"} {
			require.NoError(t, os.Chown(filepath.Join(dir, n), -1, gid))
		}
	}
	fds, err := mmvfile.LintDir(dir)
	require.NoError(t, err)
	var other []mmvfile.Finding
	for _, f := range fds {
		if f.Rule != mmvfile.RuleGroup { // when not root, files are in our group
			other = append(other, f)
		}
	}
	assert.Empty(t, other)
	_, err = mmvfile.LintDir(filepath.Join(dir, "missing"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestFindingString(t *testing.T) {
	f := mmvfile.Finding{File: "/d/app", Record: "metric [0] at offset 312 (x)", Offset: 312, Rule: mmvfile.RuleItem, Msg: "PCP skips the metric: item 2000 is more than 1023"}
	assert.Equal(t, "/d/app: metric [0] at offset 312 (x): item: PCP skips the metric: item 2000 is more than 1023", f.String())
	var b bytes.Buffer
	b.WriteString(f.String())
	assert.True(t, strings.HasPrefix(b.String(), "/d/app: "))
}

// TestLintAgentNames: the MMV agent's own metrics, mmv.control.*, are in
// PCP's namespace before any file's: a file called control loses a metric
// called files (PCP shows its own) and empties the namespace with one
// under it, and so on PCP 7 with metrics (6.0.3 loads both); so does a
// NoPrefix metric mmv.control.
func TestLintAgentNames(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "mmv")
	require.NoError(t, os.Mkdir(dir, 0o755))
	path := filepath.Join(dir, "control")
	// control writes the file control of metrics names, patched by patch:
	// our writer refuses the name, so the file is renamed.
	control := func(patch func(b []byte, f *mmvfile.File), names ...string) {
		require.NoError(t, os.Rename(writeFile(t, dir, "xontrol", mmv.Options{Cluster: 60}, singular(names...), patch), path))
	}
	for _, c := range []struct {
		name, owner string
		agents      bool // the agent has the name: PCP skips the file's
	}{
		{"files", "the MMV agent's own metric", true},
		// PCP 7's mmv.control.metrics, a free name on 6.0.3.
		{"metrics", "the MMV agent's own metric in PCP 7, not in 6.0.3", pcptest.AtLeast(7, 2)},
	} {
		full := "mmv.control." + c.name
		control(func(b []byte, f *mmvfile.File) { put64(b, f.Values[0].Offset, 7) }, c.name, "other")
		lintOne(t, dir, mmvfile.RuleDuplicateName, path, "metric [0] at offset 72 ("+c.name+")", "PCP skips the metric: "+full+" is "+c.owner)
		if pcptest.WantPCP(t) {
			m := pcptest.Find(pcptest.Info(t, tmp), full)
			require.NotNil(t, m)
			if c.agents {
				assert.NotEqual(t, "7", m.Value, "%s: PCP shows its own metric", full)
			} else {
				assert.Equal(t, "7", m.Value, "%s: %s shows the file's", full, pcptest.Version())
			}
		}

		control(nil, c.name+".x", "other")
		lintOne(t, dir, mmvfile.RuleNamePrefix, path, "metric [0] at offset 72 ("+c.name+".x)",
			full+" is a leaf and a prefix of "+full+".x ("+c.owner+")")
		if pcptest.WantPCP(t) {
			_, out := pcpNames(t, "control", mustRead(t, path))
			if c.agents {
				assert.Contains(t, out, "Unknown metric name", "%s.x: the namespace is broken", full)
			} else {
				assert.Contains(t, out, full+".x\n", "%s lists it", pcptest.Version())
			}
		}
	}

	require.NoError(t, os.Remove(path))
	writeFile(t, dir, "noprefix", mmv.Options{Cluster: 61, Flags: mmv.NoPrefix}, singular("control_"), func(b []byte, f *mmvfile.File) {
		b[f.Metrics[0].Offset+7] = 0 // "control"
	})
	lintOne(t, dir, mmvfile.RuleNamePrefix, filepath.Join(dir, "noprefix"), "metric [0] at offset 72 (control)",
		"PCP skips the metric: mmv.control is a prefix of mmv.control.reload (the MMV agent's own metric), which PCP takes first")
	if pcptest.WantPCP(t) {
		names, stderr := pcpNames(t, "noprefix", mustRead(t, filepath.Join(dir, "noprefix")))
		assert.Empty(t, names, "PCP skips it, and its namespace holds")
		assert.NotContains(t, stderr, "Unknown metric name")
	}
}

// TestLintPrefixOrder: PCP takes a file's names in order. A leaf taken
// before a name under it breaks PCP's namespace; a name under it taken
// first makes PCP skip the leaf.
func TestLintPrefixOrder(t *testing.T) {
	for _, c := range []struct {
		order  []string
		broken bool
	}{{[]string{"a_b", "a_b_c", "z"}, true}, {[]string{"a_b_c", "a_b", "z"}, false}} {
		dir := t.TempDir()
		path := writeFile(t, dir, "f", mmv.Options{Cluster: 61}, func(r *mmv.Registry) {
			for i, n := range c.order {
				require.NoError(t, r.AddMetric(mmv.Metric{Name: n, Item: uint32(i + 1), Type: mmv.Uint64, Semantics: mmv.SemCounter}))
			}
		}, func(b []byte, f *mmvfile.File) {
			for _, m := range f.Metrics { // a_b is a.b, a_b_c a.b.c: our writer refuses them
				for j := range len(m.Name) {
					if m.Name[j] == '_' {
						b[m.Offset+uint64(j)] = '.'
					}
				}
			}
		})
		fds, err := mmvfile.LintDir(dir)
		require.NoError(t, err)
		got := findings(fds, mmvfile.RuleNamePrefix)
		require.Len(t, got, 1, "%v", fds)
		if c.broken {
			assert.Contains(t, got[0].Record, "(a.b.c)")
			assert.Contains(t, got[0].Msg, "namespace build fails")
		} else {
			assert.Contains(t, got[0].Record, "(a.b)")
			assert.Contains(t, got[0].Msg, "PCP skips the metric: mmv.f.a.b is a prefix of mmv.f.a.b.c")
		}
		if pcptest.WantPCP(t) {
			names, stderr := pcpNames(t, "f", mustRead(t, path))
			if c.broken {
				assert.Contains(t, stderr, "Unknown metric name", "%v: the namespace is broken", c.order)
			} else {
				assert.ElementsMatch(t, []string{"mmv.f.a.b.c", "mmv.f.z"}, names, "%v", c.order)
			}
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

// TestLintLabelNames: a label name or map key PCP 6.0.3 refuses is
// reported with what each PCP does with the label (TestReadsWhatPCPReads
// shows both).
func TestLintLabelNames(t *testing.T) {
	const rule = " is not a letter then letters, digits and '_': "
	for payload, want := range map[string]string{
		`{"a-b":"x"}`:       `the name "a-b"` + rule + "PCP drops the label",
		`{"9pp":"x"}`:       `the name "9pp"` + rule + "PCP 6.0.3 drops the label (7.2 keeps it)",
		`{"_pp":"x"}`:       `the name "_pp"` + rule + "PCP 6.0.3 drops the label (7.2 keeps it)",
		`{"app":{"b-d":2}}`: `the key "b-d"` + rule + "PCP 6.0.3 drops the label (7.2 drops the key)",
		`{"app":{"9k":1}}`:  `the key "9k"` + rule + "PCP 6.0.3 drops the label (7.2 keeps it)",
	} {
		valid := sample(t, 3)
		f, err := mmvfile.Parse(valid)
		require.NoError(t, err)
		b := bytes.Clone(valid)
		copy(b[f.Labels[0].Offset+12:], payload+"\x00")
		got, err := mmvfile.Parse(b)
		require.NoError(t, err)
		fds := findings(got.Lint("sample"), mmvfile.RuleLabel)
		require.Len(t, fds, 1, payload)
		assert.Equal(t, payload+": "+want, fds[0].Msg)
	}
}

// TestLintLinearInInstances: Lint finds the instances an indom does not
// list in a set of those it lists, where a search of the indom's list for
// each took 9 s for one indom of 250,000 instances, a file libpcp_mmv
// writes. The deadline guards against the search, not a speed.
func TestLintLinearInInstances(t *testing.T) {
	const n = 250_000
	b := rawV1(1, n, n, 1)
	f, err := mmvfile.Parse(b)
	require.NoError(t, err)
	var fds []mmvfile.Finding
	within(t, 5*time.Second, "Lint of one indom of 250,000 instances", func() { fds = f.Lint("big") })
	assert.Equal(t, []mmvfile.Rule{mmvfile.RuleCost}, rules(fds))
}

// TestLintDuplicateItemOfSkippedRecord: PCP's reader skips a metric whose
// item an earlier record has, whether or not it loaded that record ("duplicate
// item 5 - [0] and [1] ..., second will be ignored" of a record [0] skipped
// for its name): Lint says so (File.itemOwners), where it reserved the
// items of loaded metrics only, and LintDir counted the second as live.
func TestLintDuplicateItemOfSkippedRecord(t *testing.T) {
	valid := sample(t, 1)
	f, err := mmvfile.Parse(valid)
	require.NoError(t, err)
	b := bytes.Clone(valid)
	b[f.Metrics[0].Offset+1] = '-' // r-quests: a name PCP refuses
	put32(b, metricField(f, f.Metrics[1], 0), f.Metrics[0].Item)
	if pcptest.WantPCP(t) {
		ms := pcpView(t, "sample", b)
		assert.Nil(t, pcptest.Find(ms, "mmv.sample.r-quests"), "PCP skips the first for its name")
		assert.Nil(t, pcptest.Find(ms, sampleMetric(f, 1)), "and the second for its item")
		assert.NotNil(t, pcptest.Find(ms, sampleMetric(f, 2)), "and loads the third")
	}
	got, err := mmvfile.Parse(b)
	require.NoError(t, err)
	var second []mmvfile.Rule
	for _, fd := range got.Lint("sample") {
		if fd.Offset == f.Metrics[1].Offset {
			second = append(second, fd.Rule)
		}
	}
	assert.Contains(t, second, mmvfile.RuleDuplicateItem, "Lint says nothing of the metric PCP skips: %v", got.Lint("sample"))
}

// TestLintElapsedAsPCPExportsIt: PCP's reader exports every Elapsed metric
// as a counter in microseconds, whatever semantics and units its record
// holds, so Lint finds nothing in them, where it said "semantics 2: PCP
// exports it as it is" and that the units had no name.
func TestLintElapsedAsPCPExportsIt(t *testing.T) {
	valid := sample(t, 1)
	f, err := mmvfile.Parse(valid)
	require.NoError(t, err)
	busy := f.Metrics[2]
	require.Equal(t, "busy", busy.Name)
	b := bytes.Clone(valid)
	put32(b, metricField(f, busy, 8), 2)           // semantics 2
	put32(b, metricField(f, busy, 12), 0x01009000) // time, scale 9
	if pcptest.WantPCP(t) {
		m := pcptest.Find(pcpView(t, "sample", b), sampleMetric(f, 2))
		require.NotNil(t, m)
		assert.Equal(t, "counter", m.Semantics)
		assert.Equal(t, "microsec", m.Units)
	}
	got, err := mmvfile.Parse(b)
	require.NoError(t, err)
	for _, fd := range got.Lint("sample") {
		if fd.Offset == busy.Offset {
			assert.NotContains(t, []mmvfile.Rule{mmvfile.RuleSemantics, mmvfile.RuleUnits}, fd.Rule,
				"a hazard PCP does not have: %s", fd)
		}
	}
}

// TestLintEmptyNameLoaded: PCP loads a metric of an empty name as
// mmv.<file>. (TestReadsWhatPCPReads/empty_name), and Lint says so, where
// it said PCP skips it and took its name and item for free.
func TestLintEmptyNameLoaded(t *testing.T) {
	valid := sample(t, 1)
	f, err := mmvfile.Parse(valid)
	require.NoError(t, err)
	b := bytes.Clone(valid)
	b[f.Metrics[1].Offset] = 0
	if pcptest.WantPCP(t) {
		assert.NotNil(t, pcptest.Find(pcpView(t, "sample", b), "mmv.sample."), "PCP loads it")
	}
	got, err := mmvfile.Parse(b)
	require.NoError(t, err)
	var found bool
	for _, fd := range got.Lint("sample") {
		if fd.Offset == f.Metrics[1].Offset && fd.Rule == mmvfile.RuleName {
			found = true
			assert.NotContains(t, fd.Msg, "PCP skips the metric", "%s", fd)
		}
	}
	assert.True(t, found, "a name finding for the empty name")
}

// TestLintDirFollowsSymlinks: PCP's reader follows a symbolic link in
// its directory to an MMV file, and so does LintDir, where it skipped
// every entry that was not a regular file: two files on cluster 12, one
// reached by a link, whose PMIDs collide in PCP, are a shared cluster.
func TestLintDirFollowsSymlinks(t *testing.T) {
	b := sample(t, 1)
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "mmv")
	require.NoError(t, os.Mkdir(dir, 0o755))
	require.NoError(t, os.Mkdir(filepath.Join(tmp, "elsewhere"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a"), b, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(tmp, "elsewhere", "b"), b, 0o644))
	require.NoError(t, os.Symlink(filepath.Join("..", "elsewhere", "b"), filepath.Join(dir, "b")))
	if pcptest.WantPCP(t) {
		ms := pcptest.Info(t, tmp)
		assert.NotNil(t, pcptest.Find(ms, "mmv.a.requests"))
		assert.NotNil(t, pcptest.Find(ms, "mmv.b.requests"), "PCP loads the file behind the link")
	}
	fds, err := mmvfile.LintDir(dir)
	require.NoError(t, err)
	assert.NotEmpty(t, findings(fds, mmvfile.RuleSharedCluster), "two files on cluster 12: %v", fds)
}

// TestLintDirSymlinkLoop: a symbolic link LintDir cannot follow (a loop),
// which PCP's reader skips, is skipped, where the whole directory's lint
// failed.
func TestLintDirSymlinkLoop(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mmv")
	require.NoError(t, os.Mkdir(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a"), sample(t, 1), 0o644))
	require.NoError(t, os.Symlink("loop", filepath.Join(dir, "loop")))
	_, err := mmvfile.LintDir(dir)
	assert.NoError(t, err, "one looping link fails the lint of the directory")
}

// TestLintProcessFlagNegativePID: PCP's reader skips a file with the
// Process flag whose process id is negative ("owning process PID -5
// vanished", 6.0.3 and 7.2), as it skips one of a process gone; one of
// process id 0 it loads, never looking for the process.
func TestLintProcessFlagNegativePID(t *testing.T) {
	for _, c := range []struct {
		pid     int32
		skipped bool
	}{{-5, true}, {-1, true}, {math.MinInt32, true}, {0, false}} {
		dir := t.TempDir()
		path := writeFile(t, dir, "app", mmv.Options{Cluster: 70, Flags: mmv.Process}, singular("x"), func(b []byte, f *mmvfile.File) {
			put32(b, 32, uint32(c.pid))
		})
		if pcptest.WantPCP(t) {
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, c.skipped, pcptest.Find(pcpView(t, "app", b), "mmv.app.x") == nil, "pid %d: PCP skips the file", c.pid)
		}
		fds, err := mmvfile.LintDir(dir)
		require.NoError(t, err)
		got := findings(fds, mmvfile.RuleDeadProcess)
		if !c.skipped {
			assert.Empty(t, got, "pid %d", c.pid)
			continue
		}
		require.Len(t, got, 1, "pid %d: %v", c.pid, fds)
		assert.Equal(t, "header", got[0].Record)
		assert.Contains(t, got[0].Msg, "process id "+strconv.Itoa(int(c.pid))+" is no process: PCP skips the file")
	}
}

// TestLintLabelsAsPCPParsesThem: Lint reads a label's JSON as PCP's
// reader does: whitespace before the object is JSON (PCP keeps the
// label); a name taken twice drops it, as PCP names them flattened: the
// keys of two maps of one name are merged, and dropped when one is taken
// twice; the keys of the maps in an array are keys.
func TestLintLabelsAsPCPParsesThem(t *testing.T) {
	const rule = " is not a letter then letters, digits and '_': "
	for _, c := range []struct {
		payload string
		want    string // the finding, "" for none
		// shown: PCP 6.0.3 shows the label; shown72: 7.2 does.
		shown, shown72 bool
	}{
		{` {"zz":1}`, "", true, true},
		{"\n\t{\"zz\":1}", "", true, true},
		{`{"zz":1,"zz":2}`, `the name "zz" is in the label twice: PCP drops the label`, false, false},
		{`{"zz":[1],"zz":[2]}`, `the name "zz" is in the label twice: PCP drops the label`, false, false},
		{`{"zz":{"b":1,"b":2}}`, `the name "zz.b" is in the label twice: PCP drops the label`, false, false},
		{`{"zz":{"b":1},"zz":{"b":2}}`, `the name "zz.b" is in the label twice: PCP drops the label`, false, false},
		{`{"zz":{"b":{"c":1}},"zz":{"b":2}}`, "", true, true},
		{`{"zz":{"b":1},"zz":{"c":2}}`, "", true, true},
		{`{"zz":[{"b":1},{"b":2}]}`, "", true, true},
		{`{"zz":[1,{"b-c":2}]}`, `the key "b-c"` + rule + "PCP 6.0.3 drops the label (7.2 drops the key)", false, true},
		{`{"zz":[{"_b":1}]}`, `the key "_b"` + rule + "PCP 6.0.3 drops the label (7.2 keeps it)", false, true},
	} {
		valid := sample(t, 3)
		f, err := mmvfile.Parse(valid)
		require.NoError(t, err)
		b := bytes.Clone(valid)
		copy(b[f.Labels[0].Offset+12:], c.payload+"\x00")
		if pcptest.WantPCP(t) {
			m := pcptest.Find(pcpView(t, "sample", b), sampleMetric(f, 0))
			require.NotNil(t, m)
			shown := c.shown
			if pcptest.AtLeast(7, 2) {
				shown = c.shown72
			}
			assert.Equal(t, shown, strings.Contains(m.Labels, `"zz`), "%s: PCP shows the label: %s", c.payload, m.Labels)
		}
		got, err := mmvfile.Parse(b)
		require.NoError(t, err)
		fds := findings(got.Lint("sample"), mmvfile.RuleLabel)
		if c.want == "" {
			assert.Empty(t, fds, c.payload)
			continue
		}
		if assert.Len(t, fds, 1, c.payload) {
			assert.Equal(t, c.payload+": "+c.want, fds[0].Msg)
		}
	}
}

// TestLintLabelNamedAsPCPs: a file's label named as one PCP puts on
// every metric itself is shown by PCP in place of its own, and Lint says
// so (pcp-label); package mmv refuses to write one.
func TestLintLabelNamedAsPCPs(t *testing.T) {
	for _, name := range []string{"hostname", "agent", "machineid"} {
		valid := sample(t, 3)
		f, err := mmvfile.Parse(valid)
		require.NoError(t, err)
		b := bytes.Clone(valid)
		payload := `{"` + name + `":"ours"}`
		copy(b[f.Labels[0].Offset+12:], payload+"\x00") // the cluster's label, app
		if pcptest.WantPCP(t) {
			m := pcptest.Find(pcpView(t, "sample", b), sampleMetric(f, 1))
			require.NotNil(t, m)
			got, _ := m.Label(name)
			assert.Equal(t, `"ours"`, got, "PCP shows the file's %s in place of its own: %s", name, m.Labels)
		}
		got, err := mmvfile.Parse(b)
		require.NoError(t, err)
		fds := got.Lint("sample")
		assert.Empty(t, findings(fds, mmvfile.RuleLabel), name)
		if pcp := findings(fds, mmvfile.RulePCPLabel); assert.Len(t, pcp, 1, name) {
			assert.Equal(t, payload+": PCP labels every metric with "+name+" itself, and shows this one in its place", pcp[0].Msg)
		}
	}
	valid := sample(t, 3)
	f, err := mmvfile.Parse(valid)
	require.NoError(t, err)
	assert.Empty(t, findings(f.Lint("sample"), mmvfile.RulePCPLabel), "the sample's own labels")
}

// TestLintClusterLabelOfClusterZero: in a file of cluster 0 PCP's reader
// gives the file a cluster of its own choosing, never 0: a cluster label
// of identity 0 it never shows, one of another identity only while it
// picks that cluster. Lint said the first was the file's, and that PCP
// never showed the second, which PCP showed on a host of no other file.
func TestLintClusterLabelOfClusterZero(t *testing.T) {
	for _, c := range []struct {
		identity uint32
		shown    bool // by PCP, the file alone: PCP picks cluster 1
		want     string
	}{
		{0, false, "the file's cluster is 0, for which PCP picks one of its own, never 0: PCP never shows the label"},
		{1, true, "the file's cluster is 0, for which PCP picks one of its own: PCP shows the label while it picks cluster 1"},
	} {
		valid := sample(t, 3)
		f, err := mmvfile.Parse(valid)
		require.NoError(t, err)
		b := bytes.Clone(valid)
		put32(b, 36, 0)
		put32(b, f.Labels[0].Offset+4, c.identity) // the cluster's label, app
		if pcptest.WantPCP(t) {
			m := pcptest.Find(pcpView(t, "sample", b), sampleMetric(f, 1))
			require.NotNil(t, m)
			_, ok := m.Label("app")
			assert.Equal(t, c.shown, ok, "identity %d: PCP shows the label", c.identity)
		}
		got, err := mmvfile.Parse(b)
		require.NoError(t, err)
		fds := findings(got.Lint("sample"), mmvfile.RuleLabel)
		require.Len(t, fds, 1, "identity %d", c.identity)
		assert.Equal(t, `{"app":"x"}: flags 0x8, identity `+strconv.Itoa(int(c.identity))+": "+c.want, fds[0].Msg)
	}
}

// TestLintLinearInIndoms: Lint finds a metric's or a label's indom by its
// serial in a set, where a walk of every indom for each of 1,023 metrics
// over an indom the file lacks made Lint of a hostile 10 MB file of
// 300,000 indoms three times as long as of one metric (of 1,000,000, six
// times, 13 s). The bound guards against the walk, not a speed: the two
// Lints report the same 300,000 serials past 2047, which cost them alike.
// Each is the fastest of three runs, alternated: alike, once of each
// varied by 2x either way on a loaded 2-core machine (2.8 s against 1.3 s,
// a failure of go test ./...).
func TestLintLinearInIndoms(t *testing.T) {
	const n = 300_000
	lint := func(metrics int) time.Duration {
		f, err := mmvfile.Parse(indomsAndMetrics(n, metrics, 5_000_000))
		require.NoError(t, err)
		start := time.Now()
		fds := f.Lint("big")
		took := time.Since(start)
		assert.Len(t, findings(fds, mmvfile.RuleMissingIndom), metrics)
		return took
	}
	one, all := time.Duration(math.MaxInt64), time.Duration(math.MaxInt64)
	for range 3 {
		one, all = min(one, lint(1)), min(all, lint(mmv.MaxMetrics))
	}
	t.Logf("Lint of %d indoms: 1 metric %v, %d metrics %v", n, one, mmv.MaxMetrics, all)
	assert.Less(t, all, 2*one, "Lint walks the indoms for each metric")
}
