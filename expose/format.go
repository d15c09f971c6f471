package expose

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcpname"
)

// Append appends r's metrics in format f to b (see the package doc for
// how a registry's metrics become Prometheus's).
func Append(b []byte, r *mmv.Registry, f Format) []byte {
	e := encoder{b: b, om: f == OpenMetrics, taken: map[string]bool{}}
	r.Gather(e.family)
	if e.om {
		e.b = append(e.b, "# EOF\n"...)
	}
	return e.b
}

// encoder writes families; its slices are kept from one family to the
// next.
type encoder struct {
	b     []byte
	om    bool
	taken map[string]bool // the names of the families written
	outer []pair          // the family's labels
	ls    []pair          // one sample's
}

type pair struct{ name, value string }

func (e *encoder) family(f *mmv.Family) {
	if f.Type == mmv.String {
		return
	}
	units, counter := f.Units, f.Semantics == mmv.SemCounter // an Elapsed metric's as PCP's reader exports them (Gather)
	unit, scale := baseUnit(units)
	name := strings.ReplaceAll(f.Name, ".", "_")
	if f.Bounds != nil {
		counter = false
	}
	if counter {
		name = strings.TrimSuffix(name, "_total")
	}
	if unit != "" && !strings.HasSuffix(name, "_"+unit) {
		name += "_" + unit
	}
	// The text format names a counter's family as its sample, OpenMetrics
	// without the _total.
	family := name
	if counter && !e.om {
		family += "_total"
	}
	// Every name the family writes must be free, its own family's name
	// too: a_b.c is left out after a.b_c, a gauge x_total after counter x.
	names := [...]string{name, "", "", ""}
	switch {
	case f.Bounds != nil:
		names[1], names[2], names[3] = name+"_bucket", name+"_sum", name+"_count"
	case counter:
		names[1] = name + "_total"
	}
	for _, n := range names {
		if n != "" && e.taken[n] {
			return
		}
	}
	for _, n := range names {
		e.taken[n] = true
	}
	typ := "gauge"
	switch {
	case f.Bounds != nil:
		typ = "histogram"
	case counter:
		typ = "counter"
	}
	e.meta("TYPE", family, typ)
	if unit != "" && e.om {
		e.meta("UNIT", family, unit)
	}
	if help := f.ShortHelp; help != "" {
		e.b = append(e.b, "# HELP "...)
		e.b = append(e.b, family...)
		e.b = append(e.b, ' ')
		e.b = e.escape(e.b, help, e.om)
		e.b = append(e.b, '\n')
	}

	// le is a histogram's buckets': a PCP label of that name (a histogram
	// vector refuses a label le of its own) is renamed exported_le, as
	// Prometheus renames a clash, where le twice failed the whole scrape
	// in the text format; exported_exported_le when the histogram has a
	// label exported_le, and so on, as Prometheus renames again, where two
	// label values became one label, and two instances one series. So is
	// a label le of any other family, such as per-bucket counts (goruntime's
	// NAME.bucket), which histogram_quantile read as cumulative buckets
	// (TestLeOutsideHistograms). Named when met: finding a name free
	// reads every sample's labels.
	var le string
	// instname is the name of an instance that is not a vector's, its
	// identity as le is a bucket's: a PCP label of that name, the
	// instance's own or one above it, is renamed as le is, where the
	// instance's own replaced its name (two instances labelled alike were
	// one series twice, a value lost) and one above it was replaced by it.
	named := f.LabelNames == nil && len(f.Samples) > 0 && f.Samples[0].Instance != ""
	var instname string // what a PCP label instname is renamed to
	if named {
		instname = pcpname.Unclash(pcpname.Exported+"instname", func(n string) bool { return labelled(f, n) })
	}
	labelName := func(n string) string {
		if n == "le" {
			if le == "" {
				le = pcpname.Unclash(pcpname.Exported+"le", func(n string) bool { return labelled(f, n) })
			}
			return le
		}
		return n
	}
	pcpLabel := func(n string) string {
		if n == "instname" && named {
			return instname
		}
		return labelName(n)
	}
	e.outer = e.outer[:0]
	for _, l := range f.Labels {
		e.outer = set(e.outer, pcpLabel(l.Name), labelValue(l.Value))
	}
	sample := name
	if counter {
		sample += "_total"
	}
	for i := range f.Samples {
		s := &f.Samples[i]
		e.ls = append(e.ls[:0], e.outer...)
		for _, l := range s.Labels {
			e.ls = set(e.ls, pcpLabel(l.Name), labelValue(l.Value))
		}
		if named {
			e.ls = set(e.ls, "instname", s.Instance)
		}
		if s.Values != nil {
			for j, v := range s.Values {
				e.ls = set(e.ls, labelName(f.LabelNames[j]), v)
			}
		} else if f.LabelNames != nil {
			e.ls = set(e.ls, "instname", s.Instance) // not a name of the vector's form
		}
		if f.Bounds == nil {
			e.series(sample, "", 0)
			e.value(s.Value, f.Type, scale)
			continue
		}
		var cum uint64
		for j, n := range s.Buckets {
			cum += n
			e.series(name+"_bucket", "le", scale.of(f.Bounds[j]))
			e.b = strconv.AppendUint(e.b, cum, 10)
			e.b = append(e.b, '\n')
		}
		e.series(name+"_sum", "", 0)
		e.b = appendFloat(e.b, scale.of(s.Sum))
		e.b = append(e.b, '\n')
		e.series(name+"_count", "", 0)
		e.b = strconv.AppendUint(e.b, s.Count, 10)
		e.b = append(e.b, '\n')
	}
}

