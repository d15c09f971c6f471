package mmv_test

import (
	"fmt"
	"os"
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

// TestGrowthLosesNoUpdate: goroutines update values of every kind of
// arithmetic in tight loops while another goroutine adds 500 metrics and
// 4,000 instances, one at a time, and a reader polls the file. Every
// snapshot the reader takes is a whole, valid file; afterwards the handles
// and PCP's reader show exactly the sums made.
func TestGrowthLosesNoUpdate(t *testing.T) { eachLayout(t, testGrowthLosesNoUpdate) }

func testGrowthLosesNoUpdate(t *testing.T, pad bool) {
	// 4,000 instances: a file of some 24,500 values grown from 6, by the
	// same steps as with 10,000 and one or two doublings fewer, which PCP's
	// reader, quadratic in an indom's instances, reads in seconds instead
	// of 15 s (under -race, on a busy machine).
	const newMetrics, newInstances = 500, 4000
	tmp := t.TempDir()
	// 4,000 instances in one indom, in one file: past the default cap and
	// budget (2,048), raised knowingly.
	r := mmv.NewRegistry("grow", &mmv.Options{Dir: filepath.Join(tmp, "mmv"), Cluster: 9, MaxIndomInstances: -1, MaxFileValues: -1, PadValues: pad})
	defer r.Close()
	require.NoError(t, r.AddIndom(mmv.Indom{Serial: 1, Instances: []mmv.Instance{{ID: 0, Name: "first"}}}))
	old := []mmv.Metric{
		{Name: "hits", Type: mmv.Uint64, Semantics: mmv.SemCounter},
		{Name: "perinst", Type: mmv.Uint64, Semantics: mmv.SemCounter, Indom: 1},
		{Name: "small", Type: mmv.Int32, Semantics: mmv.SemCounter},
		{Name: "level", Type: mmv.Double, Semantics: mmv.SemInstant},
		{Name: "busy", Type: mmv.Elapsed, Semantics: mmv.SemCounter},
	}
	for _, m := range old {
		require.NoError(t, r.AddMetric(m))
	}
	startOrSkip(t, r)
	handles := make([]*mmv.Value, len(old))
	for i, m := range old {
		inst := ""
		if m.Indom != 0 {
			inst = "first"
		}
		v, err := r.Value(m.Name, inst)
		require.NoError(t, err)
		handles[i] = v
	}

	var stop atomic.Bool
	var wg sync.WaitGroup
	// As many updaters as the CI machine's cores: more only take turns
	// with the growing goroutine and the reader, which the test waits for.
	const updaters = 2
	counts := make([]int64, updaters)
	for g := range updaters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := int64(1); !stop.Load(); n++ {
				for _, v := range handles {
					if v.Type() == mmv.Double {
						v.AddFloat(1)
					} else {
						v.Inc()
					}
				}
				counts[g] = n
			}
		}()
	}
	var snapshots atomic.Int64
	pollErr := make(chan error, 1)
	took := make(chan struct{}, 1) // a snapshot was taken
	readerDone := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(readerDone)
		defer close(pollErr)
		for !stop.Load() {
			b, err := os.ReadFile(r.Path())
			if err == nil {
				_, err = mmvfile.Parse(b)
			}
			if err != nil {
				pollErr <- err
				return
			}
			snapshots.Add(1)
			select {
			case took <- struct{}{}:
			default:
			}
		}
	}()

	for i := range newInstances {
		if i%500 == 0 { // let the reader look at every stage of the growth
			select { // a snapshot taken before now does not count
			case <-took:
			default:
			}
			select {
			case <-took:
			case <-readerDone:
			}
		}
		require.NoError(t, r.AddInstance(1, mmv.Instance{ID: int32(i + 1), Name: "i" + strconv.Itoa(i)}))
		if i%(newInstances/newMetrics) == 0 {
			m := mmv.Metric{Name: fmt.Sprintf("new.m%d", i), Type: mmv.Uint64, Semantics: mmv.SemCounter}
			if i%(newInstances/5) == 0 {
				m.Indom = 1
			}
			require.NoError(t, r.AddMetric(m))
		}
	}
	stop.Store(true)
	wg.Wait()
	require.NoError(t, <-pollErr, "a reader saw a bad file during growth")
	require.NoError(t, r.Flush())
	var total int64
	for _, n := range counts {
		total += n
	}
	t.Logf("%d updates of each value, %d whole snapshots read", total, snapshots.Load())
	assert.GreaterOrEqual(t, snapshots.Load(), int64(newInstances/500), "snapshots the reader took")
	for _, v := range handles {
		assert.Equal(t, total, int64(v.Float()), "%s value", v.Type())
	}
	f, err := mmvfile.Open(r.Path())
	require.NoError(t, err)
	require.Len(t, f.Metrics, len(old)+newMetrics, "the file's metrics")
	require.Len(t, f.Indom(1).Instances, newInstances+1, "the indom's instances")

	// PCP's reader fetches the five values that were updated (4,001
	// instances of perinst among them) and lists the new metrics' names:
	// fetching the new metrics too, zeros all, would cost its quadratic
	// scan of the file's 24,500 values six times over and prove nothing
	// the names and the file's parse above do not.
	pcptest.MustHavePCP(t)
	names := make([]string, len(old))
	for i, m := range old {
		names[i] = "mmv.grow." + m.Name
	}
	out, ok := pcptest.Pminfo(t, tmp, append([]string{"-dfmtTl"}, names...)...)
	require.True(t, ok, "pminfo -f of the updated values:\n%s", out)
	ms, err := pcptest.Parse(out)
	require.NoError(t, err, "%s", out)
	want := strconv.FormatInt(total, 10)
	for _, m := range old {
		pm := pcptest.Find(ms, "mmv.grow."+m.Name)
		require.NotNil(t, pm, "PCP does not show %s", m.Name)
		got := pm.Value
		if m.Indom != 0 {
			require.Len(t, pm.Instances, newInstances+1, "instances of %s PCP shows", m.Name)
			got = pm.Instance("first").Value
		}
		if m.Type == mmv.Double {
			f, _ := strconv.ParseFloat(got, 64)
			got = strconv.FormatInt(int64(f), 10)
		}
		assert.Equal(t, want, got, "PCP reads %s", m.Name)
	}
	out, ok = pcptest.Pminfo(t, tmp, "mmv.grow.new")
	require.True(t, ok, "pminfo mmv.grow.new:\n%s", out)
	assert.Len(t, strings.Fields(out), newMetrics, "new metrics PCP shows")
}

