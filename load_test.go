package mmv_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
)

// TestLoadTotals runs N goroutines that each add 1, M times, to shared
// counters, singular and per instance, of types Uint64, Int32 and Double;
// then PCP's reader shows exactly N*M for every value. In the "growing"
// case, declarations made meanwhile rewrite the file again and again
// (new metrics, new instances of the counters' indom): no update is lost.
func TestLoadTotals(t *testing.T) {
	pcptest.MustHavePCP(t)
	const N, M = 8, 20000
	for _, growing := range []bool{false, true} {
		t.Run(map[bool]string{false: "fixed", true: "growing"}[growing], func(t *testing.T) {
			tmp := t.TempDir()
			r := mmv.NewRegistry("load", &mmv.Options{Dir: filepath.Join(tmp, "mmv"), PublishDelay: time.Millisecond})
			require.NoError(t, r.AddIndom(mmv.Indom{Serial: 1, Instances: []mmv.Instance{{ID: 0, Name: "a"}, {ID: 1, Name: "b"}, {ID: 2, Name: "c"}}}))
			types := map[string]mmv.Type{"u64": mmv.Uint64, "i32": mmv.Int32, "double": mmv.Double}
			for name, ty := range types {
				require.NoError(t, r.AddMetric(mmv.Metric{Name: name, Type: ty, Semantics: mmv.SemCounter}))
				require.NoError(t, r.AddMetric(mmv.Metric{Name: "per." + name, Type: ty, Semantics: mmv.SemCounter, Indom: 1}))
			}
			startOrSkip(t, r)
			defer r.Close()
			var values []*mmv.Value
			for name := range types {
				for _, key := range [][2]string{{name, ""}, {"per." + name, "a"}, {"per." + name, "b"}, {"per." + name, "c"}} {
					v, err := r.Value(key[0], key[1])
					require.NoError(t, err)
					values = append(values, v)
				}
			}

			var wg sync.WaitGroup
			var done atomic.Bool
			grown := 0
			if growing {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; !done.Load(); i++ {
						var err error
						if i%4 == 3 {
							err = r.AddInstance(1, mmv.Instance{ID: int32(100 + i), Name: fmt.Sprintf("i%d", i)})
						} else {
							err = r.AddMetric(mmv.Metric{Name: fmt.Sprintf("grow.m%d", i), Type: mmv.Uint64, Semantics: mmv.SemCounter})
						}
						if !assert.NoError(t, err) {
							return
						}
						if i%3 == 0 {
							if !assert.NoError(t, r.Flush()) {
								return
							}
						}
						grown++
						if i >= 600 {
							return
						}
					}
				}()
			}
			var adders sync.WaitGroup
			for g := range N {
				adders.Add(1)
				go func() {
					defer adders.Done()
					for i := range M {
						for j, v := range values {
							switch (g + i + j) % 3 {
							case 0:
								v.Add(1)
							case 1:
								v.Inc()
							default:
								v.AddFloat(1)
							}
						}
					}
				}()
			}
			adders.Wait()
			done.Store(true)
			wg.Wait()
			require.NoError(t, r.Flush())
			if growing {
				t.Logf("%d declarations made during the load", grown)
			}

			ms := pcptest.Info(t, tmp)
			want := strconv.Itoa(N * M)
			for name := range types {
				m := pcptest.Find(ms, "mmv.load."+name)
				assert.False(t, m == nil || m.Value != want, "mmv.load.%s: PCP shows %+v, want %s", name, m, want)
				m = pcptest.Find(ms, "mmv.load.per."+name)
				require.NotNil(t, m, "PCP does not show mmv.load.per.%s", name)
				for _, in := range []string{"a", "b", "c"} {
					i := m.Instance(in)
					assert.False(t, i == nil || i.Value != want, "mmv.load.per.%s[%s]: PCP shows %+v, want %s", name, in, i, want)
				}
			}
		})
	}
}

