package compare

import (
	"cmp"
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/floor"
	"github.com/gopcp/mmv/mmvfile"
	"github.com/performancecopilot/speed/v4"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	otelmetric "go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
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

// check fails tb when err is not nil.
func check(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

// vmSet is a VictoriaMetrics set of metrics of its own, as a program
// that does not use the default set would have.
func vmSet() *metrics.Set { return metrics.NewSet() }

// otelMeter is a meter of an OpenTelemetry SDK MeterProvider of its own,
// read by a manual reader, with no cardinality limit (the SDK's default of
// 2,000 would send the 4,096 values of the With table to its overflow
// series).
func otelMeter(tb testing.TB) otelmetric.Meter {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()), sdkmetric.WithCardinalityLimit(0))
	tb.Cleanup(func() { mp.Shutdown(context.Background()) })
	return mp.Meter("compare")
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
	b.Run("victoriametrics_Counter.Inc", func(b *testing.B) {
		c := vmSet().NewCounter("requests_total")
		b.ReportAllocs()
		for b.Loop() {
			c.Inc()
		}
	})
	b.Run("otel_Int64Counter.Add", func(b *testing.B) {
		c := must(otelMeter(b).Int64Counter("requests"))(b)
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			c.Add(ctx, 1)
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
	b.Run("victoriametrics_Counter.Inc", func(b *testing.B) {
		c := vmSet().NewCounter("requests_total")
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				c.Inc()
			}
		})
	})
	b.Run("otel_Int64Counter.Add", func(b *testing.B) {
		c := must(otelMeter(b).Int64Counter("requests"))(b)
		ctx := context.Background()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				c.Add(ctx, 1)
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
	b.Run("victoriametrics_GetOrCreateCounter.Inc", func(b *testing.B) {
		set := vmSet()
		names := vmCounters(set, []string{"route"}, oneLabel(routes))
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			set.GetOrCreateCounter(names[i&7]).Inc()
			i++
		}
	})
	b.Run("otel_Int64Counter.Add", func(b *testing.B) {
		c := must(otelMeter(b).Int64Counter("requests"))(b)
		ctx := context.Background()
		opts := otelSeries(ctx, c, []string{"route"}, oneLabel(routes))
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			c.Add(ctx, 1, opts[i&7]...)
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
	b.Run("victoriametrics_GetOrCreateCounter.Inc", func(b *testing.B) {
		set := vmSet()
		names := vmCounters(set, []string{"route"}, oneLabel(routes))
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				set.GetOrCreateCounter(names[i&7]).Inc()
			}
		})
	})
	b.Run("otel_Int64Counter.Add", func(b *testing.B) {
		c := must(otelMeter(b).Int64Counter("requests"))(b)
		ctx := context.Background()
		opts := otelSeries(ctx, c, []string{"route"}, oneLabel(routes))
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				c.Add(ctx, 1, opts[i&7]...)
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
	b.Run("victoriametrics_Histogram.Update", func(b *testing.B) {
		h := vmSet().NewHistogram("latency_seconds")
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			h.Update(latencySeconds[i&1023])
			i++
		}
	})
	b.Run("victoriametrics_PrometheusHistogram.Update", func(b *testing.B) {
		h := vmSet().NewPrometheusHistogram("latency_seconds")
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			h.Update(latencySeconds[i&1023])
			i++
		}
	})
	b.Run("otel_Float64Histogram.Record", func(b *testing.B) {
		h := must(otelMeter(b).Float64Histogram("latency", otelmetric.WithUnit("s")))(b)
		ctx := context.Background()
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			h.Record(ctx, latencySeconds[i&1023])
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
	b.Run("victoriametrics_Histogram.Update", func(b *testing.B) {
		h := vmSet().NewHistogram("latency_seconds")
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				h.Update(latencySeconds[i&1023])
			}
		})
	})
	b.Run("victoriametrics_PrometheusHistogram.Update", func(b *testing.B) {
		h := vmSet().NewPrometheusHistogram("latency_seconds")
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				h.Update(latencySeconds[i&1023])
			}
		})
	})
	b.Run("otel_Float64Histogram.Record", func(b *testing.B) {
		h := must(otelMeter(b).Float64Histogram("latency", otelmetric.WithUnit("s")))(b)
		ctx := context.Background()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				h.Record(ctx, latencySeconds[i&1023])
			}
		})
	})
}

