package compare

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/floor"
	"github.com/gopcp/mmv/mmvfile"
	"github.com/performancecopilot/speed/v4"
	"github.com/prometheus/client_golang/prometheus"
)

// The benchmarks come in families, one per kind of update, each run
// serially and with RunParallel. Within a family every library does the
// same work, and the loops are written out for each library rather than
// through a shared func value, so that no indirect call is added to a cost
// of a few nanoseconds. Sub-benchmark "atomic" of BenchmarkCounter and
// BenchmarkCounterParallel is the floor everything is compared with: a raw
// atomic add on a word alone in its cache line, on the heap (floor.Line; see
// README.md); "atomic" of BenchmarkGauge is the store on such a word.

// mmvRegistry returns a registry named name in the test's directory; start
// it with startMMV once its instruments are declared.
func mmvRegistry(name string) *mmv.Registry {
	return mmv.NewRegistry(name, &mmv.Options{Dir: filepath.Join(tmpDir, "mmv")})
}

func startMMV(b *testing.B, r *mmv.Registry) {
	b.Helper()
	if err := r.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
}

// must returns v, failing the benchmark given to the function it returns
// when err is not nil: must(f())(b).
func must[T any](v T, err error) func(testing.TB) T {
	return func(tb testing.TB) T {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
		return v
	}
}

// promRegister registers c on a registry of its own, as a program would.
func promRegister[C prometheus.Collector](c C) C {
	prometheus.NewPedanticRegistry().MustRegister(c)
	return c
}

// Family 1: one counter, incremented by one.

func BenchmarkCounter(b *testing.B) {
	b.Run("atomic", func(b *testing.B) {
		l := floor.New()
		b.ReportAllocs()
		for b.Loop() {
			l.N.Add(1)
		}
	})
	b.Run("mmv_Value.Add", func(b *testing.B) {
		v := mmvCounterValue(b, "counter_value")
		b.ReportAllocs()
		for b.Loop() {
			v.Add(1)
		}
	})
	b.Run("mmv_Counter.Inc", func(b *testing.B) {
		r := mmvRegistry("counter_inc")
		c := mmv.NewCounter(r, "requests", "Requests served", mmv.Count)
		startMMV(b, r)
		b.ReportAllocs()
		for b.Loop() {
			c.Inc()
		}
	})
	b.Run("speed_PCPCounter.Up", func(b *testing.B) {
		c := must(speed.NewPCPCounter(0, "requests", "Requests served"))(b)
		speedClient(b, "speed_counter", c)
		b.ReportAllocs()
		for b.Loop() {
			c.Up()
		}
	})
	b.Run("prometheus_Counter.Inc", func(b *testing.B) {
		c := promRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "requests_total", Help: "Requests served"}))
		b.ReportAllocs()
		for b.Loop() {
			c.Inc()
		}
	})
}

func BenchmarkCounterParallel(b *testing.B) {
	b.Run("atomic", func(b *testing.B) {
		l := floor.New()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				l.N.Add(1)
			}
		})
	})
	b.Run("mmv_Value.Add", func(b *testing.B) {
		v := mmvCounterValue(b, "counter_value_par")
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				v.Add(1)
			}
		})
	})
	b.Run("mmv_Counter.Inc", func(b *testing.B) {
		r := mmvRegistry("counter_inc_par")
		c := mmv.NewCounter(r, "requests", "Requests served", mmv.Count)
		startMMV(b, r)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				c.Inc()
			}
		})
	})
	b.Run("speed_PCPCounter.Up", func(b *testing.B) {
		c := must(speed.NewPCPCounter(0, "requests", "Requests served"))(b)
		speedClient(b, "speed_counter_par", c)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				c.Up()
			}
		})
	})
	b.Run("prometheus_Counter.Inc", func(b *testing.B) {
		c := promRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "requests_total", Help: "Requests served"}))
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				c.Inc()
			}
		})
	})
}

// mmvCounterValue is the Value of a singular Uint64 counter metric, the
// library's lowest-level handle.
func mmvCounterValue(b *testing.B, name string) *mmv.Value {
	b.Helper()
	r := mmvRegistry(name)
	if err := r.AddMetric(mmv.Metric{Name: "requests", Item: 1, Type: mmv.Uint64, Semantics: mmv.SemCounter,
		Units: mmv.Count, ShortHelp: "Requests served"}); err != nil {
		b.Fatal(err)
	}
	startMMV(b, r)
	return must(r.Value("requests", ""))(b)
}

// Family 2: a counter per instance (label value); each operation
// increments the instance i%8, named as a request route.

var routes = []string{"/", "/login", "/logout", "/api/users", "/api/orders", "/api/items", "/static", "/health"}

func routeCounts() map[string]int64 {
	m := map[string]int64{}
	for _, r := range routes {
		m[r] = 0
	}
	return m
}

