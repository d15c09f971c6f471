package mmv_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/mmvfile"
)

// autoItem is the item a metric declared without one takes when no other
// name is in its way: FNV-1a of the name, 1..1023.
func autoItem(name string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(name))
	return 1 + h.Sum32()%mmv.MaxItem
}

// collider returns a name that sorts before name and has the same item.
func collider(name string) string {
	for i := 0; ; i++ {
		c := "a" + strconv.Itoa(i)
		if c < name && autoItem(c) == autoItem(name) {
			return c
		}
	}
}

// pmids returns the PMID PCP's reader shows for each of the file's metrics,
// by metric name below mmv.<file>.
func pmids(t *testing.T, tmp, file string) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, m := range pcptest.Info(t, tmp) {
		if name, ok := strings.CutPrefix(m.Name, "mmv."+file+"."); ok {
			got[name] = m.PMID
		}
	}
	return got
}

// TestIdentityKeptAfterStart: a metric's PMID, once published, does not
// move when metrics declared after Start would have taken its item in a
// fresh assignment: first one that sorts before it and collides with it,
// then 300 more.
func TestIdentityKeptAfterStart(t *testing.T) {
	tmp := t.TempDir()
	r := mmv.NewRegistry("ids", &mmv.Options{Dir: filepath.Join(tmp, "mmv"), Cluster: 12})
	defer r.Close()
	counter := func(name string) mmv.Metric {
		return mmv.Metric{Name: name, Type: mmv.Uint64, Semantics: mmv.SemCounter}
	}
	require.NoError(t, r.AddMetric(counter("zeta")))
	startOrSkip(t, r)
	before := pmids(t, tmp, "ids")
	require.Equal(t, fmt.Sprintf("70.12.%d", autoItem("zeta")), before["zeta"])

	first := collider("zeta")
	require.NoError(t, r.AddMetric(counter(first)))
	for i := range 300 {
		require.NoError(t, r.AddMetric(counter(fmt.Sprintf("svc%d.requests_%d", i%7, i))))
	}
	require.NoError(t, r.Flush())
	after := pmids(t, tmp, "ids")
	assert.Equal(t, before["zeta"], after["zeta"], "zeta's PMID moved")
	assert.NotEqual(t, after["zeta"], after[first])
	assert.Len(t, after, 302)

	// Every PMID published so far stays through another round.
	for i := range 300 {
		require.NoError(t, r.AddMetric(counter(fmt.Sprintf("late%d", i))))
	}
	require.NoError(t, r.Flush())
	again := pmids(t, tmp, "ids")
	for name, id := range after {
		assert.Equal(t, id, again[name], "PMID of %s moved", name)
	}
}

// TestIdentityOnRestart: the same set of names gets the same items
// whatever the order of declaration, so a restarted program keeps its
// PMIDs.
func TestIdentityOnRestart(t *testing.T) {
	names := []string{"zeta", collider("zeta"), "alpha", "beta", "gamma"}
	run := func(order []string) map[string]string {
		tmp := t.TempDir()
		r := mmv.NewRegistry("ids", &mmv.Options{Dir: filepath.Join(tmp, "mmv"), Cluster: 12})
		defer r.Close()
		for _, n := range order {
			require.NoError(t, r.AddMetric(mmv.Metric{Name: n, Type: mmv.Uint64, Semantics: mmv.SemCounter}))
		}
		startOrSkip(t, r)
		return pmids(t, tmp, "ids")
	}
	reversed := []string{names[4], names[3], names[2], names[1], names[0]}
	assert.Equal(t, run(names), run(reversed))
}

