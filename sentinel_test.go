package mmv_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/mmvfile"
)

// sentinelTypes are the value types, named as the test's metrics are.
var sentinelTypes = []struct {
	name string
	typ  mmv.Type
}{
	{"i32", mmv.Int32}, {"u32", mmv.Uint32}, {"i64", mmv.Int64}, {"u64", mmv.Uint64},
	{"float", mmv.Float}, {"double", mmv.Double}, {"string", mmv.String}, {"elapsed", mmv.Elapsed},
}

const noValue = "No value(s) available!"

// TestSentinelNoValue marks a value of every type missing with SetNoValue
// and asserts exactly what PCP's reader shows, with the Sentinel flag and
// without it, so that the test fails when PCP's behaviour changes: 6.0.3's
// and 7.2's differ only in the NaN of a missing float (pcptest.Root picks
// the PCP).
//
// For each type: <t>.missing after SetNoValue; <t>.set after Set(7) (or
// SetString("x")); <t>.back after SetNoValue then Set(-1) (a 32-bit value
// must read -1 again, not stay missing through the all-ones second half of
// its slot); <t>.fresh never updated. Plus a per-instance U64 with one
// instance missing.
func TestSentinelNoValue(t *testing.T) {
	pcptest.MustHavePCP(t)
	tmp := t.TempDir()
	write := func(name string, flags mmv.Flags) {
		r := mmv.NewRegistry(name, &mmv.Options{Dir: filepath.Join(tmp, "mmv"), Flags: flags})
		require.NoError(t, r.AddIndom(mmv.Indom{Serial: 1, Instances: []mmv.Instance{{ID: 0, Name: "a"}, {ID: 1, Name: "b"}}}))
		for _, ty := range sentinelTypes {
			for _, m := range []string{"missing", "set", "back", "fresh"} {
				require.NoError(t, r.AddMetric(mmv.Metric{Name: ty.name + "." + m, Type: ty.typ, Semantics: mmv.SemInstant}))
			}
		}
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "inst", Type: mmv.Uint64, Semantics: mmv.SemCounter, Indom: 1}))
		startOrSkip(t, r)
		t.Cleanup(func() { r.Close() })
		for _, ty := range sentinelTypes {
			val := func(m string) *mmv.Value {
				v, err := r.Value(ty.name+"."+m, "")
				require.NoError(t, err)
				return v
			}
			val("missing").SetNoValue()
			if ty.typ == mmv.String {
				require.NoError(t, val("set").SetString("x"))
				val("back").SetNoValue()
				require.NoError(t, val("back").SetString("y"))
			} else {
				val("set").Set(7)
				val("back").SetNoValue()
				val("back").Set(-1)
			}
		}
		a, err := r.Value("inst", "a")
		require.NoError(t, err)
		b, err := r.Value("inst", "b")
		require.NoError(t, err)
		a.SetNoValue()
		b.Set(5)
	}
	write("with", mmv.Sentinel)
	write("without", 0)

	ms := pcptest.Info(t, tmp)
	type shown struct{ value, noValue string }
	got := func(name string) shown {
		m := pcptest.Find(ms, name)
		require.NotNil(t, m, "PCP does not show %s", name)
		return shown{m.Value, m.NoValue}
	}
	none := shown{noValue: noValue}
	val := func(s string) shown { return shown{value: s} }

	// What PCP 6.0.3 shows with the Sentinel flag.
	with := map[string]shown{
		// Integers: all 8 bytes all ones is no value, also for 32-bit types.
		"i32.missing": none, "u32.missing": none, "i64.missing": none, "u64.missing": none,
		"elapsed.missing": none,
		// 6.0.3 compares the value with NaN using ==, never true: NaN
		// shows. 7.2 tests isnan: no value (below).
		"float.missing": val("nan"), "double.missing": val("nan"),
		// The empty string is no value, so is a string never set.
		"string.missing": none, "string.fresh": none,
		"string.set": val(`"x"`), "string.back": val(`"y"`),
		// Set(-1) after SetNoValue: a 32-bit -1 is a value again (the slot's
		// second half is cleared); a 64-bit -1 is the all-ones sentinel.
		"i32.back": val("-1"), "u32.back": val("4294967295"),
		"i64.back": none, "u64.back": none, "elapsed.back": none,
		"float.back": val("-1"), "double.back": val("-1"),
	}
	if pcptest.AtLeast(7, 2) {
		with["float.missing"], with["double.missing"] = none, none
	}
	// Without the flag the same bits are ordinary values.
	without := map[string]shown{
		"i32.missing": val("-1"), "u32.missing": val("4294967295"),
		"i64.missing": val("-1"), "u64.missing": val("18446744073709551615"),
		"elapsed.missing": val("-1"),
		"float.missing":   val("nan"), "double.missing": val("nan"),
		"string.missing": val(`""`), "string.fresh": val(`""`),
		"string.set": val(`"x"`), "string.back": val(`"y"`),
		"i32.back": val("-1"), "u32.back": val("4294967295"),
		"i64.back": val("-1"), "u64.back": val("18446744073709551615"), "elapsed.back": val("-1"),
		"float.back": val("-1"), "double.back": val("-1"),
	}
	for _, ty := range sentinelTypes {
		for file, want := range map[string]map[string]shown{"with": with, "without": without} {
			if ty.typ != mmv.String {
				want[ty.name+".set"] = val("7")
				want[ty.name+".fresh"] = val("0")
			}
			for _, m := range []string{"missing", "set", "back", "fresh"} {
				name := "mmv." + file + "." + ty.name + "." + m
				assert.Equal(t, want[ty.name+"."+m], got(name), "%s as PCP %s shows it", name, pcptest.Version())
			}
		}
	}

	// Per instance: the missing instance has no value (pminfo prints no
	// value line for it; pcptest still lists it from its labels).
	inst := pcptest.Find(ms, "mmv.with.inst")
	assert.False(t, inst == nil || inst.Instance("a") == nil || inst.Instance("a").Value != "" || inst.Instance("b").Value != "5", "mmv.with.inst: PCP shows %+v, want a with no value and b = 5", inst)
	inst = pcptest.Find(ms, "mmv.without.inst")
	assert.False(t, inst == nil || len(inst.Instances) != 2 || inst.Instance("a").Value != "18446744073709551615", "mmv.without.inst: PCP shows %+v, want a = 1<<64-1 and b = 5", inst)
}