// Family 3b: the time since a start, taken once before the loop (so the
// latencies grow through the run), as a handler's deferred timing records
// it: mmv's Since, VictoriaMetrics' UpdateDuration, the others' Observe or
// Record of time.Since in seconds.

func BenchmarkHistogramSince(b *testing.B) {
	b.Run("mmv_Histogram.Since", func(b *testing.B) {
		r := mmvRegistry("histogram_since")
		h := mmv.NewHistogram(r, "latency", "Request latency", mmv.Second, nil)
		startMMV(b, r)
		start := time.Now()
		b.ReportAllocs()
		for b.Loop() {
			h.Since(start)
		}
	})
	b.Run("prometheus_Histogram.Observe", func(b *testing.B) {
		h := promRegister(prometheus.NewHistogram(prometheus.HistogramOpts{Name: "latency_seconds", Help: "Request latency"}))
		start := time.Now()
		b.ReportAllocs()
		for b.Loop() {
			h.Observe(time.Since(start).Seconds())
		}
	})
	b.Run("victoriametrics_Histogram.UpdateDuration", func(b *testing.B) {
		h := vmSet().NewHistogram("latency_seconds")
		start := time.Now()
		b.ReportAllocs()
		for b.Loop() {
			h.UpdateDuration(start)
		}
	})
	b.Run("otel_Float64Histogram.Record", func(b *testing.B) {
		h := must(otelMeter(b).Float64Histogram("latency", otelmetric.WithUnit("s")))(b)
		ctx := context.Background()
		start := time.Now()
		b.ReportAllocs()
		for b.Loop() {
			h.Record(ctx, time.Since(start).Seconds())
		}
	})
}

func BenchmarkHistogramSinceParallel(b *testing.B) {
	b.Run("mmv_Histogram.Since", func(b *testing.B) {
		r := mmvRegistry("histogram_since_par")
		h := mmv.NewHistogram(r, "latency", "Request latency", mmv.Second, nil)
		startMMV(b, r)
		start := time.Now()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				h.Since(start)
			}
		})
	})
	b.Run("prometheus_Histogram.Observe", func(b *testing.B) {
		h := promRegister(prometheus.NewHistogram(prometheus.HistogramOpts{Name: "latency_seconds", Help: "Request latency"}))
		start := time.Now()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				h.Observe(time.Since(start).Seconds())
			}
		})
	})
	b.Run("victoriametrics_Histogram.UpdateDuration", func(b *testing.B) {
		h := vmSet().NewHistogram("latency_seconds")
		start := time.Now()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				h.UpdateDuration(start)
			}
		})
	})
	b.Run("otel_Float64Histogram.Record", func(b *testing.B) {
		h := must(otelMeter(b).Float64Histogram("latency", otelmetric.WithUnit("s")))(b)
		ctx := context.Background()
		start := time.Now()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				h.Record(ctx, time.Since(start).Seconds())
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
	b.Run("victoriametrics_Gauge.Set", func(b *testing.B) {
		g := vmSet().NewGauge("load", nil)
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			g.Set(float64(i))
			i++
		}
	})
	b.Run("otel_Float64Gauge.Record", func(b *testing.B) {
		g := must(otelMeter(b).Float64Gauge("load"))(b)
		ctx := context.Background()
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			g.Record(ctx, float64(i))
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
	b.Run("victoriametrics_Gauge.Set", func(b *testing.B) {
		g := vmSet().NewGauge("load", nil)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				g.Set(float64(i))
			}
		})
	})
	b.Run("otel_Float64Gauge.Record", func(b *testing.B) {
		g := must(otelMeter(b).Float64Gauge("load"))(b)
		ctx := context.Background()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				g.Record(ctx, float64(i))
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

// Family 5: an integer set to a new value each time, the Set methods of
// the integer instruments and of a handle. Prometheus has no integer
// gauge; its float gauge is in family 4.

func BenchmarkSet(b *testing.B) {
	b.Run("atomic", func(b *testing.B) {
		l := floor.New()
		b.ReportAllocs()
		for i := uint64(0); b.Loop(); i++ {
			l.N.Store(i)
		}
	})
	b.Run("mmv_Value.Set", func(b *testing.B) {
		v := mmvIntValue(b, "set_value")
		b.ReportAllocs()
		for i := int64(0); b.Loop(); i++ {
			v.Set(i)
		}
	})
	b.Run("mmv_Counter.Set", func(b *testing.B) {
		r := mmvRegistry("set_counter")
		c := mmv.NewCounter(r, "total", "A total counted elsewhere", mmv.Count)
		startMMV(b, r)
		b.ReportAllocs()
		for i := uint64(0); b.Loop(); i++ {
			c.Set(i)
		}
	})
	b.Run("mmv_IntGauge.Set", func(b *testing.B) {
		r := mmvRegistry("set_intgauge")
		g := mmv.NewIntGauge(r, "queue", "Jobs queued", mmv.Count)
		startMMV(b, r)
		b.ReportAllocs()
		for i := int64(0); b.Loop(); i++ {
			g.Set(i)
		}
	})
	b.Run("victoriametrics_Counter.Set", func(b *testing.B) {
		c := vmSet().NewCounter("total")
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			c.Set(uint64(i))
			i++
		}
	})
	b.Run("otel_Int64Gauge.Record", func(b *testing.B) {
		g := must(otelMeter(b).Int64Gauge("queue"))(b)
		ctx := context.Background()
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			g.Record(ctx, int64(i))
			i++
		}
	})
}

