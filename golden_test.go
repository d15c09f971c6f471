package mmv_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/golden"
	"github.com/gopcp/mmv/internal/pcptest"
)

// The golden files in testdata/golden are what PCP's C writer, libpcp_mmv,
// writes for the scenarios below; testdata/golden/gen.c declares the same
// registries with libpcp's API, one function per scenario, in the same
// order and under the same names (TestGoldenFresh checks the list). See
// testdata/golden/README.md.
//
// Conventions shared with gen.c: a singular metric is MMV_INDOM_NULL in C;
// an empty help text here ("", which the Go API leaves out of the file) is
// NULL in C, where "" would still take a string slot.

const goldenDir = "testdata/golden"

// goldenScenario declares one registry. Its name is both the MMV file name
// and the golden file's name, <name>.mmv.
type goldenScenario struct {
	name    string
	opts    mmv.Options
	declare func(t testing.TB, r *mmv.Registry)
}

// goldenTypes are the eight value types, as gen.c's types[] lists them.
var goldenTypes = []struct {
	name  string
	typ   mmv.Type
	sem   mmv.Semantics
	units mmv.Units
}{
	{"i32", mmv.Int32, mmv.SemInstant, mmv.Count},
	{"u32", mmv.Uint32, mmv.SemCounter, mmv.Count},
	{"i64", mmv.Int64, mmv.SemInstant, mmv.Byte},
	{"u64", mmv.Uint64, mmv.SemCounter, mmv.Kbyte},
	{"float", mmv.Float, mmv.SemInstant, mmv.NoUnits},
	{"double", mmv.Double, mmv.SemInstant, mmv.Kbyte.Per(mmv.Second)},
	{"string", mmv.String, mmv.SemDiscrete, mmv.NoUnits},
	{"elapsed", mmv.Elapsed, mmv.SemCounter, mmv.Microsecond},
}

// goldenInsts builds instances from alternating ids and names.
func goldenInsts(idNames ...any) []mmv.Instance {
	var out []mmv.Instance
	for i := 0; i < len(idNames); i += 2 {
		out = append(out, mmv.Instance{ID: int32(idNames[i].(int)), Name: idNames[i+1].(string)})
	}
	return out
}