// TestLivePMIDThroughPMCD: pmval, which looks a name up once and then
// fetches by PMID, keeps showing the metric it was given while other
// metrics, one colliding with it, are declared and published.
func TestLivePMIDThroughPMCD(t *testing.T) {
	t.Parallel() // it waits on pmval
	p := pcptest.MustHavePMCD(t)
	pmval, err := exec.LookPath("pmval")
	require.NoError(t, err)
	name := fmt.Sprintf("live%d", os.Getpid())
	pcptest.RemoveClosedRecords(t, p.Dir, name)
	// A derived cluster: the host's directory is shared with other
	// programs, and a fixed one may be taken there (ErrClusterInUse).
	r := mmv.NewRegistry(name, &mmv.Options{Dir: p.Dir, Flags: mmv.Process})
	defer r.Close()
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "zeta", Type: mmv.Uint64, Semantics: mmv.SemInstant}))
	startOrSkip(t, r)
	zeta, err := r.Value("zeta", "")
	require.NoError(t, err)
	zeta.Set(777)
	// Wait until pmcd's agent has loaded the file.
	require.Eventually(t, func() bool {
		ms, err := p.Fetch(context.Background(), "mmv."+name+".zeta")
		return err == nil && len(ms) == 1 && ms[0].Value == "777"
	}, 10*time.Second, 50*time.Millisecond)

	// pmval samples every 0.2 s (100 times, stopped long before); its
	// lines come as it prints them (stdbuf: pmval's stdio buffers a pipe
	// whole). Once it has shown a value (it has looked the name up), the
	// metrics are declared and published, and it must go on showing
	// zeta's value for five more samples, fetched by the PMID it holds.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "stdbuf", "-oL", pmval, "-t", "0.2", "-s", "100", "-f", "0", "mmv."+name+".zeta")
	cmd.Env = append(os.Environ(), "PCP_TMP_DIR=")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = cmd.Stdout
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan string)
	go func() {
		defer close(lines)
		for s := bufio.NewScanner(stdout); s.Scan(); {
			lines <- s.Text()
		}
	}()
	var out strings.Builder
	var values []string
	header := true // up to "interval:"; then one value per line
	sample := func() {
		t.Helper()
		for {
			line, ok := <-lines
			require.True(t, ok, "pmval ended: %s", out.String())
			out.WriteString(line + "\n")
			if header {
				header = !strings.Contains(line, "interval:")
			} else if f := strings.Fields(line); len(f) > 0 {
				values = append(values, f[len(f)-1])
				return
			}
		}
	}
	sample()
	first := collider("zeta")
	require.NoError(t, r.AddMetric(mmv.Metric{Name: first, Type: mmv.Uint64, Semantics: mmv.SemInstant}))
	v, err := r.Value(first, "")
	require.NoError(t, err)
	v.Set(111)
	for i := range 50 {
		require.NoError(t, r.AddMetric(mmv.Metric{Name: fmt.Sprintf("more%d", i), Type: mmv.Uint64, Semantics: mmv.SemInstant}))
	}
	require.NoError(t, r.Flush())
	for range 5 {
		sample()
	}
	t.Log(out.String())
	for _, v := range values {
		assert.Equal(t, "777", v, "pmval showed another metric's value")
	}
}

// TestFailedStartIsUndone: when an overflow file cannot be made, Start
// fails whole: nothing stays on disk, the registry is still declaring, no
// handle is given out, Close touches no descriptor of the program, and
// Start succeeds once the obstacle is gone.
func TestFailedStartIsUndone(t *testing.T) {
	needFileLayer(t)
	dir := filepath.Join(t.TempDir(), "mmv")
	r := mmv.NewRegistry("over", &mmv.Options{Dir: dir, Cluster: 30})
	for i := range mmv.MaxMetrics + 5 {
		require.NoError(t, r.AddMetric(mmv.Metric{Name: fmt.Sprintf("m%d", i), Type: mmv.Uint64, Semantics: mmv.SemCounter}))
	}
	// Something that is not ours where the overflow file goes.
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "over.2"), 0o755))

	// A descriptor of the program's own, to see that no one closes it.
	own, err := os.Open(os.DevNull)
	require.NoError(t, err)
	defer own.Close()

	err = r.Start()
	require.Error(t, err)
	t.Log(err)
	assert.Equal(t, []string{"over.2"}, entries(t, dir), "a failed Start left files")
	_, err = r.Value("m0", "")
	assert.ErrorIs(t, err, mmv.ErrNotStarted)
	assert.NoError(t, r.Flush())

	require.NoError(t, os.Remove(filepath.Join(dir, "over.2")))
	require.NoError(t, r.Start(), "Start again once the way is clear")
	v, err := r.Value(fmt.Sprintf("m%d", mmv.MaxMetrics+2), "")
	require.NoError(t, err)
	v.Add(5)
	assert.Equal(t, int64(5), v.Int())
	require.NoError(t, r.Close())
	require.NoError(t, r.Close(), "Close twice")
	_, err = own.Stat()
	assert.NoError(t, err, "the program's descriptor was closed")
}