func BenchmarkSetParallel(b *testing.B) {
	b.Run("atomic", func(b *testing.B) {
		l := floor.New()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for i := uint64(0); pb.Next(); i++ {
				l.N.Store(i)
			}
		})
	})
	b.Run("mmv_Value.Set", func(b *testing.B) {
		v := mmvIntValue(b, "set_value_par")
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for i := int64(0); pb.Next(); i++ {
				v.Set(i)
			}
		})
	})
	b.Run("mmv_Counter.Set", func(b *testing.B) {
		r := mmvRegistry("set_counter_par")
		c := mmv.NewCounter(r, "total", "A total counted elsewhere", mmv.Count)
		startMMV(b, r)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for i := uint64(0); pb.Next(); i++ {
				c.Set(i)
			}
		})
	})
	b.Run("mmv_IntGauge.Set", func(b *testing.B) {
		r := mmvRegistry("set_intgauge_par")
		g := mmv.NewIntGauge(r, "queue", "Jobs queued", mmv.Count)
		startMMV(b, r)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for i := int64(0); pb.Next(); i++ {
				g.Set(i)
			}
		})
	})
	b.Run("victoriametrics_Counter.Set", func(b *testing.B) {
		c := vmSet().NewCounter("total")
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				c.Set(uint64(i))
			}
		})
	})
	b.Run("otel_Int64Gauge.Record", func(b *testing.B) {
		g := must(otelMeter(b).Int64Gauge("queue"))(b)
		ctx := context.Background()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				g.Record(ctx, int64(i))
			}
		})
	})
}

// mmvIntValue is the Value of a singular Int64 metric.
func mmvIntValue(b *testing.B, name string) *mmv.Value {
	b.Helper()
	r := mmvRegistry(name)
	if err := r.AddMetric(mmv.Metric{Name: "queue", Item: 1, Type: mmv.Int64, Semantics: mmv.SemInstant,
		Units: mmv.Count, ShortHelp: "Jobs queued"}); err != nil {
		b.Fatal(err)
	}
	startMMV(b, r)
	return must(r.Value("queue", ""))(b)
}

// Family 6: a float gauge moved by a delta, 0.5 each time. There is no
// atomic float add: the floor is the compare-and-swap loop on the bits of
// a word alone in its cache line.

// casAddFloat adds f to the float64 whose bits w holds.
func casAddFloat(w *atomic.Uint64, f float64) {
	for {
		old := w.Load()
		if w.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+f)) {
			return
		}
	}
}

func BenchmarkGaugeAdd(b *testing.B) {
	b.Run("atomic", func(b *testing.B) {
		l := floor.New()
		b.ReportAllocs()
		for b.Loop() {
			casAddFloat(&l.N, 0.5)
		}
	})
	b.Run("mmv_Value.AddFloat", func(b *testing.B) {
		v := mmvGaugeValue(b, "gauge_add_value")
		b.ReportAllocs()
		for b.Loop() {
			v.AddFloat(0.5)
		}
	})
	b.Run("mmv_Gauge.Add", func(b *testing.B) {
		r := mmvRegistry("gauge_add")
		g := mmv.NewGauge(r, "load", "Requests per second", mmv.Count)
		startMMV(b, r)
		b.ReportAllocs()
		for b.Loop() {
			g.Add(0.5)
		}
	})
	b.Run("prometheus_Gauge.Add", func(b *testing.B) {
		g := promRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "load", Help: "Requests per second"}))
		b.ReportAllocs()
		for b.Loop() {
			g.Add(0.5)
		}
	})
	b.Run("victoriametrics_Gauge.Add", func(b *testing.B) {
		g := vmSet().NewGauge("load", nil)
		b.ReportAllocs()
		for b.Loop() {
			g.Add(0.5)
		}
	})
	b.Run("otel_Float64UpDownCounter.Add", func(b *testing.B) {
		g := must(otelMeter(b).Float64UpDownCounter("load"))(b)
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			g.Add(ctx, 0.5)
		}
	})
}