// TestSentinelSlotBytes checks the bytes SetNoValue and Set leave in the
// 8-byte slot of a 32-bit value, as mmvfile reads them.
func TestSentinelSlotBytes(t *testing.T) {
	dir := t.TempDir()
	r := mmv.NewRegistry("slots", &mmv.Options{Dir: dir, Flags: mmv.Sentinel})
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "a", Type: mmv.Int32, Semantics: mmv.SemInstant}))
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "b", Type: mmv.Uint32, Semantics: mmv.SemInstant}))
	startOrSkip(t, r)
	defer r.Close()
	a, _ := r.Value("a", "")
	b, _ := r.Value("b", "")
	slot := func(name string) [8]byte {
		f, err := mmvfile.Open(filepath.Join(dir, "slots"))
		require.NoError(t, err)
		for _, v := range f.Values {
			if v.Metric.Name == name {
				return v.Atom
			}
		}
		require.FailNow(t, "no value "+name)
		return [8]byte{}
	}
	ones := [8]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	a.SetNoValue()
	b.SetNoValue()
	require.False(t, slot("a") != ones || slot("b") != ones, "SetNoValue left %x and %x, want all ones", slot("a"), slot("b"))
	a.Set(-1)
	b.Add(1) // counts on from all ones: 0, the second half stays
	assert.Equal(t, [8]byte{0xff, 0xff, 0xff, 0xff}, slot("a"), "Set(-1) after SetNoValue left")
	assert.Equal(t, [8]byte{0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}, slot("b"), "Add(1) after SetNoValue left")
	assert.False(t, a.Int() != -1 || b.Int() != 0, "values read %d and %d", a.Int(), b.Int())
}
