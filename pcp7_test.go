package mmv_test

import (
	"fmt"
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
