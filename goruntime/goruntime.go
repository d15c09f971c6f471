// Package goruntime publishes the Go runtime's own metrics to PCP: every
// metric runtime/metrics offers (GC, heap, memory classes, scheduler,
// goroutines, CPU classes, mutex wait, GODEBUG counters...), declared on an
// mmv registry and refreshed on an interval.
//
//	r := mmv.NewRegistry("goruntime", &mmv.Options{Flags: mmv.Process})
//	if err := goruntime.Register(r, nil); err != nil { ... }
//	if err := r.Start(); err != nil { ... }
//	defer r.Close()
//
// then `pminfo -f mmv.goruntime` shows them.
//
// # Types, semantics and units
//
// Every metric is an instrument of package mmv, refreshed from one read
// of runtime/metrics, so that a registry never started (package expose
// on a host without PCP) serves them too: a cumulative value of kind
// Uint64 is an mmv.Counter (a Uint64 counter), one of kind Float64 a
// Counter in finer units, rounded (nanoseconds for the cpu-seconds and
// seconds, as package otelexporter keeps a float total), wrapping past
// 2^64 as a counter does (584 CPU-years); a value that is not cumulative
// is an mmv.IntGauge (Int64, instant; a Uint64 above math.MaxInt64 reads
// as that) or an mmv.Gauge (Double, instant). Units follow the unit
// after the ':': bytes are Byte, seconds and cpu-seconds Second
// (Nanosecond for a Float64 total, which every scalar in seconds or
// cpu-seconds is in Go 1.26: PCP shows none in sec), percent
// dimensionless, and every other unit (objects, goroutines, threads,
// gc-cycles, events, calls...) Count.
//
// A Float64Histogram (such as /sched/latencies:seconds) becomes two
// metrics under its name: NAME.bucket, a Uint64 counter (units Count) over
// an instance domain whose instances are the buckets' upper bounds in the
// metric's unit, as a vector with the one label le names them
// ("le=0.001024", "le=+Inf" for the last), with the count of each bucket
// (not cumulative); and NAME.count, the total count.
//
// # Names
//
// A runtime/metrics name such as /gc/heap/allocs:bytes becomes the PCP name
// gc.heap.allocs_bytes (under Options.Prefix, if any):
//
//  1. The leading '/' is dropped and the name is cut at its last ':' into
//     a path and a unit.
//  2. The unit is appended to the last path component after a '_':
//     runtime/metrics has names that differ only by unit
//     (/gc/heap/allocs:bytes and /gc/heap/allocs:objects), and a suffix
//     keeps a leaf such as sched.goroutines_goroutines apart from the
//     components of longer names (sched.goroutines.running_goroutines).
//  3. The path's '/' become '.'; in each component every character other
//     than a letter, a digit or '_' becomes '_' (so allocs-by-size becomes
//     allocs_by_size), and a component that does not start with a letter
//     gets an "x" in front.
//
// A test checks, on the runtime's actual metric set, that the rule yields
// valid PCP names, no two alike, and no name that is also a prefix at a dot
// of another (which would make PCP drop every MMV metric on the host).
// Register checks it again on the metrics of the running Go version and
// refuses to declare a set that breaks it.
package goruntime

import (
	"fmt"
	"math"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/bridge"
	"github.com/gopcp/mmv/internal/pcpname"
)

// Options configures Register; the zero value of each field means its
// default.
type Options struct {
	// Prefix is put before every metric name, with a dot: "go" gives
	// go.gc.heap.allocs_bytes. Default: none, for a file of its own.
	Prefix string
	// Interval is how often the metrics are read and copied into the file.
	// Default: mmv.DefaultInterval.
	Interval time.Duration
}

// Name returns the PCP metric name of a runtime/metrics name, as the
// package documentation says, such as gc.heap.allocs_bytes for
// /gc/heap/allocs:bytes.
func Name(runtimeName string) string {
	path, unit := strings.TrimPrefix(runtimeName, "/"), ""
	if i := strings.LastIndexByte(path, ':'); i >= 0 {
		path, unit = path[:i], path[i+1:]
	}
	if unit != "" {
		path += "_" + unit
	}
	parts := strings.Split(path, "/")
	for i, p := range parts {
		parts[i] = pcpname.Part(p, "x")
	}
	return strings.Join(parts, ".")
}

// Units returns the PCP units of a runtime/metrics unit (the part after
// the ':'); a cumulative Float64 is kept in finer ones (Nanosecond for
// Second), as the package documentation says.
func Units(unit string) mmv.Units {
	switch unit {
	case "bytes":
		return mmv.Byte
	case "seconds", "cpu-seconds":
		return mmv.Second
	case "percent":
		return mmv.NoUnits
	}
	return mmv.Count
}

