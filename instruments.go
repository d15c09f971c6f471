package mmv

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"
)

// Instruments are what a Go service reaches for, in the idiom of
// prometheus/client_golang and VictoriaMetrics/metrics: each is declared in
// one call with a name, a help text and units, and updated with one atomic
// operation that neither locks nor allocates.
//
//	requests := mmv.NewCounter(nil, "requests", "Requests served", mmv.Count)
//	...
//	requests.Inc()
//
// A nil registry means Default. Instruments may be declared before the
// registry's Start or after it (the file then grows; see Registry.Flush).
// The New functions panic when the registry refuses a declaration (an
// invalid or duplicate name, a closed registry), as regexp.MustCompile and
// promauto do, because a declaration is a programming error that no caller
// handles better than a crash at startup. The panic value is an error
// wrapping the registry's sentinel (ErrName, ErrDuplicate, ErrClosed...).
//
// Updates made before Start are not lost: an instrument counts into memory
// of its own until Start, which carries that value into the file and
// points the instrument at its value in the file. An update made by a
// goroutine at the very moment of Start may land in that memory after it
// was carried; Close carries it again, so counters stay exact. After
// Close, updates are dropped, as a Value's are.
//
// Help texts: the first line is the metric's short help, the rest its long
// help, each at most 255 bytes.

// Default is the registry the package-level convenience uses: the New
// functions declare on it when given a nil registry. Its file is named after
// the program: the base name of os.Args[0], with every character PCP does
// not accept in a file name turned into '_' (and "go_" put before a name
// that does not start with a letter), so a program built as "my-server"
// writes $PCP_TMP_DIR/mmv/my_server, read as mmv.my_server.* in PCP.
// The program calls Default.Start once its instruments are declared, and
// Default.Close on exit.
var Default = NewRegistry(programName(os.Args), nil)

// programName turns a program's path into a valid file name.
func programName(args []string) string {
	name := "go"
	if len(args) > 0 && args[0] != "" {
		name = filepath.Base(args[0])
	}
	name = strings.TrimSuffix(name, ".exe")
	b := []byte(name)
	for i, c := range b {
		if !isLetter(c) && !isDigit(c) && c != '_' {
			b[i] = '_'
		}
	}
	if len(b) == 0 || !isLetter(b[0]) {
		b = append([]byte("go_"), b...)
	}
	if len(b) > 64 {
		b = b[:64]
	}
	return string(b)
}

func metricOf(name, help string, t Type, sem Semantics, units Units, indom uint32) Metric {
	short, long := splitHelp(help)
	return Metric{Name: name, Type: t, Semantics: sem, Units: units, Indom: indom, ShortHelp: short, LongHelp: long}
}

// Counter is a total that only grows, such as requests served or bytes
// sent: a Uint64 metric with counter semantics, which PCP tools show as a
// rate. Its methods are safe from any goroutine, lock-free and
// allocation-free; a nil *Counter ignores them.
type Counter struct{ s cell }

// NewCounter declares a counter on r (Default when nil). units are usually
// Count or Byte.
func NewCounter(r *Registry, name, help string, units Units) *Counter {
	c := newCounter()
	declareCell(registry(r), metricOf(name, help, Uint64, SemCounter, units, 0), &c.s)
	return c
}

func newCounter() *Counter {
	c := &Counter{}
	c.s.init(Uint64)
	return c
}

// Inc adds one.
func (c *Counter) Inc() {
	if c != nil {
		atomic.AddUint64(c.s.word(), 1)
	}
}

// Add adds n.
func (c *Counter) Add(n uint64) {
	if c != nil {
		atomic.AddUint64(c.s.word(), n)
	}
}

// Set stores n, for mirroring a total counted elsewhere (as the goruntime
// package does); a counter PCP sees go down reads as a wrap.
func (c *Counter) Set(n uint64) {
	if c != nil {
		c.s.carry()
		c.s.value().Set(int64(n))
	}
}

// Get returns the total.
func (c *Counter) Get() uint64 {
	if c == nil {
		return 0
	}
	return atomic.LoadUint64(c.s.word()) + c.s.pending()
}

// Gauge is a level that goes up and down, such as a temperature or a
// ratio: a Double metric with instant semantics. Its methods are safe from
// any goroutine and allocation-free; Add, Inc and Dec are a
// compare-and-swap loop. A nil *Gauge ignores them.
type Gauge struct{ s cell }