// TestGrowthKeepsEveryType: values of every type, set before a growth
// step, read the same after it, through their old handles and in PCP.
func TestGrowthKeepsEveryType(t *testing.T) { eachLayout(t, testGrowthKeepsEveryType) }

func testGrowthKeepsEveryType(t *testing.T, pad bool) {
	tmp := t.TempDir()
	r := mmv.NewRegistry("keep", &mmv.Options{Dir: filepath.Join(tmp, "mmv"), PadValues: pad})
	defer r.Close()
	types := []mmv.Type{mmv.Int32, mmv.Uint32, mmv.Int64, mmv.Uint64, mmv.Float, mmv.Double, mmv.String, mmv.Elapsed}
	for _, typ := range types {
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "t" + strconv.Itoa(int(typ)), Type: typ, Semantics: mmv.SemInstant}))
	}
	startOrSkip(t, r)
	vals := map[mmv.Type]*mmv.Value{}
	for _, typ := range types {
		v, err := r.Value("t"+strconv.Itoa(int(typ)), "")
		require.NoError(t, err)
		vals[typ] = v
		switch typ {
		case mmv.String:
			v.SetString("kept")
		case mmv.Float, mmv.Double:
			v.SetFloat(-2.5)
		default:
			v.Set(-7)
		}
	}
	for i := range 3 { // each growth step rewrites the file
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "later" + strconv.Itoa(i), Type: mmv.String, Semantics: mmv.SemDiscrete}))
	}
	assert.Equal(t, "kept", vals[mmv.String].String(), "string after growth")
	vals[mmv.Int64].Add(1)
	f, err := mmvfile.Open(r.Path())
	require.NoError(t, err)
	byName := map[string]*mmvfile.Value{}
	for _, v := range f.Values {
		byName[v.Metric.Name] = v
	}
	check := map[mmv.Type]func(v *mmvfile.Value) bool{
		mmv.Int32:   func(v *mmvfile.Value) bool { return v.Int == -7 },
		mmv.Uint32:  func(v *mmvfile.Value) bool { return v.Uint == 1<<32-7 },
		mmv.Int64:   func(v *mmvfile.Value) bool { return v.Int == -6 },
		mmv.Uint64:  func(v *mmvfile.Value) bool { return v.Uint == 1<<64-7 },
		mmv.Float:   func(v *mmvfile.Value) bool { return v.Float == -2.5 },
		mmv.Double:  func(v *mmvfile.Value) bool { return v.Float == -2.5 },
		mmv.String:  func(v *mmvfile.Value) bool { return v.String == "kept" },
		mmv.Elapsed: func(v *mmvfile.Value) bool { return v.Int == -7 },
	}
	for _, typ := range types {
		v := byName["t"+strconv.Itoa(int(typ))]
		assert.False(t, v == nil || !check[typ](v), "%s after growth: %+v", typ, v)
	}
}