func BenchmarkGaugeAddParallel(b *testing.B) {
	b.Run("atomic", func(b *testing.B) {
		l := floor.New()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				casAddFloat(&l.N, 0.5)
			}
		})
	})
	b.Run("mmv_Value.AddFloat", func(b *testing.B) {
		v := mmvGaugeValue(b, "gauge_add_value_par")
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				v.AddFloat(0.5)
			}
		})
	})
	b.Run("mmv_Gauge.Add", func(b *testing.B) {
		r := mmvRegistry("gauge_add_par")
		g := mmv.NewGauge(r, "load", "Requests per second", mmv.Count)
		startMMV(b, r)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				g.Add(0.5)
			}
		})
	})
	b.Run("prometheus_Gauge.Add", func(b *testing.B) {
		g := promRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "load", Help: "Requests per second"}))
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				g.Add(0.5)
			}
		})
	})
	b.Run("victoriametrics_Gauge.Add", func(b *testing.B) {
		g := vmSet().NewGauge("load", nil)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				g.Add(0.5)
			}
		})
	})
	b.Run("otel_Float64UpDownCounter.Add", func(b *testing.B) {
		g := must(otelMeter(b).Float64UpDownCounter("load"))(b)
		ctx := context.Background()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				g.Add(ctx, 0.5)
			}
		})
	})
}

// Family 7: time spent, 1.5µs each time. A client_golang program counts
// it in a float counter of seconds; Speed has no timer but its histogram.

const timed = 1500 * time.Nanosecond

func BenchmarkTimer(b *testing.B) {
	b.Run("atomic", func(b *testing.B) {
		l := floor.New()
		b.ReportAllocs()
		for b.Loop() {
			l.N.Add(uint64(timed))
		}
	})
	b.Run("mmv_Timer.Observe", func(b *testing.B) {
		r := mmvRegistry("timer")
		t := mmv.NewTimer(r, "work", "Time spent working")
		startMMV(b, r)
		b.ReportAllocs()
		for b.Loop() {
			t.Observe(timed)
		}
	})
	b.Run("prometheus_Counter.Add", func(b *testing.B) {
		c := promRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "work_seconds_total", Help: "Time spent working"}))
		b.ReportAllocs()
		for b.Loop() {
			c.Add(timed.Seconds())
		}
	})
	b.Run("victoriametrics_FloatCounter.Add", func(b *testing.B) {
		c := vmSet().NewFloatCounter("work_seconds_total")
		b.ReportAllocs()
		for b.Loop() {
			c.Add(timed.Seconds())
		}
	})
	b.Run("otel_Float64Counter.Add", func(b *testing.B) {
		c := must(otelMeter(b).Float64Counter("work", otelmetric.WithUnit("s")))(b)
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			c.Add(ctx, timed.Seconds())
		}
	})
}

func BenchmarkTimerParallel(b *testing.B) {
	b.Run("atomic", func(b *testing.B) {
		l := floor.New()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				l.N.Add(uint64(timed))
			}
		})
	})
	b.Run("mmv_Timer.Observe", func(b *testing.B) {
		r := mmvRegistry("timer_par")
		t := mmv.NewTimer(r, "work", "Time spent working")
		startMMV(b, r)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				t.Observe(timed)
			}
		})
	})
	b.Run("prometheus_Counter.Add", func(b *testing.B) {
		c := promRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "work_seconds_total", Help: "Time spent working"}))
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				c.Add(timed.Seconds())
			}
		})
	})
	b.Run("victoriametrics_FloatCounter.Add", func(b *testing.B) {
		c := vmSet().NewFloatCounter("work_seconds_total")
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				c.Add(timed.Seconds())
			}
		})
	})
	b.Run("otel_Float64Counter.Add", func(b *testing.B) {
		c := must(otelMeter(b).Float64Counter("work", otelmetric.WithUnit("s")))(b)
		ctx := context.Background()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				c.Add(ctx, timed.Seconds())
			}
		})
	})
}

