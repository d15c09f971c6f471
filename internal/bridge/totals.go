package bridge

import (
	"math"

	"github.com/gopcp/mmv"
)

// A float total (an OpenTelemetry float Sum, a runtime/metrics cumulative
// Float64) is published as a u64 counter, not a double: PCP's counter
// semantics (rates, wrap detection) are what a total needs, and a gauge
// would make tools show its level instead of its rate. Its units are
// finer than the total's, so that rounding loses little.

// Scales of the fine units below, one per PCP scale number.
var (
	nsPer    = [...]float64{1, 1e3, 1e6, 1e9, 60e9, 3600e9}
	bytesPer = [...]float64{1, 1 << 10, 1 << 20, 1 << 30, 1 << 40}
)

// Fine returns the units in which a float total of units u is kept as an
// integer counter, and how many of them one u is: nanoseconds for a time,
// bytes for a space, thousandths for a count or a dimensionless value,
// and u itself (rounded to whole units) for any other.
func Fine(u mmv.Units) (mmv.Units, float64) {
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

// Count returns f times factor as a counter's value, rounded; ok is false
// for what a counter cannot hold: a negative value, NaN, 2^64 and beyond
// (all ones is PCP's "no value").
func Count(f, factor float64) (n uint64, ok bool) {
	x := math.Round(f * factor)
	if !(x >= 0 && x < math.MaxUint64) {
		return 0, false
	}
	return uint64(x), true
}