// TestSoakPMCD: a real pmcd, of the test's own, fetches a counter
// continuously while the writer updates it and restarts 80 times (Close,
// a new registry, Start, same name). The counter's value is
// lifetime<<32 | count; every fetch must show the right type and a right
// value: 0 (a new file before its first update), or a value no more than
// the writer's current one and, within a lifetime, no less than the last
// one fetched; or no value at all. pmcd must stay up throughout. Without
// the Process flag: with it, every restart makes the file's PMID vanish
// and come back, which can crash PCP 6.0.3's pmcd (TestProcessRestartPMCD,
// docs/design.md); this test once ran against the host's pmcd with it, and
// two runs side by side killed that pmcd. 80 lifetimes are about 2 s and
// 300 fetches, values seen from most lifetimes (200 took 5 s and added
// only more of the same restarts).
func TestSoakPMCD(t *testing.T) {
	t.Parallel() // a pmcd of its own, fetching while the writer sleeps
	p := pcptest.StartPMCD(t)
	const lifetimes, updates = 80, 20
	name := fmt.Sprintf("soak%d_%d", os.Getpid(), time.Now().UnixNano()%1e6)
	metric := "mmv." + name + ".count"
	path := filepath.Join(p.Dir, name)
	t.Cleanup(func() { os.Remove(path) })

	var cur atomic.Uint64 // the writer's value, stored before the file's
	var stop atomic.Bool
	defer stop.Store(true) // the fetcher stops too when the writer fails
	// The fetcher keeps its errors: sent on a channel, they could fill it
	// and block the fetcher, and with it the test.
	type result struct {
		fetches, values, none, lives int
		errs                         []error
	}
	results := make(chan result, 1)
	go func() {
		var res result
		errorf := func(format string, args ...any) {
			res.errs = append(res.errs, fmt.Errorf("fetch %d: "+format, append([]any{res.fetches}, args...)...))
		}
		last := map[uint64]uint64{} // per lifetime, the last count fetched
		defer func() { res.lives = len(last); results <- res }()
		for !stop.Load() {
			ms, err := p.Fetch(context.Background(), metric)
			res.fetches++
			if err != nil {
				errorf("%v", err)
				return
			}
			now := cur.Load()
			m := pcptest.Find(ms, metric)
			if m == nil || m.NoValue != "" {
				res.none++
				continue
			}
			if m.Type != "64-bit unsigned int" || m.Semantics != "counter" {
				errorf("type %q, semantics %q", m.Type, m.Semantics)
				continue
			}
			v, err := strconv.ParseUint(m.Value, 10, 64)
			if err != nil {
				errorf("value %q: %v", m.Value, err)
				continue
			}
			res.values++
			if v == 0 {
				continue
			}
			life, count := v>>32, v&(1<<32-1)
			switch {
			case v > now:
				errorf("value %d:%d is beyond the writer's %d:%d", life, count, now>>32, now&(1<<32-1))
			case life == 0 || count == 0 || count > updates:
				errorf("value %d:%d was never written", life, count)
			case count < last[life]:
				errorf("value %d:%d after %d:%d", life, count, life, last[life])
			}
			last[life] = count
		}
	}()

	start := time.Now()
	for life := uint64(1); life <= lifetimes; life++ {
		r := mmv.NewRegistry(name, &mmv.Options{Dir: p.Dir})
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "count", Item: 1, Type: mmv.Uint64, Semantics: mmv.SemCounter}))
		startOrSkip(t, r)
		v, err := r.Value("count", "")
		require.NoError(t, err)
		for k := uint64(1); k <= updates; k++ {
			cur.Store(life<<32 | k)
			v.Set(int64(life<<32 | k))
			time.Sleep(time.Millisecond)
		}
		require.NoError(t, r.Close())
	}
	stop.Store(true)
	res := <-results
	assert.Empty(t, res.errs, "what the fetches saw")
	t.Logf("%d lifetimes in %v: %d fetches, %d with a value from %d lifetimes, %d with none",
		lifetimes, time.Since(start).Round(time.Millisecond), res.fetches, res.values, res.lives, res.none)
	assert.False(t, res.values < 20 || res.lives < 10, "fetches saw values from only %d lifetimes: the soak proved little", res.lives)

	// pmcd is still up, the same process, and reads a new file right.
	require.NoError(t, p.Died(), "pmcd")
	r := mmv.NewRegistry(name, &mmv.Options{Dir: p.Dir})
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "count", Item: 1, Type: mmv.Uint64, Semantics: mmv.SemCounter}))
	startOrSkip(t, r)
	v, _ := r.Value("count", "")
	v.Set(12345)
	deadline := time.Now().Add(10 * time.Second)
	for {
		ms, err := p.Fetch(context.Background(), metric)
		require.NoError(t, err)
		if m := pcptest.Find(ms, metric); m != nil && m.Value == "12345" {
			break
		}
		require.False(t, time.Now().After(deadline), "pmcd does not show the last file's value: %+v", ms)
		time.Sleep(50 * time.Millisecond)
	}
	require.NoError(t, r.Close())
	require.NoError(t, p.Died(), "pmcd")
}
