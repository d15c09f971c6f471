package mmv_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
)

// The PCP 7 additions a writer can use, each read by the PCP in use
// (pcptest.Root: 6.0.3 on the host, 7.2 under MMV_PCP_ROOT; CI runs both):
// 7.2 shows what they add, 6.0.3 reads the same file without losing
// anything it showed before. docs/design.md, "PCP 6.0.3 and 7.2".

// extraUnits are PCP 7.2's extra units, alone and with other dimensions,
// and the texts 7.2's pminfo prints for them.
var extraUnits = []struct {
	u    mmv.Units
	pcp7 string
}{
	{mmv.Celsius, "temperature (C)"},
	{mmv.Fahrenheit, "temperature (F)"},
	{mmv.Kelvin, "temperature (K)"},
	{mmv.Volt, "voltage (V)"},
	{mmv.Millivolt, "voltage (mV)"},
	{mmv.Microvolt, "voltage (uV)"},
	{mmv.Ampere, "current (A)"},
	{mmv.Milliampere, "current (mA)"},
	{mmv.Microampere, "current (uA)"},
	{mmv.Kilowatt, "power (kW)"},
	{mmv.Watt, "power (W)"},
	{mmv.Milliwatt, "power (mW)"},
	{mmv.Microwatt, "power (uW)"},
	{mmv.Watt.Mul(mmv.Hour), "power (W) hour"},
	{mmv.Kilowatt.Mul(mmv.Second), "power (kW) sec"},
	{mmv.Millivolt.Mul(mmv.Count), "voltage (mV) count"},
	{mmv.Celsius.Per(mmv.Second), "temperature (C) / sec"},
	{mmv.Count.Mul(mmv.Ampere), "current (A) count"},
}

// TestUnitsTimeAndSpace: Time and Space tell a time or a space alone, and
// its scale; no extra unit is either, alone or with a time (Watt.Mul(Hour),
// an energy, was taken for hours by histograms' ObserveDuration and the
// exposition's seconds).
func TestUnitsTimeAndSpace(t *testing.T) {
	for _, c := range []struct {
		u       mmv.Units
		time    mmv.TimeScale
		isTime  bool
		space   mmv.SpaceScale
		isSpace bool
	}{
		{mmv.Second, mmv.ScaleSec, true, 0, false},
		{mmv.Hour, mmv.ScaleHour, true, 0, false},
		{mmv.Nanosecond, mmv.ScaleNanosec, true, 0, false},
		{mmv.Byte, 0, false, mmv.ScaleByte, true},
		{mmv.Kbyte, 0, false, mmv.ScaleKbyte, true},
		{mmv.Byte.Per(mmv.Second), 0, false, 0, false},
		{mmv.Count, 0, false, 0, false},
	} {
		ts, isTime := c.u.Time()
		ss, isSpace := c.u.Space()
		assert.Equal(t, c.isTime, isTime, "%v", c.u)
		assert.Equal(t, c.isSpace, isSpace, "%v", c.u)
		if isTime {
			assert.Equal(t, c.time, ts, "%v", c.u)
		}
		if isSpace {
			assert.Equal(t, c.space, ss, "%v", c.u)
		}
	}
	for _, c := range extraUnits {
		_, isTime := c.u.Time()
		_, isSpace := c.u.Space()
		assert.False(t, isTime || isSpace, "%v", c.u)
	}
}

// TestPCP7Units declares a metric in every extra unit: PCP 7.2 shows the
// unit as Units.String prints it; PCP 6.0.3 shows the units without the
// extra one (a lone extra unit as "none"), and both read the value.
func TestPCP7Units(t *testing.T) {
	tmp, dir := pcpDir(t)
	r := startReg(t, "xunits", dir, mmv.Options{Cluster: 27}, func(r *mmv.Registry) {
		for i, c := range extraUnits {
			require.NoError(t, r.AddMetric(mmv.Metric{Name: fmt.Sprintf("x%02d", i), Item: uint32(i + 1), Type: mmv.Double,
				Semantics: mmv.SemInstant, Units: c.u}))
		}
	})
	for i := range extraUnits {
		value(t, r, fmt.Sprintf("x%02d", i), "").SetFloat(21.5 + float64(i))
	}
	ms := pcptest.Info(t, tmp)
	for i, c := range extraUnits {
		m := get(t, ms, fmt.Sprintf("mmv.xunits.x%02d", i))
		assert.Equal(t, c.pcp7, c.u.String(), "Units.String of %#08x", uint32(c.u))
		want := c.pcp7
		if !pcptest.AtLeast(7, 2) {
			// What 6.0.3 shows: the units with the extra unit's byte
			// cleared.
			want = (c.u &^ 0xff).String()
			if want == "" {
				want = "none"
			}
		}
		assert.Equal(t, want, m.Units, "PCP %s's text for %s (%#08x)", pcptest.Version(), c.pcp7, uint32(c.u))
		assert.Equal(t, fmt.Sprint(21.5+float64(i)), m.Value, c.pcp7)
	}
}

