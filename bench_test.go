package mmv

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/gopcp/mmv/internal/floor"
	"github.com/stretchr/testify/require"
)

// benchValue starts a registry with one singular metric of type t in a
// temporary directory and returns its handle.
func benchValue(b *testing.B, t Type) *Value {
	b.Helper()
	r := NewRegistry("bench", &Options{Dir: b.TempDir()})
	sem := SemInstant
	if t == Uint64 || t == Elapsed {
		sem = SemCounter
	}
	require.NoError(b, r.AddMetric(Metric{Name: "m", Item: 1, Type: t, Semantics: sem}))
	startOrSkip(b, r)
	b.Cleanup(func() { r.Close() })
	v, err := r.Value("m", "")
	require.NoError(b, err)
	return v
}

// BenchmarkAtomicAddBaseline is the floor of Add and Inc: a raw atomic add
// on a word in its own cache line.
func BenchmarkAtomicAddBaseline(b *testing.B) {
	l := floor.New()
	b.ReportAllocs()
	for b.Loop() {
		l.N.Add(1)
	}
}

// BenchmarkAtomicStoreBaseline is the floor of the Set methods.
func BenchmarkAtomicStoreBaseline(b *testing.B) {
	l := floor.New()
	b.ReportAllocs()
	for b.Loop() {
		l.N.Store(7)
	}
}

// BenchmarkCounterAdd is Add(1) on a Uint64 counter in the mapped file.
func BenchmarkCounterAdd(b *testing.B) {
	v := benchValue(b, Uint64)
	b.ReportAllocs()
	for b.Loop() {
		v.Add(1)
	}
}

func BenchmarkAtomicAddBaselineParallel(b *testing.B) {
	l := floor.New()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l.N.Add(1)
		}
	})
}

func BenchmarkAtomicStoreBaselineParallel(b *testing.B) {
	l := floor.New()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l.N.Store(7)
		}
	})
}

func BenchmarkCounterAddParallel(b *testing.B) {
	v := benchValue(b, Uint64)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			v.Add(1)
		}
	})
}

// BenchmarkValue covers Set and Add for every type, serial and parallel.
func BenchmarkValue(b *testing.B) {
	ops := []struct {
		name string
		typ  Type
		op   func(v *Value)
	}{
		{"Int32/Add", Int32, func(v *Value) { v.Add(1) }},
		{"Int32/Set", Int32, func(v *Value) { v.Set(7) }},
		{"Uint32/Add", Uint32, func(v *Value) { v.Add(1) }},
		{"Uint32/Set", Uint32, func(v *Value) { v.Set(7) }},
		{"Int64/Add", Int64, func(v *Value) { v.Add(1) }},
		{"Int64/Set", Int64, func(v *Value) { v.Set(7) }},
		{"Uint64/Set", Uint64, func(v *Value) { v.Set(7) }},
		{"Float/AddFloat", Float, func(v *Value) { v.AddFloat(0.5) }},
		{"Float/SetFloat", Float, func(v *Value) { v.SetFloat(0.5) }},
		{"Double/AddFloat", Double, func(v *Value) { v.AddFloat(0.5) }},
		{"Double/SetFloat", Double, func(v *Value) { v.SetFloat(0.5) }},
		{"Elapsed/AddDuration", Elapsed, func(v *Value) { v.AddDuration(time.Microsecond) }},
		{"Elapsed/Interval", Elapsed, func(v *Value) { v.StartInterval(); v.EndInterval() }},
		{"String/SetString", String, func(v *Value) { v.SetString("running") }},
	}
	for _, o := range ops {
		b.Run(o.name, func(b *testing.B) {
			v := benchValue(b, o.typ)
			b.ReportAllocs()
			for b.Loop() {
				o.op(v)
			}
		})
		b.Run(o.name+"/Parallel", func(b *testing.B) {
			v := benchValue(b, o.typ)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					o.op(v)
				}
			})
		})
	}
}

