package mmv

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv/internal/pcptest"
)

// The helpers of the package's internal tests; those of the external ones
// are in helpers_test.go.

// raceEnabled reports whether the test binary was built with -race, which
// makes some allocations of its own: allocation counts are bounded for
// each build.
func raceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	return ok && slices.ContainsFunc(bi.Settings, func(s debug.BuildSetting) bool { return s.Key == "-race" && s.Value == "true" })
}

// newTestRegistry makes a registry writing in a temporary directory, closed
// when the test or benchmark ends.
func newTestRegistry(t testing.TB, name string) *Registry {
	t.Helper()
	r := NewRegistry(name, &Options{Dir: t.TempDir()})
	t.Cleanup(func() { r.Close() })
	return r
}

// mustValue returns the handle on a metric's instance.
func mustValue(t testing.TB, r *Registry, metric, instance string) *Value {
	t.Helper()
	v, err := r.Value(metric, instance)
	require.NoError(t, err)
	return v
}

// vecValue returns the handle on a vector's value, which Registry.Value
// refuses a program: a test's look at the value in the file, the storage
// the vector's instrument is bound to. It is dead once the vector removes
// the instance.
func vecValue(t testing.TB, r *Registry, metric, instance string) *Value {
	t.Helper()
	v, err := vecLookup(r, metric, instance)
	require.NoError(t, err)
	return v
}

// vecLookup is vecValue's lookup, with its error.
func vecLookup(r *Registry, metric, instance string) (*Value, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.valueLocked(metric, instance)
}

// allocRegistry returns a registry in dir of metrics metrics over an indom
// of instances instances, declared as compare/startbench declares them.
func allocRegistry(t testing.TB, dir string, metrics, instances int) *Registry {
	t.Helper()
	r := NewRegistry("allocs", &Options{Cluster: 42, Dir: dir, MaxIndomInstances: -1, MaxInstances: -1, MaxFileValues: -1, MaxValues: -1})
	insts := make([]Instance, instances)
	for j := range insts {
		insts[j] = Instance{ID: int32(j), Name: "inst" + strconv.Itoa(j)}
	}
	require.NoError(t, r.AddIndom(Indom{Serial: 1, ShortHelp: "Instances", Instances: insts}))
	for j := range metrics {
		require.NoError(t, r.AddMetric(Metric{Name: "metric" + strconv.Itoa(j), Item: uint32(j + 1), Type: Uint64,
			Semantics: SemCounter, Units: Count, Indom: 1, ShortHelp: "A metric"}))
	}
	return r
}

// sharedLen is the length of the snapshot share made, 0 when there is
// none.
func (l *segList[E]) sharedLen() int {
	if l.cow == nil {
		return 0
	}
	return l.cow.shared
}

// startAllocations returns the allocations of a Start, of each of rs in
// turn (AllocsPerRun runs len(rs)-1 times, and once more first), and
// closes them.
func startAllocations(t *testing.T, rs []*Registry) float64 {
	t.Helper()
	i := 0
	allocs := testing.AllocsPerRun(len(rs)-1, func() {
		require.NoError(t, rs[i].Start())
		i++
	})
	for _, r := range rs {
		require.NoError(t, r.Close())
	}
	return allocs
}

// vecIDColliders returns two values of the label "k" whose instance names
// a counter vector derives the same id for; the search takes a second.
func vecIDColliders() (a, b string) {
	seen := map[uint32]string{}
	for i := 0; ; i++ {
		v := "c" + strconv.Itoa(i)
		home := fnv32("k="+v) % (1 << 30)
		if o, ok := seen[home]; ok {
			return o, v
		}
		seen[home] = v
	}
}

// assertChurnBoundedLocked checks that what r keeps of its vectors' churn
// follows the instances they hold, live of them per vector, and what was
// deleted since the last publication, every: its indoms' instances and
// names, its metrics' slots.
func assertChurnBoundedLocked(t *testing.T, r *Registry, live, every int) {
	t.Helper()
	bound := func(perInstance int) int { return perInstance * (2*live + 64 + every) }
	for _, in := range r.indoms {
		perInstance := max(1, in.live/live)
		assert.LessOrEqual(t, in.count(), bound(perInstance), "instances of indom %d (%s)", in.Serial, in.ShortHelp)
		assert.LessOrEqual(t, in.names.n, bound(perInstance), "names of indom %d", in.Serial)
	}
	for _, m := range r.metrics {
		assert.LessOrEqual(t, m.slots.len(), bound(3), "slots of %s", m.Name)
	}
}

