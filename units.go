package mmv

import (
	"strconv"
	"strings"
)

// Units is PCP's pmUnits word: the dimension of a metric in space, time and
// count, and the scale of each dimension, packed as PCP stores it.
//
// Build units from the constants and combine them with Mul and Per:
//
//	mmv.Kbyte.Per(mmv.Second) // "Kbyte / sec"
type Units uint32

// NoUnits is the units of a dimensionless metric.
const NoUnits Units = 0

// SpaceScale is the scale of the space dimension, as PCP numbers it: bytes
// times 1024 to its power.
type SpaceScale int

// TimeScale is the scale of the time dimension, as PCP numbers it.
type TimeScale int

// CountScale is the scale of the count dimension: a power of ten, -8..7.
type CountScale int

// Space scales, as PCP numbers them.
const (
	ScaleByte SpaceScale = iota
	ScaleKbyte
	ScaleMbyte
	ScaleGbyte
	ScaleTbyte
	ScalePbyte
	ScaleEbyte
	ScaleZbyte
	ScaleYbyte
)

// Time scales, as PCP numbers them.
const (
	ScaleNanosec TimeScale = iota
	ScaleMicrosec
	ScaleMillisec
	ScaleSec
	ScaleMin
	ScaleHour
)

// Common units.
const (
	Byte  = Units(1<<28 | ScaleByte<<16)
	Kbyte = Units(1<<28 | ScaleKbyte<<16)
	Mbyte = Units(1<<28 | ScaleMbyte<<16)
	Gbyte = Units(1<<28 | ScaleGbyte<<16)
	Tbyte = Units(1<<28 | ScaleTbyte<<16)
	Pbyte = Units(1<<28 | ScalePbyte<<16)
	Ebyte = Units(1<<28 | ScaleEbyte<<16)
	Zbyte = Units(1<<28 | ScaleZbyte<<16)
	Ybyte = Units(1<<28 | ScaleYbyte<<16)

	Nanosecond  = Units(1<<24 | ScaleNanosec<<12)
	Microsecond = Units(1<<24 | ScaleMicrosec<<12)
	Millisecond = Units(1<<24 | ScaleMillisec<<12)
	Second      = Units(1<<24 | ScaleSec<<12)
	Minute      = Units(1<<24 | ScaleMin<<12)
	Hour        = Units(1<<24 | ScaleHour<<12)

	Count = Units(1 << 20)
)

// PCP 7.2's extra units: temperature, voltage, current and power, at most
// one per metric, alone or with the dimensions above (Watt.Mul(Hour)). PCP
// 7.2 and later show them ("temperature (C)", "power (W) hour"); older
// readers, PCP 6 included, do not know them and show such a metric's units
// without them: unitless alone ("none"), "hour" for Watt.Mul(Hour). The
// values read the same everywhere. An extra unit lives in the byte of the
// units word older PCPs left as padding, so a file that uses one stays
// readable by every PCP.
const (
	Celsius    = Units(extraTemperature<<3 | 1)
	Fahrenheit = Units(extraTemperature<<3 | 2)
	Kelvin     = Units(extraTemperature<<3 | 3)

	Volt      = Units(extraVoltage<<3 | 1)
	Millivolt = Units(extraVoltage<<3 | 2)
	Microvolt = Units(extraVoltage<<3 | 3)

	Ampere      = Units(extraCurrent<<3 | 1)
	Milliampere = Units(extraCurrent<<3 | 2)
	Microampere = Units(extraCurrent<<3 | 3)

	Kilowatt  = Units(extraPower<<3 | 1)
	Watt      = Units(extraPower<<3 | 2)
	Milliwatt = Units(extraPower<<3 | 3)
	Microwatt = Units(extraPower<<3 | 4)
)

// The extra units' codes (the byte's top 5 bits; its low 3 are the scale)
// and, for each code, its name and its scales' names as PCP 7.2 prints
// them, from scale 1.
const (
	extraTemperature = 1 + iota
	extraVoltage
	extraCurrent
	extraPower
	extraMask Units = 0xff
)

var extraNames = [...]struct {
	name   string
	scales []string
}{
	extraTemperature: {"temperature", []string{"C", "F", "K"}},
	extraVoltage:     {"voltage", []string{"V", "mV", "uV"}},
	extraCurrent:     {"current", []string{"A", "mA", "uA"}},
	extraPower:       {"power", []string{"kW", "W", "mW", "uW"}},
}