// TestRepublishKeepsSize: publications that leave as many records as
// before (a vector's instance made, published, deleted, published, over
// and over) leave the file's size as it was, however many there are.
func TestRepublishKeepsSize(t *testing.T) { eachLayout(t, testRepublishKeepsSize) }

func testRepublishKeepsSize(t *testing.T, pad bool) {
	r := mmv.NewRegistry("same", &mmv.Options{Dir: filepath.Join(t.TempDir(), "mmv"), PadValues: pad})
	defer r.Close()
	v := mmv.NewCounterVec(r, "v", "", mmv.Count, "k")
	v.With("kept")
	startOrSkip(t, r)
	churn := func(i int) {
		v.With(fmt.Sprint(i)).Inc()
		require.NoError(t, r.Flush())
		require.True(t, v.Delete(fmt.Sprint(i)))
		require.NoError(t, r.Flush())
	}
	size := func() int64 {
		fi, err := os.Stat(r.Path())
		require.NoError(t, err)
		return fi.Size()
	}
	churn(0)
	want := size()
	for i := 1; i <= 200; i++ {
		churn(i)
	}
	assert.Equal(t, want, size(), "400 publications changed the file's size")
	assert.Equal(t, []string{"k=kept"}, v.Instances())
}

// TestGrowthAfterRemoval: a publication after instances were removed,
// whose records before the values take pages fewer than in the file
// before, keeps the values where they were and publishes.
func TestGrowthAfterRemoval(t *testing.T) { eachLayout(t, testGrowthAfterRemoval) }

func testGrowthAfterRemoval(t *testing.T, pad bool) {
	r := newRegistry(t, "shrink", t.TempDir(), mmv.Options{PadValues: pad})
	v := mmv.NewCounterVec(r, "v", "", mmv.Count, "k")
	kept := v.With("kept")
	startOrSkip(t, r)
	kept.Inc()
	long := func(i int) string { return fmt.Sprintf("%064d", i) } // a string record each
	for i := range 40 {
		v.With(long(i)).Inc()
		require.NoError(t, r.Flush())
	}
	for i := range 40 {
		require.True(t, v.Delete(long(i)))
	}
	require.NoError(t, r.Flush(), "the records before the values shrank by pages")
	kept.Inc()
	f, err := mmvfile.Open(r.Path())
	require.NoError(t, err)
	require.Len(t, f.Values, 1)
	assert.Equal(t, uint64(2), f.Values[0].Uint)
}