// vecIDLocked is the id of v's instance name, which an indom of v has.
func vecIDLocked[T any](v *Vec[T], name string) int32 {
	id, ok := v.kind.idOfLocked(name)
	if !ok {
		panic("no instance " + name)
	}
	return id
}

// sweepAt runs a sweep of v at now, as the timer does.
func sweepAt[T any](v *Vec[T], now time.Time) {
	v.r.enter()
	defer v.r.leave()
	v.sweepLocked(now)
}

// expiredCount returns mmv.expired's counts: instances expired, and late.
func expiredCount(r *Registry) (expired, late uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.expired == nil {
		return 0, 0
	}
	return r.expired[0].state(), r.expired[1].state()
}

// startOrSkip starts r, or skips the test where the system has no file
// layer (Start returns ErrUnsupported: systems without a port, and Linux
// under -tags mmv_noport), so that the tests of what needs no file run
// there.
func startOrSkip(tb testing.TB, r *Registry) {
	tb.Helper()
	err := r.Start()
	if errors.Is(err, ErrUnsupported) {
		tb.Skipf("no file layer here: %v", err)
	}
	require.NoError(tb, err)
}

// needFileLayer skips a test of the files themselves where there is no
// file layer (see startOrSkip).
var needFileLayer = pcptest.NeedFileLayer

// StartOrSkip and NeedFileLayer are the external tests' (helpers_test.go).
var (
	StartOrSkip   = startOrSkip
	NeedFileLayer = needFileLayer
)

// withoutFiles is a description by declared without its files' lines.
func withoutFiles(declared string) string {
	var b strings.Builder
	for line := range strings.Lines(declared) {
		if !strings.HasPrefix(line, "file ") {
			b.WriteString(line)
		}
	}
	return b.String()
}

// encodedLocked is the file part p, or a snapshot of it, encodes to when
// laid out as gr says (growthLocked); the registry's lock is held.
func encodedLocked(r *Registry, p *part, gr grown) []byte {
	pl := newPlan(p, gr.labels, gr.version, &gr.g)
	defer putPlan(pl)
	b := make([]byte, pl.size)
	r.encode(p, pl, b, 1, 1)
	return b
}

