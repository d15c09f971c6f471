package mmv

import (
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
