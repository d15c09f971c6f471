package mmvtest

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/gopcp/mmv"
)

// Listing returns the metrics of r, or those that metrics select, as text
// for a test to compare (see Compare): a line per metric, its name, then
// its semantics, type, units and labels (as PCP shows them: a name the
// registry, the metric's indom and the metric give has the value of the
// last, see MetricSnapshot.Labels), and its value when singular; a
// line per instance below a metric over instances, its name, labels and
// value:
//
//	http.requests: counter uint64 (count)
//	  "route=/api,status=200" {route="/api",status="200"} = 3
//	uptime: instant double (sec) {app="web"} = 6.5
//
// Help texts are left out. A name in metrics selects the metric of that
// name and those below it: "http.latency" selects a histogram's
// http.latency.count, http.latency.bucket... Metrics come sorted by name,
// the registry's own (mmv.*) with them when selected.
func Listing(r *mmv.Registry, metrics ...string) (string, error) {
	ms, err := r.Snapshot()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, m := range ms {
		if !selected(m.Name, metrics) {
			continue
		}
		fmt.Fprintf(&b, "%s: %s %s (%s)", m.Name, m.Semantics, typeName(m.Type), unitsName(m.Units))
		if ls := shown(m.Labels); len(ls) > 0 {
			b.WriteString(" " + labels(ls))
		}
		if m.Indom == 0 {
			b.WriteString(" = " + format(m.Values[0].Value) + "\n")
			continue
		}
		b.WriteString("\n")
		for _, iv := range m.Values {
			fmt.Fprintf(&b, "  %q", iv.Instance)
			if len(iv.Labels) > 0 {
				b.WriteString(" " + labels(iv.Labels))
			}
			b.WriteString(" = " + format(iv.Value) + "\n")
		}
	}
	return b.String(), nil
}

// Compare compares the metrics of r, or those that metrics select, with
// expected, a listing as Listing writes it, and returns nil when they
// match, else an error holding the lines that differ (-expected, +got)
// with the lines around them. Lines are compared without their leading
// and trailing white space, and blank lines are ignored, so expected may
// be an indented raw string. Values compare as numbers, equal within a
// relative 1e-9, so that a float sum need not be written to its last bit
// (0.35 matches 0.35000000000000003); integers, counts, exactly, and an
// infinity only itself.
func Compare(r *mmv.Registry, expected string, metrics ...string) error {
	got, err := Listing(r, metrics...)
	if err != nil {
		return err
	}
	want, have := lines(expected), lines(got)
	if d := diff(want, have); d != "" {
		return fmt.Errorf("mmvtest: registry %q does not hold the metrics expected (-expected +got):\n%s", r.Name(), d)
	}
	return nil
}

// selected reports whether metrics select name: all do when none is given.
func selected(name string, metrics []string) bool {
	if len(metrics) == 0 {
		return true
	}
	for _, m := range metrics {
		if name == m || strings.HasPrefix(name, m+".") {
			return true
		}
	}
	return false
}

func lines(s string) []string {
	var ls []string
	for l := range strings.SplitSeq(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			ls = append(ls, l)
		}
	}
	return ls
}

var typeNames = map[mmv.Type]string{mmv.Int32: "int32", mmv.Uint32: "uint32", mmv.Int64: "int64", mmv.Uint64: "uint64",
	mmv.Float: "float", mmv.Double: "double", mmv.String: "string", mmv.Elapsed: "elapsed"}

func typeName(t mmv.Type) string {
	if n, ok := typeNames[t]; ok {
		return n
	}
	return t.String()
}

func unitsName(u mmv.Units) string {
	if s := u.String(); s != "" {
		return s
	}
	return "none"
}

// shown returns the labels PCP shows of ls, which Snapshot lists in PCP's
// order of precedence: each name once, with its last value.
func shown(ls []mmv.Label) []mmv.Label {
	var out []mmv.Label
	for i, l := range ls {
		if !slices.ContainsFunc(ls[i+1:], func(o mmv.Label) bool { return o.Name == l.Name }) {
			out = append(out, l)
		}
	}
	return out
}

// labels writes labels as {name=value,...}, each value in JSON as the
// file holds it and PCP shows it (mmv writes it with encoding/json, HTML's
// characters as they are, not json.Marshal's \u0026).
func labels(ls []mmv.Label) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		v := fmt.Sprint(l.Value)
		if enc.Encode(l.Value) == nil {
			v = strings.TrimSuffix(b.String(), "\n")
		}
		parts[i] = l.Name + "=" + v
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// format writes a snapshot's value: numbers as Go formats them, shortest,
// strings quoted, "(no value)" for none.
func format(v any) string {
	switch v := v.(type) {
	case nil:
		return "(no value)"
	case float32:
		return strconv.FormatFloat(float64(v), 'g', -1, 32)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case string:
		return strconv.Quote(v)
	}
	return fmt.Sprint(v)
}

// diff returns the lines of a and b that differ, "-" for a's and "+" for
// b's, with up to two common lines around each change; "" when a and b
// are equal. A longest common subsequence: listings are short.
func diff(a, b []string) string {
	n, m := len(a), len(b)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if same(a[i], b[j]) {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type line struct {
		op   byte
		text string
	}
	var ops []line
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && same(a[i], b[j]):
			ops = append(ops, line{' ', a[i]})
			i, j = i+1, j+1
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, line{'-', a[i]})
			i++
		default:
			ops = append(ops, line{'+', b[j]})
			j++
		}
	}
	const context = 2
	var out strings.Builder
	last := -1 // the last line written
	for k, o := range ops {
		if o.op == ' ' {
			continue
		}
		from := max(k-context, last+1)
		if last >= 0 && from > last+1 {
			out.WriteString("  ...\n")
		}
		for c := from; c < k; c++ {
			out.WriteString("  " + ops[c].text + "\n")
		}
		out.WriteString(string(o.op) + " " + o.text + "\n")
		last = k
		for c := k + 1; c < len(ops) && c <= k+context && ops[c].op == ' '; c++ {
			out.WriteString("  " + ops[c].text + "\n")
			last = c
		}
	}
	return out.String()
}

// same reports whether two listing lines say the same: equal, or equal
// but for their values, numbers within a relative 1e-9 of each other
// (integers equal, infinities the same).
func same(a, b string) bool {
	if a == b {
		return true
	}
	i, j := strings.LastIndex(a, " = "), strings.LastIndex(b, " = ")
	if i < 0 || j < 0 || a[:i] != b[:j] {
		return false
	}
	x, err1 := strconv.ParseFloat(a[i+3:], 64)
	y, err2 := strconv.ParseFloat(b[j+3:], 64)
	n, ok1 := integer(a[i+3:])
	m, ok2 := integer(b[j+3:])
	switch {
	case err1 != nil || err2 != nil:
		return false
	case ok1 && ok2: // counts exactly, where the tolerance took 1000000001 for 1000000000
		return n == m
	case math.IsInf(x, 0) || math.IsInf(y, 0): // where Inf <= Inf made it any number's equal
		return x == y
	}
	return math.Abs(x-y) <= 1e-9*math.Max(math.Abs(x), math.Abs(y))
}

// integer returns s, written as an integer, in a canonical form, and
// whether it is one.
func integer(s string) (string, bool) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return strconv.FormatInt(n, 10), true
	}
	if n, err := strconv.ParseUint(s, 10, 64); err == nil {
		return strconv.FormatUint(n, 10), true
	}
	return "", false
}