// TestOverflowNameCheckedAtDeclaration: a file name that fits but whose
// overflow name does not is refused when the metric that needs an
// overflow file is declared, not at Start.
func TestOverflowNameCheckedAtDeclaration(t *testing.T) {
	needFileLayer(t)
	dir := filepath.Join(t.TempDir(), "mmv")
	name := "f" + strings.Repeat("x", 236) // 237 bytes, the longest file name
	r := mmv.NewRegistry(name, &mmv.Options{Dir: dir, Flags: mmv.NoPrefix})
	defer r.Close()
	for i := range mmv.MaxMetrics {
		require.NoError(t, r.AddMetric(mmv.Metric{Name: fmt.Sprintf("m%d", i), Type: mmv.Uint64, Semantics: mmv.SemCounter}))
	}
	err := r.AddMetric(mmv.Metric{Name: "one_too_many", Type: mmv.Uint64, Semantics: mmv.SemCounter})
	require.ErrorIs(t, err, mmv.ErrTooLong)
	assert.Contains(t, err.Error(), name+".2")
	require.NoError(t, r.Start(), "the refused metric is not declared")
}

// TestOverflowClustersDoNotCollide: an overflow file never takes a
// cluster another registry of the process uses.
func TestOverflowClustersDoNotCollide(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "mmv")
	a := mmv.NewRegistry("appa", &mmv.Options{Dir: dir, Cluster: 10})
	b := mmv.NewRegistry("appb", &mmv.Options{Dir: dir, Cluster: 11})
	defer a.Close()
	defer b.Close()
	require.NoError(t, b.AddMetric(mmv.Metric{Name: "only", Type: mmv.Uint64, Semantics: mmv.SemCounter}))
	startOrSkip(t, b)
	for i := range mmv.MaxMetrics + 3 {
		require.NoError(t, a.AddMetric(mmv.Metric{Name: fmt.Sprintf("m%d", i), Type: mmv.Uint64, Semantics: mmv.SemCounter}))
	}
	startOrSkip(t, a)
	// The cluster of every file, from the PMIDs of its metrics.
	clusters := map[string]map[string]bool{"appa": {}, "appb": {}}
	for _, m := range pcptest.Info(t, tmp) {
		app, _, _ := strings.Cut(strings.TrimPrefix(m.Name, "mmv."), ".")
		if clusters[app] != nil {
			clusters[app][strings.Split(m.PMID, ".")[1]] = true
		}
	}
	assert.Len(t, clusters["appa"], 2, "appa's two files")
	for c := range clusters["appb"] {
		assert.False(t, clusters["appa"][c], "appa and appb share cluster %s", c)
	}
}

// TestGaugesExactUnderGrowth: gauges set and added while the file grows
// end on what was written: a set gauge on its last Set, an added one on
// the sum of its adds, one set once and then added to on that and the sum
// (growth steps lost its adds before). Timing decides which interleavings this one meets;
// TestMergeInterleavings makes each one a growth step can meet happen
// every run.
func TestGaugesExactUnderGrowth(t *testing.T) { eachLayout(t, testGaugesExactUnderGrowth) }