func BenchmarkVecCounter(b *testing.B) {
	b.Run("atomic", func(b *testing.B) {
		var n [8]uint64
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			atomic.AddUint64(&n[i&7], 1)
			i++
		}
	})
	b.Run("mmv_With.Inc", func(b *testing.B) {
		r := mmvRegistry("vec_with")
		v := mmv.NewCounterVec(r, "requests", "Requests served, by route", mmv.Count, "route")
		startMMV(b, r)
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			v.With(routes[i&7]).Inc()
			i++
		}
	})
	b.Run("mmv_cached.Inc", func(b *testing.B) {
		r := mmvRegistry("vec_cached")
		v := mmv.NewCounterVec(r, "requests", "Requests served, by route", mmv.Count, "route")
		startMMV(b, r)
		var cs [8]*mmv.Counter
		for j := range cs {
			cs[j] = v.With(routes[j])
		}
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			cs[i&7].Inc()
			i++
		}
	})
	b.Run("speed_PCPCounterVector.Up", func(b *testing.B) {
		c := must(speed.NewPCPCounterVector(routeCounts(), "requests", "Requests served, by route"))(b)
		speedClient(b, "speed_vec", c)
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			c.Up(routes[i&7])
			i++
		}
	})
	b.Run("prometheus_WithLabelValues.Inc", func(b *testing.B) {
		c := promRegister(prometheus.NewCounterVec(prometheus.CounterOpts{Name: "requests_total", Help: "Requests served, by route"}, []string{"route"}))
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			c.WithLabelValues(routes[i&7]).Inc()
			i++
		}
	})
	b.Run("prometheus_cached.Inc", func(b *testing.B) {
		c := promRegister(prometheus.NewCounterVec(prometheus.CounterOpts{Name: "requests_total", Help: "Requests served, by route"}, []string{"route"}))
		var cs [8]prometheus.Counter
		for j := range cs {
			cs[j] = c.WithLabelValues(routes[j])
		}
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			cs[i&7].Inc()
			i++
		}
	})
}

// BenchmarkVecTwoLabels is With on existing series of two labels, route
// and status, against client_golang's WithLabelValues with the same two.
func BenchmarkVecTwoLabels(b *testing.B) {
	statuses := [2]string{"200", "500"}
	b.Run("mmv_With.Inc", func(b *testing.B) {
		r := mmvRegistry("vec_two")
		v := mmv.NewCounterVec(r, "requests", "Requests served, by route and status", mmv.Count, "route", "status")
		startMMV(b, r)
		for j := range 16 {
			v.With(routes[j&7], statuses[j>>3])
		}
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			v.With(routes[i&7], statuses[i>>3&1]).Inc()
			i++
		}
	})
	b.Run("prometheus_WithLabelValues.Inc", func(b *testing.B) {
		c := promRegister(prometheus.NewCounterVec(prometheus.CounterOpts{Name: "requests_total", Help: "Requests served, by route and status"}, []string{"route", "status"}))
		for j := range 16 {
			c.WithLabelValues(routes[j&7], statuses[j>>3])
		}
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			c.WithLabelValues(routes[i&7], statuses[i>>3&1]).Inc()
			i++
		}
	})
}

func BenchmarkVecCounterParallel(b *testing.B) {
	b.Run("atomic", func(b *testing.B) {
		var n [8]uint64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				atomic.AddUint64(&n[i&7], 1)
			}
		})
	})
	b.Run("mmv_With.Inc", func(b *testing.B) {
		r := mmvRegistry("vec_with_par")
		v := mmv.NewCounterVec(r, "requests", "Requests served, by route", mmv.Count, "route")
		startMMV(b, r)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				v.With(routes[i&7]).Inc()
			}
		})
	})
	b.Run("mmv_cached.Inc", func(b *testing.B) {
		r := mmvRegistry("vec_cached_par")
		v := mmv.NewCounterVec(r, "requests", "Requests served, by route", mmv.Count, "route")
		startMMV(b, r)
		var cs [8]*mmv.Counter
		for j := range cs {
			cs[j] = v.With(routes[j])
		}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				cs[i&7].Inc()
			}
		})
	})
	b.Run("speed_PCPCounterVector.Up", func(b *testing.B) {
		c := must(speed.NewPCPCounterVector(routeCounts(), "requests", "Requests served, by route"))(b)
		speedClient(b, "speed_vec_par", c)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				c.Up(routes[i&7])
			}
		})
	})
	b.Run("prometheus_WithLabelValues.Inc", func(b *testing.B) {
		c := promRegister(prometheus.NewCounterVec(prometheus.CounterOpts{Name: "requests_total", Help: "Requests served, by route"}, []string{"route"}))
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				c.WithLabelValues(routes[i&7]).Inc()
			}
		})
	})
	b.Run("prometheus_cached.Inc", func(b *testing.B) {
		c := promRegister(prometheus.NewCounterVec(prometheus.CounterOpts{Name: "requests_total", Help: "Requests served, by route"}, []string{"route"}))
		var cs [8]prometheus.Counter
		for j := range cs {
			cs[j] = c.WithLabelValues(routes[j])
		}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				cs[i&7].Inc()
			}
		})
	})
}