// TestFirstUsesPublishOnce: first uses of new label values after Start,
// far past the room of the file (none: the first file is libpcp_mmv's),
// count at once and wait for PublishDelay, to be published together in
// one new file. Before, each doubling of the room published a file of
// its own at once: 1,000 values rewrote the file 6 times, each a file
// PCP's agent reloads, each a copy of every value so far.
func TestFirstUsesPublishOnce(t *testing.T) {
	needFileLayer(t)
	r := mmv.NewRegistry("burst", &mmv.Options{Dir: filepath.Join(t.TempDir(), "mmv"), PublishDelay: time.Hour})
	v := mmv.NewCounterVec(r, "requests", "", mmv.Count, "route")
	require.NoError(t, r.Start())
	defer r.Close()
	started, err := os.Stat(r.Path())
	require.NoError(t, err)
	const n = 1000
	for i := range n {
		v.With(strconv.Itoa(i)).Add(uint64(i))
	}
	time.Sleep(100 * time.Millisecond) // what a publication at once would take, many times
	now, err := os.Stat(r.Path())
	require.NoError(t, err)
	assert.True(t, os.SameFile(started, now), "the file was replaced before PublishDelay")
	for i := range n {
		require.Equal(t, uint64(i), v.With(strconv.Itoa(i)).Get(), "value %d before it is published", i)
	}

	require.NoError(t, r.Flush())
	f, err := mmvfile.Open(r.Path())
	require.NoError(t, err)
	got := map[string]uint64{}
	for _, val := range f.Values {
		if val.Instance != nil {
			got[val.Instance.Name] = val.Uint
		}
	}
	want := map[string]uint64{}
	for i := range n {
		want["route="+strconv.Itoa(i)] = uint64(i)
	}
	assert.Equal(t, want, got, "the published file's values")
}

// TestChurnPublicationsPaced: a vector whose label values churn (a new
// value and a deleted one every millisecond, as a vector labelled by
// request does) replaces its file a few times at first, then about once
// a second: each replacement makes PCP's agent rebuild the whole
// directory's namespace at its next request, inside pmcd. The timer
// published every PublishDelay, 20 times a second, and a client of a
// registry at the metrics cap beside it was answered at 42-49% of its
// rate without it (TestManyMetricsThroughPMCD). The values stay exact meanwhile, and
// Flush publishes them at once.
func TestChurnPublicationsPaced(t *testing.T) {
	needFileLayer(t)
	r := newRegistry(t, "paced", filepath.Join(t.TempDir(), "mmv"), mmv.Options{})
	v := mmv.NewCounterVec(r, "requests", "", mmv.Count, "id")
	startOrSkip(t, r)
	const churn = 3 * time.Second
	n := churnFiles(t, churn, []*mmv.Registry{r}, []*mmv.Vec[mmv.Counter]{v})
	t.Logf("%d files in %v of churn", n, churn)
	assert.LessOrEqual(t, n, int64(8+3+2), "files replaced in %v of churn: a burst of 8, then one a second", churn)
	require.NoError(t, r.Flush())
	f, err := mmvfile.Open(r.Path())
	require.NoError(t, err)
	assert.Len(t, f.Instances, 10, "the values live, published by Flush")
}

