package mmv_test

import (
	"fmt"

	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/goruntime"
	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/mmvfile"
)

// fileValues returns the live values of every MMV file in dir, by name.
func fileValues(t *testing.T, dir string) map[string]int {
	t.Helper()
	des, err := os.ReadDir(dir)
	require.NoError(t, err)
	got := map[string]int{}
	for _, de := range des {
		if strings.HasPrefix(de.Name(), ".") {
			continue
		}
		f, err := mmvfile.Open(filepath.Join(dir, de.Name()))
		require.NoError(t, err)
		got[de.Name()] = len(f.Values)
	}
	return got
}

// requireWithinBudget checks that no file in dir holds more values than
// budget, and returns their total.
func requireWithinBudget(t *testing.T, dir string, budget int) int {
	t.Helper()
	total := 0
	for name, n := range fileValues(t, dir) {
		assert.LessOrEqual(t, n, budget, "values of %s", name)
		total += n
	}
	return total
}

// The new user's case of issue 22: with default options, one indom at
// the per-indom cap and 200 metrics over it. The metrics spread over
// files of at most DefaultMaxFileValues values each, and the registry's
// cap on values refuses those past DefaultMaxValues, naming the cap and
// the option that raises it: PCP's reader pays at most about
// DefaultMaxValues x DefaultMaxFileValues steps for a whole fetch, where
// it paid (200 x 4,096)^2.
func TestNewUserIndomCase(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mmv")
	for _, started := range []bool{false, true} {
		t.Run(fmt.Sprint("started=", started), func(t *testing.T) {
			dir := filepath.Join(dir, fmt.Sprint(started))
			r := newRegistry(t, "newuser", dir, mmv.Options{})
			require.NoError(t, r.AddIndom(mmv.Indom{Serial: 1, Instances: capInstances("i", mmv.DefaultMaxIndomInstances)}))
			if started {
				startOrSkip(t, r)
			}
			declared := 0
			var refused error
			for m := range 200 {
				err := r.AddMetric(mmv.Metric{Name: fmt.Sprintf("m%d", m), Type: mmv.Uint64, Semantics: mmv.SemCounter, Indom: 1})
				if err != nil {
					refused = err
					break
				}
				declared++
			}
			require.ErrorIs(t, refused, mmv.ErrTooMany)
			assert.Contains(t, refused.Error(), `metric "m`)
			assert.Contains(t, refused.Error(), fmt.Sprintf("cap of %d values", mmv.DefaultMaxValues))
			assert.Contains(t, refused.Error(), "Options.MaxValues")
			assert.Equal(t, mmv.DefaultMaxValues/mmv.DefaultMaxIndomInstances, declared)
			if !started {
				startOrSkip(t, r)
			}
			require.NoError(t, r.Flush())
			total := requireWithinBudget(t, dir, mmv.DefaultMaxFileValues)
			assert.Equal(t, declared*mmv.DefaultMaxIndomInstances, total)
			assert.LessOrEqual(t, total, mmv.DefaultMaxValues)
		})
	}
}

// A declaration that would take a file past its budget goes to another
// file; metrics already published stay where they are, with their PMIDs.
func TestBudgetSpreadsMetrics(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mmv")
	r := newRegistry(t, "spread", dir, mmv.Options{MaxFileValues: 250})
	require.NoError(t, r.AddIndom(mmv.Indom{Serial: 1, Instances: capInstances("i", 100)}))
	for m := range 2 {
		require.NoError(t, r.AddMetric(mmv.Metric{Name: fmt.Sprintf("a%d", m), Type: mmv.Uint64, Semantics: mmv.SemCounter, Indom: 1}))
	}
	startOrSkip(t, r)
	before := fileValues(t, dir)
	assert.Equal(t, map[string]int{"spread": 200}, before)
	first, err := mmvfile.Open(filepath.Join(dir, "spread"))
	require.NoError(t, err)

	for m := range 3 { // 100 values each: the first file has room for none
		require.NoError(t, r.AddMetric(mmv.Metric{Name: fmt.Sprintf("b%d", m), Type: mmv.Uint64, Semantics: mmv.SemCounter, Indom: 1}))
	}
	for m := range 50 { // one value each: room in the first file
		require.NoError(t, r.AddMetric(mmv.Metric{Name: fmt.Sprintf("s%d", m), Type: mmv.Uint64, Semantics: mmv.SemCounter}))
	}
	require.NoError(t, r.Flush())
	assert.Equal(t, map[string]int{"spread": 250, "spread.2": 200, "spread.3": 100}, fileValues(t, dir))
	again, err := mmvfile.Open(filepath.Join(dir, "spread"))
	require.NoError(t, err)
	assert.Equal(t, first.Header.Cluster, again.Header.Cluster)
	for i, m := range first.Metrics {
		assert.Equal(t, m.Item, again.Metrics[i].Item, m.Name)
	}

	// An instance that would take a file past its budget is refused, naming it.
	err = r.AddInstance(1, mmv.Instance{ID: 100, Name: "i100"})
	require.ErrorIs(t, err, mmv.ErrTooMany)
	assert.Contains(t, err.Error(), "budget of 250 values per file (Options.MaxFileValues)")
	// A metric that could never fit a file is refused at once.
	require.NoError(t, r.AddIndom(mmv.Indom{Serial: 2, Instances: capInstances("i", 200)}))
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "fits", Type: mmv.Uint64, Semantics: mmv.SemCounter, Indom: 2}))
	err = r.AddIndom(mmv.Indom{Serial: 3, Instances: capInstances("i", 251)})
	require.ErrorIs(t, err, mmv.ErrTooMany)
	assert.Contains(t, err.Error(), "budget of 250 values per file")
	requireWithinBudget(t, dir, 250)
}

