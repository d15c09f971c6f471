package compare

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	vm "github.com/VictoriaMetrics/metrics"
	"github.com/gopcp/mmv"
	"github.com/prometheus/client_golang/prometheus"
)

// Declaring and first using label values: a program declares vectors of
// counters, then uses each of their label values once. Every library does
// it with its idiomatic API, the label values built as a program builds
// them (strconv), and the cost is reported per value: mmv's
// NewCounterVec and With(...).Inc, client_golang's NewCounterVec,
// Register and WithLabelValues(...).Inc, VictoriaMetrics' GetOrCreateCounter
// on a Set with the series' name built with fmt.Sprintf (it takes no label
// values, only whole names).
//
// The shapes: 1 vector of 10 values, 1,000 vectors of 10 values, 1 vector
// of 10,000 values. mmv's cases: "before" declares and uses every value
// before Start, then closes the registry, which had no file, within the
// time: the other cases stop the timer around what they do not time, and
// a stop costs a read of the memory statistics, which stops the world,
// as long as declaring 1 x 10 itself; "before+start" the same, then Start; "after" declares the
// vectors, starts (not timed), then uses the values, which are live at
// once: the Flush that then publishes them, as the registry's timer would
// after PublishDelay, is reported apart (flush-ns/op, per registry). The
// "after" case makes and starts registries in batches of 160 values or
// more (afterBatch: 16 registries of 1 x 10): one at a time, the timed
// making and first uses of 1 x 10 each ran right after the untimed Start,
// Flush and Close, whose system calls and page faults had emptied the
// caches, which no other library's loop pays, and took 4,200-5,000 ns a
// value, against 2,000-2,200 in batches, the code the same. Each case writes in
// a directory of its own: a Start reads the head of every MMV file of its
// directory to claim a cluster no live file has (identity.go), and the
// files the other benchmarks of the run leave in tmpDir made the Start of
// 1 x 10 cost twice as much.

// declShape is a number of vectors of a number of values each.
type declShape struct{ vecs, values int }

func (s declShape) String() string { return strconv.Itoa(s.vecs) + "x" + strconv.Itoa(s.values) }

var declShapes = []declShape{{1, 10}, {1000, 10}, {1, 10000}}

// vecName and routeValue name vector i and value j as a program would.
func vecName(i int) string    { return "requests_" + strconv.Itoa(i) }
func routeValue(j int) string { return "/api/item/" + strconv.Itoa(j) }

// afterBatch is how many registries the "after" case starts at once: as
// many as make 160 values.
func afterBatch(s declShape) int { return max(1, 160/(s.vecs*s.values)) }

// declRegistry is a registry in dir whose caps take the shape.
func declRegistry(dir, name string) *mmv.Registry {
	return mmv.NewRegistry(name, &mmv.Options{Dir: dir, PublishDelay: time.Hour,
		MaxIndomInstances: -1, MaxInstances: -1, MaxFileValues: -1, MaxValues: -1})
}

