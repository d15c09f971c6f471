package mmv

import (
	"errors"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestLiveCountsExact: the registry's counts of live instances and values,
// kept as indoms and metrics change rather than summed at every instance
// added (which cost 1,000 vectors' declarations most of their time), equal
// the sums over the indoms after every kind of change: indoms and metrics
// declared, instances added, removed, revived and forgotten, transactions
// refused and undone, histograms, before and after Start, in overflow
// files; and the bound on each part's charge holds it (chargeBound).
func TestLiveCountsExact(t *testing.T) {
	needFileLayer(t)
	r := NewRegistry("counts", &Options{Dir: t.TempDir(), PublishDelay: time.Hour, MaxFileValues: 64})
	t.Cleanup(func() { r.Close() })
	check := func(after string) {
		t.Helper()
		r.mu.Lock()
		defer r.mu.Unlock()
		var want liveCounts
		for _, in := range r.indoms {
			live, users := 0, 0
			for _, removed := range in.removed {
				if !removed {
					live++
				}
			}
			for _, m := range r.metrics {
				if m.indom == in {
					users++
				}
			}
			require.Equal(t, live, in.live, "indom %d's live after %s", in.Serial, after)
			require.Equal(t, users, in.users, "indom %d's users after %s", in.Serial, after)
			want.instances += live
			want.values += users * (live - 1)
		}
		want.added, want.lowered = r.counts.added, r.counts.lowered // sums over time, not over indoms
		require.Equal(t, want, r.counts, "after %s", after)
		// No value waits that has storage: wakeLocked skips the waiters
		// unless a part gave a value storage (bindable).
		for _, w := range r.waiting {
			require.Nil(t, r.handleLocked(w.m, w.inst), "metric %q instance %d waits with storage after %s", w.m.Name, w.inst, after)
		}
		for _, g := range r.waitingGroups {
			g.waitingLocked(func(m *metric, j int, _ *cell) {
				require.Nil(t, r.handleLocked(m, j), "metric %q instance %d waits with storage after %s", m.Name, j, after)
			})
		}
		// Each part's metrics by indom, kept as metrics join and leave it
		// (joinMetric), are its metrics, in their order.
		for _, p := range r.parts {
			singular, strs, byIndom := 0, 0, map[*indom][]*metric{}
			for _, m := range p.metrics {
				if m.Type == String {
					strs++
				}
				if m.indom == nil {
					singular++
				} else {
					byIndom[m.indom] = append(byIndom[m.indom], m)
				}
			}
			kept := map[*indom][]*metric{}
			for i, over := range p.byIndom {
				require.NotContains(t, kept, over.in, "%s lists indom %d twice after %s", p.name, over.in.Serial, after)
				require.Equal(t, i, p.overAt[over.in], "%s's index of indom %d after %s", p.name, over.in.Serial, after)
				kept[over.in] = over.metrics
			}
			require.Len(t, p.overAt, len(p.byIndom), "%s's index after %s", p.name, after)
			require.Equal(t, singular, p.singular, "%s's singular metrics after %s", p.name, after)
			require.Equal(t, strs, p.strings, "%s's String metrics after %s", p.name, after)
			require.Equal(t, byIndom, kept, "%s's metrics by indom after %s", p.name, after)
			// The bound on the part's charge holds it (chargeBound).
			budget := fileBudget(&r.opts)
			if b := p.charges; b.ok && b.budget == budget {
				require.GreaterOrEqual(t, b.charge+r.counts.added-b.added, p.chargeLocked(budget, nil, 0), "%s's bound on its charge after %s", p.name, after)
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var vecs []*Vec[Counter]
	var hists []*Vec[Histogram]
	var serials []uint32 // the low-level API's indoms
	refused := errors.New("refused")
	for i := range 600 {
		if i == 300 {
			require.NoError(t, r.Start())
			check("Start")
		}
		op := rng.IntN(9)
		switch {
		case op == 0 || len(vecs) == 0:
			v := NewCounterVec(r, "v"+strconv.Itoa(i), "", Count, "k")
			v.SetLimit(20)
			vecs = append(vecs, v)
		case op == 1:
			hists = append(hists, NewHistogramVec(r, "h"+strconv.Itoa(i), "", Second, &HistogramOptions{Buckets: []float64{1, 2}}, "k"))
		case op == 2: // a refused transaction: its indom, metric and instances undone
			err := r.Transact(func(tx *Tx) error {
				v, err := DeclareVec[Counter](tx, "t"+strconv.Itoa(i), "", Count, "k")
				if err != nil {
					return err
				}
				_ = v
				return refused
			})
			require.ErrorIs(t, err, refused)
		case op == 6: // a histogram refused once its buckets' indom, with instances, is declared
			NewCounter(r, "c"+strconv.Itoa(i)+".count", "", Count)
			require.Panics(t, func() { NewHistogram(r, "c"+strconv.Itoa(i), "", Second, nil) })
		case op == 3 && len(hists) > 0:
			hists[rng.IntN(len(hists))].With(strconv.Itoa(rng.IntN(5))).Observe(1.5)
		case op == 4:
			vecs[rng.IntN(len(vecs))].Delete(strconv.Itoa(rng.IntN(30)))
		case op == 7: // metrics of the low-level API sharing an indom, one of them String
			serial := uint32(1000 + i)
			r.mu.Lock()
			for r.serials[serial] != nil { // taken by an instrument's indom
				serial++
			}
			r.mu.Unlock()
			require.NoError(t, r.AddIndom(Indom{Serial: serial, Instances: []Instance{{ID: 0, Name: "a"}, {ID: 1, Name: "b"}}}))
			require.NoError(t, r.AddMetric(Metric{Name: "l" + strconv.Itoa(i), Type: Uint64, Semantics: SemCounter, Indom: serial}))
			require.NoError(t, r.AddMetric(Metric{Name: "m" + strconv.Itoa(i), Type: String, Semantics: SemDiscrete, Indom: serial}))
			serials = append(serials, serial)
		case op == 8 && len(serials) > 0: // instances beyond any room reserved, or refused by the budget
			_ = r.AddInstance(serials[rng.IntN(len(serials))], Instance{ID: int32(10 + i), Name: "i" + strconv.Itoa(i)})
		case op == 5 && r.state == started:
			require.NoError(t, r.Flush()) // forgets removed instances
		default: // new values, revived ones, and refusals at the limit or the budget
			vecs[rng.IntN(len(vecs))].With(strconv.Itoa(rng.IntN(30))).Inc()
		}
		check("operation " + strconv.Itoa(i))
	}
	require.Greater(t, len(r.parts), 1, "the budget should have made overflow files")
}