// The registry's cap on values holds on every path: AddMetric,
// AddInstance, vectors (With nil, Get saying why), histograms, the runtime
// bridge; and Configure refuses a cap the declarations already pass.
func TestValuesCap(t *testing.T) {
	dir := t.TempDir()
	r := newRegistry(t, "cap", dir, mmv.Options{MaxValues: 9})
	require.NoError(t, r.AddIndom(mmv.Indom{Serial: 1, Instances: capInstances("i", 4)}))
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "a", Type: mmv.Uint64, Semantics: mmv.SemCounter, Indom: 1}))
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "b", Type: mmv.Uint64, Semantics: mmv.SemCounter, Indom: 1}))
	err := r.AddMetric(mmv.Metric{Name: "c", Type: mmv.Uint64, Semantics: mmv.SemCounter, Indom: 1})
	require.ErrorIs(t, err, mmv.ErrTooMany)
	assert.Contains(t, err.Error(), `metric "c"`)
	assert.Contains(t, err.Error(), "cap of 9 values (Options.MaxValues)")
	err = r.AddInstance(1, mmv.Instance{ID: 4, Name: "i4"})
	require.ErrorIs(t, err, mmv.ErrTooMany)
	assert.Contains(t, err.Error(), "cap of 9 values (Options.MaxValues)")
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "s", Type: mmv.Uint64, Semantics: mmv.SemCounter}))

	v := mmv.NewCounterVec(r, "requests", "Requests", mmv.Count, "route")
	assert.Nil(t, v.With("/a"))
	_, err = v.Get("/a")
	require.ErrorIs(t, err, mmv.ErrTooMany)
	assert.Contains(t, err.Error(), "Options.MaxValues")
	assert.Panics(t, func() { mmv.NewHistogram(r, "lat", "", mmv.Second, nil) })

	require.ErrorIs(t, goruntime.Register(mmv.NewRegistry("rt", &mmv.Options{Dir: dir, MaxValues: 20}), nil), mmv.ErrTooMany)

	err = r.Configure("", mmv.Options{Dir: dir, MaxValues: 5})
	require.ErrorIs(t, err, mmv.ErrTooMany)
	assert.Contains(t, err.Error(), "Options.MaxValues")
	// A budget below a metric's values (a's 4): no file holds it. One
	// above them spreads the metrics over files, as declared under it.
	err = r.Configure("", mmv.Options{Dir: dir, MaxValues: 9, MaxFileValues: 3})
	require.ErrorIs(t, err, mmv.ErrTooMany)
	assert.Contains(t, err.Error(), "Options.MaxFileValues")
	require.NoError(t, r.Configure("", mmv.Options{Dir: dir, MaxValues: 9, MaxFileValues: 5}))
}

