package mmv_test

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/mmvfile"
)

// TestSetString: a string value holds at most 255 bytes, NUL-terminated
// in its slot, with its length in the value itself as libpcp keeps it;
// longer strings and other types are refused.
func TestSetString(t *testing.T) {
	needFileLayer(t)
	r := newRegistry(t, "strings", filepath.Join(t.TempDir(), "mmv"), mmv.Options{})
	require.NoError(t, errors.Join(
		r.AddMetric(mmv.Metric{Name: "s", Type: mmv.String, Semantics: mmv.SemDiscrete}),
		r.AddMetric(mmv.Metric{Name: "n", Type: mmv.Uint64, Semantics: mmv.SemCounter}),
		r.Start(),
	))
	s, _ := r.Value("s", "")
	n, _ := r.Value("n", "")
	for _, text := range []string{"a longer string first", "", "short", strings.Repeat("x", 255)} {
		require.NoError(t, s.SetString(text))
		f, err := mmvfile.Open(r.Path())
		require.NoError(t, err)
		v := f.Values[0]
		assert.False(t, v.String != text || s.String() != text, "file holds %q, handle reads %q, want %q", v.String, s.String(), text)
		assert.Equal(t, uint32(len(text)), binary.NativeEndian.Uint32(v.Atom[:]), "value holds length")
	}
	assert.ErrorIs(t, s.SetString(strings.Repeat("x", 256)), mmv.ErrTooLong, "256 bytes")
	assert.Equal(t, strings.Repeat("x", 255), s.String(), "a refused string changed the value")
	assert.ErrorIs(t, n.SetString("x"), mmv.ErrType, "SetString on a number")
}

// TestSetFloatOnUint64: SetFloat and AddFloat convert f to a Uint64
// value's own range, up to 2^64, where a conversion through int64 made
// every value from 2^63 up 2^63.
func TestSetFloatOnUint64(t *testing.T) {
	needFileLayer(t)
	r := newRegistry(t, "floats", filepath.Join(t.TempDir(), "mmv"), mmv.Options{})
	require.NoError(t, errors.Join(
		r.AddMetric(mmv.Metric{Name: "n", Type: mmv.Uint64, Semantics: mmv.SemCounter}),
		r.Start(),
	))
	n, _ := r.Value("n", "")
	read := func() uint64 {
		f, err := mmvfile.Open(r.Path())
		require.NoError(t, err)
		return f.Values[0].Uint
	}
	for _, x := range []float64{1e19, 1 << 63, 1<<63 - 1024, 2.9} {
		n.SetFloat(x)
		assert.Equal(t, uint64(x), read(), "SetFloat(%g)", x)
	}
	n.Set(5)
	n.AddFloat(1.5e19)
	assert.Equal(t, uint64(5+1.5e19), read(), "AddFloat(1.5e19) on 5")
}

// TestElapsedReadsOpenInterval: an Elapsed value reads as PCP reads it,
// its interval open since StartInterval counted up to now, so Snapshot,
// Gather and the exposition agree with PCP while it runs.
func TestElapsedReadsOpenInterval(t *testing.T) {
	needFileLayer(t)
	r := newRegistry(t, "elapsed", filepath.Join(t.TempDir(), "mmv"), mmv.Options{})
	require.NoError(t, errors.Join(
		r.AddMetric(mmv.Metric{Name: "busy", Type: mmv.Elapsed, Semantics: mmv.SemCounter, Units: mmv.Microsecond}),
		r.Start(),
	))
	v, _ := r.Value("busy", "")
	v.AddDuration(time.Second)
	assert.Equal(t, int64(1e6), v.Int())
	v.StartInterval()
	time.Sleep(50 * time.Millisecond)
	open := v.Int()
	assert.GreaterOrEqual(t, open, int64(1.05e6), "the open interval counts")
	time.Sleep(10 * time.Millisecond)
	assert.Greater(t, v.Int(), open, "and grows while open")
	v.EndInterval()
	closed := v.Int()
	time.Sleep(10 * time.Millisecond)
	assert.Equal(t, closed, v.Int(), "closed, it stays")
}

