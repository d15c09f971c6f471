package mmv

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv/internal/pcpname"
	"github.com/gopcp/mmv/internal/pcptest"
)

// instrumentKind is a New function, and the metric names it declares for
// an instrument named name.
type instrumentKind struct {
	kind    string
	declare func(r *Registry, name string)
	metrics func(name string) []string
}

// histogramParts are the metric name parts of a histogram with the
// default quantiles.
var histogramParts = []string{"bucket", "count", "sum", "min", "max", "mean", "p50", "p90", "p99", "p999"}

func histogramMetrics(name string) []string {
	ms := make([]string, len(histogramParts))
	for i, p := range histogramParts {
		ms[i] = name + "." + p
	}
	return ms
}

func oneMetric(name string) []string { return []string{name} }

// instrumentKinds lists every New function. What the registry's goroutines
// write into the file later, callbacks' values and histograms' statistics,
// is zero, as the file holds before: a test may compare the file's bytes.
var instrumentKinds = []instrumentKind{
	{"Counter", func(r *Registry, n string) { NewCounter(r, n, "h", Count) }, oneMetric},
	{"Gauge", func(r *Registry, n string) { NewGauge(r, n, "h", Count) }, oneMetric},
	{"IntGauge", func(r *Registry, n string) { NewIntGauge(r, n, "h", Count) }, oneMetric},
	{"Timer", func(r *Registry, n string) { NewTimer(r, n, "h") }, oneMetric},
	{"CounterFunc", func(r *Registry, n string) { NewCounterFunc(r, n, "h", Count, func() uint64 { return 0 }) }, oneMetric},
	{"GaugeFunc", func(r *Registry, n string) { NewGaugeFunc(r, n, "h", Count, func() float64 { return 0 }) }, oneMetric},
	{"IntGaugeFunc", func(r *Registry, n string) { NewIntGaugeFunc(r, n, "h", Count, func() int64 { return 0 }) }, oneMetric},
	{"CounterVec", func(r *Registry, n string) { NewCounterVec(r, n, "h", Count, "k").With("x").Inc() }, oneMetric},
	{"GaugeVec", func(r *Registry, n string) { NewGaugeVec(r, n, "h", Count, "k").With("x").Inc() }, oneMetric},
	{"IntGaugeVec", func(r *Registry, n string) { NewIntGaugeVec(r, n, "h", Count, "k").With("x").Inc() }, oneMetric},
	{"TimerVec", func(r *Registry, n string) { NewTimerVec(r, n, "h", "k").With("x").Observe(1) }, oneMetric},
	{"Histogram", func(r *Registry, n string) { NewHistogram(r, n, "h", Second, nil) }, histogramMetrics},
	{"HistogramVec", func(r *Registry, n string) { NewHistogramVec(r, n, "h", Second, nil, "k").With("x") }, histogramMetrics},
}

// refusal returns the error declare panicked with, nil when it did not.
func refusal(declare func()) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = p.(error)
		}
	}()
	declare()
	return nil
}

// nameOf returns a valid metric name of n bytes.
func nameOf(n int) string { return "a" + strings.Repeat("b", n-1) }

// TestNamesUpToTheLimit declares every kind of instrument under names of
// every length from 1 to 256 bytes: a name is refused, with ErrTooLong,
// only when a metric name it makes passes 255 bytes, never because of a
// help text the registry makes up (an indom's "Instances of " + name took
// vectors' names of 243 bytes and more, histograms' of 228).
func TestNamesUpToTheLimit(t *testing.T) {
	for _, k := range instrumentKinds {
		t.Run(k.kind, func(t *testing.T) {
			// Registries of its own, two kinds at a time on two cores, in
			// one directory: they never start, so never write there.
			t.Parallel()
			dir := t.TempDir()
			for n := 1; n <= MaxStringLen+1; n++ {
				name := nameOf(n)
				valid := true
				for _, m := range k.metrics(name) {
					valid = valid && len(m) <= MaxStringLen
					// At the default budget a histogram vector's buckets
					// fill the first file and its statistics go to an
					// overflow file, where names carry "names."
					// (TestLongNamesKeepTheFirstFile).
					if k.kind == "HistogramVec" && !strings.HasSuffix(m, ".bucket") {
						valid = valid && len("names.")+len(m) <= MaxStringLen
					}
				}
				r := NewRegistry("names", &Options{Dir: dir})
				err := refusal(func() { k.declare(r, name) })
				if valid {
					require.NoError(t, err, "a name of %d bytes", n)
					for _, in := range r.indoms {
						assert.LessOrEqual(t, len(in.ShortHelp), MaxStringLen, "indom help, name of %d bytes", n)
					}
				} else {
					require.ErrorIs(t, err, ErrTooLong, "a name of %d bytes", n)
				}
				r.Close()
			}
		})
	}
}

// TestNamesAtTheLimitInPCP declares every kind of instrument under the
// longest names it takes, and a few bytes shorter, and reads the file
// with PCP's reader: every metric is there under its whole name, and the
// indoms' help texts made from the longest names are cut to fit.
func TestNamesAtTheLimitInPCP(t *testing.T) {
	pcptest.MustHavePCP(t)
	tmp := t.TempDir()
	// One file (no values budget): in an overflow file a metric's name
	// carries the registry's, so the longest names fit only the first file
	// (TestLongNamesKeepTheFirstFile), and here they are too many for its
	// default budget.
	r := NewRegistry("longnames", &Options{Dir: filepath.Join(tmp, "mmv"), MaxFileValues: -1})
	defer r.Close()
	var want []string
	for i, k := range instrumentKinds {
		longest := MaxStringLen
		for _, m := range k.metrics("") {
			longest = min(longest, MaxStringLen-len(m))
		}
		for n := longest - 2; n <= longest; n++ {
			name := string(rune('a'+i)) + strings.Repeat("b", n-1)
			require.NoError(t, refusal(func() { k.declare(r, name) }), "%s of %d bytes", k.kind, n)
			want = append(want, k.metrics(name)...)
		}
	}
	startOrSkip(t, r)
	ms := pcptest.Info(t, tmp)
	for _, name := range want {
		m := pcptest.Find(ms, "mmv.longnames."+name)
		if assert.NotNil(t, m, "PCP shows %s", name) && !m.Singular() {
			assert.NotEmpty(t, m.Instances, "%s has its instances", name)
		}
	}
}