func testGaugesExactUnderGrowth(t *testing.T, pad bool) {
	const gauges, rounds = 400, 2000
	r := mmv.NewRegistry("gauges", &mmv.Options{Dir: filepath.Join(t.TempDir(), "mmv"), PadValues: pad})
	defer r.Close()
	set := make([]*mmv.Gauge, gauges)
	iset := make([]*mmv.IntGauge, gauges)
	added := make([]*mmv.IntGauge, gauges)
	mixed, fmixed := make([]*mmv.IntGauge, gauges), make([]*mmv.Gauge, gauges)
	for i := range gauges {
		set[i] = mmv.NewGauge(r, fmt.Sprintf("set%d", i), "set", mmv.Count)
		iset[i] = mmv.NewIntGauge(r, fmt.Sprintf("iset%d", i), "iset", mmv.Count)
		added[i] = mmv.NewIntGauge(r, fmt.Sprintf("added%d", i), "added", mmv.Count)
		mixed[i] = mmv.NewIntGauge(r, fmt.Sprintf("mixed%d", i), "set once, then added to", mmv.Count)
		fmixed[i] = mmv.NewGauge(r, fmt.Sprintf("fmixed%d", i), "set once, then added to", mmv.Count)
	}
	startOrSkip(t, r)
	for i := range gauges {
		mixed[i].Set(5)
		fmixed[i].Set(5)
	}
	// Each gauge's last update comes at another time, so some race a
	// growth step whatever its timing.
	last := func(i int) int { return rounds/2 + i*rounds/2/gauges }
	var updaters, grower sync.WaitGroup
	stop := make(chan struct{})
	for w := range 4 {
		updaters.Add(1)
		go func() {
			defer updaters.Done()
			for n := 1; n <= rounds; n++ {
				for i := w; i < gauges; i += 4 {
					if n > last(i) {
						continue
					}
					set[i].Set(float64(n * 1000))
					iset[i].Set(int64(n * 1000))
					added[i].Inc()
					added[i].Add(2)
					added[i].Dec()
					mixed[i].Inc()
					mixed[i].Dec()
					mixed[i].Add(2)
					fmixed[i].Inc()
					fmixed[i].Dec()
					fmixed[i].Add(2)
				}
			}
		}()
	}
	grower.Add(1)
	go func() {
		defer grower.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			mmv.NewCounter(r, fmt.Sprintf("grow%d", i), "growth", mmv.Count)
			if !assert.NoError(t, r.Flush()) {
				return
			}
		}
	}()
	updaters.Wait()
	close(stop)
	grower.Wait()
	for i := range gauges {
		assert.Equal(t, float64(last(i)*1000), set[i].Get(), "gauge set%d", i)
		assert.Equal(t, int64(last(i)*1000), iset[i].Get(), "gauge iset%d", i)
		assert.Equal(t, int64(2*last(i)), added[i].Get(), "gauge added%d", i)
		assert.Equal(t, int64(5+2*last(i)), mixed[i].Get(), "gauge mixed%d", i)
		assert.Equal(t, float64(5+2*last(i)), fmixed[i].Get(), "gauge fmixed%d", i)
	}
}

// TestRegistryErr: a registry says why its metrics are not in PCP, from
// before Start to after Close.
func TestRegistryErr(t *testing.T) {
	r := mmv.NewRegistry("errs", &mmv.Options{Dir: filepath.Join(t.TempDir(), "mmv")})
	c := mmv.NewCounter(r, "c", "", mmv.Count)
	c.Inc()
	require.ErrorIs(t, r.Err(), mmv.ErrNotStarted, "instruments used, the registry never started")
	assert.Contains(t, r.Err().Error(), `"errs"`)
	startOrSkip(t, r)
	assert.NoError(t, r.Err())
	require.NoError(t, r.Close())
	assert.ErrorIs(t, r.Err(), mmv.ErrClosed)
}

// TestStartLeavesWhatIsNoLeftover: Start removes only regular files as an
// earlier run's overflow files: a symlink at <file>.N, which PCP's reader
// follows, stays, where it was removed (acquire clears what no registry
// puts at a name).
func TestStartLeavesWhatIsNoLeftover(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mmv")
	shared := newRegistry(t, "shared", dir, mmv.Options{})
	mmv.NewCounter(shared, "c", "", mmv.Count).Add(3)
	startOrSkip(t, shared)
	require.NoError(t, os.Symlink("shared", filepath.Join(dir, "app.2")))

	r := newRegistry(t, "app", dir, mmv.Options{})
	mmv.NewCounter(r, "a", "", mmv.Count).Add(1)
	startOrSkip(t, r)
	assert.Equal(t, []string{"app", "app.2", "shared"}, entries(t, dir),
		"app.2, a link to a live registry's file without the NoPrefix flag, removed as a leftover")
}

// TestStartPastDirectoryNamedAsOverflow: a directory named <file>.N is no
// leftover, and Start goes on, where it failed.
func TestStartPastDirectoryNamedAsOverflow(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mmv")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "app.2"), 0o755))
	r := newRegistry(t, "app", dir, mmv.Options{})
	mmv.NewCounter(r, "a", "", mmv.Count).Add(1)
	startOrSkip(t, r) // a directory named app.2 is no overflow file of an earlier run
}

