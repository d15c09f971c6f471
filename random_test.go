package mmv_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/mmvfile"
)

// TestRandomOperationsMatchTheFiles: a registry's counter, gauge and
// histogram vectors, driven by a seeded random mix of first uses,
// updates, deletions (some through handles kept and updated after them),
// resets, revivals, values used once, and values whose derived ids
// collide, at the vectors' limits or below, show in their files exactly
// what a model of the same operations holds, at every check between
// publications and after the last; every metric keeps its item, and no
// instance id names two names. Meanwhile a goroutine counts on a vector
// of its own, whose counts are exact at the end. The registry starts at
// a random step, and its timer publishes at once, within a millisecond,
// or never (Flush does). The last state is read with PCP's reader too,
// where it is installed; then the registry restarts, and shows the same
// cluster, items and derived ids (requireSameAfterRestart).
func TestRandomOperationsMatchTheFiles(t *testing.T) {
	for seed := range uint64(3) {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) { randomOperations(t, seed, 1) })
	}
}

// TestConcurrentOperationsMatchTheFiles is TestRandomOperationsMatchTheFiles
// with two goroutines at once, each on label values of its own (no
// Reset, which is every value's), checked while both wait between
// rounds.
func TestConcurrentOperationsMatchTheFiles(t *testing.T) {
	for seed := range uint64(3) {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) { randomOperations(t, seed, 2) })
	}
}

// randomOperations runs 2,000 random steps in all on r's vectors, in
// workers goroutines at once, in rounds between which the files are
// checked against the workers' models.
func randomOperations(t *testing.T, seed uint64, workers int) {
	const steps = 2000
	// At 120, the vectors refuse values and forget more than they hold
	// (then count new names' ids); at 1,000, they derive ids all along.
	limit := []int{120, 1000}[seed%2]
	rng := rand.New(rand.NewPCG(seed, 0x6d6d76))
	tmp := t.TempDir()
	r := newRegistry(t, "rnd", filepath.Join(tmp, "mmv"), mmv.Options{
		PublishDelay: []time.Duration{50 * time.Microsecond, time.Millisecond, time.Hour}[seed%3]})
	v := declareRandom(r, limit)
	ws := make([]*randomWorker, workers)
	for i := range ws {
		prefix := "w" + strconv.Itoa(i) + "-"
		ws[i] = &randomWorker{randomVectors: v, t: t, want: newRandomModel(), rng: rand.New(rand.NewPCG(seed, uint64(i))),
			prefix: prefix, alone: workers == 1, colliding: collidingValues(prefix)}
	}

	var stop atomic.Bool
	var wg sync.WaitGroup
	counted := make([]atomic.Uint64, 20)
	wg.Go(func() {
		for i := 0; !stop.Load(); i++ {
			k := i % len(counted)
			if x := v.rc.With("r" + strconv.Itoa(k)); x != nil {
				x.Inc()
				counted[k].Add(1)
			}
		}
	})
	defer func() { stop.Store(true); wg.Wait() }()

	want := func() *randomModel {
		all := newRandomModel()
		for _, w := range ws {
			maps.Copy(all.c, w.want.c)
			maps.Copy(all.g, w.want.g)
			maps.Copy(all.h, w.want.h)
		}
		return all
	}
	var ids shownIdentities
	startAt := rng.IntN(steps / 2)
	if startAt == 0 {
		startOrSkip(t, r)
	}
	for done := 0; done < steps; {
		// A round: up to the start, then checks about 20 times a run.
		n := min(steps-done, 1+rng.IntN(2*steps/20))
		if done < startAt {
			n = min(n, startAt-done)
		}
		var round sync.WaitGroup
		for _, w := range ws {
			round.Go(func() { w.run(n / workers) })
		}
		round.Wait()
		if t.Failed() {
			return
		}
		if done += n; done == startAt {
			startOrSkip(t, r)
		} else if done > startAt {
			requireFilesShow(t, r, want(), "step "+strconv.Itoa(done)) // the last at the end
			ids.require(t, filesValues(t, r), "step "+strconv.Itoa(done))
		}
	}
	stop.Store(true)
	wg.Wait()
	require.NoError(t, r.Flush())
	got := filesValues(t, r)
	for k := range counted {
		require.Equal(t, counted[k].Load(), got["rc"]["k=r"+strconv.Itoa(k)].Uint, "rc[r%d], counted by another goroutine", k)
	}
	if pcptest.WantPCP(t) {
		ms := pcptest.Info(t, tmp)
		all := want()
		for metric, values := range all.shown() {
			m := get(t, ms, "mmv.rnd."+metric)
			shown := map[string]string{}
			for _, in := range m.Instances {
				shown[in.Name] = in.Value
			}
			require.Equal(t, values, shown, "mmv.rnd.%s as PCP's reader shows it", metric)
		}
	}
	requireSameAfterRestart(t, r, got, limit, rng)
}