// Names returns the PCP names Register declares for descriptions ds: one
// per scalar, NAME.bucket and NAME.count per histogram; metrics of an
// unsupported kind are left out.
func Names(ds []metrics.Description, prefix string) []string {
	var names []string
	for _, d := range ds {
		n := withPrefix(prefix, Name(d.Name))
		switch d.Kind {
		case metrics.KindUint64, metrics.KindFloat64:
			names = append(names, n)
		case metrics.KindFloat64Histogram:
			names = append(names, n+".bucket", n+".count")
		}
	}
	return names
}

func withPrefix(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

// CheckNames returns an error naming the first two names that are alike or
// of which one is a prefix of the other at a dot.
func CheckNames(names []string) error {
	sorted := slices.Sorted(slices.Values(names))
	for i := 1; i < len(sorted); i++ {
		a, b := sorted[i-1], sorted[i]
		if a == b {
			return fmt.Errorf("goruntime: two metrics named %s", a)
		}
		if strings.HasPrefix(b, a+".") {
			return fmt.Errorf("goruntime: metric %s is a prefix of metric %s", a, b)
		}
	}
	return nil
}

// scalar is a Uint64 or Float64 runtime metric: the instrument of its
// kind holds it, the others nil.
type scalar struct {
	counter *mmv.Counter
	factor  float64 // counter units per unit of a Float64 total
	ints    *mmv.IntGauge
	floats  *mmv.Gauge
}

// set stores the sample's value in the scalar's instrument.
func (s *scalar) set(v metrics.Value) {
	switch {
	case s.counter != nil && v.Kind() == metrics.KindUint64:
		s.counter.Set(v.Uint64())
	case s.counter != nil:
		if n, ok := total(v.Float64(), s.factor); ok {
			s.counter.Set(n)
		}
	case s.ints != nil:
		s.ints.Set(int64(min(v.Uint64(), math.MaxInt64)))
	default:
		s.floats.Set(v.Float64())
	}
}

// total returns a float total f as a counter's value in units factor
// times finer, rounded, modulo 2^64 past it: the cpu-seconds reach 2^64
// ns after 584 CPU-years (9 months at GOMAXPROCS 768), and a counter
// wraps there, as PCP reads a u64 counter (a reset, to Prometheus), its
// increments right, where one stopped at its last value read a rate of
// zero for good: bridge.Count of it, whose ok is false for a negative,
// NaN or infinite f (Mod makes it NaN), which a runtime total never is.
// The float holds no odd integer near 2^64, so the value is never all
// ones (PCP's "no value").
func total(f, factor float64) (n uint64, ok bool) {
	return bridge.Count(math.Mod(f*factor, 0x1p64), 1)
}

// histogram is a Float64Histogram runtime metric.
type histogram struct {
	buckets []*mmv.Counter
	count   *mmv.Counter
}

// refresher copies runtime/metrics into the registry's instruments.
type refresher struct {
	samples []metrics.Sample
	scalars []scalar    // per sample; zero for histograms
	hists   []histogram // per sample; zero for scalars
}

// Register declares every metric of runtime/metrics.All on r (mmv.Default
// when nil), with the options o (nil for the defaults), and arranges for
// them to be read and copied into the file every interval while r is
// started. It declares them in one transaction (mmv.Registry.Transact):
// when the registry refuses one, it declares none and returns an error
// wrapping the refusal. A histogram bucket refused past the registry's
// caps on instances (mmv.Options.MaxIndomInstances...) is left out, counted in
// mmv.dropped, and returned as an error, the other metrics declared.
func Register(r *mmv.Registry, o *Options) error {
	if r == nil {
		r = mmv.Default
	}
	var opts Options
	if o != nil {
		opts = *o
	}
	ds := metrics.All()
	if err := CheckNames(Names(ds, opts.Prefix)); err != nil {
		return err
	}
	b := &refresher{}
	// Histograms need their bounds, which only a read tells.
	probe := make([]metrics.Sample, len(ds))
	for i, d := range ds {
		probe[i].Name = d.Name
	}
	metrics.Read(probe)
	// Bucket instances are made once the metrics are declared: a vector
	// takes none within the transaction, which holds the registry's lock.
	var vecs []*mmv.Vec[mmv.Counter]
	var bounds [][]string
	err := r.Transact(func(tx *mmv.Tx) error {
		for i, d := range ds {
			name := withPrefix(opts.Prefix, Name(d.Name))
			_, unit, _ := strings.Cut(d.Name, ":")
			short, long := help(d)
			var h histogram
			var s scalar
			switch d.Kind {
			case metrics.KindUint64, metrics.KindFloat64:
				var err error
				if s, err = declareScalar(tx, d, name, short+"\n"+long, Units(unit)); err != nil {
					return err
				}
			case metrics.KindFloat64Histogram:
				vec, err := mmv.DeclareVec[mmv.Counter](tx, name+".bucket", pcpname.Help("Observations by bucket: "+short)+"\n"+
					"Instances are upper bounds (le) in "+unit+"; counts are per bucket, not cumulative.", mmv.Count, "le")
				if err != nil {
					return err
				}
				vec.SetInstanceLabels(false) // the names say it; the file's label budget is the program's
				bs := boundNames(probe[i].Value.Float64Histogram().Buckets[1:])
				vec.SetLimit(len(bs)) // and room in the file for these alone (Options.MaxFileValues)
				vecs = append(vecs, vec)
				bounds = append(bounds, bs)
				if h.count, err = mmv.Declare[mmv.Counter](tx, name+".count", pcpname.Help("Observations: "+short), mmv.Count); err != nil {
					return err
				}
			default:
				continue
			}
			b.samples = append(b.samples, metrics.Sample{Name: d.Name})
			b.scalars = append(b.scalars, s)
			b.hists = append(b.hists, h)
		}
		return nil
	})
	if err != nil {
		return err
	}
	// A bucket refused past the registry's instance caps is counted in
	// mmv.dropped, its nil counter ignoring updates, and Register says so.
	var refused error
	hist := 0
	for i := range b.hists {
		if h := &b.hists[i]; h.count != nil {
			for _, in := range bounds[hist] {
				c, err := vecs[hist].Get(in)
				if refused == nil {
					refused = err
				}
				h.buckets = append(h.buckets, c)
			}
			hist++
		}
	}
	r.Poll(opts.Interval, b.refresh)
	return refused
}

// declareScalar declares on tx the instrument of a Uint64 or Float64
// runtime metric d, as the package documentation says.
func declareScalar(tx *mmv.Tx, d metrics.Description, name, help string, u mmv.Units) (s scalar, err error) {
	switch {
	case d.Cumulative && d.Kind == metrics.KindFloat64:
		var fu mmv.Units
		fu, s.factor = bridge.Fine(u)
		s.counter, err = mmv.Declare[mmv.Counter](tx, name, help, fu)
	case d.Cumulative:
		s.counter, err = mmv.Declare[mmv.Counter](tx, name, help, u)
	case d.Kind == metrics.KindFloat64:
		s.floats, err = mmv.Declare[mmv.Gauge](tx, name, help, u)
	default:
		s.ints, err = mmv.Declare[mmv.IntGauge](tx, name, help, u)
	}
	return s, err
}

// help returns a description as short and long help: its first sentence,
// and the whole text, each cut to what a help text holds.
func help(d metrics.Description) (short, long string) {
	text := strings.Join(strings.Fields(d.Description), " ")
	short = text
	if i := strings.Index(short, ". "); i >= 0 {
		short = short[:i+1]
	}
	return pcpname.Help(short), pcpname.Help(d.Name + ": " + text)
}

// boundNames names buckets by their upper bounds: the fewest significant
// digits (6 at least) that tell them all apart, "+Inf" for infinity.
func boundNames(uppers []float64) []string {
	for prec := 6; ; prec++ {
		names := make([]string, len(uppers))
		seen := make(map[string]bool, len(uppers))
		unique := true
		for i, u := range uppers {
			switch {
			case math.IsInf(u, 1):
				names[i] = "+Inf"
			case prec > 17:
				names[i] = strconv.FormatFloat(u, 'g', -1, 64)
			default:
				names[i] = strconv.FormatFloat(u, 'g', prec, 64)
			}
			unique = unique && !seen[names[i]]
			seen[names[i]] = true
		}
		if unique || prec > 17 {
			return names
		}
	}
}

// refresh reads the runtime's metrics and copies them into the
// instruments.
func (b *refresher) refresh() {
	metrics.Read(b.samples)
	for i, smp := range b.samples {
		if smp.Value.Kind() != metrics.KindFloat64Histogram {
			b.scalars[i].set(smp.Value)
			continue
		}
		h := &b.hists[i]
		var total uint64
		for j, c := range smp.Value.Float64Histogram().Counts {
			if j < len(h.buckets) {
				h.buckets[j].Set(c)
			}
			total += c
		}
		h.count.Set(total)
	}
}
