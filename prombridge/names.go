package prombridge

import (
	"strings"
	"unicode/utf8"

	dto "github.com/prometheus/client_model/go"

	"github.com/gopcp/mmv"
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

// integral returns the units an integer counter of units u is published
// in, and the factor from u to them: seconds and milliseconds become
// microseconds, so that a counter of CPU seconds keeps its fraction.
func integral(u mmv.Units) (mmv.Units, float64) {
	switch u {
	case mmv.Second:
		return mmv.Microsecond, 1e6
	case mmv.Millisecond:
		return mmv.Microsecond, 1e3
	}
	return u, 1
}

// maxHelp is the longest help text PCP keeps.
const maxHelp = 255

// help returns a family's help text as mmv's help: its first line, then
// the rest as the long help, each cut to maxHelp bytes on a UTF-8
// boundary, and long (when not empty) as the long help instead.
func help(text, long string) string {
	short, rest, _ := strings.Cut(text, "\n")
	if long == "" {
		long = rest
	}
	if long == "" {
		return cut(short)
	}
	return cut(short) + "\n" + cut(long)
}

// cut returns s cut to maxHelp bytes, on a UTF-8 boundary.
func cut(s string) string {
	if len(s) <= maxHelp {
		return s
	}
	n := maxHelp
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