// TestHelpLimit: the help texts the registry makes up are cut to what a
// help text holds (pcpname.Help, the module's one cut).
func TestHelpLimit(t *testing.T) {
	assert.Equal(t, MaxStringLen, pcpname.MaxHelp)
}

// declared describes what r declares, the files it has made included, byte
// for byte: what a refused declaration must leave as it was. Declarations
// waiting for publication are published first, so that a file a refused
// declaration touched would show it.
func declared(t *testing.T, r *Registry) string {
	t.Helper()
	require.NoError(t, r.Flush())
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, m := range r.metrics {
		fmt.Fprintf(&b, "metric %s item %d indom %d part %d slots %v\n", m.Name, m.item, m.Indom, m.part.index, m.slots.appendTo(nil))
		if r.named(m.Name) != m {
			fmt.Fprintf(&b, "metric %s not found by its name\n", m.Name)
		}
	}
	for _, in := range r.indoms {
		fmt.Fprintf(&b, "indom %d %q %v %v\n", in.Serial, in.ShortHelp, in.insts.appendTo(nil), in.removed)
	}
	fmt.Fprintf(&b, "serials %d prefixes %v labels %d\n", len(r.serials), r.prefixes, len(r.labels))
	for _, p := range r.parts {
		var items []int
		for it := range uint32(MaxItem + 1) {
			if p.used.has(it) {
				items = append(items, int(it))
			}
		}
		fmt.Fprintf(&b, "part %s metrics %d indoms %d items %v slots %v shared %d free %v dirty %v\n", p.name, len(p.metrics), len(p.indoms), items, p.slots.appendTo(nil), p.slots.sharedLen(), p.free, p.dirty)
		if p.file != nil {
			data, err := os.ReadFile(p.file.path())
			require.NoError(t, err)
			// The count of refusals, mmv.dropped, is the one value a
			// refusal changes: nothing refused is silent.
			values := p.file.os.ValuesOffset()
			for _, m := range p.metrics {
				if m.Name == ownPrefix+".dropped" {
					for _, s := range m.slots.all() {
						if at := values + p.stride.at(int(s)); s >= 0 && at < int64(len(data)) {
							clear(data[at : at+valueSize])
						}
					}
				}
			}
			fmt.Fprintf(&b, "file %s: %x\n", p.name, sha256.Sum256(data))
		}
	}
	// The timer, but while it carries the cells bound lately (rebound.go).
	carrying := !r.rebound.empty()
	fmt.Fprintf(&b, "hooks %d, %d waiting %d cells %d vectors %d, %d waiting pending %v\n", len(r.onStart), len(r.onClose), len(r.waiting), len(r.cells),
		vecCount(r), len(r.waitingGroups), r.timer != nil && r.timer.armed && !carrying)
	return b.String()
}

// obstacle makes a registry refuse a declaration: set prepares r (before
// Start when started is true) so that declaring the names of an
// instrument fails, at the last of them when it can.
type obstacle struct {
	what string
	want error
	some bool // refuses some kinds only
	set  func(t *testing.T, r *Registry, names []string)
}

var obstacles = []obstacle{
	{"duplicate first name", ErrDuplicate, false, func(t *testing.T, r *Registry, names []string) {
		require.NoError(t, r.AddMetric(Metric{Name: names[0], Type: Uint64, Semantics: SemCounter}))
	}},
	{"duplicate last name", ErrDuplicate, false, func(t *testing.T, r *Registry, names []string) {
		require.NoError(t, r.AddMetric(Metric{Name: names[len(names)-1], Type: Uint64, Semantics: SemCounter}))
	}},
	{"last name a prefix", ErrNamespace, false, func(t *testing.T, r *Registry, names []string) {
		require.NoError(t, r.AddMetric(Metric{Name: names[len(names)-1] + ".below", Type: Uint64, Semantics: SemCounter}))
	}},
	{"one indom serial left", ErrTooMany, true, func(t *testing.T, r *Registry, _ []string) {
		for s := uint32(1); s < MaxSerial; s++ {
			require.NoError(t, r.AddIndom(Indom{Serial: s}))
		}
	}},
	{"no room for the last metric", ErrTooLong, false, func(t *testing.T, r *Registry, names []string) {
		// The registry's name leaves no room for an overflow file's ".2".
		for i := range MaxMetrics - len(names) + 1 {
			require.NoError(t, r.AddMetric(Metric{Name: "filler" + strconv.Itoa(i), Type: Uint64, Semantics: SemCounter}))
		}
	}},
}

