package mmv_test

// Conformance: files written by the library, read back through PCP's own
// reader (pminfo with the MMV agent loaded in-process, no daemon). Each
// test skips without PCP and fails instead when MMV_REQUIRE_PCP=1.

import (
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/mmvfile"
)

func TestConformanceNames(t *testing.T) {
	tmp, dir := pcpDir(t)
	long := "long." + strings.Repeat("x", 70) // forces a v2 file
	startReg(t, "app_2", dir, mmv.Options{Cluster: 12}, func(r *mmv.Registry) {
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "requests", Item: 1, Type: mmv.Uint64, Semantics: mmv.SemCounter}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "a.b.c", Item: 1023, Type: mmv.Uint64, Semantics: mmv.SemCounter}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "Mixed_Case9.x_1", Item: 7, Type: mmv.Uint64, Semantics: mmv.SemCounter}))
	})
	startReg(t, "v2file", dir, mmv.Options{Cluster: 13}, func(r *mmv.Registry) {
		require.NoError(t, r.AddMetric(mmv.Metric{Name: long, Item: 1, Type: mmv.Uint64, Semantics: mmv.SemCounter}))
	})
	startReg(t, "noprefix", dir, mmv.Options{Cluster: 14, Flags: mmv.NoPrefix}, func(r *mmv.Registry) {
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "toplevel.metric", Item: 2, Type: mmv.Uint64, Semantics: mmv.SemCounter}))
	})
	// Items left to the library: PCP must see each one, with distinct items.
	auto := []string{"auto.a", "auto.b", "auto.c", "auto.d", "auto.e", "auto.f"}
	startReg(t, "autoitems", dir, mmv.Options{Cluster: 15}, func(r *mmv.Registry) {
		for _, n := range auto {
			require.NoError(t, r.AddMetric(mmv.Metric{Name: n, Type: mmv.Uint32, Semantics: mmv.SemInstant}))
		}
	})

	ms := pcptest.Info(t, tmp)
	for name, pmid := range map[string]string{
		"mmv.app_2.requests":        "70.12.1",
		"mmv.app_2.a.b.c":           "70.12.1023",
		"mmv.app_2.Mixed_Case9.x_1": "70.12.7",
		"mmv.v2file." + long:        "70.13.1",
		"mmv.toplevel.metric":       "70.14.2",
	} {
		assert.Equal(t, pmid, get(t, ms, name).PMID, name)
	}
	assert.Len(t, under(ms, "mmv.app_2."), 3, "nothing else, nothing dropped")
	assert.Len(t, under(ms, "mmv.noprefix"), 0, "NoPrefix puts no file name in the metric names")

	items := map[string]bool{}
	for _, n := range auto {
		m := get(t, ms, "mmv.autoitems."+n)
		parts := strings.Split(m.PMID, ".")
		require.Len(t, parts, 3)
		assert.Equal(t, "15", parts[1])
		item, err := strconv.Atoi(parts[2])
		require.NoError(t, err)
		assert.True(t, item >= 1 && item <= 1023, "item %d", item)
		assert.False(t, items[parts[2]], "item %d used twice", item)
		items[parts[2]] = true
	}
	assert.Equal(t, "4", get(t, ms, "mmv.control.files").Value)
}

func TestConformanceTypesAndSemantics(t *testing.T) {
	tmp, dir := pcpDir(t)
	cases := []struct {
		typ      mmv.Type
		sem      mmv.Semantics
		pcpType  string
		pcpSem   string
		pcpUnits string
	}{
		{mmv.Int32, mmv.SemCounter, "32-bit int", "counter", "none"},
		{mmv.Uint32, mmv.SemInstant, "32-bit unsigned int", "instant", "none"},
		{mmv.Int64, mmv.SemDiscrete, "64-bit int", "discrete", "none"},
		{mmv.Uint64, mmv.SemCounter, "64-bit unsigned int", "counter", "none"},
		{mmv.Float, mmv.SemInstant, "float", "instant", "none"},
		{mmv.Double, mmv.SemDiscrete, "double", "discrete", "none"},
		{mmv.String, mmv.SemDiscrete, "string", "discrete", "none"},
		// PCP exports ELAPSED as a signed 64-bit counter in microseconds,
		// whatever the file declares.
		{mmv.Elapsed, mmv.SemCounter, "64-bit int", "counter", "microsec"},
		{mmv.Elapsed, mmv.SemInstant, "64-bit int", "counter", "microsec"},
	}
	startReg(t, "types", dir, mmv.Options{Cluster: 20}, func(r *mmv.Registry) {
		for i, c := range cases {
			units := mmv.NoUnits
			if c.typ == mmv.Elapsed {
				units = mmv.Millisecond
			}
			require.NoError(t, r.AddMetric(mmv.Metric{Name: fmt.Sprintf("m%d", i), Item: uint32(i + 1), Type: c.typ, Semantics: c.sem, Units: units}))
		}
	})
	ms := pcptest.Info(t, tmp)
	for i, c := range cases {
		m := get(t, ms, fmt.Sprintf("mmv.types.m%d", i))
		assert.Equal(t, c.pcpType, m.Type, "%v", c.typ)
		assert.Equal(t, c.pcpSem, m.Semantics, "%v %v", c.typ, c.sem)
		assert.Equal(t, c.pcpUnits, m.Units, "%v", c.typ)
		assert.Equal(t, "PM_INDOM_NULL 0xffffffff", m.Indom)
		assert.Equal(t, fmt.Sprintf("70.20.%d", i+1), m.PMID)
	}
}