// extra returns the text PCP 7.2 prints for the extra unit of u, such as
// "temperature (C)", and whether u has a valid one (or none: "", true).
func (u Units) extra() (string, bool) {
	b := u & extraMask
	if b == 0 {
		return "", true
	}
	code, scale := int(b>>3), int(b&7)
	if code >= len(extraNames) || extraNames[code].name == "" || scale < 1 || scale > len(extraNames[code].scales) {
		return "", false
	}
	return extraNames[code].name + " (" + extraNames[code].scales[scale-1] + ")", true
}

// The fields of the units word: each is 4 bits, dimensions are two's
// complement, and the low byte is padding.
const (
	shiftDimSpace   = 28
	shiftDimTime    = 24
	shiftDimCount   = 20
	shiftScaleSpace = 16
	shiftScaleTime  = 12
	shiftScaleCount = 8
)

// NewUnits builds units from dimensions (-8..7) and scales: spaceScale and
// timeScale are the Scale constants, countScale a power of ten (-8..7).
// Out-of-range values are refused when a metric is declared with them.
func NewUnits(dimSpace, dimTime, dimCount int, spaceScale SpaceScale, timeScale TimeScale, countScale CountScale) Units {
	f := func(v, shift int) Units { return Units(uint32(v)&0xf) << shift }
	u := f(dimSpace, shiftDimSpace) | f(dimTime, shiftDimTime) | f(dimCount, shiftDimCount) |
		f(int(spaceScale), shiftScaleSpace) | f(int(timeScale), shiftScaleTime) | f(int(countScale), shiftScaleCount)
	if !inRange(dimSpace, dimTime, dimCount, int(countScale)) || spaceScale < 0 || spaceScale > 15 || timeScale < 0 || timeScale > 15 {
		u |= unitsInvalid
	}
	return u
}

// unitsInvalid marks units built from out-of-range fields; it lives in the
// extra unit's byte, as a scale with no unit, which no valid units word
// has.
const unitsInvalid Units = 1

func inRange(vs ...int) bool {
	for _, v := range vs {
		if v < -8 || v > 7 {
			return false
		}
	}
	return true
}

func nibble(u Units, shift int) int { return int(int8(uint8(u>>shift)<<4) >> 4) }

// DimSpace returns the space dimension.
func (u Units) DimSpace() int { return nibble(u, shiftDimSpace) }

// DimTime returns the time dimension.
func (u Units) DimTime() int { return nibble(u, shiftDimTime) }

// DimCount returns the count dimension.
func (u Units) DimCount() int { return nibble(u, shiftDimCount) }

// ScaleSpace returns the space scale (ScaleByte and up).
func (u Units) ScaleSpace() SpaceScale { return SpaceScale(u>>shiftScaleSpace) & 0xf }

// ScaleTime returns the time scale (ScaleNanosec and up).
func (u Units) ScaleTime() TimeScale { return TimeScale(u>>shiftScaleTime) & 0xf }

// ScaleCount returns the count scale, a power of ten.
func (u Units) ScaleCount() CountScale { return CountScale(nibble(u, shiftScaleCount)) }

// Time returns the scale of u when u is a time alone (Second,
// Millisecond...); ok is false for any other units, a time with an extra
// unit among them (Watt.Mul(Hour), an energy).
func (u Units) Time() (scale TimeScale, ok bool) {
	return u.ScaleTime(), u.DimTime() == 1 && u.DimSpace() == 0 && u.DimCount() == 0 && u&extraMask == 0
}

// Space returns the scale of u when u is a space alone (Byte,
// Kilobyte...); ok is false for any other units.
func (u Units) Space() (scale SpaceScale, ok bool) {
	return u.ScaleSpace(), u.DimSpace() == 1 && u.DimTime() == 0 && u.DimCount() == 0 && u&extraMask == 0
}

// Mul returns the product of two units: dimensions add, and each dimension
// keeps the scale of the operand that has it (u's when both do).
func (u Units) Mul(v Units) Units { return u.combine(v, 1) }