// TestRefusedDeclarationDeclaresNothing declares every kind of instrument
// against every obstacle, before and after Start: when the registry
// refuses the declaration, the registry and its files are as before,
// byte for byte, and the names are free for a declaration that fits.
func TestRefusedDeclarationDeclaresNothing(t *testing.T) {
	for _, o := range obstacles {
		for _, k := range instrumentKinds {
			for _, started := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/started=%v", o.what, k.kind, started), func(t *testing.T) {
					// A registry of its own: two at a time on two cores.
					t.Parallel()
					name := "i" // the longest registry name whose overflow file's name is too long
					// One file (no values budget): an overflow file's name
					// would pass the longest.
					r := NewRegistry(nameOf(maxFileName-1), &Options{Dir: t.TempDir(), PublishDelay: time.Hour, MaxFileValues: -1})
					defer r.Close()
					o.set(t, r, k.metrics(name))
					if started {
						startOrSkip(t, r)
					}
					before := declared(t, r)
					err := refusal(func() { k.declare(r, name) })
					if err == nil && started {
						err = r.refused[name] // a cap after Start: no panic, Err says it (must)
					}
					if err == nil {
						require.True(t, o.some && k.kind != "HistogramVec", "not refused")
						return // the obstacle is not one for this kind
					}
					assert.ErrorIs(t, err, o.want)
					assert.Equal(t, before, declared(t, r), "after %v", err)
				})
			}
		}
	}
}

// TestRefusedOnItsOwnDeclaresNothing declares what a registry refuses
// whatever it holds, before and after Start: the registry and its files
// are as before.
func TestRefusedOnItsOwnDeclaresNothing(t *testing.T) {
	long := nameOf(MaxStringLen - len(".p12345"))
	for _, tc := range []struct {
		what    string
		want    error
		declare func(r *Registry)
	}{
		{"quantile's name too long", ErrTooLong, func(r *Registry) {
			NewHistogram(r, long, "", Second, &HistogramOptions{Quantiles: []float64{0.5, 0.123456}})
		}},
		{"quantile's name too long, vector", ErrTooLong, func(r *Registry) {
			NewHistogramVec(r, long, "", Second, &HistogramOptions{Quantiles: []float64{0.5, 0.123456}}, "k")
		}},
		{"quantile out of range", ErrRange, func(r *Registry) { NewHistogram(r, "h", "", Second, &HistogramOptions{Quantiles: []float64{2}}) }},
		{"buckets", ErrRange, func(r *Registry) { NewHistogram(r, "h", "", Second, &HistogramOptions{SubBuckets: 3}) }},
		{"no label", ErrLabel, func(r *Registry) { NewCounterVec(r, "v", "", Count) }},
		{"label twice", ErrDuplicate, func(r *Registry) { NewGaugeVec(r, "v", "", Count, "k", "k") }},
		{"label name", ErrName, func(r *Registry) { NewHistogramVec(r, "v", "", Second, nil, "a b") }},
		{"name", ErrName, func(r *Registry) { NewTimerVec(r, "1v", "", "k") }},
		{"help", ErrTooLong, func(r *Registry) { NewIntGaugeVec(r, "v", strings.Repeat("h", 256), Count, "k") }},
		{"nil function", ErrType, func(r *Registry) { NewGaugeFunc(r, "f", "", Count, nil) }},
		{"own namespace", ErrNamespace, func(r *Registry) { NewCounterVec(r, "mmv.x", "", Count, "k") }},
	} {
		for _, started := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/started=%v", tc.what, started), func(t *testing.T) {
				r := NewRegistry("refused", &Options{Dir: t.TempDir(), PublishDelay: time.Hour})
				defer r.Close()
				NewCounterVec(r, "before", "", Count, "k").With("x").Inc()
				if started {
					startOrSkip(t, r)
				}
				before := declared(t, r)
				require.ErrorIs(t, refusal(func() { tc.declare(r) }), tc.want)
				assert.Equal(t, before, declared(t, r))
			})
		}
	}
}

// TestDeclareReturnsTheRefusal: Declare and DeclareVec return what the New
// functions panic with, and what they declare works as theirs does.
func TestDeclareReturnsTheRefusal(t *testing.T) {
	r := newTestRegistry(t, "declare")
	c, err := Declare[Counter](r, "c", "", Count)
	require.NoError(t, err)
	c.Inc()
	_, err = Declare[Gauge](r, "c", "", Count)
	assert.ErrorIs(t, err, ErrDuplicate)
	_, err = Declare[Timer](r, "t", "", Second)
	assert.ErrorIs(t, err, ErrRange, "a Timer counts nanoseconds")
	tm, err := Declare[Timer](r, "t", "", Nanosecond)
	require.NoError(t, err)
	tm.Observe(5)
	v, err := DeclareVec[IntGauge](r, "v", "", Count, "k")
	require.NoError(t, err)
	v.With("x").Set(7)
	_, err = DeclareVec[Timer](r, "w", "", Count, "k")
	assert.ErrorIs(t, err, ErrRange)
	_, err = DeclareVec[Counter](r, "c", "", Count, "k")
	assert.ErrorIs(t, err, ErrDuplicate)
	startOrSkip(t, r)
	assert.EqualValues(t, 1, mustValue(t, r, "c", "").Int())
	assert.EqualValues(t, 5, mustValue(t, r, "t", "").Int())
	assert.EqualValues(t, 7, vecValue(t, r, "v", "k=x").Int())
	r.Close()
	_, err = DeclareVec[Gauge](r, "late", "", Count, "k")
	assert.ErrorIs(t, err, ErrClosed)
}

