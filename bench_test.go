package mmv

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

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
	require.NoError(b, r.Start())
	b.Cleanup(func() { r.Close() })
	v, err := r.Value("m", "")
	require.NoError(b, err)
	return v
}

// BenchmarkAtomicAddBaseline is the floor BenchmarkCounterAdd is measured
// against: a raw atomic add on a heap word.
func BenchmarkAtomicAddBaseline(b *testing.B) {
	var n uint64
	b.ReportAllocs()
	for b.Loop() {
		atomic.AddUint64(&n, 1)
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
	var n uint64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			atomic.AddUint64(&n, 1)
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

// BenchmarkGrowthStep adds one instance to an indom of n instances, over
// four metrics, and publishes the grown file: its cost should scale with
// the file's size at worst (compare the two sizes' ns/op).
func BenchmarkGrowthStep(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			r := NewRegistry("growth", &Options{Dir: b.TempDir()})
			r.AddIndom(Indom{Serial: 1})
			for i := range 4 {
				r.AddMetric(Metric{Name: "m" + strconv.Itoa(i), Type: Uint64, Semantics: SemCounter, Indom: 1})
			}
			require.NoError(b, r.Start())
			defer r.Close()
			for i := range n {
				r.AddInstance(1, Instance{ID: int32(i), Name: "i" + strconv.Itoa(i)})
			}
			r.Flush()
			id := n
			for b.Loop() {
				require.NoError(b, r.AddInstance(1, Instance{ID: int32(id), Name: "i" + strconv.Itoa(id)}))
				require.NoError(b, r.Flush())
				id++
			}
			b.ReportMetric(float64(r.parts[0].file.size), "file-bytes")
		})
	}
}