// TestSetStringErrorNamesTheValue: SetString's refusals name the metric
// and instance of the value, read from its file (a Value holds no name):
// they named nothing, and a program with many handles could not tell
// which one it misused.
func TestSetStringErrorNamesTheValue(t *testing.T) {
	for _, version := range []struct {
		name string
		long bool
	}{{"v1", false}, {"v2", true}} {
		t.Run(version.name, func(t *testing.T) {
			_, dir := pcpDir(t)
			r := newRegistry(t, "ss", dir, mmv.Options{})
			inst := "eth0"
			if version.long { // past v1's 63 bytes: a v2 file
				inst = strings.Repeat("e", 70)
			}
			require.NoError(t, r.AddIndom(mmv.Indom{Serial: 1, Instances: []mmv.Instance{{ID: 0, Name: inst}}}))
			require.NoError(t, r.AddMetric(mmv.Metric{Name: "motd", Type: mmv.String, Semantics: mmv.SemDiscrete}))
			require.NoError(t, r.AddMetric(mmv.Metric{Name: "rx_bytes", Type: mmv.Uint64, Semantics: mmv.SemCounter, Indom: 1}))
			startOrSkip(t, r)
			f, err := mmvfile.Open(r.Path())
			require.NoError(t, err)
			require.Equal(t, map[bool]int{false: 1, true: 2}[version.long], f.Header.Version)

			err = value(t, r, "motd", "").SetString(strings.Repeat("x", 300))
			require.ErrorIs(t, err, mmv.ErrTooLong)
			assert.Contains(t, err.Error(), `metric "motd"`)

			err = value(t, r, "rx_bytes", inst).SetString("up")
			require.ErrorIs(t, err, mmv.ErrType)
			assert.Contains(t, err.Error(), `metric "rx_bytes" instance "`+inst+`"`)

			require.ErrorIs(t, (*mmv.Value)(nil).SetString("x"), mmv.ErrType)
		})
	}
}

// TestSetStringErrorNamesOverflowValueAsDeclared: SetString's refusal of
// a value in an overflow file names its metric as declared, where it
// named it as the file spells it, the registry's name first.
func TestSetStringErrorNamesOverflowValueAsDeclared(t *testing.T) {
	_, dir := pcpDir(t)
	r := declareSpilling(dir, "ovname", 1)
	t.Cleanup(func() { r.Close() })
	startOrSkip(t, r)
	v, err := r.Value("count", "") // in ovname.2
	require.NoError(t, err)
	err = v.SetString("x")
	require.ErrorIs(t, err, mmv.ErrType)
	assert.Contains(t, err.Error(), `metric "count"`)
}

// stringAfterStart is a way of declaring a String value after Start: the
// metric "version" (declare, after Start) or an instance of it ("b", when
// instance is not empty: the metric is then over indom 1, declared before
// Start with instance "a").
type stringAfterStart struct {
	name     string
	instance string
	declare  func(r *mmv.Registry) error
}

var versionMetric = mmv.Metric{Name: "version", Type: mmv.String, Semantics: mmv.SemDiscrete, ShortHelp: "Version"}

// stringsAfterStart are every way of declaring a String value after
// Start: in a registry made by freedSlotRegistry, each can take the slot
// the vector's deleted instance left free, which the file holds already,
// or the room past the file's values, which it holds too.
var stringsAfterStart = []stringAfterStart{
	{name: "AddMetric", declare: func(r *mmv.Registry) error { return r.AddMetric(versionMetric) }},
	{name: "Tx.AddMetric", declare: func(r *mmv.Registry) error {
		return r.Transact(func(tx *mmv.Tx) error { return tx.AddMetric(versionMetric) })
	}},
	{name: "AddInstance", instance: "b", declare: func(r *mmv.Registry) error {
		return r.AddInstance(1, mmv.Instance{ID: 1, Name: "b"})
	}},
}

// freedSlotRegistry starts a registry in dir whose first file has a slot
// a vector's deleted instance left free, published dead, and declares
// the String value of way w.
func freedSlotRegistry(t *testing.T, name, dir string, flags mmv.Flags, w stringAfterStart) *mmv.Registry {
	t.Helper()
	r := newRegistry(t, name, dir, mmv.Options{Flags: flags, PublishDelay: time.Hour})
	v := mmv.NewCounterVec(r, "cv", "Counters", mmv.Count, "k")
	if w.instance != "" {
		require.NoError(t, r.AddIndom(mmv.Indom{Serial: 1, Instances: []mmv.Instance{{ID: 0, Name: "a"}}}))
		m := versionMetric
		m.Indom = 1
		require.NoError(t, r.AddMetric(m))
	}
	startOrSkip(t, r)
	v.With("a").Inc()
	v.With("b").Add(7)
	require.NoError(t, r.Flush())
	require.True(t, v.Delete("a"))
	require.NoError(t, r.Flush()) // the slot of k=a is written dead, and free
	require.NoError(t, w.declare(r))
	return r
}