// TestDropsDeclaredWholeOrNot: the registry's own mmv.dropped, declared at
// a vector's first refusal, is one transaction too: in a registry with no
// room for it, its indom is not left behind, and the refusals are counted
// in memory all the same.
func TestDropsDeclaredWholeOrNot(t *testing.T) {
	for _, started := range []bool{false, true} {
		t.Run(fmt.Sprintf("started=%v", started), func(t *testing.T) {
			r := NewRegistry(nameOf(maxFileName-1), &Options{Dir: t.TempDir(), PublishDelay: time.Hour})
			defer r.Close()
			for i := range MaxMetrics - 1 {
				require.NoError(t, r.AddMetric(Metric{Name: "filler" + strconv.Itoa(i), Type: Uint64, Semantics: SemCounter}))
			}
			v := NewCounterVec(r, "v", "", Count, "k")
			v.SetLimit(0)
			if started {
				startOrSkip(t, r)
			}
			before := declared(t, r)
			assert.Nil(t, v.With("x"))
			assert.ErrorIs(t, v.Err(), ErrTooMany)
			assert.Equal(t, before, declared(t, r))
			assert.EqualValues(t, 1, r.drops[dropLimit].total())
		})
	}
}

// TestTransact: the declarations of a Transact are all made, or, when f
// fails, none: the registry and its files are as before, before and after
// Start. A declaration refused within f declares nothing, and f may go on.
func TestTransact(t *testing.T) {
	histogram := func(tx *Tx, name string) error {
		if _, err := DeclareVec[Counter](tx, name+".bucket", "", Count, "le"); err != nil {
			return err
		}
		if _, err := Declare[Counter](tx, name+".count", "", Count); err != nil {
			return err
		}
		if err := tx.AddMetric(Metric{Name: name + ".sum", Type: Double, Semantics: SemCounter}); err != nil {
			return err
		}
		_, err := Declare[Gauge](tx, name+".max", "", Count)
		return err
	}
	mine := errors.New("mine")
	for _, started := range []bool{false, true} {
		t.Run(fmt.Sprintf("started=%v", started), func(t *testing.T) {
			r := NewRegistry("tx", &Options{Dir: t.TempDir(), PublishDelay: time.Hour})
			defer r.Close()
			NewCounter(r, "taken.max", "", Count).Inc()
			if started {
				startOrSkip(t, r)
			}
			before := declared(t, r)

			// Refused at its last declaration: none of them stays.
			assert.ErrorIs(t, r.Transact(func(tx *Tx) error { return histogram(tx, "taken") }), ErrDuplicate)
			assert.Equal(t, before, declared(t, r), "refused at the last declaration")
			// f's own error, after declarations that all passed.
			err := r.Transact(func(tx *Tx) error {
				require.NoError(t, histogram(tx, "h"))
				return mine
			})
			assert.ErrorIs(t, err, mine)
			assert.Equal(t, before, declared(t, r), "f failed")
			// A panic undoes them too.
			assert.Panics(t, func() {
				r.Transact(func(tx *Tx) error {
					require.NoError(t, histogram(tx, "h"))
					panic("f")
				})
			})
			assert.Equal(t, before, declared(t, r), "f panicked")

			// A refusal f skips: the others are declared, it is not.
			var c *Counter
			var v *Vec[Gauge]
			var late *Tx
			require.NoError(t, r.Transact(func(tx *Tx) error {
				late = tx
				var err error
				c, err = Declare[Counter](tx, "h.count", "", Count)
				require.NoError(t, err)
				_, err = DeclareVec[Counter](tx, "taken.max", "", Count, "k")
				assert.ErrorIs(t, err, ErrDuplicate)
				v, err = DeclareVec[Gauge](tx, "h.level", "", Count, "k")
				require.NoError(t, err)
				v.SetLimit(3)
				c.Add(2) // before the values have storage: counted in memory
				return nil
			}))
			_, err = Declare[Counter](late, "after", "", Count)
			assert.ErrorIs(t, err, ErrClosed, "a Tx after its Transact")
			c.Inc()
			v.With("x").Set(1.5)
			assert.EqualValues(t, 3, c.Get())
			r.mu.Lock()
			assert.Nil(t, r.named("taken.max").indom, "the refused vector declared nothing")
			assert.Len(t, r.indoms, 1, "the indom of h.level only")
			r.mu.Unlock()
			if !started {
				startOrSkip(t, r)
			}
			require.NoError(t, r.Flush())
			assert.EqualValues(t, 3, mustValue(t, r, "h.count", "").Int())
			assert.Equal(t, 1.5, vecValue(t, r, "h.level", "k=x").Float())
		})
	}
}

// TestTransactUndoneVector: a vector declared in a Transact that fails
// is undone with the rest, and the program may still hold it: it then
// refuses every value, saying why (ErrUnknown) and counting the refusal,
// and its other methods touch nothing of the registry's, before and after
// Start. With on it panicked, and before Start the instance it added to
// the undone indom made Start panic.
func TestTransactUndoneVector(t *testing.T) {
	mine := errors.New("mine")
	for _, started := range []bool{false, true} {
		t.Run(fmt.Sprintf("started=%v", started), func(t *testing.T) {
			r := NewRegistry("tx", &Options{Dir: t.TempDir(), PublishDelay: time.Hour})
			defer r.Close()
			NewCounter(r, "other", "", Count).Inc()
			if started {
				startOrSkip(t, r)
			}
			var v *Vec[Counter]
			require.ErrorIs(t, r.Transact(func(tx *Tx) error {
				var err error
				v, err = DeclareVec[Counter](tx, "hits", "", Count, "k")
				require.NoError(t, err)
				return mine
			}), mine)

			assert.Nil(t, v.With("a"))
			_, err := v.Get("a")
			require.ErrorIs(t, err, ErrUnknown)
			assert.ErrorContains(t, err, `vector "hits"`)
			assert.Equal(t, err, v.Err())
			refused := declared(t, r) // mmv.dropped declared at the first refusal
			assert.NotContains(t, refused, "hits")
			v.SetLimit(5)
			v.SetExpiry(time.Millisecond)
			assert.False(t, v.Delete("a"))
			v.Reset()
			assert.Empty(t, v.Instances())
			assert.Equal(t, refused, declared(t, r), "the undone vector's methods")

			if !started {
				startOrSkip(t, r)
			}
			require.NoError(t, r.Flush())
			assert.EqualValues(t, 2, mustValue(t, r, "mmv.dropped", "refused").Int(), "both refusals counted")
			assert.EqualValues(t, 1, mustValue(t, r, "other", "").Int())

			// The name is free: declared again, the vector is the registry's.
			w, err := DeclareVec[Counter](r, "hits", "", Count, "k")
			require.NoError(t, err)
			w.With("a").Add(3)
			require.NoError(t, r.Flush())
			assert.EqualValues(t, 3, vecValue(t, r, "hits", "k=a").Int())
			assert.Nil(t, v.With("a"), "the undone vector refuses still")
		})
	}
}