// waitingVec returns a started registry, publishing only when asked, and
// its counter vector "requests" of limit values, whose first n, value i
// added i, were first used past the file's room and then given storage
// by a publication, none bound yet: all waiting for the timer to hand
// them over. The publication is the timer's, without the lock
// (publishPartUnlocking), when unlocked.
func waitingVec(t *testing.T, name string, n, limit int, unlocked bool) (*Registry, *Vec[Counter]) {
	t.Helper()
	needFileLayer(t)
	r, v := uncappedVec(t, name, limit)
	require.NoError(t, r.Start())
	for i := range n {
		v.With("/" + strconv.Itoa(i)).Add(uint64(i))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	require.Equal(t, n, v.kind.(*cellVec[Counter]).waiting.len(), "first uses past the room wait for storage")
	for _, p := range r.parts { // storage, nothing bound yet
		if unlocked {
			require.NoError(t, r.publishPartUnlocking(p))
		} else {
			require.NoError(t, r.publishPartLocked(p, new(*claims), byDeclaration)) // p has its file: no claim
		}
	}
	return r, v
}

// uncappedRegistry returns a registry with no caps on instances or
// values, publishing only when asked once started, closed when the test
// ends.
func uncappedRegistry(t testing.TB, name string) *Registry {
	t.Helper()
	r := NewRegistry(name, &Options{Dir: filepath.Join(t.TempDir(), "mmv"), PublishDelay: time.Hour,
		MaxIndomInstances: -1, MaxInstances: -1, MaxFileValues: -1, MaxValues: -1})
	t.Cleanup(func() { r.Close() })
	return r
}

// uncappedVec returns an uncappedRegistry and its counter vector
// "requests" by "route", of the given limit.
func uncappedVec(t testing.TB, name string, limit int) (*Registry, *Vec[Counter]) {
	t.Helper()
	r := uncappedRegistry(t, name)
	v := NewCounterVec(r, "requests", "", Count, "route")
	v.SetLimit(limit)
	return r, v
}

// uncappedHistVec returns an uncappedRegistry, started (or the test
// skipped), its histogram vector "size" by "route", of one bucket under
// 10 and the one above, refreshed hourly, and the vector's group.
func uncappedHistVec(t *testing.T, name string, limit int) (*Registry, *Vec[Histogram], *histGroup) {
	t.Helper()
	r := uncappedRegistry(t, name)
	hv := NewHistogramVec(r, "size", "", Byte, &HistogramOptions{Buckets: []float64{10}, Interval: time.Hour}, "route")
	hv.SetLimit(limit)
	startOrSkip(t, r)
	return r, hv, hv.kind.(*histGroup)
}

// pcpValues returns the values PCP's reader shows of r's metric, by
// instance name (r's Dir is a PCP_TMP_DIR's mmv); ok is false, and the
// test goes on, without PCP (pcptest.WantPCP).
func pcpValues(t *testing.T, r *Registry, metric string) (values map[string]int64, ok bool) {
	t.Helper()
	if !pcptest.WantPCP(t) {
		return nil, false
	}
	name := "mmv." + r.Name() + "." + metric
	m := pcptest.Find(pcptest.Info(t, filepath.Dir(r.opts.Dir)), name)
	require.NotNil(t, m, "PCP's reader shows no %s", name)
	values = map[string]int64{}
	for _, in := range m.Instances {
		v, err := strconv.ParseInt(in.Value, 10, 64)
		require.NoError(t, err, "%s[%s]", name, in.Name)
		values[in.Name] = v
	}
	return values, true
}

// useRoutes uses the label values "/r/<i>" of v, from i = from to to.
func useRoutes(v *Vec[Counter], from, to int) {
	for i := from; i < to; i++ {
		v.With("/r/" + strconv.Itoa(i)).Inc()
	}
}

// grownWithWaiting is an uncapped vector's started registry whose file
// grew, without the lock, under the first n label values: the file has
// room for them, and they wait for the timer to bind them a chunk at a
// time. It returns the part.
func grownWithWaiting(t *testing.T, name string, n int) (*Registry, *Vec[Counter], *part) {
	t.Helper()
	r, v := uncappedVec(t, name, 1<<20)
	startOrSkip(t, r)
	useRoutes(v, 0, n)
	r.mu.Lock()
	p := r.parts[0]
	err := r.publishPartUnlocking(p)
	r.mu.Unlock()
	require.NoError(t, err)
	return r, v, p
}

// duringListingsLocked makes during run at each listing of the cells a
// vector of r shows (cellGroup.shownLocked), until the func it returns
// puts r's groups back.
func duringListingsLocked(r *Registry, during func()) (restore func()) {
	groups := r.waitingGroups
	r.waitingGroups = nil
	for _, g := range groups {
		r.waitingGroups = append(r.waitingGroups, duringListing{g, during})
	}
	return func() { r.waitingGroups = groups }
}

// duringListing is a cellGroup whose listings call during first.
type duringListing struct {
	cellGroup
	during func()
}

func (g duringListing) shownLocked(past func(*metric) int32) shownList {
	l := g.cellGroup.shownLocked(past)
	if l == nil {
		return nil
	}
	return func(ws []waitingValue) []waitingValue {
		g.during()
		return l(ws)
	}
}

// fileWordLocked is the word of m's value for instance id (0 when
// singular) in its file, as PCP reads it, whoever holds the count.
func fileWordLocked(m *metric, id int32) uint64 {
	s := int(*m.slots.at(indexOf(m, id)))
	return atomic.LoadUint64((*uint64)(m.part.record(s)))
}

// vecCount is the number of vectors linked to r's indoms.
func vecCount(r *Registry) int {
	n := 0
	for _, in := range r.indoms {
		if in.vec.labels != nil {
			n++
		}
	}
	return n
}

// picks returns the stripes 64 goroutines, alive at once, pick in ta.
func picks(ta *tally) []unsafe.Pointer {
	ch := make(chan unsafe.Pointer, 64)
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			ch <- ta.stripe()
			<-release
		})
	}
	seen := map[unsafe.Pointer]bool{}
	for range 64 {
		seen[<-ch] = true
	}
	close(release)
	wg.Wait()
	return slices.Collect(maps.Keys(seen))
}

// windowed returns a histogram of the default buckets in seconds whose
// window of span is refreshed every second, made at t0 on windows' clock.
func windowed(t *testing.T, span time.Duration) (h *Histogram, t0 time.Duration) {
	t.Helper()
	l, err := newBuckets(&HistogramOptions{}, Second)
	require.NoError(t, err)
	t0 = 1000 * time.Second
	w, err := newWindow(span, time.Second, l.n, t0)
	require.NoError(t, err)
	return newHistogram(l, Second, w, nil), t0
}

// readWindow reads h's window at now, as a refresh does, and the index
// of its base mark then.
func readWindow(h *Histogram, now time.Duration) (windowState, int) {
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	return h.w.state(&h.tally, now, make([]uint64, 2*h.w.n)), h.w.base(now)
}