var goldenScenarios = []goldenScenario{
	{"empty", mmv.Options{Cluster: mmv.ReaderCluster}, func(t testing.TB, r *mmv.Registry) {}},

	{"types_singular", mmv.Options{Cluster: 1}, func(t testing.TB, r *mmv.Registry) {
		for i, ty := range goldenTypes {
			require.NoError(t, r.AddMetric(mmv.Metric{Name: ty.name, Item: uint32(i + 1), Type: ty.typ, Semantics: ty.sem,
				Units: ty.units, ShortHelp: "A singular " + ty.name}))
		}
	}},

	{"types_indom", mmv.Options{Cluster: 2}, func(t testing.TB, r *mmv.Registry) {
		require.NoError(t, r.AddIndom(mmv.Indom{Serial: 1, ShortHelp: "Workers", LongHelp: "The worker pool.",
			Instances: goldenInsts(0, "alpha", 1, "beta", 2, "gamma")}))
		for i, ty := range goldenTypes {
			require.NoError(t, r.AddMetric(mmv.Metric{Name: ty.name, Item: uint32(i + 1), Type: ty.typ, Semantics: ty.sem,
				Units: ty.units, Indom: 1, ShortHelp: "A " + ty.name + " per worker"}))
		}
	}},

	{"indom_help", mmv.Options{Cluster: 3}, func(t testing.TB, r *mmv.Registry) {
		ab := goldenInsts(0, "a", 1, "b")
		require.NoError(t, r.AddIndom(mmv.Indom{Serial: 1, ShortHelp: "Both texts", LongHelp: "Long help of indom 1.", Instances: ab}))
		require.NoError(t, r.AddIndom(mmv.Indom{Serial: 2, ShortHelp: "Short text only", Instances: ab}))
		require.NoError(t, r.AddIndom(mmv.Indom{Serial: 3, LongHelp: "Long text only.", Instances: ab}))
		require.NoError(t, r.AddIndom(mmv.Indom{Serial: 4, Instances: ab}))
		counter := func(name string, item, indom uint32, short, long string) mmv.Metric {
			return mmv.Metric{Name: name, Item: item, Type: mmv.Uint64, Semantics: mmv.SemCounter, Units: mmv.Count,
				Indom: indom, ShortHelp: short, LongHelp: long}
		}
		require.NoError(t, r.AddMetric(counter("on.one", 1, 1, "Metric on indom 1", "")))
		require.NoError(t, r.AddMetric(counter("on.two", 2, 2, "", "")))
		require.NoError(t, r.AddMetric(counter("on.three", 3, 3, "", "Long help of metric on.three.")))
		require.NoError(t, r.AddMetric(counter("on.four", 4, 4, "", "")))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "single", Item: 5, Type: mmv.Int32, Semantics: mmv.SemInstant, ShortHelp: "Singular"}))
	}},

	{"help", mmv.Options{Cluster: 4}, func(t testing.TB, r *mmv.Registry) {
		long255 := strings.Repeat("h", 255)
		for i, h := range [][2]string{
			{"", ""},
			{"Short only", ""},
			{"", "Long only."},
			{"Multi-line help", "First line.\nSecond line,\tindented.\n\nFourth line: UTF-8 é✓.\n"},
			{long255, long255},
		} {
			name := []string{"none", "short", "long", "multi", "longest"}[i]
			require.NoError(t, r.AddMetric(mmv.Metric{Name: name, Item: uint32(i + 1), Type: mmv.Uint32, Semantics: mmv.SemCounter,
				Units: mmv.Count, ShortHelp: h[0], LongHelp: h[1]}))
		}
	}},

	{"strings", mmv.Options{Cluster: 5}, func(t testing.TB, r *mmv.Registry) {
		require.NoError(t, r.AddIndom(mmv.Indom{Serial: 3, ShortHelp: "Colours", Instances: goldenInsts(10, "red", 20, "green", 30, "blue")}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "version", Item: 1, Type: mmv.String, Semantics: mmv.SemDiscrete, ShortHelp: "Version"}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "count", Item: 2, Type: mmv.Uint64, Semantics: mmv.SemCounter, Units: mmv.Count,
			Indom: 3, ShortHelp: "Count per colour"}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "name", Item: 3, Type: mmv.String, Semantics: mmv.SemInstant,
			Indom: 3, ShortHelp: "Name per colour", LongHelp: "One string per colour."}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "status", Item: 4, Type: mmv.String, Semantics: mmv.SemInstant}))
	}},

	{"elapsed", mmv.Options{Cluster: 6}, func(t testing.TB, r *mmv.Registry) {
		require.NoError(t, r.AddIndom(mmv.Indom{Serial: 2, ShortHelp: "Phases", Instances: goldenInsts(0, "parse", 1, "plan")}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "busy", Item: 1, Type: mmv.Elapsed, Semantics: mmv.SemCounter,
			Units: mmv.Microsecond, ShortHelp: "Busy time"}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "phase", Item: 2, Type: mmv.Elapsed, Semantics: mmv.SemCounter,
			Units: mmv.Millisecond, Indom: 2, ShortHelp: "Time per phase", LongHelp: "Milliseconds."}))
	}},

	{"units", mmv.Options{Cluster: 7}, func(t testing.TB, r *mmv.Registry) {
		for i, u := range []struct {
			name  string
			units mmv.Units
		}{
			{"none", mmv.NewUnits(0, 0, 0, 0, 0, 0)},
			{"count", mmv.NewUnits(0, 0, 1, 0, 0, 0)},
			{"kcount", mmv.NewUnits(0, 0, 1, 0, 0, 3)},
			{"centicount", mmv.NewUnits(0, 0, 1, 0, 0, -2)},
			{"bytes", mmv.NewUnits(1, 0, 0, mmv.ScaleByte, 0, 0)},
			{"mbyte2", mmv.NewUnits(2, 0, 0, mmv.ScaleMbyte, 0, 0)},
			{"kbyte_per_sec", mmv.NewUnits(1, -1, 0, mmv.ScaleKbyte, mmv.ScaleSec, 0)},
			{"gbyte_per_hour", mmv.NewUnits(1, -1, 0, mmv.ScaleGbyte, mmv.ScaleHour, 0)},
			{"nsec", mmv.NewUnits(0, 1, 0, 0, mmv.ScaleNanosec, 0)},
			{"per_min", mmv.NewUnits(0, -1, 1, 0, mmv.ScaleMin, 0)},
			{"count_per_usec2", mmv.NewUnits(0, -2, 1, 0, mmv.ScaleMicrosec, 0)},
		} {
			require.NoError(t, r.AddMetric(mmv.Metric{Name: u.name, Item: uint32(i + 1), Type: mmv.Double, Semantics: mmv.SemInstant, Units: u.units}))
		}
	}},

	{"v1_name_63", mmv.Options{Cluster: 8}, func(t testing.TB, r *mmv.Registry) {
		require.NoError(t, r.AddIndom(mmv.Indom{Serial: 1, Instances: goldenInsts(0, strings.Repeat("i", 63))}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: strings.Repeat("m", 63), Item: 1, Type: mmv.Uint64, Semantics: mmv.SemCounter,
			Units: mmv.Count, Indom: 1}))
	}},

	{"v2_metric_name", mmv.Options{Cluster: 9}, func(t testing.TB, r *mmv.Registry) {
		require.NoError(t, r.AddIndom(mmv.Indom{Serial: 1, ShortHelp: "Sides", Instances: goldenInsts(0, "left", 1, "right")}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "short.name", Item: 1, Type: mmv.Uint64, Semantics: mmv.SemCounter,
			Units: mmv.Count, Indom: 1, ShortHelp: "Short name"}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: strings.Repeat("m", 64), Item: 2, Type: mmv.Int32, Semantics: mmv.SemInstant,
			ShortHelp: "Long name", LongHelp: "64 bytes."}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "text", Item: 3, Type: mmv.String, Semantics: mmv.SemDiscrete,
			Indom: 1, ShortHelp: "Text per side"}))
	}},

	{"v2_instance_name", mmv.Options{Cluster: 10}, func(t testing.TB, r *mmv.Registry) {
		require.NoError(t, r.AddIndom(mmv.Indom{Serial: 1,
			Instances: goldenInsts(0, "short", 1, strings.Repeat("i", 64), 2, strings.Repeat("j", 255))}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "per.instance", Item: 1, Type: mmv.Uint32, Semantics: mmv.SemInstant,
			Units: mmv.Count, Indom: 1}))
	}},

	{"v3_labels", mmv.Options{Cluster: 11}, func(t testing.TB, r *mmv.Registry) {
		require.NoError(t, r.AddIndom(mmv.Indom{Serial: 1, ShortHelp: "Queues", Instances: goldenInsts(0, "q0", 1, "q1", 2, "q2")}))
		require.NoError(t, r.AddIndom(mmv.Indom{Serial: 2, Instances: goldenInsts(5, "only")}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "depth", Item: 1, Type: mmv.Uint32, Semantics: mmv.SemInstant,
			Units: mmv.Count, Indom: 1, ShortHelp: "Queue depth"}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "uptime", Item: 2, Type: mmv.Elapsed, Semantics: mmv.SemCounter, Units: mmv.Microsecond}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "other", Item: 3, Type: mmv.Double, Semantics: mmv.SemInstant, Indom: 2}))

		require.NoError(t, r.AddLabel(mmv.Label{Name: "service", Value: "billing"}))
		require.NoError(t, r.AddLabel(mmv.Label{Name: "replica", Value: 3, Optional: true}))
		require.NoError(t, r.AddMetricLabel("depth", mmv.Label{Name: "bounded", Value: true}))
		require.NoError(t, r.AddMetricLabel("depth", mmv.Label{Name: "limit", Value: nil, Optional: true}))
		require.NoError(t, r.AddMetricLabel("uptime", mmv.Label{Name: "ratio", Value: -2.5}))
		require.NoError(t, r.AddMetricLabel("other", mmv.Label{Name: "tags", Value: []any{1, "two", false, nil}}))
		require.NoError(t, r.AddIndomLabel(1, mmv.Label{Name: "kind", Value: "fifo"}))
		require.NoError(t, r.AddIndomLabel(2, mmv.Label{Name: "shape", Optional: true,
			Value: map[string]any{"w": []int{1, 2}, "h": 2, "ok": true}}))
		require.NoError(t, r.AddInstanceLabel(1, 0, mmv.Label{Name: "owner", Value: `say "hi"`}))
		require.NoError(t, r.AddInstanceLabel(1, 2, mmv.Label{Name: "weight", Value: 0.125, Optional: true}))
		require.NoError(t, r.AddInstanceLabel(2, 5, mmv.Label{Name: "empty", Value: map[string]any{}}))
		require.NoError(t, r.AddInstanceLabel(2, 5, mmv.Label{Name: "none", Value: []any{}}))
		require.NoError(t, r.AddLabel(mmv.Label{Name: "enabled", Value: false}))
		// The longest payload: 243 bytes and the NUL.
		require.NoError(t, r.AddInstanceLabel(1, 1, mmv.Label{Name: "maxed", Value: strings.Repeat("x", 231)}))
	}},

	{"indom_sizes", mmv.Options{Cluster: 12}, func(t testing.TB, r *mmv.Registry) {
		cpu := func(id int) mmv.Instance { return mmv.Instance{ID: int32(id), Name: fmt.Sprintf("cpu%d", id)} }
		var first []mmv.Instance
		for id := 19; id >= 10; id-- {
			first = append(first, cpu(id))
		}
		require.NoError(t, r.AddIndom(mmv.Indom{Serial: 100, ShortHelp: "No instances"}))
		require.NoError(t, r.AddIndom(mmv.Indom{Serial: 5, ShortHelp: "One instance", Instances: goldenInsts(42, "solo")}))
		require.NoError(t, r.AddIndom(mmv.Indom{Serial: 2047, ShortHelp: "Many instances", Instances: first}))
		require.NoError(t, r.AddIndom(mmv.Indom{Serial: 7, ShortHelp: "Unused", Instances: goldenInsts(1, "x")}))
		for i, in := range []uint32{100, 5, 2047} {
			name := []string{"zero", "one", "many"}[i]
			require.NoError(t, r.AddMetric(mmv.Metric{Name: name, Item: uint32(i + 1), Type: mmv.Uint64, Semantics: mmv.SemCounter,
				Units: mmv.Count, Indom: in}))
		}
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "many_again", Item: 4, Type: mmv.Float, Semantics: mmv.SemInstant, Indom: 2047}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "zero_text", Item: 5, Type: mmv.String, Semantics: mmv.SemInstant, Indom: 100}))
		for id := 9; id >= 0; id-- {
			require.NoError(t, r.AddInstance(2047, cpu(id)))
		}
	}},

	{"many_metrics", mmv.Options{Cluster: 13}, func(t testing.TB, r *mmv.Registry) {
		for i := range mmv.MaxMetrics {
			ty := goldenTypes[i%len(goldenTypes)]
			require.NoError(t, r.AddMetric(mmv.Metric{Name: fmt.Sprintf("m%04d", i+1), Item: uint32(i + 1), Type: ty.typ,
				Semantics: ty.sem, Units: ty.units}))
		}
	}},

	{"flags_noprefix", mmv.Options{Cluster: 14, Flags: mmv.NoPrefix}, func(t testing.TB, r *mmv.Registry) {
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "noprefix.hits", Item: 1, Type: mmv.Uint64, Semantics: mmv.SemCounter,
			Units: mmv.Count, ShortHelp: "Hits"}))
	}},

	{"flags_all", mmv.Options{Cluster: 2047, Flags: mmv.NoPrefix | mmv.Process | mmv.Sentinel}, func(t testing.TB, r *mmv.Registry) {
		require.NoError(t, r.AddIndom(mmv.Indom{Serial: 9, Instances: goldenInsts(0, "zero", 1, "one")}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "allflags.value", Item: 1, Type: mmv.Int64, Semantics: mmv.SemInstant,
			Indom: 9, ShortHelp: "Value"}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "allflags.text", Item: 2, Type: mmv.String, Semantics: mmv.SemDiscrete}))
	}},

	// The registry of examples/registry, declared in its order (issue 2,
	// item 9).
	{"quickstart", mmv.Options{Cluster: 42, Flags: mmv.Process}, func(t testing.TB, r *mmv.Registry) {
		require.NoError(t, r.AddIndom(mmv.Indom{Serial: 1, ShortHelp: "HTTP request methods",
			LongHelp:  "Request methods seen by the quickstart server.",
			Instances: goldenInsts(0, "GET", 1, "POST", 2, "PUT", 3, "DELETE")}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "requests.total", Item: 1, Type: mmv.Uint64, Semantics: mmv.SemCounter,
			Units: mmv.Count, Indom: 1, ShortHelp: "Requests served, by method"}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "requests.bytes", Item: 2, Type: mmv.Uint64, Semantics: mmv.SemCounter,
			Units: mmv.Byte, Indom: 1, ShortHelp: "Response bytes sent, by method",
			LongHelp: "Total size of the response bodies written, by request method."}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "inflight", Item: 3, Type: mmv.Int32, Semantics: mmv.SemInstant,
			Units: mmv.Count, ShortHelp: "Requests being served now"}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "busy.time", Item: 4, Type: mmv.Elapsed, Semantics: mmv.SemCounter,
			Units: mmv.Microsecond, ShortHelp: "Time spent serving requests"}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "load", Item: 5, Type: mmv.Double, Semantics: mmv.SemInstant,
			ShortHelp: "Requests per second, smoothed over one minute"}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "version", Item: 6, Type: mmv.String, Semantics: mmv.SemDiscrete,
			ShortHelp: "Server version"}))
	}},
}