// fuzzNames are names that collide in every way a declaration can: alike,
// one a prefix of another at a dot, one an instrument's generated name,
// the registry's own, invalid, at the length limits.
var fuzzNames = []string{"a", "a.b", "a.count", "a.bucket", "a.p999", "a.bucket.x", "b", "b.sum", "mmv.x", "1a",
	nameOf(MaxStringLen - len(".bucket")), nameOf(MaxStringLen - len(".bucket") + 1), nameOf(MaxStringLen)}

// FuzzRefusedDeclarationDeclaresNothing declares what the bytes say: every
// kind of instrument under colliding names, alone or several in a
// Transact, with a Start among them. Every declaration the registry
// refuses leaves it, and its files, as they were; the vectors of a
// transaction it refused refuse their values.
func FuzzRefusedDeclarationDeclaresNothing(f *testing.F) {
	f.Add([]byte{0, 0, 1, 11, 2, 3, 12, 2, 0, 1, 1})
	f.Add([]byte{11, 3, 0, 1, 7, 0, 13, 12, 4, 14, 9, 2, 0, 0})
	f.Add([]byte{14, 0, 2, 3, 3, 12, 1, 5, 0, 8, 10, 11, 14, 12, 12})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := NewRegistry("fuzz", &Options{Dir: t.TempDir(), PublishDelay: time.Hour})
		defer r.Close()
		next := func(n int) int {
			if len(b) == 0 {
				return 0
			}
			c := b[0]
			b = b[1:]
			return int(c) % n
		}
		for len(b) > 0 {
			op := next(len(instrumentKinds) + 2)
			before := declared(t, r)
			var err error
			var vecs []*Vec[Gauge] // a transaction's, undone with it when it fails
			switch {
			case op < len(instrumentKinds):
				k := instrumentKinds[op]
				err = refusal(func() { k.declare(r, fuzzNames[next(len(fuzzNames))]) })
			case op == len(instrumentKinds):
				if r.state == declaring {
					startOrSkip(t, r)
				}
				continue
			default: // several counters, gauges and vectors in one transaction
				n := 1 + next(3)
				err = r.Transact(func(tx *Tx) error {
					for range n {
						name := fuzzNames[next(len(fuzzNames))]
						var err error
						if next(2) == 0 {
							_, err = Declare[Counter](tx, name, "", Count)
						} else {
							var v *Vec[Gauge]
							if v, err = DeclareVec[Gauge](tx, name, "", Count, "k"); err == nil {
								vecs = append(vecs, v)
							}
						}
						if err != nil {
							return err
						}
					}
					return nil
				})
			}
			if err != nil {
				assert.Equal(t, before, declared(t, r), "refused: %v", err)
				var ours *declError
				assert.ErrorAs(t, err, &ours)
				for _, v := range vecs {
					assert.Nil(t, v.With("x"), "a vector of a transaction undone")
				}
			}
		}
	})
}

// TestRefusedInstanceDeclaresNothing: a histogram vector's new values
// refused at their buckets (the registry's cap on instances) leave no
// instance in the statistics' indom either, before and after Start.
func TestRefusedInstanceDeclaresNothing(t *testing.T) {
	for _, started := range []bool{false, true} {
		t.Run(fmt.Sprintf("started=%v", started), func(t *testing.T) {
			r := NewRegistry("instances", &Options{Dir: t.TempDir(), PublishDelay: time.Hour, MaxInstances: 10})
			defer r.Close()
			v := NewHistogramVec(r, "h", "", Second, &HistogramOptions{Buckets: []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}}, "k")
			assert.Nil(t, v.With()) // mmv.dropped declared at this first refusal
			if started {
				startOrSkip(t, r)
			}
			before := declared(t, r)
			_, err := v.Get("x")
			require.ErrorIs(t, err, ErrTooMany)
			assert.Equal(t, before, declared(t, r))
			assert.Empty(t, v.Instances())
		})
	}
}

// TestRefusedRevivalDeclaresNothing: values deleted from a histogram
// vector and used again revive their instances, the statistics' and then
// the buckets' one by one; refused at the last bucket (the registry's cap
// on instances), they revive none.
func TestRefusedRevivalDeclaresNothing(t *testing.T) {
	for _, started := range []bool{false, true} {
		t.Run(fmt.Sprintf("started=%v", started), func(t *testing.T) {
			// y's 13, and 12 more: room for x's statistics and 11 of its
			// 12 buckets (mmv.dropped's 4 are beyond the cap).
			r := NewRegistry("revival", &Options{Dir: t.TempDir(), PublishDelay: time.Hour, MaxInstances: 13 + 12})
			defer r.Close()
			v := NewHistogramVec(r, "h", "", Second, &HistogramOptions{Buckets: []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}}, "k")
			assert.Nil(t, v.With()) // mmv.dropped declared at this first refusal
			require.NotNil(t, v.With("x"))
			require.True(t, v.Delete("x"))
			require.NotNil(t, v.With("y"))
			if started {
				startOrSkip(t, r)
			}
			before := declared(t, r)
			_, err := v.Get("x")
			require.ErrorIs(t, err, ErrTooMany)
			assert.Equal(t, before, declared(t, r))
			assert.Equal(t, []string{"k=y"}, v.Instances())
		})
	}
}

