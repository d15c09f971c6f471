package prombridge

import (
	"math"
	"strings"

	dto "github.com/prometheus/client_model/go"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/bridge"
	"github.com/gopcp/mmv/internal/pcpname"
)

// Name returns the PCP name of a family of type t, below the registry's
// file and Options.Prefix: a counter's "_total" is dropped, and every byte
// that is not a letter, digit or '_' (':' of recording rules, UTF-8) becomes
// '_', with an "x" in front of a name that does not then start with a
// letter. The name has no dot: the bridge adds the only dots, before the
// suffixes of histograms and summaries.
func Name(family string, t dto.MetricType) string {
	if t == dto.MetricType_COUNTER {
		family = strings.TrimSuffix(family, "_total")
	}
	return pcpname.Part(family, "x")
}

// unitWords are the units that OpenMetrics names end with, and PCP's.
var unitWords = map[string]mmv.Units{
	"seconds":      mmv.Second,
	"milliseconds": mmv.Millisecond,
	"microseconds": mmv.Microsecond,
	"nanoseconds":  mmv.Nanosecond,
	"bytes":        mmv.Byte,
}

// Units returns the units of a family from its name, by the OpenMetrics
// naming conventions: the last word before an optional "_total" is the
// unit, "seconds" (and milli-, micro-, nanoseconds) a time, "bytes" a
// space; a name ending in "_total" with no such unit counts events (Count);
// any other name ("_ratio", "_percent", "_celsius", "_info", none) is
// dimensionless, PCP 6 having no dimension for temperatures, voltages and
// the like.
func Units(family string) mmv.Units {
	base, total := strings.CutSuffix(family, "_total")
	if i := strings.LastIndexByte(base, '_'); i >= 0 {
		if u, ok := unitWords[base[i+1:]]; ok {
			return u
		}
	}
	if total {
		return mmv.Count
	}
	return mmv.NoUnits
}

// integral returns the units a counter of units u is published in, PCP
// counters being integers, and the factor from u to them: seconds and
// milliseconds become microseconds, so that a counter of CPU seconds
// keeps its fraction; any other counter keeps its units, rounded. Most
// counters count whole events (requests_total), which thousandths would
// show a thousandfold in every tool, and a total's rounding is at most
// half a unit, never accumulated: it shows only in a counter that grows
// by fractions of its unit (0.4 shows 0).
func integral(u mmv.Units) (mmv.Units, float64) {
	switch u {
	case mmv.Second:
		return mmv.Microsecond, 1e6
	case mmv.Millisecond:
		return mmv.Microsecond, 1e3
	}
	return u, 1
}

// Thousandths of a count, and of a dimensionless value.
var (
	milliCount = mmv.NewUnits(0, 0, 1, 0, 0, -3)
	milli      = mmv.NewUnits(0, 0, 0, 0, 0, -3)
)

// µs in each time scale, ScaleNanosec..ScaleHour.
var usPer = [...]float64{1e-3, 1, 1e3, 1e6, 60e6, 3600e6}

// fine returns the units a histogram's or summary's sum of units u is
// published in, and the factor from u to them. A sum of observations is
// fractional by nature (a ratio histogram that observed 0.2), so it keeps
// its fraction: a count or a dimensionless value in thousandths ("count x
// 10^-3", "x 10^-3"), as otelexporter keeps float totals; a time coarser
// than microseconds in microseconds, as a counter's (not nanoseconds, as
// otelexporter's: a sum of request times of a busy service passes 2^64
// ns within years); a space in bytes. Any other units (a rate, from
// Options.Units) are kept, rounded.
func fine(u mmv.Units) (mmv.Units, float64) {
	if ts, ok := u.Time(); ok {
		if ts > mmv.ScaleMicrosec && int(ts) < len(usPer) {
			return mmv.Microsecond, usPer[ts]
		}
		return u, 1
	}
	if ss, ok := u.Space(); ok && ss <= mmv.ScaleEbyte {
		return mmv.Byte, math.Pow(1024, float64(ss))
	}
	switch u {
	case mmv.Count:
		return milliCount, 1e3
	case mmv.NoUnits:
		return milli, 1e3
	}
	return u, 1
}

// help returns a family's help text as mmv's help: its first line, then
// the rest as the long help, or long (when not empty) instead, each made
// a part of a help text mmv takes (bridge.Help: cut to 255 bytes, a NUL
// byte made a space).
func help(text, long string) string {
	short, rest, _ := strings.Cut(text, "\n")
	if long == "" {
		long = rest
	}
	return bridge.Help(short, long)
}