// NewGauge declares a float64 gauge on r (Default when nil).
func NewGauge(r *Registry, name, help string, units Units) *Gauge {
	g := newGauge()
	declareCell(registry(r), metricOf(name, help, Double, SemInstant, units, 0), &g.s)
	return g
}

func newGauge() *Gauge {
	g := &Gauge{}
	g.s.init(Double)
	return g
}

// Set stores f.
func (g *Gauge) Set(f float64) {
	if g != nil {
		g.s.value().SetFloat(f)
	}
}

// Add adds f, which may be negative.
func (g *Gauge) Add(f float64) {
	if g != nil {
		g.s.value().AddFloat(f)
	}
}

// Inc adds one.
func (g *Gauge) Inc() { g.Add(1) }

// Dec subtracts one.
func (g *Gauge) Dec() { g.Add(-1) }

// Get returns the level.
func (g *Gauge) Get() float64 {
	if g == nil {
		return 0
	}
	return g.s.value().Float() + math.Float64frombits(g.s.pending())
}

// IntGauge is an integer level that goes up and down, such as requests in
// flight or a queue length: an Int64 metric with instant semantics. Its
// methods are single atomic operations, safe from any goroutine; a nil
// *IntGauge ignores them.
type IntGauge struct{ s cell }

// NewIntGauge declares an integer gauge on r (Default when nil).
func NewIntGauge(r *Registry, name, help string, units Units) *IntGauge {
	g := newIntGauge()
	declareCell(registry(r), metricOf(name, help, Int64, SemInstant, units, 0), &g.s)
	return g
}

func newIntGauge() *IntGauge {
	g := &IntGauge{}
	g.s.init(Int64)
	return g
}

// Set stores n.
func (g *IntGauge) Set(n int64) {
	if g != nil {
		g.s.carry()
		g.s.value().Set(n)
	}
}

// Add adds n, which may be negative.
func (g *IntGauge) Add(n int64) {
	if g != nil {
		atomic.AddUint64(g.s.word(), uint64(n))
	}
}

// Inc adds one.
func (g *IntGauge) Inc() { g.Add(1) }

// Dec subtracts one.
func (g *IntGauge) Dec() { g.Add(-1) }

// Get returns the level.
func (g *IntGauge) Get() int64 {
	if g == nil {
		return 0
	}
	return int64(atomic.LoadUint64(g.s.word()) + g.s.pending())
}

// Timer accumulates time spent, such as time in database queries: an
// Elapsed metric (counter semantics, microseconds), which PCP exports as a
// 64-bit counter of microseconds, so its rate is the time spent per second
// of wall clock, the average concurrency of the timed code. Durations are
// summed in nanoseconds and published in whole microseconds, so many short
// durations add up exactly. Its methods are safe from any goroutine,
// lock-free and allocation-free; a nil *Timer ignores them.
type Timer struct {
	s  cell
	ns atomic.Int64 // nanoseconds observed
}

// NewTimer declares a timer on r (Default when nil).
func NewTimer(r *Registry, name, help string) *Timer {
	t := newTimer()
	declareCell(registry(r), metricOf(name, help, Elapsed, SemCounter, Microsecond, 0), &t.s)
	return t
}

func newTimer() *Timer {
	t := &Timer{}
	t.s.init(Elapsed)
	return t
}

// Observe adds d; a negative d is ignored.
func (t *Timer) Observe(d time.Duration) {
	if t == nil || d <= 0 {
		return
	}
	n := t.ns.Add(int64(d))
	// The microseconds this adds: the telescoping sum of these is exactly
	// the total nanoseconds in whole microseconds.
	if us := n/1000 - (n-int64(d))/1000; us != 0 {
		atomic.AddUint64(t.s.word(), uint64(us))
	}
}

// Time calls f and adds the time it took.
func (t *Timer) Time(f func()) {
	defer t.Start().Stop()
	f()
}

// Start starts timing one piece of work: Stop on the Timing it returns adds
// the time since. Any number of goroutines may time work at once.
//
//	defer t.Start().Stop()
func (t *Timer) Start() Timing { return Timing{t, time.Now()} }

// Get returns the total time observed.
func (t *Timer) Get() time.Duration {
	if t == nil {
		return 0
	}
	return time.Duration(t.ns.Load())
}

// Timing is one piece of work being timed, from Timer.Start to Stop. It is
// a value: copy it freely, but Stop it once.
type Timing struct {
	t     *Timer
	start time.Time
}

// Stop adds the time since Start to the timer, and returns it.
func (w Timing) Stop() time.Duration {
	d := time.Since(w.start)
	w.t.Observe(d)
	return d
}