// TestHistogramVecValuesUpToTheLimit: a histogram vector's values take
// the room their buckets' names leave (",le=0.00025" with the default
// buckets), a counter vector's all 255 bytes.
func TestHistogramVecValuesUpToTheLimit(t *testing.T) {
	r := newTestRegistry(t, "values")
	h := NewHistogramVec(r, "h", "", Second, nil, "k")
	c := NewCounterVec(r, "c", "", Count, "k")
	room := MaxStringLen - len("k=") - len(",le=0.00025")
	_, err := h.Get(strings.Repeat("v", room))
	assert.NoError(t, err)
	_, err = h.Get(strings.Repeat("v", room+1))
	assert.ErrorIs(t, err, ErrTooLong)
	_, err = c.Get(strings.Repeat("v", MaxStringLen-len("k=")))
	assert.NoError(t, err)
}

// TestLazyMapsAsEager: a new registry makes its map of indoms by serial
// and its count of names by dot-prefix at the first indom and the first
// dotted name, not before; the same declarations, refusals and undone
// transactions among them, give the same errors and leave the same
// declarations as on a registry whose maps were made at once, before and
// after Start.
func TestLazyMapsAsEager(t *testing.T) {
	lazy, eager := newTestRegistry(t, "lazymaps"), newTestRegistry(t, "lazymaps")
	eager.serials, eager.prefixes = map[uint32]*indom{}, map[string]int{}
	require.Nil(t, lazy.serials)
	require.Nil(t, lazy.prefixes)
	steps := []func(r *Registry) error{
		func(r *Registry) error {
			return r.AddMetric(Metric{Name: "plain", Type: Uint64, Semantics: SemCounter, Indom: 3})
		},
		func(r *Registry) error {
			return r.AddMetric(Metric{Name: "plain", Type: Uint64, Semantics: SemCounter})
		},
		func(r *Registry) error {
			return r.Transact(func(tx *Tx) error {
				require.NoError(t, tx.AddMetric(Metric{Name: "undone.one", Type: Uint64, Semantics: SemCounter}))
				return errors.New("undo it")
			})
		},
		func(r *Registry) error {
			return r.AddMetric(Metric{Name: "undone", Type: Uint64, Semantics: SemCounter})
		},
		func(r *Registry) error {
			return r.AddIndom(Indom{Serial: 3, Instances: []Instance{{ID: 0, Name: "a"}, {ID: 1, Name: "b"}}})
		},
		func(r *Registry) error { return r.AddIndom(Indom{Serial: 3}) },
		func(r *Registry) error {
			return r.AddMetric(Metric{Name: "net.in", Type: Uint64, Semantics: SemCounter, Indom: 3})
		},
		func(r *Registry) error { return r.AddMetric(Metric{Name: "net", Type: Uint64, Semantics: SemCounter}) },
		func(r *Registry) error {
			return r.AddMetric(Metric{Name: "net.in.bytes", Type: Uint64, Semantics: SemCounter})
		},
		func(r *Registry) error { return r.Start() },
		func(r *Registry) error {
			return r.AddMetric(Metric{Name: "net.out", Type: Uint64, Semantics: SemCounter, Indom: 3})
		},
		func(r *Registry) error {
			return r.AddIndom(Indom{Serial: 4, Instances: []Instance{{ID: 7, Name: "c"}}})
		},
		func(r *Registry) error {
			return r.AddMetric(Metric{Name: "net", Type: Uint64, Semantics: SemCounter, Indom: 4})
		},
	}
	for i, step := range steps {
		errLazy, errEager := step(lazy), step(eager)
		if errEager == nil {
			require.NoError(t, errLazy, "step %d", i)
		} else {
			require.EqualError(t, errLazy, errEager.Error(), "step %d", i)
		}
		// The files differ in their headers' generation, when started.
		require.Equal(t, withoutFiles(declared(t, eager)), withoutFiles(declared(t, lazy)), "step %d", i)
		if eager.path != "" {
			want, err := os.ReadFile(eager.path)
			require.NoError(t, err)
			got, err := os.ReadFile(lazy.path)
			require.NoError(t, err)
			require.Equal(t, want[headerSize:], got[headerSize:], "step %d: the files past their headers", i)
		}
	}
	require.NotNil(t, lazy.serials)
	require.NotNil(t, lazy.prefixes)
}

// TestNilTxDeclaresNothing: a nil *Tx, kept from no transaction, is a
// Declarer as a nil *Registry is, but panicked in Declare, DeclareVec and
// Tx.AddMetric; its declarations now return an error wrapping ErrClosed,
// as a Tx used after its Transact's do; the error names what was
// declared, and the file too after Transact returned.
func TestNilTxDeclaresNothing(t *testing.T) {
	var tx *Tx
	_, err := Declare[Counter](tx, "c", "", Count)
	assert.ErrorIs(t, err, ErrClosed, "Declare")
	assert.ErrorContains(t, err, `metric "c"`)
	_, err = DeclareVec[Counter](tx, "cv", "", Count, "k")
	assert.ErrorIs(t, err, ErrClosed, "DeclareVec")
	assert.ErrorContains(t, err, `vector "cv"`)
	err = tx.AddMetric(Metric{Name: "m", Type: Int32, Semantics: SemInstant})
	assert.ErrorIs(t, err, ErrClosed, "Tx.AddMetric")
	assert.ErrorContains(t, err, "nil *Tx")
	assert.ErrorContains(t, err, `metric "m"`)

	r := NewRegistry("txover", &Options{Dir: t.TempDir()})
	t.Cleanup(func() { r.Close() })
	require.NoError(t, r.Transact(func(t *Tx) error { tx = t; return nil }))
	_, err = Declare[Counter](tx, "late", "", Count)
	assert.ErrorIs(t, err, ErrClosed)
	assert.ErrorContains(t, err, `file "txover" metric "late"`)
}