// Family 3: a latency histogram. Each operation records latencies[i%1024],
// drawn once from a fixed seed, log-uniform between 1µs and 1s: in seconds
// for mmv and Prometheus (float64), in whole microseconds for Speed, whose
// histogram records int64.

var latencySeconds, latencyMicros = func() (s []float64, us []int64) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 1024 {
		u := math.Round(math.Pow(10, 6*rng.Float64())) // 1..1e6 µs
		s, us = append(s, u*1e-6), append(us, int64(u))
	}
	return s, us
}()

// Speed's histogram covers 1µs..10s with 3 significant figures (1 in the
// _1sigfig variants, the cheapest it allows: Record recomputes the mean and
// standard deviation over every bucket); mmv's has its default range
// 2^-10..2^20 with 8 sub-buckets per power of two; Prometheus' its default
// buckets (DefBuckets, 5ms to 10s).

var speedHistograms = []struct {
	name    string
	sigfigs int
}{{"", 3}, {"_1sigfig", 1}}

func speedHistogram(b *testing.B, file string, sigfigs int) *speed.PCPHistogram {
	b.Helper()
	h := must(speed.NewPCPHistogram("latency", 1, 10_000_000, sigfigs, speed.MicrosecondUnit, "Request latency"))(b)
	speedClient(b, file, h)
	return h
}

func BenchmarkHistogram(b *testing.B) {
	b.Run("mmv_Histogram.Observe", func(b *testing.B) {
		r := mmvRegistry("histogram")
		h := mmv.NewHistogram(r, "latency", "Request latency", mmv.Second, nil)
		startMMV(b, r)
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			h.Observe(latencySeconds[i&1023])
			i++
		}
	})
	for _, c := range speedHistograms {
		b.Run("speed_PCPHistogram.Record"+c.name, func(b *testing.B) {
			h := speedHistogram(b, "speed_histogram", c.sigfigs)
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				if err := h.Record(latencyMicros[i&1023]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
	b.Run("prometheus_Histogram.Observe", func(b *testing.B) {
		h := promRegister(prometheus.NewHistogram(prometheus.HistogramOpts{Name: "latency_seconds", Help: "Request latency"}))
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			h.Observe(latencySeconds[i&1023])
			i++
		}
	})
}

func BenchmarkHistogramParallel(b *testing.B) {
	b.Run("mmv_Histogram.Observe", func(b *testing.B) {
		r := mmvRegistry("histogram_par")
		h := mmv.NewHistogram(r, "latency", "Request latency", mmv.Second, nil)
		startMMV(b, r)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				h.Observe(latencySeconds[i&1023])
			}
		})
	})
	for _, c := range speedHistograms {
		b.Run("speed_PCPHistogram.Record"+c.name, func(b *testing.B) {
			h := speedHistogram(b, "speed_histogram_par", c.sigfigs)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for i := 0; pb.Next(); i++ {
					if err := h.Record(latencyMicros[i&1023]); err != nil {
						panic(err)
					}
				}
			})
		})
	}
	b.Run("prometheus_Histogram.Observe", func(b *testing.B) {
		h := promRegister(prometheus.NewHistogram(prometheus.HistogramOpts{Name: "latency_seconds", Help: "Request latency"}))
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				h.Observe(latencySeconds[i&1023])
			}
		})
	})
}

// Family 4: a float gauge set to a new value each time (float64(i)): Speed
// skips the write when the value is unchanged, so the value must change.

func BenchmarkGauge(b *testing.B) {
	b.Run("atomic", func(b *testing.B) {
		l := floor.New()
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			l.N.Store(math.Float64bits(float64(i)))
			i++
		}
	})
	b.Run("mmv_Value.SetFloat", func(b *testing.B) {
		v := mmvGaugeValue(b, "gauge_value")
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			v.SetFloat(float64(i))
			i++
		}
	})
	b.Run("mmv_Gauge.Set", func(b *testing.B) {
		r := mmvRegistry("gauge_set")
		g := mmv.NewGauge(r, "load", "Requests per second", mmv.Count)
		startMMV(b, r)
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			g.Set(float64(i))
			i++
		}
	})
	b.Run("speed_PCPGauge.Set", func(b *testing.B) {
		g := must(speed.NewPCPGauge(0, "load", "Requests per second"))(b)
		speedClient(b, "speed_gauge", g)
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			if err := g.Set(float64(i)); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("prometheus_Gauge.Set", func(b *testing.B) {
		g := promRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "load", Help: "Requests per second"}))
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			g.Set(float64(i))
			i++
		}
	})
}