// TestRegistriesShareThePace: the registries of a process that publish
// into one directory share the pace of its publications (pace.go): PCP's
// agent rebuilds the whole directory's names for a file any of them
// replaces. Three registries churning label values replaced files 3
// times as often as one.
func TestRegistriesShareThePace(t *testing.T) {
	needFileLayer(t)
	dir := filepath.Join(t.TempDir(), "mmv")
	rs, vs := startChurners(t, "shared", dir, dir, dir)
	other := newRegistry(t, "elsewhere", filepath.Join(t.TempDir(), "mmv"), mmv.Options{})
	startOrSkip(t, other)
	const churn = 3 * time.Second
	n := churnFiles(t, churn, rs, vs)
	t.Logf("%d files in %v of churn", n, churn)
	assert.LessOrEqual(t, n, int64(8+3+2), "files replaced in %v of churn by 3 registries: a burst of 8, then one a second", churn)
	mmv.NewCounterVec(other, "alone", "", mmv.Count, "k").With("x").Inc()
	assert.Eventually(t, func() bool { return fileShows(other, "alone", "k=x") }, time.Second, 10*time.Millisecond,
		"a registry of another directory paces alone: its publication waits for none of theirs")
}

// TestFlushesDoNotStarveTimer: publications asked for (Flush here;
// a declaration whose values need storage at once, Registry.Value, a
// first use making room alike) count against the timer's pace, but a
// burst of them must not leave the timer's next publication waiting more
// than a pace step: a program that flushed 40 times in a row, then first
// used a label value, saw it in the file 33 s later (the pace's debt, one
// second per Flush past the burst).
func TestFlushesDoNotStarveTimer(t *testing.T) {
	needFileLayer(t)
	r := newRegistry(t, "flushdebt", filepath.Join(t.TempDir(), "mmv"), mmv.Options{})
	v := mmv.NewCounterVec(r, "requests", "", mmv.Count, "id")
	startOrSkip(t, r)
	for i := range 40 {
		v.With("f" + strconv.Itoa(i)).Inc()
		require.NoError(t, r.Flush())
	}
	v.With("late").Inc()
	began := time.Now()
	for !fileShows(r, "requests", "id=late") && time.Since(began) < 5*time.Second {
		time.Sleep(5 * time.Millisecond)
	}
	took := time.Since(began)
	t.Logf("the timer published a first use %v after it", took.Round(time.Millisecond))
	assert.Less(t, took, 1500*time.Millisecond, "a first use after 40 Flushes waited for the timer's publication")
}

// TestLazyDeclarationsWithinASecond: a program declaring a metric
// every 100 ms after Start (lazy instruments) sees each in the file
// after PublishDelay while the pace's burst lasts, then within a second:
// the bound the docs give. 30 s of it: 299 metrics, 492 ms on average,
// 961 ms at worst (50 ms each before the pace).
func TestLazyDeclarationsWithinASecond(t *testing.T) {
	needFileLayer(t)
	r := newRegistry(t, "lazy", filepath.Join(t.TempDir(), "mmv"), mmv.Options{})
	mmv.NewCounter(r, "first", "", mmv.Count)
	startOrSkip(t, r)
	declared := map[string]time.Time{}
	var worst time.Duration
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	end, n := time.Now().Add(3*time.Second), 0
	for (len(declared) > 0 || time.Now().Before(end)) && time.Now().Before(end.Add(5*time.Second)) {
		select {
		case <-tick.C:
			if time.Now().Before(end) {
				name := "m" + strconv.Itoa(n)
				n++
				mmv.NewCounter(r, name, "", mmv.Count).Inc()
				declared[name] = time.Now()
			}
		case <-time.After(2 * time.Millisecond):
		}
		f, err := mmvfile.Open(r.Path())
		if err != nil {
			continue
		}
		for _, m := range f.Metrics {
			if at, ok := declared[m.Name]; ok {
				worst = max(worst, time.Since(at))
				delete(declared, m.Name)
			}
		}
	}
	t.Logf("%d metrics declared, the slowest in the file after %v", n, worst.Round(time.Millisecond))
	require.Empty(t, declared, "metrics never published")
	assert.Less(t, worst, 1500*time.Millisecond, "a lazy declaration's wait for the file")
}