// TestNewAtCapAfterStartCounts: a service declaring instruments as it
// meets what they measure (a histogram per backend, a counter per tenant,
// after Start) reaches the registry's cap on values (Options.MaxValues,
// about 2,300 default histograms at its default) days into its run: the
// New functions panicked with ErrTooMany there, killing it. A cap met
// after Start is the running program's condition, as a name another
// program's file holds: the New function returns its instrument counting
// in its own memory (a nil histogram or vector, which ignore updates),
// and Err says why, until the name is declared. Before Start, where every
// run of the program meets it, the cap still panics.
func TestNewAtCapAfterStartCounts(t *testing.T) {
	declareUntilPanic := func(r *Registry) (p any) {
		defer func() { p = recover() }()
		for i := range 100 {
			NewHistogram(r, fmt.Sprintf("backend%03d.latency", i), "", Second, nil)
		}
		return nil
	}
	before := NewRegistry("eager", &Options{Dir: t.TempDir(), MaxValues: 200})
	t.Cleanup(func() { before.Close() })
	p := declareUntilPanic(before)
	require.Implements(t, (*error)(nil), p, "a cap met before Start panics")
	require.ErrorIs(t, p.(error), ErrTooMany)

	r := NewRegistry("lazy", &Options{Dir: t.TempDir(), Flags: Process, MaxValues: 200})
	t.Cleanup(func() { r.Close() })
	startOrSkip(t, r)
	refused := 0
	require.NotPanics(t, func() {
		for i := range 100 {
			h := NewHistogram(r, fmt.Sprintf("backend%03d.latency", i), "", Second, nil)
			h.Observe(0.01) // a nil histogram ignores it
			if h == nil {
				refused++
			}
		}
	})
	require.Positive(t, refused, "histograms refused at the cap")
	require.ErrorIs(t, r.Err(), ErrTooMany, "Err says why instruments are not in PCP")
	assert.Contains(t, r.Err().Error(), `metric "backend099.latency.bucket": too many`)

	// Counters, one value each, until one is refused.
	var c *Counter
	name := ""
	require.NotPanics(t, func() {
		for i := 0; i < 300 && !strings.Contains(fmt.Sprint(r.Err()), fmt.Sprintf("%q", name)); i++ {
			name = fmt.Sprintf("tenant%d", i)
			c = NewCounter(r, name, "", Count)
			c.Add(3)
		}
	})
	assert.EqualValues(t, 3, c.Get(), "a counter refused at the cap counts in its own memory")
	_, err := r.Value(name, "")
	assert.ErrorIs(t, err, ErrUnknown, "%s is not in the registry", name)
}

// TestRefusalsAfterStartBounded: a program declaring by names it learns
// (a counter per tenant) past Options.MaxValues after Start is refused
// once per name; the registry kept each refusal for its life and Err
// joined them all, 2,000 counters making a 1,992-line, 224 KB error. Err
// names the first maxRefused by name, then counts the others, with the
// last, which it wraps; a name declared since leaves room for another.
func TestRefusalsAfterStartBounded(t *testing.T) {
	r := NewRegistry("capped", &Options{Dir: t.TempDir(), MaxValues: 8})
	t.Cleanup(func() { r.Close() })
	startOrSkip(t, r)
	refused := 0
	for i := range 2000 {
		name := fmt.Sprint("tenant_", i)
		NewCounter(r, name, "", Count)
		if _, err := r.Value(name, ""); errors.Is(err, ErrUnknown) {
			refused++
		}
	}
	require.Greater(t, refused, maxRefused)
	err := r.Err()
	require.ErrorIs(t, err, ErrTooMany)
	lines := strings.Split(err.Error(), "\n")
	assert.Len(t, lines, maxRefused+1, "one line per name kept, and the count")
	assert.Contains(t, lines[len(lines)-1], fmt.Sprintf(`file "capped": and %d more refusals`, refused-maxRefused))
	assert.Contains(t, lines[len(lines)-1], `metric "tenant_1999"`, "the last refusal")
	r.mu.Lock()
	assert.Len(t, r.refused, maxRefused, "the refusals kept are bounded")
	r.mu.Unlock()
}

