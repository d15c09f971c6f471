package mmv

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/gopcp/mmv/internal/floor"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
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
	require.NoError(b, r.Start())
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

// BenchmarkGrowthStep publishes the file of an indom of n instances, over
// four metrics, again (a step as one after a declaration, the file's size
// kept from one to the next): its cost should scale with the file's size
// (compare the two sizes' ns/op), and stay within twice its floor: "floor"
// makes a file of the same size in the same directory as a step does
// (create, allocate its blocks, write it whole, rename it over the last).
func BenchmarkGrowthStep(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		dir := b.TempDir()
		r := NewRegistry("growth", &Options{Dir: dir, MaxIndomInstances: -1, MaxInstances: -1})
		require.NoError(b, r.AddIndom(Indom{Serial: 1}))
		for i := range 4 {
			require.NoError(b, r.AddMetric(Metric{Name: "m" + strconv.Itoa(i), Type: Uint64, Semantics: SemCounter, Indom: 1}))
		}
		require.NoError(b, r.Start())
		b.Cleanup(func() { r.Close() })
		for i := range n {
			require.NoError(b, r.AddInstance(1, Instance{ID: int32(i), Name: "i" + strconv.Itoa(i)}))
		}
		require.NoError(b, r.Flush())
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			for b.Loop() {
				r.mu.Lock()
				r.parts[0].dirty = true
				r.mu.Unlock()
				require.NoError(b, r.Flush())
			}
			b.ReportMetric(float64(r.parts[0].file.size), "file-bytes")
		})
		b.Run(strconv.Itoa(n)+"/floor", func(b *testing.B) {
			// Written once with non-zero bytes: a buffer never touched is
			// backed by the kernel's one zero page, which copies faster
			// than any file's bytes.
			buf := bytes.Repeat([]byte{0xa5}, int(r.parts[0].file.size))
			for b.Loop() {
				f, err := os.OpenFile(filepath.Join(dir, ".floor.tmp"), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
				require.NoError(b, err)
				require.NoError(b, unix.Fallocate(int(f.Fd()), 0, 0, int64(len(buf))))
				_, err = f.WriteAt(buf, 0)
				require.NoError(b, err)
				require.NoError(b, f.Close())
				require.NoError(b, os.Rename(filepath.Join(dir, ".floor.tmp"), filepath.Join(dir, "floor")))
			}
			b.ReportMetric(float64(len(buf)), "file-bytes")
		})
	}
}

// BenchmarkSet is every Set method against BenchmarkAtomicStoreBaseline in
// the same run, serially and with RunParallel, each loop written out so
// that no indirect call is added to either side.
func BenchmarkSet(b *testing.B) {
	r := NewRegistry("set", &Options{Dir: b.TempDir()})
	require.NoError(b, r.AddMetric(Metric{Name: "i", Type: Int64, Semantics: SemInstant}))
	require.NoError(b, r.AddMetric(Metric{Name: "d", Type: Double, Semantics: SemInstant}))
	c := NewCounter(r, "c", "", Count)
	ig := NewIntGauge(r, "ig", "", Count)
	g := NewGauge(r, "g", "", NoUnits)
	require.NoError(b, r.Start())
	b.Cleanup(func() { r.Close() })
	vi, err := r.Value("i", "")
	require.NoError(b, err)
	vd, err := r.Value("d", "")
	require.NoError(b, err)
	b.Run("atomic.Store", func(b *testing.B) {
		l := floor.New()
		for i := uint64(0); b.Loop(); i++ {
			l.N.Store(i)
		}
	})
	b.Run("Value.Set", func(b *testing.B) {
		for i := int64(0); b.Loop(); i++ {
			vi.Set(i)
		}
	})
	b.Run("Value.SetFloat", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			vd.SetFloat(float64(i))
		}
	})
	b.Run("Counter.Set", func(b *testing.B) {
		for i := uint64(0); b.Loop(); i++ {
			c.Set(i)
		}
	})
	b.Run("IntGauge.Set", func(b *testing.B) {
		for i := int64(0); b.Loop(); i++ {
			ig.Set(i)
		}
	})
	b.Run("Gauge.Set", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			g.Set(float64(i))
		}
	})
	b.Run("atomic.Store/Parallel", func(b *testing.B) {
		l := floor.New()
		b.RunParallel(func(pb *testing.PB) {
			for i := uint64(0); pb.Next(); i++ {
				l.N.Store(i)
			}
		})
	})
	b.Run("Value.Set/Parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for i := int64(0); pb.Next(); i++ {
				vi.Set(i)
			}
		})
	})
	b.Run("Value.SetFloat/Parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				vd.SetFloat(float64(i))
			}
		})
	})
	b.Run("Counter.Set/Parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for i := uint64(0); pb.Next(); i++ {
				c.Set(i)
			}
		})
	})
	b.Run("IntGauge.Set/Parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for i := int64(0); pb.Next(); i++ {
				ig.Set(i)
			}
		})
	})
	b.Run("Gauge.Set/Parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				g.Set(float64(i))
			}
		})
	})
}
