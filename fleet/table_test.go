package fleet

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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
// size, then each variant against the service at the same size.
func renderScaleTable(runs []scaleRun) string {
	runs = slices.Clone(runs)
	slices.SortStableFunc(runs, func(a, b scaleRun) int {
		if a.Hosts != b.Hosts {
			return a.Hosts - b.Hosts
		}
		return slices.IndexFunc(variants, func(v variant) bool { return v.name == a.Variant }) -
			slices.IndexFunc(variants, func(v variant) bool { return v.name == b.Variant })
	})
	var b strings.Builder
	b.WriteString("| hosts | records per host | series | series per host | instances per host | key-server memory | per host | per series | load | hosts/s | /api all hosts | one host | p99 all hosts | one host, whole range |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range runs {
		if r.Variant != variants[0].name {
			continue
		}
		fmt.Fprintf(&b, "| %d | %d | %d | %.0f | %.0f | %s | %s | %.0f B | %.1fs | %.1f |", r.Hosts, r.Records, r.Series, r.SeriesPerHost, r.InstPerHost,
			mib(float64(r.MemoryBytes)), kib(r.MemoryPerHost), r.MemoryPerSeries, r.LoadSeconds, r.HostsPerSecond)
		for _, q := range r.Queries {
			fmt.Fprintf(&b, " %.0fms (%d series, %d values) |", q.MS, q.Series, q.Values)
		}
		b.WriteString("\n")
	}
	b.WriteString("\nWhat each option trims, per host (same recording, same fleet size):\n\n")
	b.WriteString("| variant | hosts | series per host | instances per host | memory per host | vs. the service | /metrics scrape of one host |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	for _, r := range runs {
		i := slices.IndexFunc(runs, func(o scaleRun) bool { return o.Variant == variants[0].name && o.Hosts == r.Hosts })
		if i < 0 || (r.Variant == variants[0].name && !slices.ContainsFunc(runs, func(o scaleRun) bool { return o.Hosts == r.Hosts && o.Variant != r.Variant })) {
			continue
		}
		base := runs[i]
		fmt.Fprintf(&b, "| %s: %s | %d | %.0f | %.0f | %s | %+.0f%% | %.0fms, %d samples, %s |\n", r.Variant, r.What, r.Hosts, r.SeriesPerHost, r.InstPerHost,
			kib(r.MemoryPerHost), 100*(r.MemoryPerHost/base.MemoryPerHost-1), r.ScrapeMS, r.ScrapeSamples, kib(float64(r.ScrapeBytes)))
	}
	return b.String()
}

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

// TestScaleTable checks that docs/fleet.md's table is the one the
// committed measurements render: a measurement rerun and committed
// without its table, or a table edited by hand, fails.
func TestScaleTable(t *testing.T) {
	runs, err := readResults(filepath.Join("testdata", "scale.json"))
	require.NoError(t, err)
	require.NotEmpty(t, runs)
	doc, err := os.ReadFile(filepath.Join("..", "docs", "fleet.md"))
	require.NoError(t, err)
	_, table, _, err := scaleSection(string(doc))
	require.NoError(t, err, "docs/fleet.md")
	require.Equal(t, renderScaleTable(runs), table,
		"docs/fleet.md's scale table is not the one fleet/testdata/scale.json renders: rerun TestFleetScale with -fleet.out=testdata/scale.json")
}