// BenchmarkBuildStart builds and starts the registries of
// compare/BenchmarkStart in process, so that -cpuprofile and -memprofile
// show where the low-level API's time goes: 1,000 metrics over an indom of
// 10 instances, and one metric over 10,000. "build" makes the names with
// fmt.Sprintf, as a program (and compare/startbench) makes them, then
// calls NewRegistry and declares; "declare" does the same with names made
// once, before the loop: the library's part of the build alone; "start"
// adds Start and Close to "build". Errors are checked without require,
// whose t.Helper walks the stack at every call and would be a tenth of the
// profile.
func BenchmarkBuildStart(b *testing.B) {
	for _, s := range startScenarios {
		names := func() ([]Instance, []string) {
			insts := make([]Instance, s.instances)
			for j := range insts {
				insts[j] = Instance{ID: int32(j), Name: fmt.Sprintf("inst%d", j)}
			}
			metrics := make([]string, s.metrics)
			for j := range metrics {
				metrics[j] = fmt.Sprintf("metric%d", j)
			}
			return insts, metrics
		}
		for _, phase := range []string{"declare", "build", "start"} {
			b.Run(s.name+"/"+phase, func(b *testing.B) {
				dir := b.TempDir()
				opts := &Options{Cluster: 42, Dir: dir, MaxIndomInstances: -1, MaxInstances: -1, MaxFileValues: -1, MaxValues: -1}
				insts, metrics := names()
				b.ReportAllocs()
				for b.Loop() {
					if phase != "declare" {
						insts, metrics = names()
					}
					r := NewRegistry("start", opts)
					err := r.AddIndom(Indom{Serial: 1, ShortHelp: "Instances", Instances: insts})
					for j := 0; j < len(metrics) && err == nil; j++ {
						err = r.AddMetric(Metric{Name: metrics[j], Item: uint32(j + 1), Type: Uint64,
							Semantics: SemCounter, Units: Count, Indom: 1, ShortHelp: "A metric"})
					}
					if phase == "start" && err == nil {
						startOrSkip(b, r)
						if err = r.Close(); err == nil {
							err = os.Remove(filepath.Join(dir, "start"))
						}
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkStartOverLastRun is the Start of a registry of one value at a
// name where the program's last run left a file of 100,000 instances
// ("over"), and where that file was removed ("removed"): Start renames its
// file over the last run's, whose last close frees its page cache, and
// should cost as much as over nothing (osfile's letGo). Making the last
// run's file, and removing it, are not timed.
func BenchmarkStartOverLastRun(b *testing.B) {
	insts := make([]Instance, 100_000)
	for j := range insts {
		insts[j] = Instance{ID: int32(j), Name: "instance-" + strconv.Itoa(j)}
	}
	for _, last := range []string{"removed", "over"} {
		b.Run(last, func(b *testing.B) {
			dir := b.TempDir()
			opts := &Options{Dir: dir, MaxIndomInstances: -1, MaxInstances: -1, MaxFileValues: -1, MaxValues: -1}
			for b.Loop() {
				b.StopTimer()
				r := NewRegistry("app", opts)
				require.NoError(b, r.AddIndom(Indom{Serial: 1, Instances: insts}))
				require.NoError(b, r.AddMetric(Metric{Name: "m", Item: 1, Type: Uint64, Semantics: SemCounter, Indom: 1}))
				startOrSkip(b, r)
				require.NoError(b, r.Close())
				if last == "removed" {
					require.NoError(b, os.Remove(filepath.Join(dir, "app")))
				}
				r = NewRegistry("app", opts)
				require.NoError(b, r.AddMetric(Metric{Name: "m", Item: 1, Type: Uint64, Semantics: SemCounter}))
				b.StartTimer()
				startOrSkip(b, r)
				b.StopTimer()
				require.NoError(b, r.Close())
				require.NoError(b, os.Remove(filepath.Join(dir, "app")))
				b.StartTimer()
			}
		})
	}
}

// startScenarios are compare/BenchmarkStart's registries.
var startScenarios = []struct {
	name               string
	metrics, instances int
}{{"metrics", 1000, 10}, {"instances", 1, 10000}}

// BenchmarkStartEncode is what Start does in memory, without the file:
// the slots, the plan and the encoding of BenchmarkBuildStart's
// registries into a zeroed buffer, as the file layer gives one.
func BenchmarkStartEncode(b *testing.B) {
	for _, s := range startScenarios {
		b.Run(s.name, func(b *testing.B) {
			r := allocRegistry(b, b.TempDir(), s.metrics, s.instances)
			p := r.parts[0]
			labels := r.labelsOf(p, nil)
			version, err := r.versionWith(p, len(labels))
			require.NoError(b, err)
			var buf []byte
			b.ReportAllocs()
			for b.Loop() {
				p.assignItems()
				p.makeSlots()
				p.stride = valueSize
				pl := newPlan(p, labels, version, nil)
				buf = slices.Grow(buf[:0], int(pl.size))[:pl.size]
				clear(buf)
				r.encode(p, pl, buf, 1, 1)
				putPlan(pl)
				p.reset()
			}
		})
	}
}

// BenchmarkPublicationSnapshot is what a publication does with the
// registry's lock held before it writes the grown file without it
// (publishPartUnlocking): the snapshot of a part of one vector of 100,000
// instances. Every first use of a new label value meanwhile waits for it.
func BenchmarkPublicationSnapshot(b *testing.B) {
	r := NewRegistry("snapshot", &Options{Dir: b.TempDir(), PublishDelay: time.Hour,
		MaxIndomInstances: -1, MaxInstances: -1, MaxFileValues: -1, MaxValues: -1})
	v := NewCounterVec(r, "requests", "", Count, "route")
	v.SetLimit(100000)
	startOrSkip(b, r)
	b.Cleanup(func() { r.Close() })
	for i := range 100000 {
		v.With(fmt.Sprint("/api/item/", i)).Inc()
	}
	require.NoError(b, r.Flush())
	r.mu.Lock()
	defer r.mu.Unlock()
	b.ReportAllocs()
	for b.Loop() {
		p := r.parts[0]
		p.snapshotLocked()
		p.endSnapshot() // as the publication does once its file is written
	}
}

// BenchmarkPublicationListing is the other step a publication takes before
// its write: listing the values the grown file shows (shownLocked), here
// 100,000 first used after Start, all past the file's room. With the lock
// held ("locked"), it copies the vectors' queues of cells waiting; the
// listing of those ("all") runs without it.
func BenchmarkPublicationListing(b *testing.B) {
	const n = 100000
	r, v := uncappedVec(b, "listing", n)
	startOrSkip(b, r)
	useRoutes(v, 0, n)
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.parts[0]
	live := min(p.slots.len(), p.file.capacity)
	r.reserveSnapshotUnlocking(p)
	require.Len(b, listed(r.shownLocked(p, live)), n-live)
	b.Run("locked", func(b *testing.B) {
		for b.Loop() {
			r.shownLocked(p, live)
		}
	})
	b.Run("all", func(b *testing.B) {
		for b.Loop() {
			listed(r.shownLocked(p, live))
		}
	})
}

// BenchmarkManyVectors declares n counter vectors in a registry of the
// default options, uses one value of each, then starts it, in a directory
// its earlier runs left their files in, as a restarted program finds its
// own, then uses a second value of each (after), and reports each step's
// time per vector: flat in n where no step
// scans the registry's vectors or files. At the default budget a file
// holds two vectors' reservations, so 2,000 vectors make 1,000 files: a
// declaration summed every full file again to find one with room (7 µs a
// vector at 1,000, 22 at 2,000), took an indom serial by a probe of a map
// a serial (9 µs at 2,000); a first use counted the label records of
// every vector for each file holding its own (18 µs at 1,000, 31 at
// 2,000), and looked at every file for those (partsHolding: 8 µs at
// 2,000); and Start read the head of every file of the directory for
// each file it made (claims: 2.5 s for 1,000 vectors, 11 s for 2,000);
// a first use after Start marked every file's values bound (boundLocked:
// 5.7 µs a vector at 1,000, 9.1 at 2,000, against 2.5-2.8 now).
// What Start still pays per file is mostly the file system's: creating a
// file in a directory of 1,000 cost 0.5 ms on this machine's ext4.
func BenchmarkManyVectors(b *testing.B) {
	for _, n := range []int{10, 100, 1000, 2000} {
		names := make([]string, n)
		for i := range names {
			names[i] = fmt.Sprintf("requests_%d", i)
		}
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			dir := b.TempDir()
			var declare, use, start, after time.Duration
			for b.Loop() {
				r := NewRegistry("many", &Options{Dir: dir, PublishDelay: time.Hour})
				vs := make([]*Vec[Counter], n)
				t0 := time.Now()
				for i, name := range names {
					vs[i] = NewCounterVec(r, name, "Requests served", Count, "route")
				}
				t1 := time.Now()
				for _, v := range vs {
					v.With("/").Inc()
				}
				t2 := time.Now()
				startOrSkip(b, r)
				t3 := time.Now()
				for _, v := range vs {
					v.With("/after").Inc()
				}
				declare, use, start, after = declare+t1.Sub(t0), use+t2.Sub(t1), start+t3.Sub(t2), after+time.Since(t3)
				r.Close()
			}
			b.ReportMetric(float64(declare.Nanoseconds())/float64(b.N*n), "declare-ns/vector")
			b.ReportMetric(float64(use.Nanoseconds())/float64(b.N*n), "use-ns/vector")
			b.ReportMetric(float64(start.Nanoseconds())/float64(b.N*n), "start-ns/vector")
			b.ReportMetric(float64(after.Nanoseconds())/float64(b.N*n), "after-ns/vector")
		})
	}
}

// BenchmarkVecFirstUses is 50,000 first uses of one vector's label values
// before Start, caps raised, per value: the vector's table grows
// by doubling under them, moving the old table's entries 4 slots an
// insert. Reading whether each moved entry was deleted, where none had
// been, missed the cache: 1.33 µs a value against 1.08 without the read
// (ten alternating rounds, p = 0.029).
func BenchmarkVecFirstUses(b *testing.B) {
	const n = 50000
	names := make([]string, n)
	for i := range names {
		names[i] = "/api/item/" + strconv.Itoa(i)
	}
	for b.Loop() {
		b.StopTimer()
		r := NewRegistry("firstuses", &Options{Dir: b.TempDir(), MaxIndomInstances: -1, MaxInstances: -1, MaxFileValues: -1, MaxValues: -1})
		v := NewCounterVec(r, "requests", "", Count, "route")
		v.SetLimit(n)
		b.StartTimer()
		for _, name := range names {
			v.With(name).Inc()
		}
		b.StopTimer()
		r.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/value")
}

// BenchmarkVecChurn is a Delete and a first use again of one of n label
// values of a vector, started, caps raised: flat in n. A histogram
// vector's Delete scanned the group's histograms for the one removed,
// 3.3 µs at 1,000 values and 125 at 50,000, under the registry's lock.
func BenchmarkVecChurn(b *testing.B) {
	for _, kind := range []string{"counter", "histogram"} {
		for _, n := range []int{1000, 50000} {
			b.Run(fmt.Sprintf("%s/%d", kind, n), func(b *testing.B) {
				r := uncappedRegistry(b, "churn")
				names := make([]string, n)
				for i := range names {
					names[i] = "/api/item/" + strconv.Itoa(i)
				}
				var use func(string)
				var del func(...string) bool
				if kind == "counter" {
					v := NewCounterVec(r, "requests", "", Count, "route")
					v.SetLimit(n)
					use, del = func(s string) { v.With(s).Inc() }, v.Delete
				} else {
					v := NewHistogramVec(r, "latency", "", Second, nil, "route")
					v.SetLimit(n)
					use, del = func(s string) { v.With(s).Observe(0.01) }, v.Delete
				}
				for _, name := range names {
					use(name)
				}
				startOrSkip(b, r)
				i := 0
				for b.Loop() {
					del(names[i])
					use(names[i])
					if i++; i == n {
						i = 0
					}
				}
			})
		}
	}
}