// A vector reserves room for its limit in its file when declared, so its
// instances are never refused for the budget while a declaration after it
// takes another file; the histogram vector's default limit keeps its
// buckets within a file.
func TestVecReservesItsLimit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mmv")
	r := newRegistry(t, "reserve", dir, mmv.Options{})
	a := mmv.NewCounterVec(r, "a", "", mmv.Count, "k")
	b := mmv.NewCounterVec(r, "b", "", mmv.Count, "k")
	c := mmv.NewCounterVec(r, "c", "", mmv.Count, "k") // past the budget with a and b: another file
	h := mmv.NewHistogramVec(r, "h", "", mmv.Second, nil, "k")
	assert.LessOrEqual(t, h.Limit()*(len(mmv.DefaultBuckets)+1), mmv.DefaultMaxFileValues)
	startOrSkip(t, r)
	for i := range mmv.DefaultVecLimit {
		for _, v := range []*mmv.Vec[mmv.Counter]{a, b, c} {
			require.NotNil(t, v.With(fmt.Sprint(i)), "instance %d", i)
		}
	}
	for i := range h.Limit() {
		require.NotNil(t, h.With(fmt.Sprint(i)), "histogram %d", i)
	}
	require.NoError(t, r.Flush())
	requireWithinBudget(t, dir, mmv.DefaultMaxFileValues)
}

// SetLimit lowers the room a vector reserves, for good: a lower limit
// frees it for the metrics declared after, a higher one later reserves no
// more.
// The runtime bridge, whose bucket vectors know their instances, sets
// their limits.
func TestSetLimitMovesReservation(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mmv")
	r := newRegistry(t, "limits", dir, mmv.Options{MaxFileValues: 100})
	a := mmv.NewCounterVec(r, "a", "", mmv.Count, "k") // reserves the whole file
	a.SetLimit(10)
	for m := range 90 { // the room a no longer reserves
		require.NoError(t, r.AddMetric(mmv.Metric{Name: fmt.Sprintf("s%d", m), Type: mmv.Uint64, Semantics: mmv.SemCounter}))
	}
	b := mmv.NewCounterVec(r, "b", "", mmv.Count, "k") // another file
	a.SetLimit(1000)                                   // no room left: a keeps its 10
	startOrSkip(t, r)
	for i := range 10 {
		require.NotNil(t, a.With(fmt.Sprint(i)), "instance %d", i)
	}
	_, err := a.Get("over")
	require.ErrorIs(t, err, mmv.ErrTooMany)
	assert.Contains(t, err.Error(), "budget of 100 values per file (Options.MaxFileValues)")
	require.NotNil(t, b.With("x"))
	require.NoError(t, r.Flush())
	// limits.3: mmv.dropped, which counts the refusal.
	assert.Equal(t, map[string]int{"limits": 100, "limits.2": 1, "limits.3": 4}, fileValues(t, dir))

	rt := filepath.Join(t.TempDir(), "mmv")
	g := newRegistry(t, "rt", rt, mmv.Options{})
	require.NoError(t, goruntime.Register(g, nil))
	startOrSkip(t, g)
	// A bucket vector reserves its default limit until SetLimit: two
	// files, where five took 1,221 values before SetLimit freed room.
	assert.LessOrEqual(t, len(fileValues(t, rt)), 2, "the runtime bridge's files")
}

// A histogram vector's limit raised past any file keeps the room it
// reserves (the buckets' reservation does not wrap).
func TestHistogramVecHugeLimit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mmv")
	r := newRegistry(t, "huge", dir, mmv.Options{})
	h := mmv.NewHistogramVec(r, "h", "", mmv.Second, nil, "k")
	limit := h.Limit()
	h.SetLimit(1 << 62)                                // times 19 buckets wraps an int
	c := mmv.NewCounterVec(r, "c", "", mmv.Count, "k") // no room left beside the buckets
	startOrSkip(t, r)
	for i := range limit {
		require.NotNil(t, h.With(fmt.Sprint(i)), "histogram %d", i)
	}
	require.NotNil(t, c.With("x"))
	require.NoError(t, r.Flush())
	requireWithinBudget(t, dir, mmv.DefaultMaxFileValues)
}