func BenchmarkDeclare(b *testing.B) {
	for _, s := range declShapes {
		per := func(b *testing.B, batch int) {
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(batch*s.vecs*s.values), "ns/value")
		}
		for _, when := range []string{"before", "before+start", "after"} {
			b.Run(s.String()+"/mmv/"+when, func(b *testing.B) {
				dir := filepath.Join(b.TempDir(), "mmv") // its own: see declShapes
				var flush time.Duration
				var size int64
				b.ReportAllocs()
				batch := 1
				if when == "after" {
					batch = afterBatch(s)
				}
				rs := make([]*mmv.Registry, batch)
				vs := make([][]*mmv.Vec[mmv.Counter], batch)
				for b.Loop() {
					for k := range rs {
						rs[k] = declRegistry(dir, "declare"+strconv.Itoa(k))
						vs[k] = make([]*mmv.Vec[mmv.Counter], s.vecs)
						for i := range vs[k] {
							vs[k][i] = mmv.NewCounterVec(rs[k], vecName(i), "Requests served", mmv.Count, "route")
							vs[k][i].SetLimit(s.values)
						}
					}
					if when == "after" {
						b.StopTimer() // Start is the "before+start" case's
						for _, r := range rs {
							check(b, r.Start())
						}
						b.StartTimer()
					}
					for k := range rs {
						for j := range s.values {
							route := routeValue(j)
							for _, v := range vs[k] {
								v.With(route).Inc()
							}
						}
					}
					if when == "before" {
						check(b, rs[0].Close())
						continue
					}
					r := rs[0]
					if when == "before+start" {
						check(b, r.Start())
					}
					b.StopTimer()
					if when == "before+start" {
						size = must(os.Stat(r.Path()))(b).Size()
					}
					for _, r := range rs {
						if when == "after" {
							t0 := time.Now()
							check(b, r.Flush())
							flush += time.Since(t0)
						}
						check(b, r.Close())
					}
					b.StartTimer()
				}
				per(b, batch)
				if when == "after" {
					b.ReportMetric(float64(flush.Nanoseconds())/float64(b.N*batch), "flush-ns/op")
				}
				if size > 0 {
					b.ReportMetric(float64(size), "file-bytes")
				}
			})
		}
		b.Run(s.String()+"/prometheus", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				reg := prometheus.NewRegistry()
				vs := make([]*prometheus.CounterVec, s.vecs)
				for i := range vs {
					vs[i] = prometheus.NewCounterVec(prometheus.CounterOpts{Name: vecName(i), Help: "Requests served"}, []string{"route"})
					reg.MustRegister(vs[i])
				}
				for j := range s.values {
					route := routeValue(j)
					for _, v := range vs {
						v.WithLabelValues(route).Inc()
					}
				}
			}
			per(b, 1)
		})
		b.Run(s.String()+"/victoriametrics", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				set := vm.NewSet()
				names := make([]string, s.vecs)
				for i := range names {
					names[i] = vecName(i)
				}
				for j := range s.values {
					route := routeValue(j)
					for _, n := range names {
						set.GetOrCreateCounter(fmt.Sprintf("%s{route=%q}", n, route)).Inc()
					}
				}
			}
			per(b, 1)
		})
	}
}

// BenchmarkFirstUseLatency is the latency of With on new label values of
// one vector after Start, while the file grows under them: each value's
// first With, timed alone, at the default caps (the vector's default limit
// of 1,000 values) and raised (100,000 values), with the default
// PublishDelay, so that publications run as they do in a program. Of each
// iteration, a registry filled anew, it takes the median, the 99th
// percentile and the largest, over every value and over the last tenth of
// them, whose first uses met the largest files (flat latency means those
// stay where the first ones are), the mean over the first and the last
// tenth, and how many took over 0.3 ms; it reports the median of each over
// the iterations: the largest of one iteration alone read from 4 to 38 ms
// for the same code. VictoriaMetrics' first uses of as many names are
// measured alike.
func BenchmarkFirstUseLatency(b *testing.B) {
	for _, c := range []struct {
		name   string
		values int
		opts   mmv.Options
	}{
		{"default", mmv.DefaultVecLimit, mmv.Options{}},
		{"raised", 100000, mmv.Options{MaxIndomInstances: -1, MaxInstances: -1, MaxFileValues: -1, MaxValues: -1}},
	} {
		b.Run(c.name+"/mmv", func(b *testing.B) {
			dir := filepath.Join(b.TempDir(), "mmv") // its own: see declShapes
			f := newFirstUses(c.values)
			for b.Loop() {
				b.StopTimer()
				o := c.opts
				o.Dir = dir
				r := mmv.NewRegistry("firstuse", &o)
				v := mmv.NewCounterVec(r, "requests", "Requests served", mmv.Count, "route")
				v.SetLimit(c.values)
				check(b, r.Start())
				b.StartTimer()
				for _, route := range f.routes {
					t0 := time.Now()
					v.With(route).Inc()
					f.lat = append(f.lat, time.Since(t0))
				}
				b.StopTimer()
				check(b, r.Close())
				f.record()
				b.StartTimer()
			}
			f.report(b)
		})
		// The same first uses in VictoriaMetrics (GetOrCreateCounter on a
		// name made with fmt.Sprintf, as BenchmarkDeclare), which keeps
		// its values in memory and publishes nothing: what its map's
		// growth, the collector and this machine leave of a flat latency.
		b.Run(c.name+"/victoriametrics", func(b *testing.B) {
			f := newFirstUses(c.values)
			for b.Loop() {
				set := vm.NewSet()
				for _, route := range f.routes {
					t0 := time.Now()
					set.GetOrCreateCounter(fmt.Sprintf("requests{route=%q}", route)).Inc()
					f.lat = append(f.lat, time.Since(t0))
				}
				b.StopTimer()
				f.record()
				b.StartTimer()
			}
			f.report(b)
		})
	}
}