func (e *encoder) meta(what, family, text string) {
	e.b = append(e.b, "# "...)
	e.b = append(e.b, what...)
	e.b = append(e.b, ' ')
	e.b = append(e.b, family...)
	e.b = append(e.b, ' ')
	e.b = append(e.b, text...)
	e.b = append(e.b, '\n')
}

// series writes a sample's name and labels (e.ls, then le when given),
// and the space before its value.
func (e *encoder) series(name, le string, bound float64) {
	e.b = append(e.b, name...)
	if len(e.ls) > 0 || le != "" {
		e.b = append(e.b, '{')
		for i, l := range e.ls {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.b = append(e.b, l.name...)
			e.b = append(e.b, `="`...)
			e.b = e.escape(e.b, l.value, true)
			e.b = append(e.b, '"')
		}
		if le != "" {
			if len(e.ls) > 0 {
				e.b = append(e.b, ',')
			}
			e.b = append(e.b, `le="`...)
			e.b = appendFloat(e.b, bound)
			e.b = append(e.b, '"')
		}
		e.b = append(e.b, '}')
	}
	e.b = append(e.b, ' ')
}

// value writes v, scaled to base units, and the end of the line: integers
// exactly when there is no scale.
func (e *encoder) value(v *mmv.Value, t mmv.Type, scale factor) {
	switch {
	case scale != unscaled || t == mmv.Double || t == mmv.Float:
		e.b = appendFloat(e.b, scale.of(v.Float()))
	case t == mmv.Uint64:
		e.b = strconv.AppendUint(e.b, uint64(v.Int()), 10)
	default:
		e.b = strconv.AppendInt(e.b, v.Int(), 10)
	}
	e.b = append(e.b, '\n')
}

// escape appends s escaped: a label value's backslash, newline and double
// quote; a help text's backslash and newline, and its double quote in
// OpenMetrics (quote). Bytes that are not UTF-8, which Prometheus's
// parsers refuse, become U+FFFD.
func (e *encoder) escape(b []byte, s string, quote bool) []byte {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b = append(b, `\\`...)
		case c == '\n':
			b = append(b, `\n`...)
		case c == '"' && quote:
			b = append(b, `\"`...)
		default:
			b = append(b, c)
		}
	}
	return b
}

func appendFloat(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, 1):
		return append(b, "+Inf"...)
	case math.IsInf(f, -1):
		return append(b, "-Inf"...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}

// set sets label name to value in ls, replacing one of that name.
func set(ls []pair, name, value string) []pair {
	for i := range ls {
		if ls[i].name == name {
			ls[i].value = value
			return ls
		}
	}
	return append(ls, pair{name, value})
}

// labelled reports whether any of f's labels is named name: a vector's,
// a PCP label of the family or of one of its samples.
func labelled(f *mmv.Family, name string) bool {
	if slices.Contains(f.LabelNames, name) || has(f.Labels, name) {
		return true
	}
	for i := range f.Samples {
		if has(f.Samples[i].Labels, name) {
			return true
		}
	}
	return false
}

func has(ls []mmv.Label, name string) bool {
	for _, l := range ls {
		if l.Name == name {
			return true
		}
	}
	return false
}

// labelValue is a PCP label's value as a Prometheus label's: a string
// itself, anything else its JSON text as the file holds it and PCP shows
// it (mmv writes it with encoding/json, HTML characters as they are): a
// float64 of 1234567 is 1234567, where strconv's 'g' made 1.234567e+06,
// another series than PCP's. A value whose JSON is a string (a named
// string type, a time.Time) is that string, as PCP shows it, where its
// JSON text kept the quotes.
func labelValue(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case bool:
		return strconv.FormatBool(v)
	case int:
		return strconv.Itoa(v)
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	j := strings.TrimSuffix(b.String(), "\n")
	var s string
	if strings.HasPrefix(j, `"`) && json.Unmarshal([]byte(j), &s) == nil {
		return s
	}
	return j
}

// baseUnit returns the Prometheus base unit of units, and the factor from
// units to it: seconds for a time, bytes for a size, none for the rest.
func baseUnit(u mmv.Units) (string, factor) {
	if s, ok := u.Time(); ok && s >= 0 && int(s) < len(seconds) {
		return "seconds", seconds[s]
	}
	if s, ok := u.Space(); ok {
		return "bytes", factor{math.Pow(1024, float64(s)), 1}
	}
	return "", unscaled
}

// factor converts a value to its base unit: times mul, divided by div.
// A fraction of a second is a division by a power of ten, which is
// exact where a product by 1e-3 is not: a bound of 700 ms was
// le="0.7000000000000001", 10 µs le="9.999999999999999e-06".
type factor struct{ mul, div float64 }

var unscaled = factor{1, 1}

func (f factor) of(x float64) float64 { return x * f.mul / f.div }

var seconds = [...]factor{{1, 1e9}, {1, 1e6}, {1, 1e3}, {1, 1}, {60, 1}, {3600, 1}}