// TestConformanceUnits checks units three ways: the text PCP prints for
// the units word in the file, mmv.Units.String, and the text expected.
func TestConformanceUnits(t *testing.T) {
	tmp, dir := pcpDir(t)
	cases := []struct {
		u    mmv.Units
		want string
	}{
		{mmv.NoUnits, ""},
		{mmv.Byte, "byte"},
		{mmv.Kbyte, "Kbyte"},
		{mmv.Mbyte, "Mbyte"},
		{mmv.Gbyte, "Gbyte"},
		{mmv.Tbyte, "Tbyte"},
		{mmv.Pbyte, "Pbyte"},
		{mmv.Ebyte, "Ebyte"},
		{mmv.Zbyte, "Zbyte"},
		{mmv.Ybyte, "Ybyte"},
		{mmv.NewUnits(1, 0, 0, mmv.ScaleYbyte, 0, 0), "Ybyte"},
		{mmv.Nanosecond, "nanosec"},
		{mmv.Microsecond, "microsec"},
		{mmv.Millisecond, "millisec"},
		{mmv.Second, "sec"},
		{mmv.Minute, "min"},
		{mmv.Hour, "hour"},
		{mmv.Count, "count"},
		{mmv.NewUnits(0, 0, 1, 0, 0, 1), "count x 10"},
		{mmv.NewUnits(0, 0, 1, 0, 0, 3), "count x 10^3"},
		{mmv.NewUnits(0, 0, 1, 0, 0, 6), "count x 10^6"},
		{mmv.NewUnits(0, 0, 1, 0, 0, -3), "count x 10^-3"},
		{mmv.NewUnits(0, 0, 1, 0, 0, -8), "count x 10^-8"},
		{mmv.Kbyte.Per(mmv.Second), "Kbyte / sec"},
		{mmv.Byte.Per(mmv.Second), "byte / sec"},
		{mmv.Mbyte.Per(mmv.Millisecond), "Mbyte / millisec"},
		{mmv.Count.Per(mmv.Second), "count / sec"},
		{mmv.NewUnits(0, -1, 0, 0, mmv.ScaleSec, 0), "/ sec"},
		{mmv.Byte.Mul(mmv.Byte), "byte^2"},
		{mmv.Kbyte.Mul(mmv.Kbyte).Per(mmv.Second), "Kbyte^2 / sec"},
		{mmv.Byte.Per(mmv.Second).Per(mmv.Second), "byte / sec^2"},
		{mmv.Microsecond.Per(mmv.Count), "microsec / count"},
		{mmv.NewUnits(0, 0, -1, 0, 0, 3), "/ count x 10^3"},
		{mmv.NewUnits(1, -1, -1, 0, mmv.ScaleSec, 0), "byte / sec count"},
		{mmv.NewUnits(1, 1, 1, mmv.ScaleMbyte, mmv.ScaleMicrosec, 2), "Mbyte microsec count x 10^2"},
		{mmv.NewUnits(0, -1, 1, 0, mmv.ScaleSec, -1), "count x 10^-1 / sec"},
		{mmv.NewUnits(7, -8, 7, 0, 0, 0), "byte^7 count^7 / nanosec^8"},
		// PCP's own oddities: a count scale with no count dimension (PCP
		// 7.2 prints "count" before it: pcp7Units), and "count x 10"
		// squared.
		{mmv.NewUnits(0, 0, 0, 0, 0, 3), "x 10^3"},
		{mmv.NewUnits(0, 0, 0, 0, 0, 1), "x 10"},
		{mmv.NewUnits(0, 0, 0, 0, 0, -2), "x 10^-2"},
		{mmv.NewUnits(0, 0, 2, 0, 0, 1), "count x 10^2"},
	}
	startReg(t, "units", dir, mmv.Options{Cluster: 21}, func(r *mmv.Registry) {
		for i, c := range cases {
			require.NoError(t, r.AddMetric(mmv.Metric{Name: fmt.Sprintf("u%02d", i), Item: uint32(i + 1), Type: mmv.Double, Semantics: mmv.SemInstant, Units: c.u}))
		}
	})
	ms := pcptest.Info(t, tmp)
	for i, c := range cases {
		pcp := get(t, ms, fmt.Sprintf("mmv.units.u%02d", i)).Units
		if pcp == "none" { // pminfo's word for dimensionless
			pcp = ""
		}
		want := c.want
		if w, ok := pcp7Units[c.want]; ok && pcptest.AtLeast(7, 2) {
			want = w
		}
		assert.Equal(t, want, pcp, "PCP %s's text for %#08x", pcptest.Version(), uint32(c.u))
		// Units.String is 6.0.3's text.
		assert.Equal(t, c.want, c.u.String(), "Units.String of %#08x", uint32(c.u))
	}
}

