package compare

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/mmvfile"
	"github.com/performancecopilot/speed/v4"
)

// Speed numbers a metric's item (the last 10 bits of its PMID) by hashing
// the metric's name into 10 bits, and nothing checks that two metrics of a
// file got different items. The tests below find, through Speed's public
// API only, the shortest run of realistic names (requests.route0,
// requests.route1, ...) in which two names get the same item, show the file
// Speed writes for them is one that mmv's reader refuses (and that PCP
// drops one of the two metrics), and that mmv gives the same names distinct
// items.

// collisions are the shortest runs TestSpeedItemCollision finds for two
// ways of naming a metric per route. The hash is fixed, so they are the same
// at every run.
var collisions = []struct {
	pattern     string // a metric name with %d for the route number
	first, last int    // pattern%first and pattern%last share an item
}{
	{"requests.route%d", 109, 202}, // 203 names
	{"route%d.requests", 0, 40},    // 41 names
}

// speedItem returns the item Speed gives a counter named name, as read back
// from the file of a client holding that metric alone.
func speedItem(t *testing.T, name string) uint32 {
	t.Helper()
	c := speedClient(t, "item", must(speed.NewPCPCounter(0, name))(t))
	defer c.Stop()
	f, err := mmvfile.Open(filepath.Join(tmpDir, "mmv", "item"))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Metrics) != 1 || f.Metrics[0].Name != name {
		t.Fatalf("Speed's file for %s holds %v", name, f.Metrics)
	}
	return f.Metrics[0].Item
}

func TestSpeedItemCollision(t *testing.T) {
	for _, tc := range collisions {
		t.Run(strings.ReplaceAll(tc.pattern, "%d", "N"), func(t *testing.T) { speedItemCollision(t, tc.pattern, tc.first, tc.last) })
	}
}

func speedItemCollision(t *testing.T, pattern string, wantFirst, wantLast int) {
	name := func(i int) string { return fmt.Sprintf(pattern, i) }
	// The shortest prefix of pattern%0, pattern%1, ... with two names on
	// one item.
	owner := map[uint32]int{}
	first, last, item := -1, -1, uint32(0)
	for i := 0; i <= mmv.MaxItem+1; i++ {
		it := speedItem(t, name(i))
		if j, ok := owner[it]; ok {
			first, last, item = j, i, it
			break
		}
		owner[it] = i
	}
	if first < 0 {
		t.Fatal("no collision in 1025 names: impossible with 10-bit items")
	}
	n := last + 1
	t.Logf("Speed: in the %d metrics %s..%s, %s and %s both get item %d",
		n, name(0), name(last), name(first), name(last), item)
	if first != wantFirst || last != wantLast {
		t.Errorf("found %s and %s colliding, want %s and %s", name(first), name(last), name(wantFirst), name(wantLast))
	}

	// Speed writes the n metrics into one file without complaint; PCP's
	// reader loads it and skips the second metric of the item, which
	// mmvfile's Lint reports.
	var ms []speed.Metric
	for i := range n {
		ms = append(ms, must(speed.NewPCPCounter(0, name(i)))(t))
	}
	c := speedClient(t, "collide", ms...)
	f, err := mmvfile.Open(filepath.Join(tmpDir, "mmv", "collide"))
	c.Stop()
	if err != nil {
		t.Fatalf("mmvfile.Open(Speed's file): %v", err)
	}
	// Speed lays metrics out in map order: either name may come second.
	want := fmt.Sprintf("PCP skips the metric: item %d is also the metric's at offset", item)
	var found []string
	for _, fd := range f.Lint("collide") {
		if fd.Rule == mmvfile.RuleDuplicateItem && strings.Contains(fd.Msg, want) &&
			(strings.Contains(fd.Record, "("+name(first)+")") || strings.Contains(fd.Record, "("+name(last)+")")) {
			found = append(found, fd.String())
		}
	}
	if len(found) != 1 {
		t.Fatalf("Lint(Speed's file) = %v, want one %s naming %s or %s and %q", f.Lint("collide"), mmvfile.RuleDuplicateItem, name(first), name(last), want)
	}
	t.Logf("Speed's Start: no error; mmvfile's Lint: %s", found[0])

	// mmv, given the same names and no items, numbers them apart.
	pcptest.NeedFileLayer(t)
	r := mmv.NewRegistry("collide", &mmv.Options{Dir: t.TempDir()})
	for i := range n {
		if err := r.AddMetric(mmv.Metric{Name: name(i), Type: mmv.Uint64, Semantics: mmv.SemCounter}); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	f, err = mmvfile.Open(r.Path())
	if err != nil {
		t.Fatalf("mmvfile.Open(mmv's file): %v", err)
	}
	items := map[uint32]string{}
	for _, m := range f.Metrics {
		if o, dup := items[m.Item]; dup {
			t.Errorf("mmv: %s and %s share item %d", o, m.Name, m.Item)
		}
		items[m.Item] = m.Name
	}
	if len(items) != n {
		t.Errorf("mmv's file has %d distinct items, want %d", len(items), n)
	}
	var got []string
	for _, i := range []int{first, last} {
		for _, m := range f.Metrics {
			if m.Name == name(i) {
				got = append(got, fmt.Sprintf("%s item %d", m.Name, m.Item))
			}
		}
	}
	t.Logf("mmv: %d distinct items; %s", len(items), strings.Join(got, ", "))
}

// TestSpeedItemCollisionInPCP shows what PCP's own reader makes of two
// metrics on one item: it keeps one and drops the other (which one depends
// on the order of Speed's map). It needs PCP installed.
func TestSpeedItemCollisionInPCP(t *testing.T) {
	pcptest.MustHavePCP(t)
	tc := collisions[0]
	names := []string{fmt.Sprintf(tc.pattern, tc.first), fmt.Sprintf(tc.pattern, tc.last)}
	a := must(speed.NewPCPCounter(0, names[0]))(t)
	b := must(speed.NewPCPCounter(0, names[1]))(t)
	c := speedClient(t, "pcpcollide", a, b)
	defer c.Stop()
	a.MustInc(11)
	b.MustInc(22)
	var shown []string
	for _, m := range pcptest.Info(t, tmpDir) {
		if name, ok := strings.CutPrefix(m.Name, "mmv.pcpcollide."); ok {
			shown = append(shown, name)
			t.Logf("PCP shows %s PMID %s value %s", m.Name, m.PMID, m.Value)
		}
	}
	if len(shown) != 1 {
		t.Fatalf("PCP shows %v of Speed's metrics %v, want one of them", shown, names)
	}
	t.Logf("PCP dropped %s", names[1-slices.Index(names, shown[0])])
}