// TestLongNamesKeepTheFirstFile: in an overflow file a metric's name
// carries the registry's ("longov." here), so a name of more than
// 255−len("longov.") bytes fits only the registry's first file. Such a
// metric is placed there whatever the order of declaration, and refused,
// naming the rule and the option, when the first file has no room; it is
// never written cut short into an overflow file.
func TestLongNamesKeepTheFirstFile(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "mmv")
	r := newRegistry(t, "longov", dir, mmv.Options{MaxFileValues: 4})
	long := "l" + strings.Repeat("x", mmv.MaxStringLen-1) // 255 bytes
	fits := "m" + strings.Repeat("x", mmv.MaxStringLen-len("longov.")-1)
	require.NoError(t, r.AddMetric(mmv.Metric{Name: long, Type: mmv.Uint64, Semantics: mmv.SemCounter}))
	for i := range 4 { // sorted before long: Start places by name
		require.NoError(t, r.AddMetric(mmv.Metric{Name: fmt.Sprintf("a%d", i), Type: mmv.Uint64, Semantics: mmv.SemCounter}))
	}
	require.NoError(t, r.AddMetric(mmv.Metric{Name: fits, Type: mmv.Uint64, Semantics: mmv.SemCounter}))
	startOrSkip(t, r)
	first, err := mmvfile.Open(filepath.Join(dir, "longov"))
	require.NoError(t, err)
	assert.True(t, slices.ContainsFunc(first.Metrics, func(m *mmvfile.Metric) bool { return m.Name == long }), "the long name is in the first file")

	// Started, the first file full: refused, not cut.
	err = r.AddMetric(mmv.Metric{Name: "k" + long[1:], Type: mmv.Uint64, Semantics: mmv.SemCounter})
	require.ErrorIs(t, err, mmv.ErrTooLong)
	assert.Contains(t, err.Error(), `metric "kxx`)
	assert.Contains(t, err.Error(), "Options.MaxFileValues")
	assert.Contains(t, err.Error(), "at most 248 bytes")
	// The longest name an overflow file holds goes there.
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "n" + fits[1:], Type: mmv.Uint64, Semantics: mmv.SemCounter}))
	require.NoError(t, r.Flush())
	requireWithinBudget(t, dir, 4)

	// Configure checks names against the name it gives: two metrics that
	// fit overflow files of "c" fit only the first file of a longer name.
	c := newRegistry(t, "c", dir, mmv.Options{MaxFileValues: 1})
	for _, n := range []string{"p", "q"} {
		require.NoError(t, c.AddMetric(mmv.Metric{Name: n + fits[1:], Type: mmv.Uint64, Semantics: mmv.SemCounter}))
	}
	err = c.Configure("longerx", mmv.Options{Dir: dir, MaxFileValues: 1})
	require.ErrorIs(t, err, mmv.ErrTooLong)
	assert.Contains(t, err.Error(), `metric "qxx`)
	require.NoError(t, c.Configure("longov", mmv.Options{Dir: dir, MaxFileValues: 1}), "as long as longov")

	if !pcptest.WantPCP(t) {
		return
	}
	ms := pcptest.Info(t, tmp)
	for _, name := range []string{long, fits, "n" + fits[1:], "a0", "a3"} {
		assert.NotNil(t, pcptest.Find(ms, "mmv.longov."+name), "PCP shows %.20s... (%d bytes)", name, len(name))
	}
}

// A file found full whose room was freed since takes the metrics declared
// after, as one never found full does: freed by a limit lowered
// (SetLimit) or by instances removed. A file passed as full is not summed
// again until something lowered a charge (chargeBound), so each of these
// must say so. Declared after Start, where a metric's file is its own for
// life (Start lays out the metrics declared before it anew).
func TestRoomFreedAfterFileFoundFull(t *testing.T) {
	t.Run("limit lowered", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "mmv")
		r := newRegistry(t, "freed", dir, mmv.Options{MaxFileValues: 100})
		a := mmv.NewCounterVec(r, "a", "", mmv.Count, "k") // reserves the whole file
		startOrSkip(t, r)
		over := mmv.NewCounter(r, "over", "", mmv.Count) // found full: another file
		a.SetLimit(10)
		late := mmv.NewCounter(r, "late", "", mmv.Count) // in the room a no longer reserves
		for i := range 10 {
			a.With(fmt.Sprint(i)).Inc()
		}
		over.Inc()
		late.Inc()
		require.NoError(t, r.Flush())
		assert.Equal(t, map[string]int{"freed": 11, "freed.2": 1}, fileValues(t, dir))
	})
	t.Run("instances removed", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "mmv")
		r := newRegistry(t, "removed", dir, mmv.Options{MaxFileValues: 100})
		a := mmv.NewCounterVec(r, "a", "", mmv.Count, "k")
		a.SetLimit(10)
		mmv.NewCounter(r, "s", "", mmv.Count) // a's file summed: a reserves 10, for good
		a.SetLimit(60)                        // its instances past 10 charge as they come
		startOrSkip(t, r)
		for i := range 60 {
			require.NotNil(t, a.With(fmt.Sprint(i)), "instance %d", i)
		}
		for m := range 39 { // the file's last room
			mmv.NewCounter(r, fmt.Sprintf("s%d", m), "", mmv.Count)
		}
		over := mmv.NewCounter(r, "over", "", mmv.Count) // found full: another file
		for i := range 20 {
			require.True(t, a.Delete(fmt.Sprint(i)), "instance %d", i)
		}
		late := mmv.NewCounter(r, "late", "", mmv.Count) // in the room the instances left
		over.Inc()
		late.Inc()
		require.NoError(t, r.Flush())
		assert.Equal(t, map[string]int{"removed": 81, "removed.2": 1}, fileValues(t, dir))
	})
}