// requireSameAfterRestart closes r, whose files showed got, and starts it
// again, the same vectors declared, with the counters' and gauges' values
// shown used again in another order: the files have the same cluster and
// items, and the values' instances the same ids, but those a vector
// counted, which a restart does not find again, and those of colliding
// names, which the order decides (see the package doc, "Identities across
// restarts").
func requireSameAfterRestart(t *testing.T, r *mmv.Registry, got map[string]map[string]mmvfile.Value, limit int, rng *rand.Rand) {
	t.Helper()
	f, err := mmvfile.Open(r.Path())
	require.NoError(t, err)
	require.NoError(t, r.Close())
	again := newRegistry(t, r.Name(), filepath.Dir(r.Path()), mmv.Options{PublishDelay: time.Hour})
	v := declareRandom(again, limit)
	startOrSkip(t, again)
	for _, metric := range []string{"c", "g"} {
		names := slices.Collect(maps.Keys(got[metric]))
		rng.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
		for _, name := range names {
			var values []string
			for _, lv := range strings.Split(name, ",") {
				_, value, _ := strings.Cut(lv, "=")
				values = append(values, value)
			}
			if metric == "c" {
				require.NotNil(t, v.c.With(values...), "%s[%s] again: %v", metric, name, v.c.Err())
			} else {
				require.NotNil(t, v.g.With(values...), "%s[%s] again: %v", metric, name, v.g.Err())
			}
		}
	}
	require.NoError(t, again.Flush())
	f2, err := mmvfile.Open(again.Path())
	require.NoError(t, err)
	require.Equal(t, f.Header.Cluster, f2.Header.Cluster, "the cluster after a restart")
	shown := filesValues(t, again)
	for metric, values := range shown {
		for name, val := range values {
			before, ok := got[metric][name]
			if !ok {
				continue
			}
			require.Equal(t, before.Metric.Item, val.Metric.Item, "%s's item after a restart", metric)
			// The gauges' names of colliding values collide too: FNV-1a
			// goes on from the same state.
			k, _, _ := strings.Cut(strings.TrimPrefix(name, "k="), ",")
			colliding := slices.Contains(collidingValues(k[:3]), k) // "w0-..."
			if derivedID(metric, before.Instance.ID) && !colliding {
				require.Equal(t, before.Instance.ID, val.Instance.ID, "%s[%s]'s id after a restart", metric, name)
			}
		}
	}
}

// declareRandom declares randomOperations' vectors on r, at limit.
func declareRandom(r *mmv.Registry, limit int) randomVectors {
	v := randomVectors{
		c:  mmv.NewCounterVec(r, "c", "", mmv.Count, "k"),
		g:  mmv.NewIntGaugeVec(r, "g", "", mmv.Count, "k", "j"),
		h:  mmv.NewHistogramVec(r, "h", "", mmv.Second, &mmv.HistogramOptions{Buckets: []float64{1, 2, 4}, Interval: time.Millisecond}, "k"),
		rc: mmv.NewCounterVec(r, "rc", "", mmv.Count, "k"),
	}
	v.c.SetLimit(limit)
	v.g.SetLimit(limit)
	v.h.SetLimit(limit)
	return v
}

// shownIdentities are the items of the metrics shown, by name, and the
// names of their instances' ids, as first shown: PCP's clients keep them.
type shownIdentities struct {
	items map[string]uint32
	names map[string]string // by metric and id
	ids   map[string]int32  // by metric and name
}

// require checks that the files' values, got, show every metric with its
// first item, and no id with another name than its first: a name may
// come back with another id, a vector's counted one, from 2^30 (see
// Vec.Delete; the counters' and gauges' checked), never with another
// name's.
func (ids *shownIdentities) require(t *testing.T, got map[string]map[string]mmvfile.Value, when string) {
	t.Helper()
	if ids.items == nil {
		ids.items, ids.names, ids.ids = map[string]uint32{}, map[string]string{}, map[string]int32{}
	}
	for metric, values := range got {
		for inst, v := range values {
			if first, ok := ids.items[metric]; !ok {
				ids.items[metric] = v.Metric.Item
			} else if v.Metric.Item != first {
				require.Failf(t, "an item changed", "%s: %s is item %d, first shown as %d", when, metric, v.Metric.Item, first)
			}
			if v.Instance == nil {
				continue
			}
			id := metric + "[" + strconv.Itoa(int(v.Instance.ID)) + "]"
			if first, ok := ids.names[id]; !ok {
				ids.names[id] = inst
			} else if inst != first {
				require.Failf(t, "an id named two names", "%s: %s names %s, and first named %s", when, id, inst, first)
			}
			name := metric + "[" + inst + "]"
			if last, ok := ids.ids[name]; ok && v.Instance.ID != last && derivedID(metric, v.Instance.ID) {
				require.Failf(t, "a name took a derived id again", "%s: %s is %d, was %d", when, name, v.Instance.ID, last)
			}
			ids.ids[name] = v.Instance.ID
		}
	}
}