// Family 8: With over 1,024 instances, each operation the instance
// i%1024: made before Start ("declared", in the first file) or first used
// after it ("runtime", published by growth steps), against
// client_golang's WithLabelValues over as many children.

var manyRoutes = func() []string {
	s := make([]string, 1024)
	for i := range s {
		s[i] = "/api/v1/item/" + strconv.Itoa(i)
	}
	return s
}()

// mmvVecOf returns a started counter vector with every route of
// manyRoutes, made before Start or after it.
func mmvVecOf(b *testing.B, name string, runtime bool) *mmv.Vec[mmv.Counter] {
	b.Helper()
	r := mmv.NewRegistry(name, &mmv.Options{Dir: filepath.Join(tmpDir, "mmv"), PublishDelay: time.Hour})
	v := mmv.NewCounterVec(r, "requests", "Requests served, by route", mmv.Count, "route")
	v.SetLimit(len(manyRoutes))
	use := func() {
		for _, route := range manyRoutes {
			if v.With(route) == nil {
				b.Fatal(v.Err())
			}
		}
	}
	if !runtime {
		use()
	}
	startMMV(b, r)
	if runtime {
		use()
		if err := r.Flush(); err != nil {
			b.Fatal(err)
		}
	}
	return v
}

func promVecOf() *prometheus.CounterVec {
	c := promRegister(prometheus.NewCounterVec(prometheus.CounterOpts{Name: "requests_total", Help: "Requests served, by route"}, []string{"route"}))
	for _, route := range manyRoutes {
		c.WithLabelValues(route)
	}
	return c
}

func BenchmarkVecWith(b *testing.B) {
	for _, runtime := range []bool{false, true} {
		name := map[bool]string{false: "mmv_declared", true: "mmv_runtime"}[runtime]
		b.Run(name, func(b *testing.B) {
			v := mmvVecOf(b, "vec_"+name, runtime)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				v.With(manyRoutes[i&1023]).Inc()
			}
		})
	}
	b.Run("prometheus_WithLabelValues", func(b *testing.B) {
		c := promVecOf()
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			c.WithLabelValues(manyRoutes[i&1023]).Inc()
		}
	})
	b.Run("victoriametrics_GetOrCreateCounter", func(b *testing.B) {
		set := vmSet()
		names := vmCounters(set, []string{"route"}, oneLabel(manyRoutes))
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			set.GetOrCreateCounter(names[i&1023]).Inc()
			i++
		}
	})
	b.Run("otel_Int64Counter.Add", func(b *testing.B) {
		c := must(otelMeter(b).Int64Counter("requests"))(b)
		ctx := context.Background()
		opts := otelSeries(ctx, c, []string{"route"}, oneLabel(manyRoutes))
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			c.Add(ctx, 1, opts[i&1023]...)
			i++
		}
	})
}

func BenchmarkVecWithParallel(b *testing.B) {
	for _, runtime := range []bool{false, true} {
		name := map[bool]string{false: "mmv_declared", true: "mmv_runtime"}[runtime]
		b.Run(name, func(b *testing.B) {
			v := mmvVecOf(b, "vec_"+name+"_par", runtime)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for i := 0; pb.Next(); i++ {
					v.With(manyRoutes[i&1023]).Inc()
				}
			})
		})
	}
	b.Run("prometheus_WithLabelValues", func(b *testing.B) {
		c := promVecOf()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				c.WithLabelValues(manyRoutes[i&1023]).Inc()
			}
		})
	})
	b.Run("victoriametrics_GetOrCreateCounter", func(b *testing.B) {
		set := vmSet()
		names := vmCounters(set, []string{"route"}, oneLabel(manyRoutes))
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				set.GetOrCreateCounter(names[i&1023]).Inc()
			}
		})
	})
	b.Run("otel_Int64Counter.Add", func(b *testing.B) {
		c := must(otelMeter(b).Int64Counter("requests"))(b)
		ctx := context.Background()
		opts := otelSeries(ctx, c, []string{"route"}, oneLabel(manyRoutes))
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				c.Add(ctx, 1, opts[i&1023]...)
			}
		})
	})
}

// Family 9: two goroutines each adding 1 to its own one of two neighbouring
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