// TestOwnValuesOutsideValuesCap: the registry's own metrics
// (mmv.dropped, mmv.expired), declared beyond the caps at a vector's
// first refusal, take none of the program's Options.MaxValues: a value
// deleted leaves room for another. They were counted from then on, and a
// registry of a small cap, its vector's values all deleted, refused every
// new value for good ("5 values in the registry would pass its cap of 3").
func TestOwnValuesOutsideValuesCap(t *testing.T) {
	r, v := ownOutsideCap(t, "owncap", mmv.Options{MaxValues: 3})
	startOrSkip(t, r)
	require.True(t, v.Delete("/b"))
	_, err := v.Get("/g")
	assert.NoError(t, err, "after Start too")
}

// TestOwnInstancesOutsideInstanceCap: as for the values cap, the
// registry's own mmv.dropped takes none of Options.MaxInstances, which
// Configure already left it out of: its 4 instances were counted from the
// vector's first refusal on, and a registry of a cap of 3 refused a new
// value after one was deleted ("7 instances in the registry would pass
// its cap of 3").
func TestOwnInstancesOutsideInstanceCap(t *testing.T) {
	ownOutsideCap(t, "owninst", mmv.Options{MaxInstances: 3})
}

// ownOutsideCap fills a counter vector of a registry of name, whose
// options cap it at 3 values, has it refuse a fourth (mmv.dropped
// declared), and checks that a value deleted leaves room for one.
func ownOutsideCap(t *testing.T, name string, opts mmv.Options) (*mmv.Registry, *mmv.Vec[mmv.Counter]) {
	t.Helper()
	r := newRegistry(t, name, filepath.Join(t.TempDir(), "mmv"), opts)
	v := mmv.NewCounterVec(r, "requests", "", mmv.Count, "route")
	for _, route := range []string{"/a", "/b", "/c"} {
		require.NotNil(t, v.With(route))
	}
	_, err := v.Get("/d")
	require.ErrorIs(t, err, mmv.ErrTooMany, "past the cap: mmv.dropped counts it")
	require.True(t, v.Delete("/a"))
	_, err = v.Get("/e")
	assert.NoError(t, err, "the room /a left")
	_, err = v.Get("/f")
	assert.ErrorIs(t, err, mmv.ErrTooMany, "the cap holds still")
	return r, v
}

// TestOwnMetricsOutsideMetricsCap: as for the values cap, the registry's
// own mmv.dropped takes none of Options.MaxRegistryMetrics, which
// Configure already left it out of: counted from a vector's first refusal
// on, a registry at its cap less one refused its last metric.
func TestOwnMetricsOutsideMetricsCap(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mmv")
	r := newRegistry(t, "ownmetrics", dir, mmv.Options{MaxRegistryMetrics: 2})
	v := mmv.NewCounterVec(r, "requests", "", mmv.Count, "route")
	v.SetLimit(1)
	require.NotNil(t, v.With("/a"))
	_, err := v.Get("/b")
	require.ErrorIs(t, err, mmv.ErrTooMany, "past the limit: mmv.dropped counts it")
	require.NoError(t, r.Transact(func(tx *mmv.Tx) error {
		return tx.AddMetric(mmv.Metric{Name: "last", Type: mmv.Uint64, Semantics: mmv.SemCounter})
	}), "the program's second metric")
	require.Error(t, r.Transact(func(tx *mmv.Tx) error {
		return tx.AddMetric(mmv.Metric{Name: "third", Type: mmv.Uint64, Semantics: mmv.SemCounter})
	}), "the cap holds still")
	require.NoError(t, r.Configure("ownmetrics", mmv.Options{Dir: dir, MaxRegistryMetrics: 2}))
}