// fileString returns the text and string offset of the value of metric
// (of instance, when not empty) in the file at path.
func fileString(t *testing.T, path, metric, instance string) (text string, extra int64) {
	t.Helper()
	f, err := mmvfile.Open(path)
	require.NoError(t, err, "the file PCP reads")
	for _, v := range f.Values {
		if v.Metric.Name == metric && (v.Instance == nil || v.Instance.Name == instance) {
			return v.String, v.Extra
		}
	}
	require.Fail(t, "no value of "+metric+" in the file")
	return "", 0
}

// TestStringDeclaredAfterStartReadsEmpty: a String value declared after
// Start took a slot that the file held already (the one a vector's
// deleted instance freed, or the room past the values), its string
// offset zero, and no publication pointed it at a string record before
// its handle was given: every reader showed the 256 bytes at offset 0,
// the file's header, "MMV", for a string nobody set, and every later
// publication copied that text on. A String value now has storage only
// with its string record; a String never set is "", no value in a
// Sentinel file (docs/registry.md).
func TestStringDeclaredAfterStartReadsEmpty(t *testing.T) {
	for _, w := range stringsAfterStart {
		t.Run(w.name, func(t *testing.T) {
			tmp := t.TempDir()
			r := freedSlotRegistry(t, "strafter", filepath.Join(tmp, "mmv"), mmv.Sentinel, w)
			s, err := r.Value("version", w.instance)
			require.NoError(t, err)
			assert.Equal(t, "", s.String(), "the handle of a String never set")
			require.NoError(t, r.Flush())

			snap, err := r.Snapshot()
			require.NoError(t, err)
			for _, m := range snap {
				for _, v := range m.Values {
					if m.Name == "version" && v.Instance == w.instance {
						assert.Nil(t, v.Value, "Snapshot of a String never set, in a Sentinel file")
					}
				}
			}
			text, extra := fileString(t, r.Path(), "version", w.instance)
			assert.Equal(t, "", text, "the file's text of a String never set (string offset %d)", extra)
			assert.NotZero(t, extra, "a String value's record points at a string record, not at the header")

			if pcptest.WantPCP(t) {
				m := get(t, pcptest.Info(t, tmp), "mmv.strafter.version")
				shown := m.Value
				if w.instance != "" {
					require.NotNil(t, m.Instance(w.instance), "PCP shows instance %s", w.instance)
					shown = m.Instance(w.instance).Value
				}
				assert.Empty(t, shown, "PCP shows no value for a String never set in a Sentinel file, not the file's magic")
			}
		})
	}
}

// TestSetStringDeclaredAfterStartKeepsHeader: the String value of
// TestStringDeclaredAfterStartReadsEmpty, set before the next
// publication, wrote its text over the first 256 bytes of the file, its
// header and TOC: PCP's reader dropped every metric of the registry, with
// no error anywhere, until a publication rewrote the file.
func TestSetStringDeclaredAfterStartKeepsHeader(t *testing.T) {
	for _, w := range stringsAfterStart {
		t.Run(w.name, func(t *testing.T) {
			tmp := t.TempDir()
			r := freedSlotRegistry(t, "strhdr", filepath.Join(tmp, "mmv"), 0, w)
			s, err := r.Value("version", w.instance)
			require.NoError(t, err)
			require.NoError(t, s.SetString("v1.2.3"))
			assert.NoError(t, r.Err())

			b, err := os.ReadFile(r.Path())
			require.NoError(t, err)
			assert.Equal(t, mmv.Magic, string(b[:4]), "the file's magic, after SetString")
			text, _ := fileString(t, r.Path(), "version", w.instance)
			assert.Equal(t, "v1.2.3", text, "the file's text")
			require.NoError(t, r.Flush())
			text, _ = fileString(t, r.Path(), "version", w.instance)
			assert.Equal(t, "v1.2.3", text, "the file's text, after a publication")
			assert.Equal(t, "v1.2.3", s.String(), "the handle's text")

			if pcptest.WantPCP(t) {
				ms := pcptest.Info(t, tmp)
				m := get(t, ms, "mmv.strhdr.cv")
				if assert.NotNil(t, m.Instance("k=b"), "PCP shows the vector's k=b after SetString on another metric") {
					assert.Equal(t, "7", m.Instance("k=b").Value)
				}
			}
		})
	}
}