// Per returns u divided by v, such as Kbyte.Per(Second).
func (u Units) Per(v Units) Units { return u.combine(v, -1) }

func (u Units) combine(v Units, sign int) Units {
	// The operand whose scale a dimension keeps.
	pick := func(du, dv int) Units {
		if du != 0 || dv == 0 {
			return u
		}
		return v
	}
	ds, dt, dc := u.DimSpace()+sign*v.DimSpace(), u.DimTime()+sign*v.DimTime(), u.DimCount()+sign*v.DimCount()
	r := NewUnits(ds, dt, dc,
		pick(u.DimSpace(), v.DimSpace()).ScaleSpace(),
		pick(u.DimTime(), v.DimTime()).ScaleTime(),
		pick(u.DimCount(), v.DimCount()).ScaleCount())
	if r&extraMask != 0 { // NewUnits found a field out of range
		return r
	}
	// An extra unit is carried over from the one operand that has it; it
	// has no powers, so two of them, or one divided by, are invalid.
	switch ue, ve := u&extraMask, v&extraMask; {
	case ve == 0:
		r |= ue
	case ue == 0 && sign > 0:
		r |= ve
	default:
		r |= unitsInvalid
	}
	return r
}

func (u Units) valid() bool {
	_, ok := u.extra()
	return ok && u.ScaleSpace() <= ScaleYbyte && u.ScaleTime() <= ScaleHour
}

var (
	spaceNames = [...]string{"byte", "Kbyte", "Mbyte", "Gbyte", "Tbyte", "Pbyte", "Ebyte", "Zbyte", "Ybyte"}
	timeNames  = [...]string{"nanosec", "microsec", "millisec", "sec", "min", "hour"}
)

// String returns the scale's name as PCP prints it, such as "Kbyte", or
// "space-N" for a scale PCP does not name.
func (s SpaceScale) String() string { return scaleName(spaceNames[:], int(s), "space") }

// String returns the scale's name as PCP prints it, such as "millisec", or
// "time-N" for a scale PCP does not name.
func (s TimeScale) String() string { return scaleName(timeNames[:], int(s), "time") }

func scaleName(names []string, s int, unknown string) string {
	if s >= 0 && s < len(names) {
		return names[s]
	}
	return unknown + "-" + strconv.Itoa(s)
}

// String returns the units as PCP's pmUnitsStr prints them, such as
// "Kbyte / sec", "count x 10^3", "x 10^-2" for a dimensionless value with a
// count scale, or "" for dimensionless units (pminfo shows that as "none").
// It follows PCP's spelling even where it is odd: scale 10^1 is "count x 10",
// and "count x 10" squared is "count x 10^2". It spells units as PCP
// 6.0.3 does, with PCP 7.2's extra unit first, such as "power (W) hour"
// (6.0.3 shows "hour"); 7.2 prints a count scale with no dimension as
// "count x 10^3" where 6.0.3 and String print "x 10^3".
func (u Units) String() string {
	count := "count"
	switch s := int(u.ScaleCount()); s {
	case 0:
	case 1:
		count = "count x 10"
	default:
		count = "count x 10^" + strconv.Itoa(s)
	}
	dims := []struct {
		d    int
		name string
	}{
		{u.DimSpace(), u.ScaleSpace().String()},
		{u.DimTime(), u.ScaleTime().String()},
		{u.DimCount(), count},
	}
	power := func(name string, p int) string {
		if p == 1 {
			return name
		}
		return name + "^" + strconv.Itoa(p)
	}
	var parts []string
	if e, _ := u.extra(); e != "" {
		parts = append(parts, e)
	}
	for _, d := range dims {
		if d.d > 0 {
			parts = append(parts, power(d.name, d.d))
		}
	}
	if u.DimSpace() < 0 || u.DimTime() < 0 || u.DimCount() < 0 {
		parts = append(parts, "/")
		for _, d := range dims {
			if d.d < 0 {
				parts = append(parts, power(d.name, -d.d))
			}
		}
	}
	if len(parts) == 0 {
		// PCP's "historical behaviour": a count scale with no dimension.
		switch s := int(u.ScaleCount()); s {
		case 0:
			return ""
		case 1:
			return "x 10"
		default:
			return "x 10^" + strconv.Itoa(s)
		}
	}
	return strings.Join(parts, " ")
}
