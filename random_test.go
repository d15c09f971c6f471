package mmv_test

import (
	"fmt"
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
)

// TestRandomOperationsMatchTheFiles: a registry's counter, gauge and
// histogram vectors, driven by a seeded random mix of first uses,
// updates, deletions (some through handles kept and updated after them),
// resets and revivals of label values at the vectors' limits, show in
// their files exactly what a model of the same operations holds, at every
// check between publications and after the last; while a goroutine
// counts on a vector of its own, whose counts are exact at the end. The
// registry starts at a random step, and its timer publishes at once,
// within a millisecond, or never (Flush does). The last state is read
// with PCP's reader too, where it is installed.
func TestRandomOperationsMatchTheFiles(t *testing.T) {
	for seed := range uint64(3) {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) { randomOperations(t, seed) })
	}
}

func randomOperations(t *testing.T, seed uint64) {
	const steps, keys, limit = 2000, 150, 120
	rng := rand.New(rand.NewPCG(seed, 0x6d6d76))
	tmp := t.TempDir()
	r := newRegistry(t, "rnd", filepath.Join(tmp, "mmv"), mmv.Options{
		PublishDelay: []time.Duration{50 * time.Microsecond, time.Millisecond, time.Hour}[seed%3]})
	c := mmv.NewCounterVec(r, "c", "", mmv.Count, "k")
	g := mmv.NewIntGaugeVec(r, "g", "", mmv.Count, "k", "j")
	h := mmv.NewHistogramVec(r, "h", "", mmv.Second, &mmv.HistogramOptions{Buckets: []float64{1, 2, 4}, Interval: time.Millisecond}, "k")
	for _, l := range []interface{ SetLimit(int) }{c, g, h} {
		l.SetLimit(limit)
	}
	rc := mmv.NewCounterVec(r, "rc", "", mmv.Count, "k")
	want := newRandomModel()
	var stale []*mmv.Counter
	var staleH []*mmv.Histogram

	var stop atomic.Bool
	var wg sync.WaitGroup
	counted := make([]atomic.Uint64, 20)
	wg.Go(func() {
		for i := 0; !stop.Load(); i++ {
			k := i % len(counted)
			if x := rc.With("r" + strconv.Itoa(k)); x != nil {
				x.Inc()
				counted[k].Add(1)
			}
		}
	})
	defer func() { stop.Store(true); wg.Wait() }()

	startAt := rng.IntN(steps / 2)
	for step := range steps {
		if step == startAt {
			startOrSkip(t, r)
		}
		k := "key" + strconv.Itoa(rng.IntN(keys))
		switch op := rng.IntN(100); {
		case op < 30:
			n := uint64(rng.IntN(5) + 1)
			if x := c.With(k); x != nil {
				x.Add(n)
				want.c["k="+k] += n
			} else {
				require.Len(t, want.c, limit, "step %d: With(%s) refused below the limit: %v", step, k, c.Err())
			}
		case op < 36:
			_, had := want.c["k="+k]
			require.Equal(t, had, c.Delete(k), "step %d: Delete(%s)", step, k)
			delete(want.c, "k="+k)
		case op < 40:
			if x := c.With(k); x != nil {
				stale = append(stale, x)
				c.Delete(k)
				delete(want.c, "k="+k)
			}
		case op < 45:
			for _, x := range stale {
				x.Add(1000)
			}
			for _, x := range staleH {
				x.Observe(3)
			}
		case op < 55:
			j := strconv.Itoa(rng.IntN(3))
			n := int64(rng.IntN(101) - 50)
			if x := g.With(k, j); x != nil {
				x.Set(n)
				want.g["k="+k+",j="+j] = n
			}
		case op < 58:
			j := strconv.Itoa(rng.IntN(3))
			g.Delete(k, j)
			delete(want.g, "k="+k+",j="+j)
		case op < 80:
			x := []float64{0.5, 1.5, 3, 10}[rng.IntN(4)]
			if hh := h.With(k); hh != nil {
				hh.Observe(x)
				want.observe(k, x)
			}
		case op < 84:
			if hh := h.With(k); hh != nil && rng.IntN(3) == 0 {
				staleH = append(staleH, hh)
			}
			h.Delete(k)
			delete(want.h, k)
		case op < 85:
			if rng.IntN(10) == 0 {
				c.Reset()
				clear(want.c)
			}
		default:
			if step > startAt && rng.IntN(12) == 0 { // about 20 checks a run
				requireFilesShow(t, r, want, "step "+strconv.Itoa(step))
			}
		}
	}
	requireFilesShow(t, r, want, "the end")
	stop.Store(true)
	wg.Wait()
	require.NoError(t, r.Flush())
	got := filesValues(t, r)
	for k := range counted {
		require.Equal(t, counted[k].Load(), got["rc"]["k=r"+strconv.Itoa(k)].Uint, "rc[r%d], counted by another goroutine", k)
	}
	if pcptest.WantPCP(t) {
		ms := pcptest.Info(t, tmp)
		for metric, values := range map[string]map[string]string{"c": want.counters(), "g": want.gauges(), "h.bucket": want.buckets()} {
			m := get(t, ms, "mmv.rnd."+metric)
			shown := map[string]string{}
			for _, in := range m.Instances {
				shown[in.Name] = in.Value
			}
			require.Equal(t, values, shown, "mmv.rnd.%s as PCP's reader shows it", metric)
		}
	}
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

func (m *randomModel) counters() map[string]string {
	out := map[string]string{}
	for k, n := range m.c {
		out[k] = strconv.FormatUint(n, 10)
	}
	return out
}

func (m *randomModel) gauges() map[string]string {
	out := map[string]string{}
	for k, n := range m.g {
		out[k] = strconv.FormatInt(n, 10)
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
	all := map[string]map[string]string{"c": m.counters(), "g": m.gauges(), "h.bucket": m.buckets()}
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
// model holds: the counters and gauges at once, the histograms within a
// second, as they show their counts at each refresh, and still 5 ms (5
// refreshes) later.
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
	for try := 0; diff != "" && try < 1000; try++ {
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