// pcp7Units are the texts PCP 7.2's pmUnitsStr gives where 6.0.3's differ:
// a count scale with no count dimension reads "count x 10^N", as if the
// dimension were 1.
var pcp7Units = map[string]string{"x 10^3": "count x 10^3", "x 10": "count x 10", "x 10^-2": "count x 10^-2"}

func TestConformanceInstances(t *testing.T) {
	tmp, dir := pcpDir(t)
	longName := "instance-" + strings.Repeat("n", 80)
	insts := []mmv.Instance{{ID: 0, Name: "GET"}, {ID: 7, Name: "with space"}, {ID: 3, Name: "x/y-z.é"}, {ID: 1 << 30, Name: longName}}
	r := startReg(t, "inst", dir, mmv.Options{Cluster: 30}, func(r *mmv.Registry) {
		require.NoError(t, r.AddIndom(mmv.Indom{Serial: 1, Instances: insts}))
		require.NoError(t, r.AddIndom(mmv.Indom{Serial: 2047, Instances: []mmv.Instance{{ID: 5, Name: "only"}}}))
		require.NoError(t, r.AddIndom(mmv.Indom{Serial: 9}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "bytes", Item: 1, Type: mmv.Uint64, Semantics: mmv.SemCounter, Units: mmv.Byte, Indom: 1}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "temp", Item: 2, Type: mmv.Double, Semantics: mmv.SemInstant, Indom: 1}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "one", Item: 3, Type: mmv.String, Semantics: mmv.SemDiscrete, Indom: 2047}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "empty", Item: 4, Type: mmv.Int32, Semantics: mmv.SemInstant, Indom: 9}))
	})
	for i, in := range insts {
		value(t, r, "bytes", in.Name).Add(int64(1000 + i))
		value(t, r, "temp", in.Name).SetFloat(float64(i) + 0.5)
	}
	require.NoError(t, value(t, r, "one", "only").SetString("single"))

	ms := pcptest.Info(t, tmp)
	bytes := get(t, ms, "mmv.inst.bytes")
	// Indom ids are (cluster << 11) | serial.
	assert.Equal(t, fmt.Sprintf("70.%d 0x%x", 30<<11|1, 70<<22|30<<11|1), bytes.Indom)
	temp := get(t, ms, "mmv.inst.temp")
	require.Len(t, bytes.Instances, len(insts))
	require.Len(t, temp.Instances, len(insts))
	for i, in := range insts {
		assert.Equal(t, int(in.ID), bytes.Instances[i].ID, "instances in declaration order")
		assert.Equal(t, in.Name, bytes.Instances[i].Name)
		assert.Equal(t, strconv.Itoa(1000+i), bytes.Instances[i].Value, in.Name)
		assert.Equal(t, in.Name, temp.Instances[i].Name)
		assert.Equal(t, strconv.FormatFloat(float64(i)+0.5, 'g', -1, 64), temp.Instances[i].Value, in.Name)
	}
	one := get(t, ms, "mmv.inst.one")
	assert.Equal(t, fmt.Sprintf("70.%d 0x%x", 30<<11|2047, 70<<22|30<<11|2047), one.Indom)
	require.Len(t, one.Instances, 1)
	assert.Equal(t, pcptest.Instance{ID: 5, Name: "only", Value: `"single"`, Labels: one.Instances[0].Labels}, one.Instances[0])

	empty := get(t, ms, "mmv.inst.empty")
	assert.Empty(t, empty.Instances)
	assert.Equal(t, "No value(s) available!", empty.NoValue)
}

func TestConformanceHelp(t *testing.T) {
	tmp, dir := pcpDir(t)
	long255 := strings.Repeat("0123456789abcdef\n", 15)[:255]
	cases := []struct {
		short, long         string
		wantShort, wantLong string
	}{
		{"Requests served", "Requests served since start,\nby every method.\n\nSee also: bytes.", "Requests served", "Requests served since start,\nby every method.\n\nSee also: bytes."},
		{"", "", "", ""},
		// PCP's reader answers the long help with the short one when a
		// metric has no long help.
		{"Only a short help", "", "Only a short help", "Only a short help"},
		{"", "Only a long help", "", "Only a long help"},
		{"Brackets ] [ and UTF-8: é ü ∑", "\tindented\n  spaced", "Brackets ] [ and UTF-8: é ü ∑", "\tindented\n  spaced"},
		// pminfo drops trailing newlines.
		{"s", "ends with newlines\n\n", "s", "ends with newlines"},
		{strings.Repeat("s", 255), long255, strings.Repeat("s", 255), strings.TrimRight(long255, "\n")},
		{"looks like values", "    value 3\n    inst [1 or \"x\"] value 2", "looks like values", "    value 3\n    inst [1 or \"x\"] value 2"},
	}
	startReg(t, "help", dir, mmv.Options{Cluster: 40}, func(r *mmv.Registry) {
		require.NoError(t, r.AddIndom(mmv.Indom{Serial: 1, ShortHelp: "Indom short", LongHelp: "Indom long\nsecond line", Instances: []mmv.Instance{{ID: 1, Name: "a"}}}))
		for i, c := range cases {
			require.NoError(t, r.AddMetric(mmv.Metric{Name: fmt.Sprintf("h%d", i), Item: uint32(i + 1), Type: mmv.Uint32, Semantics: mmv.SemInstant, ShortHelp: c.short, LongHelp: c.long}))
		}
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "withindom", Item: 100, Type: mmv.Uint32, Semantics: mmv.SemInstant, Indom: 1, ShortHelp: "per instance", LongHelp: "per\ninstance"}))
	})
	ms := pcptest.Info(t, tmp)
	for i, c := range cases {
		m := get(t, ms, fmt.Sprintf("mmv.help.h%d", i))
		assert.Equal(t, c.wantShort, m.ShortHelp, "case %d", i)
		assert.Equal(t, c.wantLong, m.LongHelp, "case %d", i)
		assert.Equal(t, "0", m.Value, "case %d: the value still follows the help", i)
	}
	m := get(t, ms, "mmv.help.withindom")
	assert.Equal(t, "per instance", m.ShortHelp)
	assert.Equal(t, "per\ninstance", m.LongHelp)
	// pminfo shows no indom help; PCP's mmvdump does.
	dump := pcptest.Dump(t, filepath.Join(dir, "help"))
	assert.Contains(t, dump, "shorttext=Indom short")
	assert.Contains(t, dump, "helptext=Indom long\nsecond line")
}

