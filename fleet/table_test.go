package fleet

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The table of measurements in docs/fleet.md lies between these markers,
// rendered from testdata/scale.json by renderScaleTable.
const (
	tableBegin = "<!-- scale table: generated from fleet/testdata/scale.json by TestFleetScale -fleet.out; checked by TestScaleTable -->\n"
	tableEnd   = "<!-- end of scale table -->\n"
)

// renderScaleTable renders the measurements: the service at each fleet
// size, the operator's queries, one host's series by part of the service,
// and each variant against the service at the same size.
func renderScaleTable(runs []scaleRun) string {
	runs = slices.Clone(runs)
	rank := func(r scaleRun) int {
		return slices.IndexFunc(variants, func(v variant) bool { return v.name == r.Variant })
	}
	slices.SortStableFunc(runs, func(a, b scaleRun) int {
		if a.Hosts != b.Hosts {
			return a.Hosts - b.Hosts
		}
		if a.Records != b.Records {
			return a.Records - b.Records
		}
		return rank(a) - rank(b)
	})
	var base []scaleRun
	for _, r := range runs {
		if r.Variant == variants[0].name {
			base = append(base, r)
		}
	}
	if len(base) == 0 {
		return "no measurement of " + variants[0].name + "\n"
	}
	var b strings.Builder
	b.WriteString("| hosts | records per host | series | per host | instances per host | key-server memory | per host | per series | load | hosts/s | records/s |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range base {
		fmt.Fprintf(&b, "| %d | %d | %d | %.0f | %.0f | %s | %s | %s | %.1fs | %.1f | %.0f |\n", r.Hosts, r.Records, r.Series, r.SeriesPerHost, r.InstPerHost,
			mib(float64(r.MemoryBytes)), kib(r.MemoryPerHost), kib(r.MemoryPerSeries), r.LoadSeconds, r.HostsPerSecond, r.HostsPerSecond*float64(r.Records))
	}

	b.WriteString("\nQueries (pmseries, median of 3, process start included; series and values returned):\n\n| query |")
	for _, r := range base {
		fmt.Fprintf(&b, " %d hosts, %d records |", r.Hosts, r.Records)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(base)) + "\n")
	for i, q := range base[0].Queries {
		// The expression as at every size: "one host" is the last.
		expr := hostRE.ReplaceAllString(q.Expr[strings.Index(q.Expr, ".http.")+1:], "fleet-<last>")
		fmt.Fprintf(&b, "| %s: `%s` |", q.Name, expr)
		for _, r := range base {
			if i < len(r.Queries) {
				fmt.Fprintf(&b, " %.0fms (%d, %d) |", r.Queries[i].MS, r.Queries[i].Series, r.Queries[i].Values)
			} else {
				b.WriteString(" |")
			}
		}
		b.WriteString("\n")
	}

	one := base[0]
	var total int64
	for _, p := range one.Parts {
		total += p.Bytes
	}
	fmt.Fprintf(&b, "\nOne host's series by part of the service (%d hosts, %d records; MEMORY USAGE of each series' own keys, %s of the %s per host, the rest being the indexes hosts share):\n\n", one.Hosts, one.Records, kib(float64(total)), kib(one.MemoryPerHost))
	b.WriteString("| part | series | instances | memory | share |\n|---|---|---|---|---|\n")
	for _, p := range one.Parts {
		fmt.Fprintf(&b, "| %s | %d | %d | %s | %.0f%% |\n", p.Group, p.Series, p.Instances, kib(float64(p.Bytes)), 100*float64(p.Bytes)/float64(total))
	}

	b.WriteString("\nWhat each option trims, per host (one recording of all variants, same fleet size):\n\n")
	b.WriteString("| variant | hosts | records | series per host | instances per host | memory per host | vs. the service | /metrics of one host |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, r := range runs {
		i := slices.IndexFunc(base, func(o scaleRun) bool { return o.Hosts == r.Hosts && o.Records == r.Records })
		variantsHere := slices.ContainsFunc(runs, func(o scaleRun) bool { return o.Hosts == r.Hosts && o.Records == r.Records && o.Variant != r.Variant })
		if i < 0 || !variantsHere {
			continue
		}
		fmt.Fprintf(&b, "| %s: %s | %d | %d | %.0f | %.0f | %s | %+.0f%% | %.0fms, %d samples, %s |\n", r.Variant, r.What, r.Hosts, r.Records, r.SeriesPerHost, r.InstPerHost,
			kib(r.MemoryPerHost), 100*(r.MemoryPerHost/base[i].MemoryPerHost-1), r.ScrapeMS, r.ScrapeSamples, kib(float64(r.ScrapeBytes)))
	}
	return b.String()
}

var hostRE = regexp.MustCompile(`fleet-\d{4}`)

func kib(n float64) string { return fmt.Sprintf("%.0f KiB", n/1024) }
func mib(n float64) string { return fmt.Sprintf("%.1f MiB", n/(1<<20)) }

// readResults reads the measurements of a JSON file.
func readResults(path string) ([]scaleRun, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var runs []scaleRun
	if err := json.Unmarshal(b, &runs); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return runs, nil
}

// scaleSection returns doc's text before, between and after the markers.
func scaleSection(doc string) (before, table, after string, err error) {
	i := strings.Index(doc, tableBegin)
	j := strings.Index(doc, tableEnd)
	if i < 0 || j < i {
		return "", "", "", fmt.Errorf("no scale table markers (%q ... %q)", strings.TrimSpace(tableBegin), strings.TrimSpace(tableEnd))
	}
	return doc[:i+len(tableBegin)], doc[i+len(tableBegin) : j], doc[j:], nil
}

// writeScaleTable renders the results file into the doc's table.
func writeScaleTable(results, docPath string) error {
	runs, err := readResults(results)
	if err != nil {
		return err
	}
	doc, err := os.ReadFile(docPath)
	if err != nil {
		return err
	}
	before, _, after, err := scaleSection(string(doc))
	if err != nil {
		return fmt.Errorf("%s: %v", docPath, err)
	}
	return os.WriteFile(docPath, []byte(before+renderScaleTable(runs)+after), 0o644)
}

var updateTable = flag.Bool("fleet.update", false, "TestScaleTable: rewrite docs/fleet.md's table from testdata/scale.json")

// TestScaleTable checks that docs/fleet.md's table is the one the
// committed measurements render: a measurement rerun and committed
// without its table, or a table edited by hand, fails.
func TestScaleTable(t *testing.T) {
	if *updateTable {
		require.NoError(t, writeScaleTable(filepath.Join("testdata", "scale.json"), filepath.Join("..", "docs", "fleet.md")))
	}
	runs, err := readResults(filepath.Join("testdata", "scale.json"))
	require.NoError(t, err)
	require.NotEmpty(t, runs)
	doc, err := os.ReadFile(filepath.Join("..", "docs", "fleet.md"))
	require.NoError(t, err)
	_, table, _, err := scaleSection(string(doc))
	require.NoError(t, err, "docs/fleet.md")
	require.Equal(t, renderScaleTable(runs), table,
		"docs/fleet.md's scale table is not the one fleet/testdata/scale.json renders: rerun TestFleetScale with -fleet.out=testdata/scale.json, or go test -run TestScaleTable -fleet.update")
}