// TestNewTooLargeForAFilePanicsAfterStart: a histogram whose buckets
// alone pass Options.MaxFileValues can be declared in no run, whatever
// else the program declared: a programming error, which NewHistogram
// panics for before Start. After Start it returned nil, and Err named
// "indom 1422", a serial the registry derived, not the histogram "lat":
// nothing said which instrument PCP lacked. It panics after Start too,
// naming the histogram; a cap the running program fills is still no
// panic (TestNewAtCapAfterStartCounts).
func TestNewTooLargeForAFilePanicsAfterStart(t *testing.T) {
	buckets := make([]float64, 20)
	for i := range buckets {
		buckets[i] = float64(i + 1)
	}
	declare := func(r *Registry) (p any) {
		defer func() { p = recover() }()
		NewHistogram(r, "lat", "", Second, &HistogramOptions{Buckets: buckets})
		return nil
	}
	for _, started := range []bool{false, true} {
		r := NewRegistry("hist", &Options{Dir: t.TempDir(), MaxFileValues: 16})
		t.Cleanup(func() { r.Close() })
		if started {
			startOrSkip(t, r)
		}
		p := declare(r)
		require.Implements(t, (*error)(nil), p, "started %v: a histogram that fits no file panics", started)
		err := p.(error)
		assert.ErrorIs(t, err, ErrTooMany)
		assert.ErrorContains(t, err, `metric "lat" indom `, "the error names the histogram")
		if started {
			assert.NoError(t, r.Err(), "nothing recorded: the program's own error")
		}
	}
	// The program's indom is named by its serial, the program's own.
	r := NewRegistry("big", &Options{Dir: t.TempDir(), MaxFileValues: 4})
	t.Cleanup(func() { r.Close() })
	insts := make([]Instance, 5)
	for i := range insts {
		insts[i] = Instance{ID: int32(i), Name: fmt.Sprint("i", i)}
	}
	err := r.AddIndom(Indom{Serial: 8, Instances: insts})
	require.ErrorIs(t, err, ErrTooMany)
	assert.ErrorContains(t, err, "mmv: indom 8: too many")
}

// TestNewAfterCloseCounts: a server shutting down closes its registry
// (main's deferred Close) while handlers serve their last requests; a
// handler's instrument made at its first use (in a sync.Once, a route's
// histogram) panicked with ErrClosed and took the process down in the
// middle of a graceful shutdown. A closed registry is the running
// program's condition: the New functions return an instrument counting
// in its own memory, as every instrument does after Close (a nil vector
// or histogram, which ignore updates), and Err says the registry is
// closed. So for a registry closed before it started.
func TestNewAfterCloseCounts(t *testing.T) {
	for _, started := range []bool{true, false} {
		r := newTestRegistry(t, "shutdown")
		NewCounter(r, "served", "", Count).Inc()
		if started {
			startOrSkip(t, r)
		}
		require.NoError(t, r.Close())
		var c *Counter
		require.NotPanics(t, func() {
			c = NewCounter(r, "late.route", "", Count)
			c.Inc()
			NewGauge(r, "late.gauge", "", Count).Set(1)
			NewIntGauge(r, "late.intgauge", "", Count).Set(1)
			NewTimer(r, "late.timer", "").Observe(time.Millisecond)
			assert.Nil(t, NewHistogram(r, "late.hist", "", Second, nil))
			assert.Nil(t, NewCounterVec(r, "late.vec", "", Count, "route").With("/"))
			assert.Nil(t, NewHistogramVec(r, "late.hvec", "", Second, nil, "route"))
			NewCounterFunc(r, "late.func", "", Count, func() uint64 { return 1 })
		}, "started: %v", started)
		assert.EqualValues(t, 1, c.Get(), "counts in its own memory")
		require.ErrorIs(t, r.Err(), ErrClosed)
	}
}

// TestErrForgetsHistogramDeclaredAfterCapRefusal: a histogram refused at
// the cap after Start and declared once room was freed is in PCP, and Err
// no longer names it: the refusal was kept under the histogram's name,
// and a declaration forgot only its metrics' names (h.count, h.bucket...),
// so Err named for good an instrument that was in PCP.
func TestErrForgetsHistogramDeclaredAfterCapRefusal(t *testing.T) {
	r := NewRegistry("capfreed", &Options{Dir: t.TempDir(), MaxValues: 60})
	t.Cleanup(func() { r.Close() })
	v := NewCounterVec(r, "tenants", "", Count, "tenant")
	for i := range 40 {
		v.With(fmt.Sprint(i)).Inc()
	}
	startOrSkip(t, r)
	var h *Histogram
	require.NotPanics(t, func() { h = NewHistogram(r, "latency", "", Second, nil) })
	require.Nil(t, h, "refused at the cap")
	require.ErrorContains(t, r.Err(), "latency")

	v.Reset()
	require.NoError(t, r.Flush())
	h = NewHistogram(r, "latency", "", Second, nil)
	require.NotNil(t, h, "declared once the vector's values are gone")
	assert.NoError(t, r.Err(), "the histogram is declared: nothing to say")
}

// TestErrKeepsRefusalOfUndoneDeclaration: a New function's refusal
// (a cap met after Start) stays in Err until the name is declared for
// good: a Transact that declared the name and failed left the counter
// the New function returned counting where PCP never sees it, and Err
// said nothing of it any more.
func TestErrKeepsRefusalOfUndoneDeclaration(t *testing.T) {
	r := NewRegistry("undoneerr", &Options{Dir: t.TempDir(), PublishDelay: time.Hour, MaxValues: 2})
	defer r.Close()
	v := NewCounterVec(r, "v", "", Count, "k")
	v.With("a").Inc()
	startOrSkip(t, r)
	v.With("b").Inc() // the registry's second value, its last
	c := NewCounter(r, "tenant", "", Count)
	c.Inc()
	require.ErrorIs(t, r.Err(), ErrTooMany)
	require.ErrorContains(t, r.Err(), `"tenant"`)

	require.True(t, v.Delete("b")) // room for one value
	mine := errors.New("mine")
	require.ErrorIs(t, r.Transact(func(tx *Tx) error {
		_, err := Declare[Counter](tx, "tenant", "", Count)
		require.NoError(t, err)
		return mine
	}), mine)
	_, err := r.Value("tenant", "")
	require.ErrorIs(t, err, ErrUnknown, "undone")
	assert.ErrorContains(t, r.Err(), `"tenant"`, "the counter NewCounter returned is still not in PCP")

	// Declared for good, the refusal is forgotten.
	_, err = Declare[Counter](r, "tenant", "", Count)
	require.NoError(t, err)
	assert.NoError(t, r.Err())
}