func TestConformanceLabels(t *testing.T) {
	tmp, dir := pcpDir(t)
	// Every value type PCP keeps, as it prints them (no spaces).
	values := []struct {
		v    any
		json string
	}{
		{"text", `"text"`},
		{"quotes \" and \\ and <&> é", `"quotes \" and \\ and <&> é"`},
		{"", `""`},
		{42, `42`},
		{-7, `-7`},
		{2.5, `2.5`},
		{uint64(math.MaxUint64), `18446744073709551615`},
		{true, `true`},
		{false, `false`},
		{nil, `null`},
		{[]any{1, "a", true, nil}, `[1,"a",true,null]`},
		{[]string{}, `[]`},
	}
	r := startReg(t, "labels", dir, mmv.Options{Cluster: 50}, func(r *mmv.Registry) {
		require.NoError(t, r.AddIndom(mmv.Indom{Serial: 1, Instances: []mmv.Instance{{ID: 1, Name: "one"}, {ID: 2, Name: "two"}}}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "plain", Item: 1, Type: mmv.Uint32, Semantics: mmv.SemInstant}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "typed", Item: 2, Type: mmv.Uint32, Semantics: mmv.SemInstant}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "per", Item: 3, Type: mmv.Uint32, Semantics: mmv.SemInstant, Indom: 1}))
		// Cluster labels reach every metric.
		require.NoError(t, r.AddLabel(mmv.Label{Name: "service", Value: "web"}))
		require.NoError(t, r.AddLabel(mmv.Label{Name: "env", Value: "prod"}))
		for i, v := range values {
			require.NoError(t, r.AddMetricLabel("typed", mmv.Label{Name: fmt.Sprintf("v%02d", i), Value: v.v, Optional: i%2 == 1}))
		}
		// PCP's precedence: item over cluster; instance over all. Its
		// cluster over indom hid an indom's label named as the
		// registry's, which is refused (TestIndomLabelNamedAsRegistrysRefused).
		require.NoError(t, r.AddMetricLabel("typed", mmv.Label{Name: "env", Value: "test"}))
		require.NoError(t, r.AddIndomLabel(1, mmv.Label{Name: "kind", Value: "method"}))
		require.NoError(t, r.AddInstanceLabel(1, 2, mmv.Label{Name: "env", Value: "instance"}))
		require.NoError(t, r.AddInstanceLabel(1, 2, mmv.Label{Name: "weight", Value: 0.25, Optional: true}))
	})
	_ = r
	ms := pcptest.Info(t, tmp)
	check := func(what, labels, name, want string) {
		t.Helper()
		m := pcptest.Metric{Labels: labels}
		got, ok := m.Label(name)
		if assert.True(t, ok, "%s: no label %q in %s", what, name, labels) {
			assert.Equal(t, want, got, "%s: label %q", what, name)
		}
	}
	plain := get(t, ms, "mmv.labels.plain")
	check("plain", plain.Labels, "service", `"web"`)
	check("plain", plain.Labels, "env", `"prod"`)
	check("plain", plain.Labels, "agent", `"mmv"`)

	typed := get(t, ms, "mmv.labels.typed")
	for i, v := range values {
		check("typed", typed.Labels, fmt.Sprintf("v%02d", i), v.json)
	}
	check("typed", typed.Labels, "env", `"test"`)
	check("typed", typed.Labels, "service", `"web"`)

	per := get(t, ms, "mmv.labels.per")
	check("per", per.Labels, "env", `"prod"`)
	check("per", per.Labels, "kind", `"method"`)
	require.Len(t, per.Instances, 2)
	one, two := per.Instance("one"), per.Instance("two")
	check("instance one", one.Labels, "env", `"prod"`)
	check("instance one", one.Labels, "kind", `"method"`)
	_, ok := one.Label("weight")
	assert.False(t, ok, "instance labels stay on their instance")
	check("instance two", two.Labels, "env", `"instance"`)
	check("instance two", two.Labels, "weight", `0.25`)
	check("instance two", two.Labels, "service", `"web"`)

	// pminfo shows optional labels like the others; the reader sees the
	// optional flag (0x80) in the records, as mmvdump prints them.
	dump := pcptest.Dump(t, filepath.Join(dir, "labels"))
	assert.Contains(t, dump, "{\"v01\":\"quotes \\\" and \\\\ and <&> é\"}\n        flags=0x90, identity=0x2")
	assert.Contains(t, dump, "{\"v00\":\"text\"}\n        flags=0x10, identity=0x2")
	assert.Contains(t, dump, "{\"weight\":0.25}\n        flags=0xa0, identity=0x1\n        internal=0x2")
	assert.Contains(t, dump, "{\"service\":\"web\"}\n        flags=0x8, identity=0x32")
	assert.Contains(t, dump, "{\"kind\":\"method\"}\n        flags=0x4, identity=0x1")
}

