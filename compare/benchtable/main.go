// Command benchtable writes the benchmark tables of compare/README.md and
// the summary in the repository's README.md from the output of one run of
// compare's benchmarks:
//
//	cd compare
//	go test -run '^$' -bench . -benchmem -count 5 -timeout 60m | tee testdata/bench.txt
//	go run ./benchtable testdata/bench.txt
//
// Every cell is the median of a benchmark's samples, and every ratio
// divides two medians of that one run, never figures of different runs.
// A table sits between a line "<!-- benchtable NAME -->" and a line
// "<!-- end benchtable -->", which are kept; what lies between them is
// replaced. main_test.go checks that the READMEs hold what benchtable makes
// of testdata/bench.txt, so a table cannot drift from the run it claims.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go run ./benchtable BENCH-OUTPUT (in compare/)")
		os.Exit(2)
	}
	if err := rewrite(os.Args[1], "README.md", filepath.Join("..", "README.md")); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
}

// rewrite replaces the tables of the READMEs with those made of the
// benchmark output in bench.
func rewrite(bench string, readmes ...string) error {
	tables, err := tablesOf(bench)
	if err != nil {
		return err
	}
	for _, path := range readmes {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out, err := fill(string(b), tables)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// tablesOf parses the benchmark output in the file bench and makes every
// table, by name.
func tablesOf(bench string) (map[string]string, error) {
	f, err := os.Open(bench)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rs, err := parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", bench, err)
	}
	tables := map[string]string{}
	for name, mk := range map[string]func(*results) (string, error){
		"updates": updates, "with": with, "declare": declare, "start": start, "growth": growth, "latency": latency, "summary": summary,
	} {
		if tables[name], err = mk(rs); err != nil {
			return nil, fmt.Errorf("%s: table %s: %w", bench, name, err)
		}
	}
	return tables, nil
}

// results are the samples of each benchmark, by unit, and the benchmarks
// in the order they ran.
type results struct {
	samples map[string]map[string][]float64
	order   []string
}

// benchLine is a result line: the name, less its -GOMAXPROCS suffix, and
// the iterations, then value-unit pairs.
var benchLine = regexp.MustCompile(`^Benchmark(\S+?)(?:-\d+)?\s+\d+\s+(.*)$`)

func parse(r io.Reader) (*results, error) {
	rs := &results{samples: map[string]map[string][]float64{}}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		name, f := m[1], strings.Fields(m[2])
		if len(f)%2 != 0 {
			return nil, fmt.Errorf("benchmark %s: odd value-unit fields %q", name, m[2])
		}
		if rs.samples[name] == nil {
			rs.samples[name] = map[string][]float64{}
			rs.order = append(rs.order, name)
		}
		for i := 0; i < len(f); i += 2 {
			x, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("benchmark %s: %w", name, err)
			}
			rs.samples[name][f[i+1]] = append(rs.samples[name][f[i+1]], x)
		}
	}
	if len(rs.order) == 0 {
		return nil, fmt.Errorf("no benchmark results")
	}
	return rs, sc.Err()
}

// median is the median of the samples of benchmark name in unit.
func (rs *results) median(name, unit string) (float64, error) {
	xs := slices.Clone(rs.samples[name][unit])
	if len(xs) == 0 {
		return 0, fmt.Errorf("no %s for benchmark %s", unit, name)
	}
	slices.Sort(xs)
	if n := len(xs); n%2 == 0 {
		return (xs[n/2-1] + xs[n/2]) / 2, nil
	}
	return xs[len(xs)/2], nil
}

// subs are the sub-benchmarks of benchmark family, in the order they ran.
func (rs *results) subs(family string) []string {
	var subs []string
	for _, name := range rs.order {
		if sub, ok := strings.CutPrefix(name, family+"/"); ok {
			subs = append(subs, sub)
		}
	}
	return subs
}

// A family is a benchmark of one kind of update, serial (Benchmark<Name>)
// and, when it has one, with RunParallel (Benchmark<Name>Parallel), whose
// ratios divide by its floor: the sub-benchmark floor of the family of
// that name (and of its Parallel twin). A family named ...Parallel has no
// serial twin: its results are the parallel column.
type family struct {
	name, what, floor string
}