// TestClosedHandlesKeepTheirOwnValues: every handle detached from its
// file, at Close (or when a vector deleted its instance), pointed at one
// record of the package's: a read through any of them returned what any
// other wrote last, of any registry and type, and a Double handle of a
// closed registry read another closed registry's counter's Set(42) as
// 2.08e-322. Each now keeps its own last value.
func TestClosedHandlesKeepTheirOwnValues(t *testing.T) {
	needFileLayer(t)
	dir := filepath.Join(t.TempDir(), "mmv")
	a := newRegistry(t, "closeda", dir, mmv.Options{})
	require.NoError(t, a.AddMetric(mmv.Metric{Name: "n", Type: mmv.Uint64, Semantics: mmv.SemCounter}))
	require.NoError(t, a.AddMetric(mmv.Metric{Name: "m", Type: mmv.Int32, Semantics: mmv.SemInstant}))
	b := newRegistry(t, "closedb", dir, mmv.Options{})
	require.NoError(t, b.AddMetric(mmv.Metric{Name: "ratio", Type: mmv.Double, Semantics: mmv.SemInstant}))
	startOrSkip(t, a)
	startOrSkip(t, b)
	n, m, ratio := value(t, a, "n", ""), value(t, a, "m", ""), value(t, b, "ratio", "")
	n.Set(5)
	m.Set(-3)
	ratio.SetFloat(0.25)
	require.NoError(t, b.Close())
	require.NoError(t, a.Close())
	assert.Equal(t, 0.25, ratio.Float(), "a closed handle reads its last value")
	assert.EqualValues(t, 5, n.Int())
	assert.EqualValues(t, -3, m.Int())
	n.Set(42) // dropped from every file
	m.Add(1)
	assert.Equal(t, 0.25, ratio.Float(), "b's closed Double handle, after a's closed handles were updated")
	assert.EqualValues(t, 42, n.Int(), "what is made through a closed handle, read through it alone")
	assert.EqualValues(t, -2, m.Int())
}

// TestClosedStringHandleKeepsItsText: a String value's text is in its
// file's strings section, not its record, and a handle detached at Close
// read "" where Value's doc says it keeps its last value, as a number's
// does. It keeps its text, and what SetString makes through it alone.
func TestClosedStringHandleKeepsItsText(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mmv")
	r := newRegistry(t, "strs", dir, mmv.Options{})
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "s", Type: mmv.String, Semantics: mmv.SemDiscrete}))
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "t", Type: mmv.String, Semantics: mmv.SemDiscrete}))
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "n", Type: mmv.Uint64, Semantics: mmv.SemCounter}))
	startOrSkip(t, r)
	s, tt, n := value(t, r, "s", ""), value(t, r, "t", ""), value(t, r, "n", "")
	require.NoError(t, s.SetString("hello"))
	require.NoError(t, tt.SetString("world"))
	n.Add(7)
	require.NoError(t, r.Close())
	assert.Equal(t, "7", n.String(), "a number's handle keeps its last value after Close")
	assert.Equal(t, "hello", s.String(), "and a String value's its text")
	assert.Equal(t, "world", tt.String())
	require.NoError(t, s.SetString("after"), "dropped from the file")
	assert.Equal(t, "after", s.String(), "what is made through a closed handle, read through it alone")
	assert.Equal(t, "world", tt.String())
	assert.Error(t, s.SetString(strings.Repeat("x", mmv.MaxStringLen+1)), "the same refusals")
	assert.Equal(t, "after", s.String())
}