// skipUnlessLittleEndian skips on big-endian hosts: MMV files are in host
// byte order and the goldens were written on a little-endian one.
func skipUnlessLittleEndian(t *testing.T) {
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("golden files are little-endian; this host is not")
	}
}

// TestGolden writes every scenario with the Go writer and compares the file
// with libpcp_mmv's, byte for byte, except the generation numbers, the pid
// and label payload bytes after the payload's NUL.
func TestGolden(t *testing.T) {
	skipUnlessLittleEndian(t)
	for _, sc := range goldenScenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			want, err := os.ReadFile(filepath.Join(goldenDir, sc.name+".mmv"))
			require.NoError(t, err)
			got := writeScenario(t, sc)
			assert.Empty(t, golden.Diff(got, want), "%s: our file differs from libpcp_mmv's (%s.mmv)", sc.name, sc.name)
		})
	}
}

// writeScenario declares and starts a scenario's registry in a temporary
// directory and returns the file's bytes.
func writeScenario(t *testing.T, sc goldenScenario) []byte {
	t.Helper()
	opts := sc.opts
	opts.Dir = t.TempDir()
	r := mmv.NewRegistry(sc.name, &opts)
	defer r.Close()
	sc.declare(t, r)
	if err := r.Start(); errors.Is(err, mmv.ErrUnsupported) {
		t.Skip(err)
	} else {
		require.NoError(t, err)
	}
	got, err := os.ReadFile(r.Path())
	require.NoError(t, err)
	return got
}