// firstUses are BenchmarkFirstUseLatency's label values, the latencies of
// one iteration's first uses of them, and the metrics of every iteration.
type firstUses struct {
	routes  []string
	lat     []time.Duration
	metrics map[string][]float64
}

func newFirstUses(n int) *firstUses {
	f := &firstUses{routes: make([]string, n), lat: make([]time.Duration, 0, n), metrics: map[string][]float64{}}
	for j := range f.routes {
		f.routes[j] = routeValue(j)
	}
	return f
}

// record adds the metrics of the iteration's latencies, and empties them.
func (f *firstUses) record() {
	for name, x := range firstUseMetrics(f.lat) {
		f.metrics[name] = append(f.metrics[name], x)
	}
	f.lat = f.lat[:0]
}

// report reports the median of each metric over the iterations.
func (f *firstUses) report(b *testing.B) {
	for name, xs := range f.metrics {
		slices.Sort(xs)
		b.ReportMetric(xs[len(xs)/2], name)
	}
}

// firstUseMetrics are BenchmarkFirstUseLatency's metrics of one registry's
// first uses, lat.
func firstUseMetrics(lat []time.Duration) map[string]float64 {
	m := map[string]float64{}
	quantiles := func(lat []time.Duration, suffix string) {
		s := slices.Clone(lat)
		slices.Sort(s)
		m["p50-ns"+suffix] = float64(s[len(s)/2].Nanoseconds())
		m["p99-ns"+suffix] = float64(s[len(s)*99/100].Nanoseconds())
		m["max-ns"+suffix] = float64(s[len(s)-1].Nanoseconds())
	}
	quantiles(lat, "")
	quantiles(lat[len(lat)*9/10:], "-last10%")
	var first, last time.Duration
	slow := 0
	for i, d := range lat {
		if i < len(lat)/10 {
			first += d
		} else if i >= len(lat)*9/10 {
			last += d
		}
		if d > 300*time.Microsecond {
			slow++
		}
	}
	m["mean-ns-first10%"] = float64(first.Nanoseconds()) / float64(len(lat)/10)
	m["mean-ns-last10%"] = float64(last.Nanoseconds()) / float64(len(lat)/10)
	m["over-0.3ms"] = float64(slow)
	return m
}

// BenchmarkDeclareHistogram is BenchmarkDeclare for one histogram vector
// of 1,000 label values, each first used by one observation, reported per
// value: mmv's NewHistogramVec and With(...).Observe, before Start (the
// registry closed within the time) and after (Start, Flush and Close not
// timed); client_golang's NewHistogramVec, Register and
// WithLabelValues(...).Observe; VictoriaMetrics'
// GetOrCreatePrometheusHistogram on a Set, with the series' name built
// with fmt.Sprintf. Each library's default buckets: mmv's 19 (and its
// statistics: count, sum, min, max, mean and four quantiles over a
// window, 28 values a histogram in PCP), client_golang's 11,
// VictoriaMetrics' 11.
func BenchmarkDeclareHistogram(b *testing.B) {
	const n = 1000
	routes := make([]string, n)
	for j := range routes {
		routes[j] = routeValue(j)
	}
	per := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/value")
	}
	for _, when := range []string{"before", "after"} {
		b.Run("mmv/"+when, func(b *testing.B) {
			dir := filepath.Join(b.TempDir(), "mmv") // its own: see declShapes
			b.ReportAllocs()
			for b.Loop() {
				r := declRegistry(dir, "histograms")
				v := mmv.NewHistogramVec(r, "latency", "Request latency", mmv.Second, nil, "route")
				v.SetLimit(n)
				if when == "after" {
					b.StopTimer()
					check(b, r.Start())
					b.StartTimer()
				}
				for _, route := range routes {
					v.With(route).Observe(0.01)
				}
				if when == "after" {
					b.StopTimer()
					check(b, r.Flush())
					check(b, r.Close())
					b.StartTimer()
					continue
				}
				check(b, r.Close())
			}
			per(b)
		})
	}
	b.Run("prometheus", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			reg := prometheus.NewRegistry()
			v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "latency_seconds", Help: "Request latency"}, []string{"route"})
			reg.MustRegister(v)
			for _, route := range routes {
				v.WithLabelValues(route).Observe(0.01)
			}
		}
		per(b)
	})
	b.Run("victoriametrics", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			set := vm.NewSet()
			for _, route := range routes {
				set.GetOrCreatePrometheusHistogram(fmt.Sprintf("latency_seconds{route=%q}", route)).Update(0.01)
			}
		}
		per(b)
	})
}