func BenchmarkGaugeParallel(b *testing.B) {
	b.Run("atomic", func(b *testing.B) {
		l := floor.New()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				l.N.Store(math.Float64bits(float64(i)))
			}
		})
	})
	b.Run("mmv_Value.SetFloat", func(b *testing.B) {
		v := mmvGaugeValue(b, "gauge_value_par")
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				v.SetFloat(float64(i))
			}
		})
	})
	b.Run("mmv_Gauge.Set", func(b *testing.B) {
		r := mmvRegistry("gauge_set_par")
		g := mmv.NewGauge(r, "load", "Requests per second", mmv.Count)
		startMMV(b, r)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				g.Set(float64(i))
			}
		})
	})
	b.Run("speed_PCPGauge.Set", func(b *testing.B) {
		g := must(speed.NewPCPGauge(0, "load", "Requests per second"))(b)
		speedClient(b, "speed_gauge_par", g)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				if err := g.Set(float64(i)); err != nil {
					panic(err)
				}
			}
		})
	})
	b.Run("prometheus_Gauge.Set", func(b *testing.B) {
		g := promRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "load", Help: "Requests per second"}))
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				g.Set(float64(i))
			}
		})
	})
}

// mmvGaugeValue is the Value of a singular Double metric.
func mmvGaugeValue(b *testing.B, name string) *mmv.Value {
	b.Helper()
	r := mmvRegistry(name)
	if err := r.AddMetric(mmv.Metric{Name: "load", Item: 1, Type: mmv.Double, Semantics: mmv.SemInstant,
		ShortHelp: "Requests per second"}); err != nil {
		b.Fatal(err)
	}
	startMMV(b, r)
	return must(r.Value("load", ""))(b)
}

// Family 5: two goroutines each adding 1 to its own one of two neighbouring
// series of a counter vector, looked up once: in mmv's file their values
// are 32 bytes apart, two that share a cache line, unless the registry pads
// them (Options.PadValues, 128 bytes apart); client_golang allocates each
// child separately. Two goroutines, not RunParallel's GOMAXPROCS of them, so
// each series has one writer; ns/op is the wall time of one update, both
// goroutines running at once. "atomic" is the floor: two words alone in
// their cache lines.

func BenchmarkNeighboursParallel(b *testing.B) {
	b.Run("atomic", func(b *testing.B) {
		ls := [2]*floor.Line{floor.New(), floor.New()}
		b.ReportAllocs()
		var wg sync.WaitGroup
		for g := range 2 {
			l := ls[g]
			wg.Go(func() {
				for range b.N / 2 {
					l.N.Add(1)
				}
			})
		}
		wg.Wait()
	})
	for _, pad := range []bool{false, true} {
		name := "mmv_cached.Inc"
		if pad {
			name = "mmv_padded_cached.Inc"
		}
		b.Run(name, func(b *testing.B) {
			r := mmv.NewRegistry("neighbours_"+strconv.FormatBool(pad), &mmv.Options{Dir: filepath.Join(tmpDir, "mmv"), PadValues: pad})
			v := mmv.NewCounterVec(r, "requests", "Requests served, by route", mmv.Count, "route")
			all := []*mmv.Counter{v.With(routes[0]), v.With(routes[1]), v.With(routes[2])}
			startMMV(b, r)
			// Packed, one pair of neighbours in two shares a 64-byte line
			// (the mapping is page-aligned: file offsets tell).
			f := must(mmvfile.Open(r.Path()))(b)
			line := func(i int) uint64 { return f.Values[i].Offset / 64 }
			cs := [2]*mmv.Counter{all[0], all[1]}
			if line(0) != line(1) {
				cs = [2]*mmv.Counter{all[1], all[2]}
				if line(1) != line(2) && !pad {
					b.Fatal("no neighbours share a cache line")
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			for g := range 2 {
				c := cs[g]
				wg.Go(func() {
					for range b.N / 2 {
						c.Inc()
					}
				})
			}
			wg.Wait()
		})
	}
	b.Run("prometheus_cached.Inc", func(b *testing.B) {
		c := promRegister(prometheus.NewCounterVec(prometheus.CounterOpts{Name: "requests_total", Help: "Requests served, by route"}, []string{"route"}))
		cs := [2]prometheus.Counter{c.WithLabelValues(routes[0]), c.WithLabelValues(routes[1])}
		b.ReportAllocs()
		b.ResetTimer()
		var wg sync.WaitGroup
		for g := range 2 {
			c := cs[g]
			wg.Go(func() {
				for range b.N / 2 {
					c.Inc()
				}
			})
		}
		wg.Wait()
	})
}