// derivedID reports whether id, of an instance of metric, is one a
// counter's or gauge's vector derived from its name (below 2^30), not
// counted; the histograms' ids are not told apart.
func derivedID(metric string, id int32) bool { return (metric == "c" || metric == "g") && id < 1<<30 }

// randomVectors are the vectors randomOperations drives, and the one its
// other goroutine counts on.
type randomVectors struct {
	c  *mmv.Vec[mmv.Counter]
	g  *mmv.Vec[mmv.IntGauge]
	h  *mmv.Vec[mmv.Histogram]
	rc *mmv.Vec[mmv.Counter]
}

// randomWorker is one of randomOperations' goroutines: the values of its
// label values, which start with prefix, in want, and the handles it kept
// of deleted ones. alone, it checks that the counters' vector refuses
// values only at its limit, and resets it.
type randomWorker struct {
	randomVectors
	t      *testing.T
	want   *randomModel
	rng    *rand.Rand
	prefix string
	alone  bool
	stale  []*mmv.Counter
	staleH []*mmv.Histogram
	// colliding are label values of the prefix whose counters' derived
	// ids collide in pairs: one probes past the other's id, forgotten or
	// not (see instanceIDs.idLocked).
	colliding []string
	once      int // values used once
}

// collidingValues returns 4 pairs of label values starting with prefix
// whose counters' instance names, "k=<value>", derive the same id: found
// once for each prefix, in some 100,000 names.
func collidingValues(prefix string) []string {
	colliding.Lock()
	defer colliding.Unlock()
	if values, ok := colliding.found[prefix]; ok {
		return values
	}
	var values []string
	seen := map[int64]string{}
	for i := 0; len(values) < 8; i++ {
		v := prefix + "c" + strconv.Itoa(i)
		home := idHome("k="+v, 1<<30)
		if o, ok := seen[home]; ok {
			values = append(values, o, v)
			continue
		}
		seen[home] = v
	}
	colliding.found[prefix] = values
	return values
}

// colliding keeps what collidingValues found.
var colliding = struct {
	sync.Mutex
	found map[string][]string
}{found: map[string][]string{}}

// run takes n random steps, as the test's goroutine or another: a
// failure is reported with Errorf, and ends the run.
func (w *randomWorker) run(n int) {
	for range n {
		if !w.step() {
			return
		}
	}
}

// step takes a random step, and reports whether it did as the model says.
func (w *randomWorker) step() bool {
	const keys = 150
	k := w.prefix + strconv.Itoa(w.rng.IntN(keys))
	if w.rng.IntN(5) == 0 {
		k = w.colliding[w.rng.IntN(len(w.colliding))]
	}
	switch op := w.rng.IntN(100); {
	case op < 30:
		n := uint64(w.rng.IntN(5) + 1)
		if x := w.c.With(k); x != nil {
			x.Add(n)
			w.want.c["k="+k] += n
		} else if w.alone && len(w.want.c) < w.c.Limit() {
			w.t.Errorf("With(%s) refused with %d values, below the limit: %v", k, len(w.want.c), w.c.Err())
			return false
		}
	case op < 36:
		_, had := w.want.c["k="+k]
		if w.c.Delete(k) != had {
			w.t.Errorf("Delete(%s) = %t, want %t", k, !had, had)
			return false
		}
		delete(w.want.c, "k="+k)
	case op < 40:
		if x := w.c.With(k); x != nil {
			w.stale = append(w.stale, x)
			w.c.Delete(k)
			delete(w.want.c, "k="+k)
		}
	case op < 45:
		for _, x := range w.stale {
			x.Add(1000)
		}
		for _, x := range w.staleH {
			x.Observe(3)
		}
	case op < 55:
		j := strconv.Itoa(w.rng.IntN(3))
		n := int64(w.rng.IntN(101) - 50)
		if x := w.g.With(k, j); x != nil {
			x.Set(n)
			w.want.g["k="+k+",j="+j] = n
		}
	case op < 58:
		j := strconv.Itoa(w.rng.IntN(3))
		w.g.Delete(k, j)
		delete(w.want.g, "k="+k+",j="+j)
	case op < 72:
		x := []float64{0.5, 1.5, 3, 10}[w.rng.IntN(4)]
		if hh := w.h.With(k); hh != nil {
			hh.Observe(x)
			w.want.observe(k, x)
		}
	case op < 76:
		if hh := w.h.With(k); hh != nil && w.rng.IntN(3) == 0 {
			w.staleH = append(w.staleH, hh)
		}
		w.h.Delete(k)
		delete(w.want.h, k)
	case op < 84:
		// A value used once (a request's id): the vector forgets such
		// values, and a colliding value must not take their ids.
		w.once++
		u := w.prefix + "once" + strconv.Itoa(w.once)
		w.c.With(u).Inc()
		w.c.Delete(u)
	case op < 85:
		if w.alone && w.rng.IntN(10) == 0 {
			w.c.Reset()
			clear(w.want.c)
		}
	}
	return true
}