// TestRestartNeverShrinksFile: the file at a registry's name never gets
// smaller when a new run renames its file over the last run's, so that
// PCP's reader, which maps a file at the size it stat'ed before opening
// it, never maps past the end of the file it opened
// (TestRestartSmallerFileKeepsPMCD). The tail reads as zeros, and nothing
// in the file points into it.
func TestRestartNeverShrinksFile(t *testing.T) {
	_, dir := pcpDir(t)
	big := closedRun(t, dir, "shrinks", 200)
	before, err := os.Stat(big.Path())
	require.NoError(t, err)

	small := newRegistry(t, "shrinks", dir, mmv.Options{})
	mmv.NewCounter(small, "c0000", "", mmv.Count).Add(7)
	require.NoError(t, small.Start())
	after, err := os.Stat(small.Path())
	require.NoError(t, err)
	assert.Equal(t, before.Size(), after.Size(), "the new run's file renamed over a larger one")
	f, err := mmvfile.Open(small.Path())
	require.NoError(t, err, "the file with its tail of zeros")
	require.Len(t, f.Values, 1)
	assert.EqualValues(t, 7, f.Values[0].Uint)
}

// TestFailedStartKeepsFile: a Start that fails at its overflow file (its
// name, <name>.2, held by another live registry) leaves the last run's
// files as they were, its values and all: it had renamed its first file
// over the last run's, then removed it, and PCP lost the PMIDs it showed
// (TestFailedStartKeepsPMCD). Every file is made before any is renamed
// into place (osfile.Prepare).
func TestFailedStartKeepsFile(t *testing.T) {
	_, dir := pcpDir(t)
	last := declareSpilling(dir, "fstart", 1)
	startOrSkip(t, last)
	require.NoError(t, last.Close()) // no Process flag: its files stay, PCP shows them
	lastFile, err := os.ReadFile(filepath.Join(dir, "fstart"))
	require.NoError(t, err)
	// Another live registry's file at fstart.2 (no registry is named so).
	other := newRegistry(t, "fstartother", dir, mmv.Options{})
	mmv.NewCounter(other, "mine", "", mmv.Count).Inc()
	require.NoError(t, other.Start())
	renamedTo(t, other, "fstart.2")

	r := declareSpilling(dir, "fstart", 2)
	defer r.Close()
	require.ErrorIs(t, r.Start(), mmv.ErrInUse)
	now, err := os.ReadFile(filepath.Join(dir, "fstart"))
	require.NoError(t, err, "the last run's file, which PCP showed, is at its name after a Start that failed")
	assert.Equal(t, lastFile, now, "the last run's file as it was")
	assert.ElementsMatch(t, []string{"fstart", "fstart.2"}, entries(t, dir), "no temporary left")
}

// TestNilRegistryIsDefault: every method of a nil *Registry acts on
// Default, as a nil registry given to a New function does (it panicked
// in Start, Close, Err and the other methods but three), in a process of
// its own, whose Default it may start and close.
func TestNilRegistryIsDefault(t *testing.T) {
	needFileLayer(t)
	if childRole() != "nil" {
		cmd := childCmd(t, "TestNilRegistryIsDefault", "nil", nil, "MMV_NIL_DIR="+t.TempDir())
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "the child:\n%s", out)
		return
	}
	var r *mmv.Registry
	dir := os.Getenv("MMV_NIL_DIR")
	require.NoError(t, r.Configure("nilreg", mmv.Options{Dir: dir}))
	assert.Equal(t, "nilreg", r.Name())
	assert.Equal(t, dir, r.Options().Dir)
	served := mmv.NewCounter(r, "served", "Requests served", mmv.Count)
	require.NoError(t, r.AddIndom(mmv.Indom{Serial: 1}))
	require.NoError(t, r.AddInstance(1, mmv.Instance{ID: 7, Name: "seven"}))
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "items", Type: mmv.Uint64, Semantics: mmv.SemInstant, Indom: 1}))
	require.NoError(t, r.AddLabel(mmv.Label{Name: "service", Value: "shop"}))
	require.NoError(t, r.AddMetricLabel("items", mmv.Label{Name: "kind", Value: "book"}))
	require.NoError(t, r.AddIndomLabel(1, mmv.Label{Name: "shelf", Value: "top"}))
	require.NoError(t, r.AddInstanceLabel(1, 7, mmv.Label{Name: "row", Value: "first"}))
	require.NoError(t, r.Transact(func(tx *mmv.Tx) error {
		_, err := mmv.Declare[mmv.Gauge](tx, "level", "Level", mmv.Count)
		return err
	}))
	polled := make(chan struct{}, 1)
	r.Poll(time.Hour, func() {
		select {
		case polled <- struct{}{}:
		default:
		}
	})
	require.ErrorIs(t, r.Err(), mmv.ErrNotStarted)
	require.NoError(t, r.Flush(), "nothing to publish before Start")
	families := 0
	r.Gather(func(*mmv.Family) { families++ })
	assert.Equal(t, 2, families, "Gather: the low-level metric has no storage before Start")
	snap, err := r.Snapshot()
	require.NoError(t, err)
	assert.Len(t, snap, 3, "Snapshot")

	require.NoError(t, r.Start())
	assert.Equal(t, filepath.Join(dir, "nilreg"), r.Path())
	assert.Equal(t, mmv.Default.Path(), r.Path())
	served.Add(3)
	v, err := r.Value("items", "seven")
	require.NoError(t, err)
	v.Set(9)
	require.NoError(t, r.Flush())
	require.NoError(t, r.Err())
	<-polled
	require.NoError(t, r.Close())
	require.ErrorIs(t, r.Err(), mmv.ErrClosed)
}