func TestConformanceValues(t *testing.T) {
	tmp, dir := pcpDir(t)
	type update struct {
		name string
		typ  mmv.Type
		do   func(v *mmv.Value)
		want string
	}
	updates := []update{
		{"i32.set", mmv.Int32, func(v *mmv.Value) { v.Set(-5) }, "-5"},
		{"i32.min", mmv.Int32, func(v *mmv.Value) { v.Set(math.MinInt32) }, "-2147483648"},
		{"i32.add", mmv.Int32, func(v *mmv.Value) { v.Set(10); v.Add(-15); v.Inc() }, "-4"},
		{"i32.wrap", mmv.Int32, func(v *mmv.Value) { v.Set(math.MaxInt32); v.Inc() }, "-2147483648"},
		{"u32.max", mmv.Uint32, func(v *mmv.Value) { v.Set(math.MaxUint32) }, "4294967295"},
		{"u32.add", mmv.Uint32, func(v *mmv.Value) { v.Add(3_000_000_000); v.Add(1_000_000_000) }, "4000000000"},
		{"u32.wrap", mmv.Uint32, func(v *mmv.Value) { v.Set(math.MaxUint32); v.Add(2) }, "1"},
		{"i64.min", mmv.Int64, func(v *mmv.Value) { v.Set(math.MinInt64) }, "-9223372036854775808"},
		{"i64.max", mmv.Int64, func(v *mmv.Value) { v.Set(math.MaxInt64) }, "9223372036854775807"},
		{"i64.add", mmv.Int64, func(v *mmv.Value) { v.Add(-1 << 40); v.Inc() }, "-1099511627775"},
		{"u64.big", mmv.Uint64, func(v *mmv.Value) { u := uint64(1<<63 + 5); v.Set(int64(u)) }, "9223372036854775813"},
		{"u64.max", mmv.Uint64, func(v *mmv.Value) { v.Set(-1) }, "18446744073709551615"},
		{"u64.cross", mmv.Uint64, func(v *mmv.Value) { v.Set(math.MaxInt64); v.Add(10) }, "9223372036854775817"},
		{"u64.inc", mmv.Uint64, func(v *mmv.Value) {
			for range 1000 {
				v.Inc()
			}
		}, "1000"},
		{"float.tenth", mmv.Float, func(v *mmv.Value) { v.SetFloat(0.1) }, "0.1"},
		{"float.third", mmv.Float, func(v *mmv.Value) { v.SetFloat(1.0 / 3) }, "0.33333334"},
		{"float.add", mmv.Float, func(v *mmv.Value) { v.SetFloat(1.5); v.AddFloat(-0.25); v.Add(2) }, "3.25"},
		{"float.neg", mmv.Float, func(v *mmv.Value) { v.SetFloat(-2.5e-7) }, "-2.5e-07"},
		{"float.int", mmv.Float, func(v *mmv.Value) { v.Set(16777216) }, "16777216"},
		{"double.frac", mmv.Double, func(v *mmv.Value) { v.SetFloat(0.1); v.AddFloat(0.2) }, "0.3"},
		{"double.pi", mmv.Double, func(v *mmv.Value) { v.SetFloat(math.Pi) }, "3.141592653589793"},
		{"double.big", mmv.Double, func(v *mmv.Value) { v.SetFloat(1.5e300) }, "1.5e+300"},
		{"double.tiny", mmv.Double, func(v *mmv.Value) { v.SetFloat(-1e-300) }, "-1e-300"},
		{"double.precise", mmv.Double, func(v *mmv.Value) { v.SetFloat(123456789.123456789) }, "123456789.1234568"},
		{"double.int", mmv.Double, func(v *mmv.Value) { v.Set(1 << 53); v.Inc() }, "9007199254740992"},
		{"string.set", mmv.String, func(v *mmv.Value) { require.NoError(t, v.SetString("version 1.2.3")) }, `"version 1.2.3"`},
		{"string.shorter", mmv.String, func(v *mmv.Value) {
			require.NoError(t, v.SetString(strings.Repeat("long", 50)))
			require.NoError(t, v.SetString("short"))
		}, `"short"`},
		{"string.quotes", mmv.String, func(v *mmv.Value) { require.NoError(t, v.SetString(`say "hi" \ é`)) }, `"say "hi" \ é"`},
		{"string.max", mmv.String, func(v *mmv.Value) { require.NoError(t, v.SetString(strings.Repeat("z", 255))) }, `"` + strings.Repeat("z", 255) + `"`},
		{"string.empty", mmv.String, func(v *mmv.Value) { require.NoError(t, v.SetString("x")); require.NoError(t, v.SetString("")) }, `""`},
		{"string.untouched", mmv.String, func(v *mmv.Value) {}, `""`},
		{"elapsed.add", mmv.Elapsed, func(v *mmv.Value) {
			v.AddDuration(1500 * time.Microsecond)
			v.AddDuration(2 * time.Second)
		}, "2001500"},
		{"elapsed.closed", mmv.Elapsed, func(v *mmv.Value) {
			v.AddDuration(time.Second)
			v.StartInterval()
			v.EndInterval()
		}, ""}, // checked below: between 1s and 1s plus the test's time
	}
	r := startReg(t, "values", dir, mmv.Options{Cluster: 60}, func(r *mmv.Registry) {
		for i, u := range updates {
			require.NoError(t, r.AddMetric(mmv.Metric{Name: u.name, Item: uint32(i + 1), Type: u.typ, Semantics: mmv.SemInstant}))
		}
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "elapsed.open", Item: 1000, Type: mmv.Elapsed, Semantics: mmv.SemCounter, Units: mmv.Microsecond}))
	})
	begin := time.Now()
	for _, u := range updates {
		u.do(value(t, r, u.name, ""))
	}
	open := value(t, r, "elapsed.open", "")
	open.AddDuration(5 * time.Second)
	opened := time.Now()
	open.StartInterval()
	time.Sleep(20 * time.Millisecond)

	ms := pcptest.Info(t, tmp)
	read := time.Now()
	for _, u := range updates {
		m := get(t, ms, "mmv.values."+u.name)
		if u.want == "" {
			continue
		}
		assert.Equal(t, u.want, m.Value, u.name)
	}
	us := func(s string) int64 {
		n, err := strconv.ParseInt(s, 10, 64)
		require.NoError(t, err, s)
		return n
	}
	closed := us(get(t, ms, "mmv.values.elapsed.closed").Value)
	assert.GreaterOrEqual(t, closed, int64(1e6))
	assert.LessOrEqual(t, closed, int64(1e6)+time.Since(begin).Microseconds()+1)

	// An open interval counts up to the moment PCP reads it.
	got := us(get(t, ms, "mmv.values.elapsed.open").Value)
	assert.GreaterOrEqual(t, got, int64(5e6)+20_000, "5s plus the 20ms the interval has been open at least")
	assert.LessOrEqual(t, got, int64(5e6)+read.Sub(opened).Microseconds()+1000)

	// Closed, the interval stays counted and stops growing.
	open.EndInterval()
	ms = pcptest.Info(t, tmp)
	final := us(get(t, ms, "mmv.values.elapsed.open").Value)
	assert.GreaterOrEqual(t, final, got)
	time.Sleep(20 * time.Millisecond)
	ms = pcptest.Info(t, tmp)
	assert.Equal(t, final, us(get(t, ms, "mmv.values.elapsed.open").Value))
}