// publishedHistogram declares a histogram of the default buckets in
// seconds on a registry of its own, and returns its group, for
// publishedAt, the histogram, and when its window starts.
func publishedHistogram(t *testing.T) (*histGroup, *Histogram, time.Duration) {
	t.Helper()
	r := NewRegistry("published", &Options{Dir: t.TempDir()})
	t.Cleanup(func() { r.Close() })
	g, err := declareHistograms(r, "h", "", Second, nil, nil)
	require.NoError(t, err)
	h := g.hs[0].e.t
	return g, h, h.w.marks[0].at
}

// publishedAt reads g's histogram at now as a refresh publishes it: its
// count, then sum, min, max, mean and the quantiles.
func publishedAt(g *histGroup, now time.Duration) (total uint64, stats []float64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.readLocked(g.hs[0], now, func(_ []uint64, n uint64, st []float64) { total, stats = n, slices.Clone(st) })
	return total, stats
}

// requireWindowOf requires the window statistics published (stats from
// publishedAt, but the sum) to be those of no observation, all 0, or of
// observations of x alone, all x: what the window holds, whole.
func requireWindowOf(t *testing.T, x float64, stats []float64, msgAndArgs ...any) {
	t.Helper()
	w := stats[1:]
	if w[0] == 0 && w[1] == 0 {
		require.Equal(t, make([]float64, len(w)), w, msgAndArgs...)
		return
	}
	want := make([]float64, len(w))
	for i := range want {
		want[i] = x
	}
	require.Equal(t, want, w, msgAndArgs...)
}

// observeParts makes stores from to to (not included) of Observe(x), of
// its stores in its order, in the stripe it writes while one goroutine
// observes: 0 the count, 1 the sum, 2 the min, 3 the max. An Observe
// preempted between two of them leaves the tally so while a refresh
// reads it.
func observeParts(h *Histogram, x float64, from, to int) {
	s := unsafe.Pointer(h.first)
	word := func(i int) *atomic.Uint64 { return (*atomic.Uint64)(unsafe.Add(s, uintptr(i)*8)) }
	stores := []func(){
		func() { word(tallyCounts + h.l.index(x)).Add(1) },
		func() { word(tallySum).Store(math.Float64bits(math.Float64frombits(word(tallySum).Load()) + x)) },
		func() {
			word(tallyMin).Store(math.Float64bits(math.Min(x, math.Float64frombits(word(tallyMin).Load()))))
		},
		func() {
			word(tallyMax).Store(math.Float64bits(math.Max(x, math.Float64frombits(word(tallyMax).Load()))))
		},
	}
	for _, f := range stores[from:to] {
		f()
	}
}

// windowAt reads h's published state at now.
func windowAt(h *Histogram, now time.Duration) (n uint64, p99, lo, hi float64, total uint64) {
	s, _ := readWindow(h, now)
	return s.n, h.quantile(s.in, s.n, 0.99, s.min, s.max), s.min, s.max, s.total
}

// flushUntilQuiet flushes r until it has nothing left to publish: the
// cells a publication bound are let go once carried past the last of
// reboundAges. Their ages run from the first flush's publication, so
// the deadline does too: under -race on a loaded machine that flush of
// thousands of new values alone took over 3 s.
func flushUntilQuiet(t *testing.T, r *Registry) {
	t.Helper()
	last := reboundAges[len(reboundAges)-1]
	var deadline time.Time
	for i := 0; ; i++ {
		require.NoError(t, r.Flush())
		if i == 0 {
			deadline = time.Now().Add(3 * last)
		}
		r.mu.Lock()
		quiet := !r.unpublishedLocked()
		r.mu.Unlock()
		if quiet {
			return
		}
		require.True(t, time.Now().Before(deadline), "still unpublished after %d flushes, %v after the first", i+1, 3*last)
		time.Sleep(last / 20)
	}
}

// pagemapOf returns a reader of /proc/self/pagemap's entry for the page
// at an address (its present bit 63, its page frame in bits 0-54, shown
// to CAP_SYS_ADMIN alone), or skips the test where there is none.
func pagemapOf(t *testing.T) func(addr uintptr) uint64 {
	t.Helper()
	pagemap, err := os.Open("/proc/self/pagemap")
	if err != nil {
		t.Skipf("no pagemap: %v", err)
	}
	t.Cleanup(func() { pagemap.Close() })
	page := uintptr(os.Getpagesize())
	return func(addr uintptr) uint64 {
		var e [8]byte
		_, err := pagemap.ReadAt(e[:], int64(addr/page)*8)
		require.NoError(t, err)
		return binary.LittleEndian.Uint64(e[:])
	}
}