// Family 10: With on existing values, then add 1, at 8, 1,024 and 4,096
// values of one label (route) and of three (route, method, status), each
// operation the values i%n. mmv's values are first used after Start (so
// published by growth steps); client_golang's WithLabelValues;
// VictoriaMetrics' GetOrCreateCounter on the series' names, built once
// before the loop, as its metrics are named (`requests_total{route="/"}`);
// OpenTelemetry's Add with the option of an attribute set built once, as
// its documentation recommends for hot paths. Every series exists before
// the loop.

var withCases = []struct {
	name   string
	labels []string
	n      int
}{
	{"1label/8", []string{"route"}, 8},
	{"1label/1024", []string{"route"}, 1024},
	{"1label/4096", []string{"route"}, 4096},
	{"3labels/8", []string{"route", "method", "status"}, 8},
	{"3labels/1024", []string{"route", "method", "status"}, 1024},
	{"3labels/4096", []string{"route", "method", "status"}, 4096},
}

// withValues are n distinct lists of values of labels, one or three.
func withValues(labels []string, n int) [][]string {
	vs := make([][]string, n)
	for i := range vs {
		if len(labels) == 1 {
			vs[i] = []string{"/api/v1/item/" + strconv.Itoa(i)}
			continue
		}
		vs[i] = []string{"/api/v1/item/" + strconv.Itoa(i>>2), [2]string{"GET", "POST"}[i&1], [2]string{"200", "500"}[i>>1&1]}
	}
	return vs
}

// oneLabel is values as lists of one value each.
func oneLabel(values []string) [][]string {
	vs := make([][]string, len(values))
	for i, v := range values {
		vs[i] = []string{v}
	}
	return vs
}

// mmvWithVec returns a started counter vector holding every list of
// values, first used after Start and published.
func mmvWithVec(b *testing.B, name string, labels []string, values [][]string) *mmv.Vec[mmv.Counter] {
	b.Helper()
	r := mmv.NewRegistry(name, &mmv.Options{Dir: filepath.Join(tmpDir, "mmv"), PublishDelay: time.Hour,
		MaxIndomInstances: 2 * len(values), MaxFileValues: -1})
	v := mmv.NewCounterVec(r, "requests", "Requests served", mmv.Count, labels...)
	v.SetLimit(len(values))
	startMMV(b, r)
	for _, vs := range values {
		if v.With(vs...) == nil {
			b.Fatal(v.Err())
		}
	}
	check(b, r.Flush())
	return v
}

func promWithVec(labels []string, values [][]string) *prometheus.CounterVec {
	c := promRegister(prometheus.NewCounterVec(prometheus.CounterOpts{Name: "requests_total", Help: "Requests served"}, labels))
	for _, vs := range values {
		c.WithLabelValues(vs...)
	}
	return c
}

// vmCounters makes the counters of values in set and returns their names.
func vmCounters(set *metrics.Set, labels []string, values [][]string) []string {
	names := make([]string, len(values))
	for i, vs := range values {
		var b strings.Builder
		b.WriteString("requests_total{")
		for j, l := range labels {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(l + "=" + strconv.Quote(vs[j]))
		}
		b.WriteByte('}')
		names[i] = b.String()
		set.NewCounter(names[i])
	}
	return names
}

// otelSeries adds 0 to c for every list of values, so that each series
// exists, and returns the options that name them.
func otelSeries(ctx context.Context, c otelmetric.Int64Counter, labels []string, values [][]string) [][]otelmetric.AddOption {
	opts := make([][]otelmetric.AddOption, len(values))
	for i, vs := range values {
		kvs := make([]attribute.KeyValue, len(labels))
		for j, l := range labels {
			kvs[j] = attribute.String(l, vs[j])
		}
		opts[i] = []otelmetric.AddOption{otelmetric.WithAttributeSet(attribute.NewSet(kvs...))}
		c.Add(ctx, 0, opts[i]...)
	}
	return opts
}

