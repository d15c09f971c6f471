package otelexporter

import (
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
// quotient of two of those, such as By/s or {packet}/s, but for one of
// two scales of one dimension (ms/s, KiBy/By: see quotient). Any other
// is none.
func unitsOf(unit string) (mmv.Units, bool) {
	if num, den, ok := strings.Cut(unit, "/"); ok {
		n, okn := unitsOf(num)
		d, okd := unitsOf(den)
		if !okn || !okd || num == "" || den == "" || strings.Contains(den, "/") {
			return mmv.NoUnits, false
		}
		return quotient(n, d)
	}
	if strings.HasPrefix(unit, "{") && strings.HasSuffix(unit, "}") {
		return mmv.Count, true
	}
	u, ok := ucum[unit]
	return u, ok
}

// quotient returns the units n per d, and whether PCP has them. A
// dimension both have cancels: of one scale (s/s, By/By) the value is a
// plain ratio; of two (ms/s, min/h, KiBy/By) it is a ratio only once
// scaled (by 1/1000, 1/60, 1024), which PCP's units cannot say (a
// cancelled dimension has no scale). The value is not scaled: an int64
// gauge cannot hold 500 ms/s as 0.5, and the scaled value would differ
// from what the program recorded, in the same instrument's other
// exporters too. So such a unit is one PCP has none for: none, with the
// help naming it. The scale of a cancelled dimension is cleared, so that
// s/s is NoUnits (as fine expects: a float total in thousandths), not
// none with a time scale left over, which Per keeps.
func quotient(n, d mmv.Units) (mmv.Units, bool) {
	if n.DimSpace() != 0 && d.DimSpace() != 0 && n.ScaleSpace() != d.ScaleSpace() ||
		n.DimTime() != 0 && d.DimTime() != 0 && n.ScaleTime() != d.ScaleTime() ||
		n.DimCount() != 0 && d.DimCount() != 0 && n.ScaleCount() != d.ScaleCount() {
		return mmv.NoUnits, false
	}
	q := n.Per(d)
	var ss mmv.SpaceScale
	var ts mmv.TimeScale
	var cs mmv.CountScale
	if q.DimSpace() != 0 {
		ss = q.ScaleSpace()
	}
	if q.DimTime() != 0 {
		ts = q.ScaleTime()
	}
	if q.DimCount() != 0 {
		cs = q.ScaleCount()
	}
	return mmv.NewUnits(q.DimSpace(), q.DimTime(), q.DimCount(), ss, ts, cs), true
}