// fileNames returns the metric names of the MMV file at path, without
// prefix (bury keeping every one).
func fileNames(t *testing.T, path, prefix string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	_, names, _, _ := bury(b, prefix, prefix, 0, func(string) bool { return true })
	return names
}

// overTombstone starts a registry named name over the files of a last run
// of 3,000 counters, c0000 up, whose third file, holding c2999, is now a
// tombstone, and whose first file is gone, so that this run's has room;
// it returns the registry, holding one counter, and the
// directory.
func overTombstone(t *testing.T, name string) (*Registry, string) {
	dir := filepath.Join(t.TempDir(), "mmv")
	last := NewRegistry(name, &Options{Dir: dir, MaxRegistryMetrics: -1})
	for i := range 3000 {
		NewCounter(last, fmt.Sprintf("c%04d", i), "", Count).Inc()
	}
	startOrSkip(t, last)
	require.NoError(t, last.Close())
	require.Contains(t, fileNames(t, filepath.Join(dir, name+".3"), name+"."), "c2999", "the last run's third file")
	require.NoError(t, os.Remove(filepath.Join(dir, name))) // its full first file: Start would keep its items (carry.go), the first file then without room
	// Its tests' Flushes publish, the timer never (hookGrowth).
	r := NewRegistry(name, &Options{Dir: dir, PublishDelay: time.Hour})
	t.Cleanup(func() { r.Close() })
	NewCounter(r, "first", "", Count).Inc()
	startOrSkip(t, r)
	require.FileExists(t, filepath.Join(dir, name+".3"), "a tombstone")
	return r, dir
}

// hookGrowth makes f the growth step's hook (growthHook) until the test
// ends, for the publications of r the test makes: r's timer must not
// publish (a PublishDelay of an hour), or its publication ran f on its own
// goroutine, racing the test, and reached the point meant for the test's
// Flush, which then returned before that publication's end
// (TestNameDeclaredDuringPublicationLeavesTombstone failed so in CI).
func hookGrowth(t testing.TB, r *Registry, f func(growthPoint)) {
	t.Helper()
	require.GreaterOrEqual(t, r.opts.PublishDelay, time.Hour, "a registry whose timer publishes while a test hooks its growth")
	growthHook = f
	t.Cleanup(func() { growthHook = nil })
}

// declareAt declares a counter named metric on r at the growth step's
// point at of the Flush it makes.
func declareAt(t *testing.T, r *Registry, at growthPoint, metric string) {
	duringFlush(t, r, at, func() { NewCounter(r, metric, "", Count).Inc() })
}

// duringFlush runs f at the growth step's point at of the Flush it makes
// on r, where the publication has let the registry's lock go.
func duringFlush(t *testing.T, r *Registry, at growthPoint, f func()) {
	t.Helper()
	ran := false
	hookGrowth(t, r, func(gp growthPoint) {
		if gp == at && !ran {
			ran = true
			f()
		}
	})
	defer func() { growthHook = nil }()
	require.NoError(t, r.Flush())
	require.True(t, ran, "the publication let the lock go at %v", at)
}

// holdersOf returns the files of registry name in dir, the first and its
// overflow files up to <name>.3, that hold a metric named metric.
func holdersOf(t *testing.T, dir, name, metric string) []string {
	var holders []string
	for _, file := range []string{name, name + ".2", name + ".3"} {
		prefix := name + "."
		if file == name {
			prefix = ""
		}
		if _, err := os.Stat(filepath.Join(dir, file)); err == nil && slices.Contains(fileNames(t, filepath.Join(dir, file), prefix), metric) {
			holders = append(holders, file)
		}
	}
	return holders
}

// startedUpdateRacingBind starts a registry publishing after delay, with
// a counter vector c and its instance k=a, and returns the instance and
// what an update of it loaded just before Start bound its cell: its own
// memory, where an add after Start lands.
func startedUpdateRacingBind(t *testing.T, delay time.Duration) (*Registry, *Counter, *Value) {
	t.Helper()
	needFileLayer(t)
	r := NewRegistry("racingbind", &Options{Dir: filepath.Join(t.TempDir(), "mmv"), PublishDelay: delay})
	t.Cleanup(func() { r.Close() })
	c := NewCounterVec(r, "c", "", Count, "k").With("a")
	stale := c.cell.v.Load() // an update's load, before Start binds the cell
	require.Same(t, &c.cell.heap, stale)
	require.NoError(t, r.Start())
	return r, c, stale
}