// TestFlushesElsewhereDoNotStarveTimer: a registry Flushing a new
// label value every few milliseconds spends the pace of its directory,
// which owes nothing for it (pace.spend), and another registry of the
// directory waits for its timer: its declaration made during the storm
// must reach its file within a second or two, as TestFlushesDoNotStarveTimer
// has it for one registry. Sharing the pace, it waited for as long as the
// storm lasted.
func TestFlushesElsewhereDoNotStarveTimer(t *testing.T) {
	needFileLayer(t)
	dir := filepath.Join(t.TempDir(), "mmv")
	storm := newRegistry(t, "storm", dir, mmv.Options{})
	sv := mmv.NewCounterVec(storm, "requests", "", mmv.Count, "id")
	startOrSkip(t, storm)
	quiet := newRegistry(t, "quiet", dir, mmv.Options{})
	startOrSkip(t, quiet)
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; !stop.Load(); i++ {
			sv.With(strconv.Itoa(i)).Inc()
			sv.Delete(strconv.Itoa(i - 10))
			storm.Flush()
			time.Sleep(5 * time.Millisecond)
		}
	}()
	defer func() { stop.Store(true); <-done }()
	time.Sleep(500 * time.Millisecond) // the burst spent
	mmv.NewCounterVec(quiet, "late", "", mmv.Count, "k").With("x").Inc()
	start := time.Now()
	assert.Eventually(t, func() bool { return fileShows(quiet, "late", "k=x") }, 2500*time.Millisecond, 10*time.Millisecond,
		"the quiet registry's timer, beside another's Flushes")
	t.Logf("published after %v", time.Since(start))
}

// TestPaceOfTheDirectoryByAnyPath: registries naming one directory
// by different paths (a symlink, a trailing slash, a relative path)
// share its pace, as those naming it alike do
// (TestRegistriesShareThePace): PCP's agent rebuilds the directory for
// each of their files. Keyed by the cleaned path, each paced alone.
func TestPaceOfTheDirectoryByAnyPath(t *testing.T) {
	needFileLayer(t)
	base := t.TempDir()
	dir := filepath.Join(base, "mmv")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.Symlink(dir, filepath.Join(base, "link")))
	t.Chdir(base)
	rs, vs := startChurners(t, "paths", dir, filepath.Join(base, "link"), "mmv/")
	const churn = 3 * time.Second
	n := churnFiles(t, churn, rs, vs)
	t.Logf("%d files in %v of churn", n, churn)
	assert.LessOrEqual(t, n, int64(8+3+2), "files replaced in %v of churn by 3 registries of one directory", churn)
}

// TestChurnElsewhereDoesNotStarveTimer: registries churning label
// values take the pace of their directory in turns with another whose
// declaration waits for its timer: it reaches its file within the turns
// booked before it, a second each.
func TestChurnElsewhereDoesNotStarveTimer(t *testing.T) {
	needFileLayer(t)
	dir := filepath.Join(t.TempDir(), "mmv")
	rs, vs := startChurners(t, "churn", dir, dir)
	quiet := newRegistry(t, "quiet", dir, mmv.Options{})
	late := mmv.NewCounterVec(quiet, "late", "", mmv.Count, "k")
	startOrSkip(t, quiet)
	var waits []time.Duration
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(time.Second) // the burst spent
		for k := range 4 {
			late.With(strconv.Itoa(k)).Inc()
			start := time.Now()
			for !fileShows(quiet, "late", "k="+strconv.Itoa(k)) && time.Since(start) < 10*time.Second {
				time.Sleep(5 * time.Millisecond)
			}
			waits = append(waits, time.Since(start))
		}
	}()
	churnFiles(t, 10*time.Second, rs, vs)
	<-done
	t.Logf("waits %v", waits)
	require.Len(t, waits, 4)
	for _, w := range waits {
		assert.Less(t, w, 4*time.Second, "a declaration of the quiet registry, beside 2 churning: 3 turns")
	}
}