// TestConformancePerInstanceValues updates every type per instance.
func TestConformancePerInstanceValues(t *testing.T) {
	tmp, dir := pcpDir(t)
	types := []mmv.Type{mmv.Int32, mmv.Uint32, mmv.Int64, mmv.Uint64, mmv.Float, mmv.Double, mmv.String, mmv.Elapsed}
	insts := []mmv.Instance{{ID: 10, Name: "a"}, {ID: 20, Name: "b"}, {ID: 30, Name: "c"}}
	r := startReg(t, "perinst", dir, mmv.Options{Cluster: 61}, func(r *mmv.Registry) {
		require.NoError(t, r.AddIndom(mmv.Indom{Serial: 4, Instances: insts}))
		for i, typ := range types {
			require.NoError(t, r.AddMetric(mmv.Metric{Name: fmt.Sprintf("t%d", i), Item: uint32(i + 1), Type: typ, Semantics: mmv.SemInstant, Indom: 4}))
		}
	})
	for i, typ := range types {
		for j, in := range insts {
			v := value(t, r, fmt.Sprintf("t%d", i), in.Name)
			switch typ {
			case mmv.String:
				require.NoError(t, v.SetString("s-"+in.Name))
			case mmv.Float, mmv.Double:
				v.SetFloat(float64(j) + 0.25)
			case mmv.Elapsed:
				v.AddDuration(time.Duration(j+1) * time.Millisecond)
			default:
				v.Set(int64(j * 100))
				v.Inc()
			}
		}
	}
	ms := pcptest.Info(t, tmp)
	for i, typ := range types {
		m := get(t, ms, fmt.Sprintf("mmv.perinst.t%d", i))
		require.Len(t, m.Instances, len(insts), "%v", typ)
		for j, in := range insts {
			want := strconv.Itoa(j*100 + 1)
			switch typ {
			case mmv.String:
				want = `"s-` + in.Name + `"`
			case mmv.Float, mmv.Double:
				want = strconv.FormatFloat(float64(j)+0.25, 'g', -1, 64)
			case mmv.Elapsed:
				want = strconv.Itoa((j + 1) * 1000)
			}
			got := m.Instance(in.Name)
			require.NotNil(t, got, "%v %s", typ, in.Name)
			assert.Equal(t, int(in.ID), got.ID)
			assert.Equal(t, want, got.Value, "%v %s", typ, in.Name)
		}
	}
}