// TestZeroRegistryIsUnnamed: a zero Registry (declared as a value, not
// made by NewRegistry) panicked in AddIndom, its first file's part
// missing, and refused AddMetric's one metric as needing an overflow
// file. It is the registry NewRegistry("", nil) makes: it declares, Start
// refuses its empty name until Configure names it, and then it works as
// any other.
func TestZeroRegistryIsUnnamed(t *testing.T) {
	var r mmv.Registry
	t.Cleanup(func() { r.Close() })
	var wg sync.WaitGroup
	for i := range 4 { // first uses at once make it once (-race)
		wg.Go(func() { _ = r.AddIndom(mmv.Indom{Serial: uint32(10 + i)}) })
	}
	wg.Wait()
	assert.Equal(t, "", r.Name())
	require.NoError(t, r.AddIndom(mmv.Indom{Serial: 1, Instances: []mmv.Instance{{ID: 0, Name: "a"}}}))
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "m", Type: mmv.Int32, Semantics: mmv.SemInstant, Indom: 1}))
	c := mmv.NewCounter(&r, "c", "", mmv.Count)
	c.Inc()
	require.ErrorIs(t, r.Start(), mmv.ErrName, "Start of a registry of no name")
	require.NoError(t, r.Configure("zeroreg", mmv.Options{Dir: filepath.Join(t.TempDir(), "mmv")}))
	startOrSkip(t, &r)
	value(t, &r, "m", "a").Set(3)
	f, err := mmvfile.Open(r.Path())
	require.NoError(t, err)
	got := map[string]int64{}
	for _, v := range f.Values {
		got[v.Metric.Name] = v.Int + int64(v.Uint)
	}
	assert.Equal(t, map[string]int64{"m": 3, "c": 1}, got)
}

// TestStartRunsPollsBeforeItsFiles: Start runs the registry's polls, and
// callback metrics' functions, before it makes its files, so that PCP's
// first fetch reads what they copy: goroutine-run, their first run came
// after Start had renamed the files into place, and PCP read the values'
// zeros meanwhile (goruntime's scalars, until its poll's goroutine ran).
func TestStartRunsPollsBeforeItsFiles(t *testing.T) {
	r := newRegistry(t, "polled", t.TempDir(), mmv.Options{})
	level := mmv.NewIntGauge(r, "level", "", mmv.Count)
	r.Poll(time.Hour, func() {
		time.Sleep(20 * time.Millisecond) // slow, as a real copy may be
		level.Set(42)
	})
	mmv.NewIntGaugeFunc(r, "callback", "", mmv.Count, func() int64 { return 7 })
	startOrSkip(t, r)
	values := filesValues(t, r)
	assert.EqualValues(t, 42, values["level"][""].Int, "the poll's value, in the file Start made")
	assert.EqualValues(t, 7, values["callback"][""].Int, "the callback's")
}

// TestStartPastAStuckPoll: Start waits for its polls' runs a while, not
// for ever: a poll stuck (a bridge's collector that never returns) leaves
// Start its files, and its run copies its values when it ends.
func TestStartPastAStuckPoll(t *testing.T) {
	needFileLayer(t)
	r := newRegistry(t, "stuckpoll", t.TempDir(), mmv.Options{})
	level := mmv.NewIntGauge(r, "level", "", mmv.Count)
	release := make(chan struct{})
	r.Poll(time.Hour, func() {
		<-release
		level.Set(42)
	})
	started := make(chan error)
	go func() { started <- r.Start() }()
	select {
	case err := <-started:
		require.NoError(t, err)
	case <-time.After(time.Minute):
		close(release)
		t.Fatal("Start waits for a stuck poll")
	}
	assert.EqualValues(t, 0, filesValues(t, r)["level"][""].Int, "before the poll ends")
	close(release)
	assert.Eventually(t, func() bool { return filesValues(t, r)["level"][""].Int == 42 }, time.Minute, time.Millisecond, "once it ends")
}

