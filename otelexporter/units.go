package otelexporter

import (
	"math"
	"strings"

	"github.com/gopcp/mmv"
)

// ucum is what PCP units each UCUM unit the exporter knows is. PCP's
// space scales are powers of 1024, so only the binary multiples of By
// (KiBy...) have one; kBy, MBy and the like are unknown.
var ucum = map[string]mmv.Units{
	"":     mmv.NoUnits,
	"1":    mmv.NoUnits,
	"%":    mmv.NoUnits,
	"ns":   mmv.Nanosecond,
	"us":   mmv.Microsecond,
	"ms":   mmv.Millisecond,
	"s":    mmv.Second,
	"min":  mmv.Minute,
	"h":    mmv.Hour,
	"By":   mmv.Byte,
	"KiBy": mmv.Kbyte,
	"MiBy": mmv.Mbyte,
	"GiBy": mmv.Gbyte,
	"TiBy": mmv.Tbyte,
}

// unitsOf returns the PCP units of a UCUM unit, and whether it has them: a
// unit of the table, an annotation such as {request} (a count), or a
// quotient of two of those, such as By/s or {packet}/s. Any other is
// none.
func unitsOf(unit string) (mmv.Units, bool) {
	if num, den, ok := strings.Cut(unit, "/"); ok {
		n, okn := unitsOf(num)
		d, okd := unitsOf(den)
		if !okn || !okd || num == "" || den == "" || strings.Contains(den, "/") {
			return mmv.NoUnits, false
		}
		return n.Per(d), true
	}
	if strings.HasPrefix(unit, "{") && strings.HasSuffix(unit, "}") {
		return mmv.Count, true
	}
	u, ok := ucum[unit]
	return u, ok
}

// Scales of the fine units below, one per PCP scale number.
var (
	nsPer    = [...]float64{1, 1e3, 1e6, 1e9, 60e9, 3600e9}
	bytesPer = [...]float64{1, 1 << 10, 1 << 20, 1 << 30, 1 << 40}
)

// fine returns the units in which a float total of units u is kept as an
// integer counter, and how many of them one u is: nanoseconds for a time,
// bytes for a space, thousandths for a count or a dimensionless value,
// and u itself (rounded to whole units) for any other.
func fine(u mmv.Units) (mmv.Units, float64) {
	ts, time := u.Time()
	ss, space := u.Space()
	switch {
	case time && int(ts) < len(nsPer):
		return mmv.Nanosecond, nsPer[ts]
	case space && int(ss) < len(bytesPer):
		return mmv.Byte, bytesPer[ss]
	case u == mmv.Count:
		return mmv.NewUnits(0, 0, 1, 0, 0, -3), 1e3
	case u == mmv.NoUnits:
		return mmv.NewUnits(0, 0, 0, 0, 0, -3), 1e3
	}
	return u, 1
}

// count returns f times factor as a counter's value, rounded; ok is false
// for what a counter cannot hold: a negative value, NaN, 2^64 and beyond
// (all ones is PCP's "no value").
func count(f, factor float64) (n uint64, ok bool) {
	x := math.Round(f * factor)
	if !(x >= 0 && x < math.MaxUint64) {
		return 0, false
	}
	return uint64(x), true
}