// TestConformanceProcess: the file of a live process with the Process flag
// is read; Close removes it and its metrics go.
func TestConformanceProcess(t *testing.T) {
	tmp, dir := pcpDir(t)
	r := startReg(t, "proc", dir, mmv.Options{Cluster: 70, Flags: mmv.Process}, func(r *mmv.Registry) {
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "alive", Item: 1, Type: mmv.Uint64, Semantics: mmv.SemCounter}))
	})
	startReg(t, "both", dir, mmv.Options{Cluster: 71, Flags: mmv.Process | mmv.NoPrefix}, func(r *mmv.Registry) {
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "procnoprefix", Item: 1, Type: mmv.Uint64, Semantics: mmv.SemCounter}))
	})
	value(t, r, "alive", "").Add(99)
	ms := pcptest.Info(t, tmp)
	assert.Equal(t, "99", get(t, ms, "mmv.proc.alive").Value)
	assert.Equal(t, "70.70.1", get(t, ms, "mmv.proc.alive").PMID)
	assert.Equal(t, "0", get(t, ms, "mmv.procnoprefix").Value)

	require.NoError(t, r.Close())
	ms = pcptest.Info(t, tmp)
	assert.Nil(t, pcptest.Find(ms, "mmv.proc.alive"), "Close removes a Process file")
	assert.NotNil(t, pcptest.Find(ms, "mmv.procnoprefix"))
}

// TestLabelBudgetAfterPlacement: labels follow their metrics when Start
// places them by name: more of them in one file than PCP reads, which
// drops them all, refuse Start with ErrTooMany, where Start went on and
// PCP showed none of them.
func TestLabelBudgetAfterPlacement(t *testing.T) {
	tmp, dir := pcpDir(t)
	r := newRegistry(t, "lbl", dir, mmv.Options{})
	const labelled = 200
	// First file in declaration order: a000..a199 labelled, z000.. unlabelled.
	declare := func(prefix string, from, n int) {
		for i := from; i < from+n; i++ {
			mmv.NewCounter(r, fmt.Sprintf("%s%04d", prefix, i), "m", mmv.Count)
		}
	}
	declare("a", 0, labelled)
	declare("z", 0, mmv.MaxMetrics-labelled)
	// Second file: a200..a399 labelled, more unlabelled.
	declare("a", labelled, labelled)
	declare("z", mmv.MaxMetrics-labelled, 100)
	for i := range 2 * labelled {
		require.NoError(t, r.AddMetricLabel(fmt.Sprintf("a%04d", i), mmv.Label{Name: "l", Value: i}))
	}
	err := r.Start()
	if err != nil {
		assert.ErrorIs(t, err, mmv.ErrTooMany, "a refusal would at least not be silent")
		return
	}
	ms := pcptest.Info(t, tmp)
	for _, name := range []string{"a0000", "a0399"} {
		m := get(t, ms, "mmv.lbl."+name)
		_, ok := m.Label("l")
		assert.True(t, ok, "PCP shows label l on %s: labels %s", name, m.Labels)
	}
	files := []string{r.Path(), r.Path() + ".2"}
	total := 0
	for _, path := range files {
		f, err := mmvfile.Open(path)
		require.NoError(t, err)
		assert.LessOrEqual(t, len(f.Labels), mmv.MaxLabels, "labels in %s: PCP's reader drops a larger section whole", filepath.Base(path))
		total += len(f.Labels)
	}
	assert.Equal(t, 2*labelled, total)
}

// TestDuplicateInstanceLabel: a second label of one name on an instance,
// a vector's label names included, is refused with ErrDuplicate, where
// PCP showed the last and an empty label beside it.
func TestDuplicateInstanceLabel(t *testing.T) {
	tmp, dir := pcpDir(t)
	var v *mmv.Vec[mmv.Counter]
	var errs [2]error
	r := startReg(t, "dupi", dir, mmv.Options{}, func(r *mmv.Registry) {
		require.NoError(t, r.AddIndom(mmv.Indom{Serial: 1, Instances: []mmv.Instance{{ID: 1, Name: "one"}}}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "m", Type: mmv.Uint32, Semantics: mmv.SemInstant, Indom: 1}))
		require.NoError(t, r.AddInstanceLabel(1, 1, mmv.Label{Name: "env", Value: "a"}))
		errs[0] = r.AddInstanceLabel(1, 1, mmv.Label{Name: "env", Value: "b"})
		v = mmv.NewCounterVec(r, "req", "r", mmv.Count, "route")
		v.With("/a").Inc()
	})
	errs[1] = r.AddInstanceLabel(v.Indom(), firstInstanceID(t, r, "req"), mmv.Label{Name: "route", Value: "/other"})
	require.NoError(t, r.Flush())
	ms := pcptest.Info(t, tmp)
	for i, c := range []struct{ metric, instance string }{{"mmv.dupi.m", "one"}, {"mmv.dupi.req", "route=/a"}} {
		m := get(t, ms, c.metric)
		in := m.Instance(c.instance)
		require.NotNil(t, in, c.instance)
		if errs[i] == nil {
			assert.NotContains(t, in.Labels, `"":null`, "%s[%s]: a duplicate label name accepted, PCP shows the labels garbled", c.metric, c.instance)
		}
		assert.ErrorIs(t, errs[i], mmv.ErrDuplicate, "%s[%s]: a second label of one name on one instance; PCP shows %s", c.metric, c.instance, in.Labels)
	}
}