// TestValueRefusesVectorValues: Registry.Value handed out the handle of a
// vector's instance, the one its instrument is bound to; the vector's
// Delete (or Reset, or expiry) detached it, and With made the instance
// again with another, so the program's handle dropped its updates for
// good, with no error. Value refuses a vector's values (ErrInUse, naming
// the vector), as AddMetric refuses its indom, before Start and after;
// the values of singular instruments, of a histogram's buckets and of the
// program's indoms, whose instances stay, it still hands out.
func TestValueRefusesVectorValues(t *testing.T) {
	r := newRegistry(t, "vecvalue", filepath.Join(t.TempDir(), "mmv"), mmv.Options{})
	v := mmv.NewCounterVec(r, "requests", "Requests", mmv.Count, "route")
	hv := mmv.NewHistogramVec(r, "size", "", mmv.Byte, &mmv.HistogramOptions{Buckets: []float64{10}}, "route")
	h := mmv.NewHistogram(r, "latency", "", mmv.Second, &mmv.HistogramOptions{Buckets: []float64{1}})
	c := mmv.NewCounter(r, "served", "", mmv.Count)
	require.NoError(t, r.AddIndom(mmv.Indom{Serial: 1, Instances: []mmv.Instance{{ID: 0, Name: "eth0"}}}))
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "rx", Type: mmv.Uint64, Semantics: mmv.SemCounter, Indom: 1}))
	v.With("/a").Inc()
	hv.With("/a").Observe(3)
	h.Observe(0.5)
	c.Inc()
	refused := func(when string) {
		for _, x := range []struct{ metric, instance, vector string }{
			{"requests", "route=/a", `vector "requests"`},
			{"size.count", "route=/a", `vector "size"`},
			{"size.bucket", "route=/a,le=10", `vector "size"`},
			{"requests", "route=/none", `vector "requests"`},
		} {
			_, err := r.Value(x.metric, x.instance)
			require.ErrorIs(t, err, mmv.ErrInUse, "%s: %s[%s]", when, x.metric, x.instance)
			assert.ErrorContains(t, err, x.vector, "%s: %s[%s]", when, x.metric, x.instance)
		}
	}
	refused("before Start")
	startOrSkip(t, r)
	refused("after Start")
	require.True(t, v.Delete("/a"))
	refused("after Delete")
	for _, x := range [][2]string{{"served", ""}, {"latency.count", ""}, {"latency.bucket", "1"}, {"rx", "eth0"}} {
		_, err := r.Value(x[0], x[1])
		assert.NoError(t, err, "%s[%s]", x[0], x[1])
	}
}

// TestSetStringRefusesNUL: SetString took a string with a NUL and
// returned nil, and every reader (PCP's, Snapshot, Gather, mmvfile)
// showed the text up to the NUL: "up\x00down" published as "up", the
// value word keeping the length 9. It is refused with ErrName, naming the
// metric, as help texts and instance names with a NUL are, and the value
// keeps its text.
func TestSetStringRefusesNUL(t *testing.T) {
	r := newRegistry(t, "strnul", filepath.Join(t.TempDir(), "mmv"), mmv.Options{})
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "state", Type: mmv.String, Semantics: mmv.SemInstant}))
	startOrSkip(t, r)
	s := value(t, r, "state", "")
	require.NoError(t, s.SetString("up"))
	err := s.SetString("up\x00down")
	require.ErrorIs(t, err, mmv.ErrName)
	assert.ErrorContains(t, err, `metric "state"`)
	assert.Equal(t, "up", s.String(), "the handle's text after the refusal")
	text, _ := fileString(t, r.Path(), "state", "")
	assert.Equal(t, "up", text, "the file's text after the refusal")
}

// TestZeroValuePanics: a zero Value, made by no Registry.Value
// (new(mmv.Value), a struct field), has no storage: its updates and reads
// panic, as its doc and doc.go's panics paragraph say, where a nil *Value
// ignores them. A check on every update, the hot path, is not worth a
// Value nothing hands out.
func TestZeroValuePanics(t *testing.T) {
	calls := map[string]func(v *mmv.Value){
		"Add":         func(v *mmv.Value) { v.Add(1) },
		"Inc":         func(v *mmv.Value) { v.Inc() },
		"Set":         func(v *mmv.Value) { v.Set(1) },
		"SetFloat":    func(v *mmv.Value) { v.SetFloat(1) },
		"AddFloat":    func(v *mmv.Value) { v.AddFloat(1) },
		"AddDuration": func(v *mmv.Value) { v.AddDuration(time.Second) },
		"SetNoValue":  func(v *mmv.Value) { v.SetNoValue() },
		"SetString":   func(v *mmv.Value) { _ = v.SetString("x") },
		"Int":         func(v *mmv.Value) { _ = v.Int() },
		"Float":       func(v *mmv.Value) { _ = v.Float() },
		"String":      func(v *mmv.Value) { _ = v.String() },
	}
	for name, call := range calls {
		assert.Panics(t, func() { call(new(mmv.Value)) }, "Value{}.%s", name)
		assert.NotPanics(t, func() { call(nil) }, "(*Value)(nil).%s", name)
	}
}