// TestStuckPollHoldsNoOtherPoll: Start runs each poll on a goroutine of
// its own before it makes its files: one stuck (a bridge's collector that
// never returns) keeps no other's values out of them, where run in turn
// it kept every poll after it out.
func TestStuckPollHoldsNoOtherPoll(t *testing.T) {
	needFileLayer(t)
	r := newRegistry(t, "stuckfirst", t.TempDir(), mmv.Options{})
	release := make(chan struct{})
	defer close(release)
	r.Poll(time.Hour, func() { <-release })
	var returned, ranBefore atomic.Bool
	level := mmv.NewIntGauge(r, "level", "", mmv.Count)
	r.Poll(time.Hour, func() {
		if !returned.Load() {
			ranBefore.Store(true)
		}
		level.Set(42)
	})
	startOrSkip(t, r)
	returned.Store(true)
	assert.True(t, ranBefore.Load(), "the second poll ran before Start made its files")
}

// TestPollNilIsIgnored: Poll took a nil function without a word, and the
// next Snapshot, Gather or Start called it on a goroutine of the
// registry's (pollUnstarted, poll), where no caller can recover: the
// whole program died, far from the Poll that was wrong. Poll ignores a
// nil function, before Start and after. Run in a child process, which
// must exit cleanly.
func TestPollNilIsIgnored(t *testing.T) {
	if childRole() == "pollnil" {
		r := mmv.NewRegistry("pollnil", &mmv.Options{Dir: os.Getenv("MMV_POLL_DIR")})
		r.Poll(time.Second, nil)
		_, _ = r.Snapshot()
		r.Gather(func(*mmv.Family) {})
		if err := r.Start(); err == nil || errors.Is(err, mmv.ErrUnsupported) {
			r.Poll(time.Millisecond, nil)
			time.Sleep(20 * time.Millisecond)
		}
		_ = r.Close()
		fmt.Println("survived")
		return
	}
	cmd := childCmd(t, "TestPollNilIsIgnored", "pollnil", nil, "MMV_POLL_DIR="+filepath.Join(t.TempDir(), "mmv"))
	out, err := cmd.CombinedOutput()
	assert.NoError(t, err, "the program that called Poll(nil) died:\n%s", out)
	assert.Contains(t, string(out), "survived")
}

// TestErrSaysWhyStartFailed: after a Start that failed, Err says why
// (here another registry holding the name, ErrInUse) beside
// ErrNotStarted, where it said "not started" alone, and a service that
// logged Start's error somewhere else read no cause; a successful Start
// or a Configure forgets it.
func TestErrSaysWhyStartFailed(t *testing.T) {
	needFileLayer(t)
	dir := filepath.Join(t.TempDir(), "mmv")
	holder := mmv.NewRegistry("held", &mmv.Options{Dir: dir})
	require.NoError(t, holder.Start())
	r := mmv.NewRegistry("held", &mmv.Options{Dir: dir})
	defer r.Close()
	mmv.NewCounter(r, "c", "", mmv.Count).Inc()
	startErr := r.Start()
	require.ErrorIs(t, startErr, mmv.ErrInUse)
	err := r.Err()
	assert.ErrorIs(t, err, mmv.ErrNotStarted)
	assert.ErrorIs(t, err, mmv.ErrInUse, "Err after the failed Start: %v", err)
	assert.Contains(t, err.Error(), startErr.Error())

	require.NoError(t, r.Configure("", mmv.Options{Dir: dir}))
	assert.NotErrorIs(t, r.Err(), mmv.ErrInUse, "configured anew: the last Start's failure is not this one's")
	assert.ErrorIs(t, r.Err(), mmv.ErrNotStarted)
	require.ErrorIs(t, r.Start(), mmv.ErrInUse)
	require.NoError(t, holder.Close())
	require.NoError(t, r.Start())
	assert.NoError(t, r.Err())
}