// randomModel is what randomOperations' vectors hold, by instance name;
// a histogram's counts by bucket (not cumulative, as mmv shows them), by
// label value.
type randomModel struct {
	c map[string]uint64
	g map[string]int64
	h map[string]*[4]uint64
}

func newRandomModel() *randomModel {
	return &randomModel{c: map[string]uint64{}, g: map[string]int64{}, h: map[string]*[4]uint64{}}
}

// randomBounds are the upper bounds of the histogram's buckets, by name.
var randomBounds = []string{"1", "2", "4", "+Inf"}

func (m *randomModel) observe(k string, x float64) {
	b := m.h[k]
	if b == nil {
		b = new([4]uint64)
		m.h[k] = b
	}
	switch {
	case x <= 1:
		b[0]++
	case x <= 2:
		b[1]++
	case x <= 4:
		b[2]++
	default:
		b[3]++
	}
}

// shown is what the files should show of the model's metrics, by metric
// and instance name, as text.
func (m *randomModel) shown() map[string]map[string]string {
	return map[string]map[string]string{"c": decimals(m.c), "g": decimals(m.g), "h.bucket": m.buckets()}
}

// decimals returns the values as text, in decimal.
func decimals[N uint64 | int64](values map[string]N) map[string]string {
	out := make(map[string]string, len(values))
	for k, n := range values {
		out[k] = fmt.Sprint(n)
	}
	return out
}

func (m *randomModel) buckets() map[string]string {
	out := map[string]string{}
	for k, b := range m.h {
		for i, le := range randomBounds {
			out["k="+k+",le="+le] = strconv.FormatUint(b[i], 10)
		}
	}
	return out
}

// differences returns how the files' values of metrics, got, differ from
// the model's: the instances whose values differ, "" when none does.
func (m *randomModel) differences(got map[string]map[string]string, metrics ...string) string {
	all := m.shown()
	var diffs []string
	for _, metric := range metrics {
		want, shown := all[metric], got[metric]
		for inst, v := range want {
			if s, ok := shown[inst]; !ok || s != v {
				diffs = append(diffs, fmt.Sprintf("%s[%s] = %q, want %s", metric, inst, s, v))
			}
		}
		for inst, s := range shown {
			if _, ok := want[inst]; !ok {
				diffs = append(diffs, fmt.Sprintf("%s[%s] = %s, want none", metric, inst, s))
			}
		}
	}
	slices.Sort(diffs)
	return strings.Join(diffs, "; ")
}

// requireFilesShow publishes, and checks that r's files show what the
// model holds: the counters and gauges at once, the histograms within 5
// seconds (a loaded machine's), as they show their counts at each
// refresh, and still 5 ms (5 refreshes) later.
func requireFilesShow(t *testing.T, r *mmv.Registry, want *randomModel, when string) {
	t.Helper()
	require.NoError(t, r.Flush())
	shown := func() map[string]map[string]string {
		got := map[string]map[string]string{}
		for metric, values := range filesValues(t, r) {
			got[metric] = map[string]string{}
			for inst, v := range values {
				if metric == "g" {
					got[metric][inst] = strconv.FormatInt(v.Int, 10)
				} else {
					got[metric][inst] = strconv.FormatUint(v.Uint, 10)
				}
			}
		}
		return got
	}
	got := shown()
	if diff := want.differences(got, "c", "g"); diff != "" {
		require.Fail(t, "the files differ from the model", "%s: %s", when, diff)
	}
	diff := want.differences(got, "h.bucket")
	for deadline := time.Now().Add(5 * time.Second); diff != "" && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
		diff = want.differences(shown(), "h.bucket")
	}
	if diff == "" { // and it stays so: no other writer on the buckets
		time.Sleep(5 * time.Millisecond)
		diff = want.differences(shown(), "h.bucket")
	}
	if diff != "" {
		require.Fail(t, "the files differ from the model", "%s: %s", when, diff)
	}
}