// TestExtraUnitsRefused: an extra unit has no powers, so two of them
// multiplied, or one divided by, are refused at declaration, as other out
// of range units are, and so are the codes and scales PCP 7.2 does not
// define.
func TestExtraUnitsRefused(t *testing.T) {
	r := mmv.NewRegistry("xunits_refused", &mmv.Options{Dir: t.TempDir()})
	defer r.Close()
	for i, u := range []mmv.Units{
		mmv.Watt.Mul(mmv.Volt), mmv.Watt.Mul(mmv.Watt), mmv.Watt.Per(mmv.Watt), mmv.Count.Per(mmv.Watt),
		mmv.Celsius.Mul(mmv.NewUnits(9, 0, 0, 0, 0, 0)),
		mmv.Units(5<<3 | 1), mmv.Units(1<<3 | 4), mmv.Units(4<<3 | 5), mmv.Units(2<<3|0) | mmv.Count,
	} {
		err := r.AddMetric(mmv.Metric{Name: fmt.Sprintf("bad%d", i), Type: mmv.Double, Semantics: mmv.SemInstant, Units: u})
		assert.ErrorIs(t, err, mmv.ErrRange, "units %#08x (%s)", uint32(u), u)
	}
	for i, c := range extraUnits {
		assert.NoError(t, r.AddMetric(mmv.Metric{Name: fmt.Sprintf("ok%d", i), Type: mmv.Double, Semantics: mmv.SemInstant, Units: c.u}), c.pcp7)
	}
}

// TestPCP7EmptyIndom: a vector before its first value is a metric over an
// instance domain of no instances, as is a metric declared over an indom
// with none. Both PCPs list such metrics with no values, and list their
// instances once they have some; PCP 6.0.3 shows no help text for them
// until then, 7.2 shows it from the start.
func TestPCP7EmptyIndom(t *testing.T) {
	tmp, dir := pcpDir(t)
	var vec *mmv.Vec[mmv.Counter]
	r := startReg(t, "emptyindom", dir, mmv.Options{Cluster: 28}, func(r *mmv.Registry) {
		vec = mmv.NewCounterVec(r, "requests", "Requests by route", mmv.Count, "route")
		require.NoError(t, r.AddIndom(mmv.Indom{Serial: 1, ShortHelp: "No instances yet", LongHelp: "Filled later."}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "depth", Item: 1, Type: mmv.Uint32, Semantics: mmv.SemInstant, Indom: 1,
			ShortHelp: "Queue depth", LongHelp: "Depth of each queue."}))
	})
	helps := map[string][2]string{
		"mmv.emptyindom.requests": {"Requests by route", "Requests by route"},
		"mmv.emptyindom.depth":    {"Queue depth", "Depth of each queue."},
	}
	ms := pcptest.Info(t, tmp)
	for name, help := range helps {
		m := get(t, ms, name)
		assert.Empty(t, m.Instances, name)
		assert.Equal(t, noValue, m.NoValue, name)
		if !pcptest.AtLeast(7, 2) {
			help = [2]string{}
		}
		assert.Equal(t, help, [2]string{m.ShortHelp, m.LongHelp}, "%s's help as PCP %s shows it", name, pcptest.Version())
	}

	vec.With("/api").Add(3)
	require.NoError(t, r.AddInstance(1, mmv.Instance{ID: 4, Name: "q4"}))
	require.NoError(t, r.Flush())
	ms = pcptest.Info(t, tmp)
	m := get(t, ms, "mmv.emptyindom.requests")
	require.Len(t, m.Instances, 1)
	assert.Equal(t, "3", m.Instances[0].Value)
	m = get(t, ms, "mmv.emptyindom.depth")
	require.Len(t, m.Instances, 1)
	assert.Equal(t, "q4", m.Instances[0].Name)
	for name, help := range helps {
		m := get(t, ms, name)
		assert.Equal(t, help, [2]string{m.ShortHelp, m.LongHelp}, "%s's help as PCP %s shows it", name, pcptest.Version())
	}
}

// TestPCP7IndomHelp: an indom's help text is in the file for every PCP,
// but no PCP proven here serves it for the indom its metrics have
// (cluster<<11 | serial): 6.0.3's agent has no indom help at all, 7.2's
// answers under the bare serial (70.<serial>), which no metric names, and
// calls the metrics' indom unknown. Metrics' help is unaffected.
func TestPCP7IndomHelp(t *testing.T) {
	tmp, dir := pcpDir(t)
	startReg(t, "indomhelp", dir, mmv.Options{Cluster: 29}, func(r *mmv.Registry) {
		require.NoError(t, r.AddIndom(mmv.Indom{Serial: 3, ShortHelp: "Worker pool", LongHelp: "One instance per worker.",
			Instances: []mmv.Instance{{ID: 1, Name: "w1"}}}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "busy", Item: 1, Type: mmv.Uint32, Semantics: mmv.SemInstant, Indom: 3,
			ShortHelp: "Busy workers"}))
	})
	m := get(t, pcptest.Info(t, tmp), "mmv.indomhelp.busy")
	assert.Equal(t, "Busy workers", m.ShortHelp)
	indom := fmt.Sprintf("%d.%d", pcptest.Domain, 29<<11|3)
	require.True(t, strings.HasPrefix(m.Indom, indom+" "), "the metric's indom is %s", m.Indom)

	byIndom, _ := pcptest.Pminfo(t, tmp, "-tT", indom)
	bySerial, _ := pcptest.Pminfo(t, tmp, "-tT", fmt.Sprintf("%d.3", pcptest.Domain))
	if pcptest.AtLeast(7, 2) {
		assert.Contains(t, byIndom, "Unknown or illegal instance domain identifier", "PCP %s, indom %s", pcptest.Version(), indom)
		assert.Contains(t, bySerial, "[Worker pool]", "PCP %s, indom 70.3", pcptest.Version())
		assert.Contains(t, bySerial, "One instance per worker.", "PCP %s, indom 70.3", pcptest.Version())
		return
	}
	for _, out := range []string{byIndom, bySerial} {
		assert.Contains(t, out, "One-line or help text is not available", "PCP %s", pcptest.Version())
		assert.NotContains(t, out, "Worker pool", "PCP %s", pcptest.Version())
	}
}