func BenchmarkWith(b *testing.B) {
	for _, c := range withCases {
		values := withValues(c.labels, c.n)
		mask := c.n - 1
		b.Run(c.name+"/mmv_With.Inc", func(b *testing.B) {
			v := mmvWithVec(b, "with_"+strings.ReplaceAll(c.name, "/", "_"), c.labels, values)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				v.With(values[i&mask]...).Inc()
			}
		})
		b.Run(c.name+"/prometheus_WithLabelValues.Inc", func(b *testing.B) {
			p := promWithVec(c.labels, values)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				p.WithLabelValues(values[i&mask]...).Inc()
			}
		})
		b.Run(c.name+"/victoriametrics_GetOrCreateCounter.Inc", func(b *testing.B) {
			set := vmSet()
			names := vmCounters(set, c.labels, values)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				set.GetOrCreateCounter(names[i&mask]).Inc()
			}
		})
		b.Run(c.name+"/otel_Int64Counter.Add", func(b *testing.B) {
			o := must(otelMeter(b).Int64Counter("requests"))(b)
			ctx := context.Background()
			opts := otelSeries(ctx, o, c.labels, values)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				o.Add(ctx, 1, opts[i&mask]...)
			}
		})
	}
}

func BenchmarkWithParallel(b *testing.B) {
	for _, c := range withCases {
		values := withValues(c.labels, c.n)
		mask := c.n - 1
		b.Run(c.name+"/mmv_With.Inc", func(b *testing.B) {
			v := mmvWithVec(b, "with_par_"+strings.ReplaceAll(c.name, "/", "_"), c.labels, values)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for i := 0; pb.Next(); i++ {
					v.With(values[i&mask]...).Inc()
				}
			})
		})
		b.Run(c.name+"/prometheus_WithLabelValues.Inc", func(b *testing.B) {
			p := promWithVec(c.labels, values)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for i := 0; pb.Next(); i++ {
					p.WithLabelValues(values[i&mask]...).Inc()
				}
			})
		})
		b.Run(c.name+"/victoriametrics_GetOrCreateCounter.Inc", func(b *testing.B) {
			set := vmSet()
			names := vmCounters(set, c.labels, values)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for i := 0; pb.Next(); i++ {
					set.GetOrCreateCounter(names[i&mask]).Inc()
				}
			})
		})
		b.Run(c.name+"/otel_Int64Counter.Add", func(b *testing.B) {
			o := must(otelMeter(b).Int64Counter("requests"))(b)
			ctx := context.Background()
			opts := otelSeries(ctx, o, c.labels, values)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for i := 0; pb.Next(); i++ {
					o.Add(ctx, 1, opts[i&mask]...)
				}
			})
		})
	}
}

// BenchmarkWithTurns is the row of WithParallel where VictoriaMetrics'
// time is bimodal (one label, 8 values, 2 goroutines), with a look at how
// the two goroutines share the time: each notes the time every 256
// operations, and turns is the share of those notes, in the order of
// their times, whose goroutine differs from the last one's. Two
// goroutines running side by side make about 1 (one note each in turn);
// one running while the other waits, near 0. VictoriaMetrics takes a
// mutex in GetOrCreateCounter, which one goroutine then keeps for long
// runs of operations at its serial speed, while mmv's lookups lock
// nothing and both goroutines update the values' cache lines at once.
// Noting the time adds to each row's ns/op: WithParallel has them bare.
func BenchmarkWithTurns(b *testing.B) {
	values := withValues([]string{"route"}, 8)
	turns := func(b *testing.B, op func(i int)) {
		var mu sync.Mutex
		type note struct {
			t int64
			g int
		}
		var notes []note
		g := 0
		b.RunParallel(func(pb *testing.PB) {
			mu.Lock()
			me := g
			g++
			mu.Unlock()
			var mine []note
			for i := 0; pb.Next(); i++ {
				op(i & 7)
				if i&255 == 0 {
					mine = append(mine, note{time.Now().UnixNano(), me})
				}
			}
			mu.Lock()
			notes = append(notes, mine...)
			mu.Unlock()
		})
		slices.SortFunc(notes, func(x, y note) int { return cmp.Compare(x.t, y.t) })
		changes := 0
		for i := 1; i < len(notes); i++ {
			if notes[i].g != notes[i-1].g {
				changes++
			}
		}
		b.ReportMetric(float64(changes)/float64(max(len(notes)-1, 1)), "turns")
	}
	b.Run("mmv_With.Inc", func(b *testing.B) {
		v := mmvWithVec(b, "with_turns", []string{"route"}, values)
		turns(b, func(i int) { v.With(values[i]...).Inc() })
	})
	b.Run("victoriametrics_GetOrCreateCounter.Inc", func(b *testing.B) {
		set := vmSet()
		names := vmCounters(set, []string{"route"}, values)
		turns(b, func(i int) { set.GetOrCreateCounter(names[i]).Inc() })
	})
}