// TestDuplicateMetricLabel: a second label of one name on a metric is
// refused with ErrDuplicate, where PCP showed the last and Snapshot both.
func TestDuplicateMetricLabel(t *testing.T) {
	tmp, dir := pcpDir(t)
	var err error
	r := startReg(t, "dupm", dir, mmv.Options{}, func(r *mmv.Registry) {
		mmv.NewCounter(r, "m", "m", mmv.Count)
		require.NoError(t, r.AddMetricLabel("m", mmv.Label{Name: "env", Value: "first"}))
		err = r.AddMetricLabel("m", mmv.Label{Name: "env", Value: "second"})
	})
	m := get(t, pcptest.Info(t, tmp), "mmv.dupm.m")
	snap, serr := r.Snapshot()
	require.NoError(t, serr)
	var snapped []mmv.Label
	for _, s := range snap {
		if s.Name == "m" {
			snapped = s.Labels
		}
	}
	assert.ErrorIs(t, err, mmv.ErrDuplicate, "a second label env on metric m: PCP shows %s, Snapshot %v", m.Labels, snapped)
}

// TestIndomLabelNamedAsRegistrysRefused: PCP merges an indom's labels
// under the registry's (pmLookupLabels: indom, cluster, item, then the
// instance), so an indom label named as one of the registry's never
// shows in pminfo: PCP showed the registry's value on every instance of
// the indom, a program's or an instrument's, and the indom's was lost with
// no error. Of another value, it is refused with ErrDuplicate, added
// before the registry's or after it, naming the indom and the label; of
// the same value it hides nothing, and is what docs/fleet.md advises for
// pmseries and pmproxy, which 6.0.3 show no cluster label to.
func TestIndomLabelNamedAsRegistrysRefused(t *testing.T) {
	tmp, dir := pcpDir(t)
	r := newRegistry(t, "indomreg", dir, mmv.Options{})
	require.NoError(t, r.AddIndom(mmv.Indom{Serial: 1, Instances: []mmv.Instance{{ID: 1, Name: "one"}}}))
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "per", Type: mmv.Uint32, Semantics: mmv.SemInstant, Indom: 1}))
	mmv.NewCounterVec(r, "req", "", mmv.Count, "route").With("/a").Inc()
	mmv.NewHistogramVec(r, "lat", "", mmv.Second, &mmv.HistogramOptions{Buckets: []float64{1}}, "method").With("GET").Observe(1)
	require.NoError(t, r.AddLabel(mmv.Label{Name: "env", Value: "prod"}))
	startOrSkip(t, r)
	type accepted struct{ metric, label, value string }
	var kept []accepted // the indom labels accepted, which PCP must show
	for i, metric := range []string{"per", "req", "lat.count", "lat.bucket"} {
		serial := indomOf(t, r, metric)
		what := fmt.Sprintf("indom %d", serial)
		err := r.AddIndomLabel(serial, mmv.Label{Name: "env", Value: "indom"})
		if assert.ErrorIs(t, err, mmv.ErrDuplicate, "%s's indom: env, the registry's", metric) {
			assert.ErrorContains(t, err, what)
			assert.ErrorContains(t, err, `label "env"`)
		} else {
			kept = append(kept, accepted{metric, "env", `"indom"`})
		}
		if err := r.AddIndomLabel(serial, mmv.Label{Name: "env", Value: "prod"}); assert.NoError(t, err, "%s's indom: env, the registry's value", metric) {
			kept = append(kept, accepted{metric, "env", `"prod"`})
		}
		name := fmt.Sprintf("zone%d", i) // the indom's first, then the registry's
		require.NoError(t, r.AddIndomLabel(serial, mmv.Label{Name: name, Value: "indom"}))
		kept = append(kept, accepted{metric, name, `"indom"`})
		err = r.AddLabel(mmv.Label{Name: name, Value: "registry"})
		if assert.ErrorIs(t, err, mmv.ErrDuplicate, "the registry's %s, %s's indom's", name, metric) {
			assert.ErrorContains(t, err, what)
			assert.ErrorContains(t, err, `label "`+name+`"`)
		}
	}
	require.NoError(t, r.Flush())
	ms := pcptest.Info(t, tmp)
	for _, k := range kept {
		m := get(t, ms, "mmv.indomreg."+k.metric)
		require.NotEmpty(t, m.Instances, k.metric)
		for _, in := range m.Instances {
			got, _ := in.Label(k.label)
			assert.Equal(t, k.value, got, "%s[%s]: the indom's label %s, accepted", k.metric, in.Name, k.label)
		}
	}
}