// TestGoldenFilesHaveScenarios keeps testdata/golden free of goldens no
// scenario checks.
func TestGoldenFilesHaveScenarios(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(goldenDir, "*.mmv"))
	require.NoError(t, err)
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".mmv")
		assert.True(t, slices.ContainsFunc(goldenScenarios, func(s goldenScenario) bool { return s.name == name }), "%s has no scenario in golden_test.go", f)
	}
}

// TestGoldenFresh rebuilds gen.c with libpcp_mmv, regenerates every file
// into a temporary directory and checks that the committed goldens are
// still what libpcp writes, and that gen.c lists the same scenarios as
// goldenScenarios, in the same order. It skips when gcc or libpcp_mmv is
// missing, unless MMV_REQUIRE_PCP=1.
func TestGoldenFresh(t *testing.T) {
	skipUnlessLittleEndian(t)
	tmp := t.TempDir()
	gen := buildGen(t, tmp)

	out, err := pcptest.Command(context.Background(), gen, "-l").Output()
	require.NoError(t, err)
	var names []string
	for _, sc := range goldenScenarios {
		names = append(names, sc.name)
	}
	require.Equal(t, names, strings.Fields(string(out)), "gen.c's scenarios differ from golden_test.go's")

	pcpTmp, outDir := filepath.Join(tmp, "pcp"), filepath.Join(tmp, "out")
	require.NoError(t, os.Mkdir(pcpTmp, 0o755))
	require.NoError(t, os.Mkdir(outDir, 0o755))
	cmd := pcptest.Command(context.Background(), gen, outDir)
	cmd.Env = append(os.Environ(), "PCP_TMP_DIR="+pcpTmp)
	out, err = cmd.CombinedOutput()
	require.NoError(t, err, "gen: %s", out)
	for _, sc := range goldenScenarios {
		fresh, err := os.ReadFile(filepath.Join(outDir, sc.name+".mmv"))
		require.NoError(t, err)
		want, err := os.ReadFile(filepath.Join(goldenDir, sc.name+".mmv"))
		require.NoError(t, err)
		assert.Empty(t, golden.Diff(fresh, want), "%s: libpcp_mmv now writes a different file; run testdata/golden/regen.sh "+
			"(offsets: fresh file vs committed golden)", sc.name)
	}
}

// buildGen compiles gen.c into dir against the libpcp_mmv of the PCP in
// use (pcptest.Root), skipping (or failing with MMV_REQUIRE_PCP=1) when gcc
// or libpcp_mmv is missing. Run it with pcptest.Command.
func buildGen(t *testing.T, dir string) string {
	t.Helper()
	gen := filepath.Join(dir, "gen")
	pcptest.BuildC(t, filepath.Join(goldenDir, "gen.c"), gen, "-lpcp_mmv", "-lpcp")
	return gen
}