var families = []family{
	{"Counter", "add 1 to one counter", "Counter/atomic"},
	{"Timer", "add 1.5µs of time spent", "Timer/atomic"},
	{"Set", "set an integer", "Set/atomic"},
	{"Gauge", "set a float", "Gauge/atomic"},
	{"GaugeAdd", "add 0.5 to a float", "GaugeAdd/atomic"},
	{"Histogram", "record one of 1,024 latencies (ratio to an atomic add)", "Counter/atomic"},
	{"HistogramSince", "record the time since a start (ratio to an atomic add)", "Counter/atomic"},
	{"VecCounter", "add 1 to one of 8 routes' counters", "VecCounter/atomic"},
	{"VecWith", "With on one of 1,024 routes, then add 1 (ratio to routes declared before Start)", "VecWith/mmv_declared"},
	{"NeighboursParallel", "two goroutines, each adding 1 to its own one of two neighbouring series", "NeighboursParallel/atomic"},
}

// updates is the table of every family's implementations.
func updates(rs *results) (string, error) {
	var b strings.Builder
	b.WriteString("| family | implementation | serial ns/op | ratio | parallel ns/op | ratio | allocs/op |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|\n")
	for _, f := range families {
		subs := rs.subs(f.name)
		if len(subs) == 0 {
			return "", fmt.Errorf("no results of family %s", f.name)
		}
		floor, err := rs.median(f.floor, "ns/op")
		if err != nil {
			return "", err
		}
		floorFamily, floorSub, _ := strings.Cut(f.floor, "/")
		parFloor, parErr := rs.median(floorFamily+"Parallel/"+floorSub, "ns/op")
		parallelOnly := strings.HasSuffix(f.name, "Parallel")
		for i, sub := range subs {
			what := ""
			if i == 0 {
				what = f.name + ": " + f.what
			}
			name := f.name + "/" + sub
			ns, err := rs.median(name, "ns/op")
			if err != nil {
				return "", err
			}
			allocs, err := rs.median(name, "allocs/op")
			if err != nil {
				return "", err
			}
			serial, ratioSerial := nanos(ns), ratio(ns, floor, f.floor == name)
			par, ratioPar := "", ""
			if parallelOnly {
				serial, ratioSerial, par, ratioPar = par, ratioPar, serial, ratioSerial
			} else if p, err := rs.median(f.name+"Parallel/"+sub, "ns/op"); err == nil && parErr == nil {
				par, ratioPar = nanos(p), ratio(p, parFloor, f.floor == name)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %g |\n", what, implementation(sub), serial, ratioSerial, par, ratioPar, allocs)
		}
	}
	return b.String(), nil
}

// implementation names a sub-benchmark: "atomic", or a library and what
// of it is called.
func implementation(sub string) string {
	if sub == "atomic" {
		return "atomic (the floor)"
	}
	lib, call, ok := strings.Cut(sub, "_")
	if !ok {
		return sub
	}
	return lib + " `" + call + "`"
}

func nanos(ns float64) string {
	switch {
	case ns >= 1e6:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	case ns >= 100:
		return addCommas(strconv.FormatFloat(ns, 'f', 0, 64))
	default:
		return strconv.FormatFloat(ns, 'g', 3, 64)
	}
}

func addCommas(s string) string {
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func ratio(x, base float64, isBase bool) string {
	switch r := x / base; {
	case isBase:
		return "**1.00x**"
	case r >= 100:
		return addCommas(strconv.FormatFloat(r, 'f', 0, 64)) + "x"
	default:
		return fmt.Sprintf("%.2fx", r)
	}
}

// with is the table of BenchmarkWith and its Parallel twin: With on
// existing values, each library's time and mmv's ratio to the fastest
// other.
func with(rs *results) (string, error) {
	libs := []struct{ sub, name string }{
		{"mmv_With.Inc", "mmv"}, {"prometheus_WithLabelValues.Inc", "client_golang"},
		{"victoriametrics_GetOrCreateCounter.Inc", "VictoriaMetrics"}, {"otel_Int64Counter.Add", "OTel"},
	}
	var b strings.Builder
	b.WriteString("| labels | values | goroutines |")
	for _, l := range libs {
		b.WriteString(" " + l.name + " |")
	}
	b.WriteString(" mmv ÷ the fastest other |\n|---|---:|---:|")
	b.WriteString(strings.Repeat("---:|", len(libs)+1) + "\n")
	for _, family := range []string{"With", "WithParallel"} {
		goroutines := map[string]string{"With": "1", "WithParallel": "2"}[family]
		for _, c := range []struct{ labels, values string }{
			{"1label", "8"}, {"1label", "1024"}, {"1label", "4096"}, {"3labels", "8"}, {"3labels", "1024"}, {"3labels", "4096"},
		} {
			fmt.Fprintf(&b, "| %s | %s | %s |", strings.TrimSuffix(strings.TrimSuffix(c.labels, "s"), "label"), addCommas(c.values), goroutines)
			var mmv, best float64
			for i, l := range libs {
				ns, err := rs.median(family+"/"+c.labels+"/"+c.values+"/"+l.sub, "ns/op")
				if err != nil {
					return "", err
				}
				if i == 0 {
					mmv = ns
				} else if best == 0 || ns < best {
					best = ns
				}
				fmt.Fprintf(&b, " %s |", nanos(ns))
			}
			fmt.Fprintf(&b, " %s |\n", ratio(mmv, best, false))
		}
	}
	return b.String(), nil
}

// declare is the table of BenchmarkDeclare: declaring and first using
// label values, ns per value, mmv before Start, with Start and after it,
// and the publication that gives the values declared after Start storage
// in a new file (the registry's timer's, off the first uses' path;
// measured as the Flush that follows them), against the others on new
// values, and mmv's ratios to the fastest.
func declare(rs *results) (string, error) {
	var b strings.Builder
	b.WriteString("| vectors × values | mmv before Start | mmv with Start | mmv after Start | its publication | client_golang | VictoriaMetrics | before ÷ the fastest other | after ÷ the fastest other |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, shape := range []string{"1x10", "1000x10", "1x10000"} {
		var v [6]float64
		for i, sub := range []string{"mmv/before", "mmv/before+start", "mmv/after", "mmv/after", "prometheus", "victoriametrics"} {
			unit := "ns/value"
			if i == 3 {
				unit = "flush-ns/op"
			}
			x, err := rs.median("Declare/"+shape+"/"+sub, unit)
			if err != nil {
				return "", err
			}
			v[i] = x
		}
		vecs, values, _ := strings.Cut(shape, "x")
		n, err := strconv.Atoi(vecs)
		if err != nil {
			return "", err
		}
		m, err := strconv.Atoi(values)
		if err != nil {
			return "", err
		}
		v[3] /= float64(n * m)
		best := min(v[4], v[5])
		fmt.Fprintf(&b, "| %s × %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", addCommas(vecs), addCommas(values),
			nanos(v[0]), nanos(v[1]), nanos(v[2]), nanos(v[3]), nanos(v[4]), nanos(v[5]), ratio(v[0], best, false), ratio(v[2], best, false))
	}
	return b.String(), nil
}

// start is the table of BenchmarkStart: mmv against libpcp_mmv.
func start(rs *results) (string, error) {
	var b strings.Builder
	b.WriteString("| registry | library | build | Start | total | ratio | peak RSS | ratio |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|\n")
	for _, sc := range []struct{ name, what string }{
		{"metrics", "1,000 metrics × 10 instances"}, {"instances", "10,000 instances, one indom"},
	} {
		var baseNs, baseRSS float64
		for _, lib := range []string{"libpcp_mmv", "mmv"} {
			name := "Start/" + sc.name + "/" + lib
			var v [4]float64
			for i, unit := range []string{"build-ns/op", "start-ns/op", "ns/op", "peak-RSS-KiB"} {
				x, err := rs.median(name, unit)
				if err != nil {
					return "", err
				}
				v[i] = x
			}
			if lib == "libpcp_mmv" {
				baseNs, baseRSS = v[2], v[3]
			}
			fmt.Fprintf(&b, "| %s | %s | %.2f ms | %.2f ms | %.2f ms | %s | %.1f MiB | %s |\n", sc.what, lib,
				v[0]/1e6, v[1]/1e6, v[2]/1e6, ratio(v[2], baseNs, lib == "libpcp_mmv"), v[3]/1024, ratio(v[3], baseRSS, lib == "libpcp_mmv"))
		}
	}
	return b.String(), nil
}

// growth is the table of BenchmarkGrowthStep: a step against its floor.
func growth(rs *results) (string, error) {
	var b strings.Builder
	b.WriteString("| instances | file | mmv step | floor | ratio |\n")
	b.WriteString("|---:|---:|---:|---:|---:|\n")
	for _, n := range []string{"1000", "10000"} {
		step, err := rs.median("GrowthStep/"+n+"/mmv", "ns/op")
		if err != nil {
			return "", err
		}
		floor, err := rs.median("GrowthStep/"+n+"/floor", "ns/op")
		if err != nil {
			return "", err
		}
		size, err := rs.median("GrowthStep/"+n+"/mmv", "file-bytes")
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "| %s | %.2f MB | %.2f ms | %.2f ms | %s |\n", addCommas(n), size/1e6, step/1e6, floor/1e6, ratio(step, floor, false))
	}
	return b.String(), nil
}

// latency is the table of BenchmarkFirstUseLatency: the distribution of
// first uses' latencies after Start, mmv's while publications grow the
// file under them and VictoriaMetrics' alike, and whether it stays flat:
// the mean of the last tenth over that of the first.
func latency(rs *results) (string, error) {
	var b strings.Builder
	b.WriteString("| caps | new values | library | p50 | p99 | largest | p99, last tenth | largest, last tenth | mean, first tenth | mean, last tenth | last ÷ first | over 0.3 ms |\n")
	b.WriteString("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, c := range []struct{ caps, values string }{{"default", "1,000"}, {"raised", "100,000"}} {
		for _, lib := range []string{"mmv", "victoriametrics"} {
			name := "FirstUseLatency/" + c.caps + "/" + lib
			fmt.Fprintf(&b, "| %s | %s | %s |", c.caps, c.values, lib)
			var first, last float64
			for _, unit := range []string{"p50-ns", "p99-ns", "max-ns", "p99-ns-last10%", "max-ns-last10%", "mean-ns-first10%", "mean-ns-last10%", "over-0.3ms"} {
				x, err := rs.median(name, unit)
				if err != nil {
					return "", err
				}
				switch unit {
				case "mean-ns-first10%":
					first = x
				case "mean-ns-last10%":
					last = x
				case "over-0.3ms":
					fmt.Fprintf(&b, " %s | %g |\n", ratio(last, first, false), x)
					continue
				}
				fmt.Fprintf(&b, " %s |", withUnit(x))
			}
		}
	}
	return b.String(), nil
}

// summary is the top-level README's: a line for each thing a service
// author weighs, against what it is compared with, where mmv is behind
// as where it is ahead. A row whose against ends in "/" compares with the
// fastest other library of that family; ns/op unless unit says.
func summary(rs *results) (string, error) {
	rows := []struct{ what, name, against, vs, unit string }{
		{"`With`, 1 label, 8 values", "With/1label/8/mmv_With.Inc", "With/1label/8/", "", ""},
		{"`With`, 3 labels, 4,096 values, 2 goroutines", "WithParallel/3labels/4096/mmv_With.Inc", "WithParallel/3labels/4096/", "", ""},
		{"`Histogram.Observe`, 2 goroutines", "HistogramParallel/mmv_Histogram.Observe", "HistogramParallel/", "", ""},
		{"`Counter.Inc`", "Counter/mmv_Counter.Inc", "Counter/atomic", "an atomic add", ""},
		{"`Counter.Inc`, 2 goroutines", "CounterParallel/mmv_Counter.Inc", "CounterParallel/atomic", "an atomic add", ""},
		{"`Timer.Observe`, 2 goroutines", "TimerParallel/mmv_Timer.Observe", "TimerParallel/atomic", "an atomic add", ""},
		{"`IntGauge.Set`, 2 goroutines", "SetParallel/mmv_IntGauge.Set", "SetParallel/atomic", "an atomic store", ""},
		{"`Gauge.Set`, 2 goroutines", "GaugeParallel/mmv_Gauge.Set", "GaugeParallel/atomic", "an atomic store", ""},
		{"`Histogram.Observe`", "Histogram/mmv_Histogram.Observe", "Histogram/", "", ""},
		{"a new label value, 1,000 vectors × 10, before Start", "Declare/1000x10/mmv/before", "Declare/1000x10/", "", "ns/value"},
		{"a new label value, 1 vector × 10,000, before Start", "Declare/1x10000/mmv/before", "Declare/1x10000/", "", "ns/value"},
		{"a new label value of a histogram vector, 1,000 values, before Start", "DeclareHistogram/mmv/before", "DeclareHistogram/", "", "ns/value"},
		{"a new label value of a histogram vector, 1,000 values, after Start", "DeclareHistogram/mmv/after", "DeclareHistogram/", "", "ns/value"},
		{"neighbouring instances, 2 goroutines", "NeighboursParallel/mmv_cached.Inc", "NeighboursParallel/mmv_padded_cached.Inc", "the same, `PadValues`", ""},
		{"build and Start, 1,000 metrics × 10", "Start/metrics/mmv", "Start/metrics/libpcp_mmv", "libpcp_mmv (C)", ""},
		{"build and Start, 10,000 instances", "Start/instances/mmv", "Start/instances/libpcp_mmv", "libpcp_mmv (C)", ""},
		{"a growth step, 10,000 instances", "GrowthStep/10000/mmv", "GrowthStep/10000/floor", "writing a file as large", ""},
	}
	var b strings.Builder
	b.WriteString("| operation | mmv | compared with | its time | ratio |\n")
	b.WriteString("|---|---:|---|---:|---:|\n")
	for _, r := range rows {
		if strings.HasSuffix(r.against, "/") { // the fastest other library of the family
			var err error
			if r.against, r.vs, err = rs.fastestOther(r.against); err != nil {
				return "", err
			}
		}
		if r.unit == "" {
			r.unit = "ns/op"
		}
		x, err := rs.median(r.name, r.unit)
		if err != nil {
			return "", err
		}
		y, err := rs.median(r.against, r.unit)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", r.what, withUnit(x), r.vs, withUnit(y), ratio(x, y, false))
	}
	return b.String(), nil
}

// fastestOther is the sub-benchmark under prefix of the library other
// than mmv (and not the floor) with the least median, and what it is.
func (rs *results) fastestOther(prefix string) (name, what string, err error) {
	var best float64
	for _, n := range rs.order {
		sub, ok := strings.CutPrefix(n, prefix)
		if !ok || strings.Contains(sub, "/") || sub == "atomic" || strings.HasPrefix(sub, "mmv_") {
			continue
		}
		ns, err := rs.median(n, "ns/op")
		if err != nil {
			return "", "", err
		}
		if name == "" || ns < best {
			name, best = n, ns
		}
	}
	if name == "" {
		return "", "", fmt.Errorf("no other library's results under %s", prefix)
	}
	return name, "the fastest other, " + implementation(strings.TrimPrefix(name, prefix)), nil
}

func withUnit(ns float64) string {
	if ns >= 1e5 {
		return fmt.Sprintf("%.2f ms", ns/1e6)
	}
	return nanos(ns) + " ns"
}

// fill replaces the body of every benchtable block of readme with its
// table; a block naming no table is an error.
func fill(readme string, tables map[string]string) (string, error) {
	const end = "<!-- end benchtable -->"
	var out strings.Builder
	rest := readme
	for {
		i := strings.Index(rest, "<!-- benchtable ")
		if i < 0 {
			out.WriteString(rest)
			return out.String(), nil
		}
		j := strings.Index(rest[i:], "-->")
		if j < 0 {
			return "", fmt.Errorf("unterminated benchtable marker")
		}
		name := strings.TrimSpace(rest[i+len("<!-- benchtable ") : i+j])
		table, ok := tables[name]
		if !ok {
			return "", fmt.Errorf("no table %q", name)
		}
		k := strings.Index(rest[i:], end)
		if k < 0 {
			return "", fmt.Errorf("benchtable %s has no %q", name, end)
		}
		out.WriteString(rest[:i+j+len("-->")] + "\n" + table)
		rest = rest[i+k:]
		out.WriteString(rest[:len(end)])
		rest = rest[len(end):]
	}
}
