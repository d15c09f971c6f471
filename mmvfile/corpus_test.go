package mmvfile_test

import (
	"bytes"
	"flag"
	"fmt"
	"hash/fnv"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/mmvfile"
)

var update = flag.Bool("update", false, "regenerate testdata/corpus with every writer installed, and its .lint files")

// A writer of the corpus: its directory under testdata/corpus, and how to
// run it into PCP_TMP_DIR=tmp, returning the names of the files it wrote
// into tmp/mmv. missing says why it cannot run here.
type corpusWriter struct {
	dir     string
	missing func() error
	run     func(t *testing.T, tmp string) []string
}

var corpusWriters = []corpusWriter{
	{"libpcp", pcptest.HasLibPCPMMV, func(t *testing.T, tmp string) []string {
		gen := filepath.Join(t.TempDir(), "gen")
		out, err := exec.Command("gcc", "testdata/corpus/libpcp/gen.c", "-o", gen, "-lpcp_mmv", "-lpcp", "-lm").CombinedOutput()
		require.NoError(t, err, "gcc: %s", out)
		return runWriter(t, tmp, gen)
	}},
	{"python", hasCommand("/usr/bin/python3", "-c", "import pcp.mmv"), func(t *testing.T, tmp string) []string {
		return runWriter(t, tmp, "/usr/bin/python3", "testdata/corpus/python/gen.py")
	}},
	{"perl", hasCommand("perl", "-MPCP::MMV", "-e", "1"), func(t *testing.T, tmp string) []string {
		return runWriter(t, tmp, "perl", "testdata/corpus/perl/gen.pl")
	}},
	{"speed", speedModule, func(t *testing.T, tmp string) []string {
		// Speed takes its directory from pcp.conf only.
		conf := filepath.Join(t.TempDir(), "pcp.conf")
		require.NoError(t, os.WriteFile(conf, []byte("PCP_TMP_DIR="+tmp+"\n"), 0o644))
		cmd := exec.Command("go", "run", ".")
		cmd.Dir = "testdata/corpus/speed"
		cmd.Env = append(os.Environ(), "PCP_TMP_DIR="+tmp, "PCP_CONF="+conf)
		return runCmd(t, cmd)
	}},
	{"mmv", func() error { return nil }, func(t *testing.T, tmp string) []string { return writeMMV(t, filepath.Join(tmp, "mmv")) }},
	{"handmade", func() error { return nil }, func(t *testing.T, tmp string) []string {
		return writeHandmade(t, filepath.Join(tmp, "mmv"))
	}},
}

// speedModule reports whether Speed's generator builds: its modules come
// from the Go module proxy.
func speedModule() error {
	cmd := exec.Command("go", "list", "-deps", ".")
	cmd.Dir = "testdata/corpus/speed"
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("Speed's generator: go list: %v: %s", err, out)
	}
	return nil
}

func hasCommand(name string, args ...string) func() error {
	return func() error {
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
		}
		return nil
	}
}

// runWriter runs a writer program with PCP_TMP_DIR=tmp.
func runWriter(t *testing.T, tmp, name string, args ...string) []string {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "PCP_TMP_DIR="+tmp)
	return runCmd(t, cmd)
}

func runCmd(t *testing.T, cmd *exec.Cmd) []string {
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "%s: %s", cmd, stderr.String())
	return strings.Fields(string(out))
}

// writeMMV writes the files of package mmv's writer.
func writeMMV(t *testing.T, dir string) []string {
	pcptest.NeedFileLayer(t)
	var names []string
	write := func(name string, opts mmv.Options, build func(r *mmv.Registry)) {
		opts.Dir = dir
		r := mmv.NewRegistry(name, &opts)
		build(r)
		require.NoError(t, r.Start())
		require.NoError(t, r.Flush())
		t.Cleanup(func() { r.Close() })
		names = append(names, name)
	}
	write("instruments", mmv.Options{Cluster: 321}, func(r *mmv.Registry) {
		mmv.NewCounter(r, "requests", "Requests served", mmv.Count).Add(12)
		mmv.NewGauge(r, "load", "Load", mmv.Count).Set(0.75)
		v := mmv.NewCounterVec(r, "hits", "Hits by route", mmv.Count, "route")
		v.With("/a").Add(3)
		v.With("/b").Add(4)
		h := mmv.NewHistogram(r, "latency", "Latency", mmv.Second, &mmv.HistogramOptions{Buckets: []float64{0.1, 1}})
		h.Observe(0.05)
		h.Observe(2)
	})
	write("labels", mmv.Options{Cluster: 322, Flags: mmv.NoPrefix}, func(r *mmv.Registry) {
		require.NoError(t, r.AddIndom(mmv.Indom{Serial: 2047, Instances: []mmv.Instance{{ID: 0, Name: "x"}, {ID: 1, Name: "y"}}}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "labels.m", Item: 1023, Type: mmv.Int64, Semantics: mmv.SemInstant, Indom: 2047}))
		require.NoError(t, r.AddLabel(mmv.Label{Name: "app", Value: "corpus"}))
		require.NoError(t, r.AddMetricLabel("labels.m", mmv.Label{Name: "unit", Value: "s", Optional: true}))
		require.NoError(t, r.AddIndomLabel(2047, mmv.Label{Name: "list", Value: []any{1, "two"}}))
		require.NoError(t, r.AddInstanceLabel(2047, 1, mmv.Label{Name: "which", Value: "y"}))
	})
	return names
}

// writeHandmade writes files no installed writer makes: other writers'
// traits (Parfait hashes names to items and serials, which PCP's Maven
// artifact would show were it reachable here) and every limit PCP's
// reader has, each just within and just beyond.
func writeHandmade(t *testing.T, dir string) []string {
	var names []string
	// put writes a file of our writer, patched.
	put := func(name string, opts mmv.Options, build func(r *mmv.Registry), patch func(b []byte, f *mmvfile.File)) {
		writeFile(t, dir, name, opts, build, patch)
		names = append(names, name)
	}
	hash22 := func(s string) uint32 {
		h := fnv.New32a()
		h.Write([]byte(s))
		return h.Sum32() & (1<<22 - 1)
	}
	// Parfait: items and indom serials are hashes of the names, beyond
	// PCP's 10-bit items and 11-bit serials.
	put("parfait", mmv.Options{Cluster: 77}, func(r *mmv.Registry) {
		require.NoError(t, r.AddIndom(mmv.Indom{Serial: 1, ShortHelp: "threads", Instances: []mmv.Instance{{ID: 1, Name: "main"}, {ID: 2, Name: "worker"}}}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "java.threads.cpu", Item: 1, Type: mmv.Uint64, Semantics: mmv.SemCounter, Units: mmv.Nanosecond, Indom: 1}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "java.heap.used", Item: 2, Type: mmv.Int64, Semantics: mmv.SemInstant, Units: mmv.Byte}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "java.gc.count", Item: 3, Type: mmv.Uint32, Semantics: mmv.SemCounter, Units: mmv.Count}))
	}, func(b []byte, f *mmvfile.File) {
		serial := hash22("threads")
		put32(b, f.Indoms[0].Offset, serial)
		for _, m := range f.Metrics {
			item := hash22(m.Name)
			if m.Name == "java.gc.count" {
				item &= mmv.MaxItem // one within PCP's items
			}
			put32(b, metricField(f, m, 0), item)
			if !m.Singular() {
				put32(b, metricField(f, m, 16), serial)
			}
		}
	})
	// The limits PCP's reader takes: cluster 4095 with no indoms, items 0
	// and 1023, a 63-byte name in a v1 file.
	put("limits_v1", mmv.Options{Cluster: 4095}, func(r *mmv.Registry) {
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "zero", Item: 1, Type: mmv.Int32, Semantics: mmv.SemCounter}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: strings.Repeat("n", 63), Item: 1023, Type: mmv.Uint32, Semantics: mmv.SemInstant}))
	}, func(b []byte, f *mmvfile.File) { put32(b, metricField(f, f.Metrics[0], 0), 0) })
	// Serials 1 and 2047, cluster 2047, a 255-byte name, 255 labels.
	put("limits_v3", mmv.Options{Cluster: 2047}, func(r *mmv.Registry) {
		require.NoError(t, r.AddIndom(mmv.Indom{Serial: 1, Instances: []mmv.Instance{{ID: 0, Name: strings.Repeat("i", 255)}}}))
		require.NoError(t, r.AddIndom(mmv.Indom{Serial: 2047, Instances: []mmv.Instance{{ID: 2147483647, Name: "max"}}}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: strings.Repeat("m", 255), Item: 1, Type: mmv.Uint64, Semantics: mmv.SemCounter, Indom: 1}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "b", Item: 2, Type: mmv.Double, Semantics: mmv.SemInstant, Indom: 2047}))
		for i := range mmv.MaxLabels - 1 {
			require.NoError(t, r.AddMetricLabel("b", mmv.Label{Name: fmt.Sprintf("l%03d", i), Value: i}))
		}
		require.NoError(t, r.AddLabel(mmv.Label{Name: "last", Value: strings.Repeat("v", 200)}))
	}, nil)
	// Just beyond: an item of 1024, serial 2048, semantics 0, a name PCP
	// refuses, one that is a prefix of another, a name taken twice.
	put("beyond", mmv.Options{Cluster: 78}, func(r *mmv.Registry) {
		require.NoError(t, r.AddIndom(mmv.Indom{Serial: 5, Instances: []mmv.Instance{{ID: 1, Name: "a"}}}))
		for i, n := range []string{"item", "sem", "bad_name", "a.b", "a_b.c", "twice", "twice_too"} {
			require.NoError(t, r.AddMetric(mmv.Metric{Name: n, Item: uint32(i + 1), Type: mmv.Uint64, Semantics: mmv.SemCounter, Indom: 5}))
		}
	}, func(b []byte, f *mmvfile.File) {
		put32(b, metricField(f, f.Metrics[0], 0), 1024)
		put32(b, metricField(f, f.Metrics[1], 8), 0)
		b[f.Metrics[2].Offset+3] = '-'             // "bad-name"
		b[f.Metrics[4].Offset+1] = '.'             // "a.b.c", under the leaf "a.b"
		copy(b[f.Metrics[6].Offset:], "twice\x00") // the name of metrics[5]
		put32(b, f.Indoms[0].Offset, 2048)         // serial 2048: cluster 79's indom 0
		for _, m := range f.Metrics {
			put32(b, metricField(f, m, 16), 2048)
		}
	})
	return names
}

// corpusFiles are the stored files of the corpus.
func corpusFiles(t *testing.T) []string {
	if ne.Uint16([]byte{1, 0}) != 1 {
		t.Skip("the corpus files are little-endian")
	}
	files, err := filepath.Glob("testdata/corpus/*/*.mmv")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	return files
}

// summary is what a file holds, in lines sorted: the same for two runs of
// a writer, whatever their times, process ids and record order.
func summary(f *mmvfile.File) []string {
	h := f.Header
	lines := []string{fmt.Sprintf("header version %d cluster %d flags %s", h.Version, h.Cluster, h.Flags)}
	for _, in := range f.Indoms {
		lines = append(lines, fmt.Sprintf("indom %d %q %q", in.Serial, in.ShortHelp.Text, in.LongHelp.Text))
	}
	for _, inst := range f.Instances {
		lines = append(lines, fmt.Sprintf("instance %d %d %q", inst.Indom.Serial, inst.ID, inst.Name))
	}
	for _, m := range f.Metrics {
		lines = append(lines, fmt.Sprintf("metric %q item %d %s sem %d units %#x indom %d %q %q",
			m.Name, m.Item, m.Type, m.Semantics, uint32(m.Units), m.Indom, m.ShortHelp.Text, m.LongHelp.Text))
	}
	for _, v := range f.Values {
		inst := ""
		if v.Instance != nil {
			inst = v.Instance.Name
		}
		val := fmt.Sprint(v.Int, v.Uint, v.Float, v.String)
		if v.Metric.Type == mmv.Elapsed && v.Extra < 0 {
			val = "open"
		}
		lines = append(lines, fmt.Sprintf("value %q %q %s", v.Metric.Name, inst, val))
	}
	for _, l := range f.Labels {
		lines = append(lines, fmt.Sprintf("label %#x %d %d %s", l.Flags, l.Identity, l.Internal, l.Payload))
	}
	slices.Sort(lines)
	return lines
}

// lintText is what the .lint file beside a corpus file holds: Parse's
// error, or Lint's findings, one a line.
func lintText(path string, b []byte) string {
	f, err := mmvfile.Parse(b)
	if err != nil {
		return "refused: " + err.Error() + "\n"
	}
	var s strings.Builder
	for _, fd := range f.Lint(strings.TrimSuffix(filepath.Base(path), ".mmv")) {
		s.WriteString(fd.String() + "\n")
	}
	return s.String()
}

// TestCorpusRegenerates runs every writer installed here and checks that
// it writes what the corpus holds; with -update it stores what it wrote.
func TestCorpusRegenerates(t *testing.T) {
	for _, w := range corpusWriters {
		t.Run(w.dir, func(t *testing.T) {
			if w.dir != "mmv" && w.dir != "handmade" {
				pcptest.MustHave(t, w.missing())
			}
			tmp := t.TempDir()
			require.NoError(t, os.Mkdir(filepath.Join(tmp, "mmv"), 0o755))
			names := w.run(t, tmp)
			require.NotEmpty(t, names)
			for _, name := range names {
				stored := filepath.Join("testdata/corpus", w.dir, name+".mmv")
				b, err := os.ReadFile(filepath.Join(tmp, "mmv", name))
				require.NoError(t, err)
				checkStored(t, stored, b)
			}
		})
	}
}

// TestCorpus: every corpus file is read as its .lint file says: refused
// with the error, or accepted with the findings.
func TestCorpus(t *testing.T) {
	for _, path := range corpusFiles(t) {
		t.Run(path, func(t *testing.T) {
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			got := lintText(path, b)
			golden := strings.TrimSuffix(path, ".mmv") + ".lint"
			if *update {
				require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
				return
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err)
			assert.Equal(t, string(want), got)
		})
	}
}

// TestCorpusInPCP: PCP's reader shows exactly the metrics of a corpus file
// that Lint does not say it skips.
func TestCorpusInPCP(t *testing.T) {
	pcptest.MustHavePCP(t)
	for _, path := range corpusFiles(t) {
		t.Run(path, func(t *testing.T) {
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			f, err := mmvfile.Parse(b)
			if err != nil {
				t.Skipf("refused: %v", err)
			}
			if f.Header.Flags&mmv.Process != 0 {
				put32(b, 32, uint32(os.Getpid())) // its writer is gone
			}
			name := strings.TrimSuffix(filepath.Base(path), ".mmv")
			skipped := map[string]bool{}
			for _, fd := range f.Lint(name) {
				if strings.HasPrefix(fd.Msg, "PCP skips the metric") {
					skipped[fd.Record] = true
				}
			}
			var want []string
			for i, m := range f.Metrics {
				if !skipped[fmt.Sprintf("metric [%d] at offset %d (%s)", i, m.Offset, m.Name)] {
					want = append(want, pcpName(f, name, m))
				}
			}
			got, stderr := pcpNames(t, name, b)
			if slices.ContainsFunc(f.Lint(name), func(fd mmvfile.Finding) bool { return strings.Contains(fd.Msg, "namespace build fails") }) {
				// PCP's namespace is broken: the names cannot be listed.
				assert.Contains(t, stderr, "Unknown metric name")
				return
			}
			assert.ElementsMatch(t, want, got, stderr)
		})
	}
}

// pcpNames writes b as the only file of a directory and returns the names
// PCP's reader (the PCP in use: pcptest.Pminfo) lists under mmv,
// mmv.control's aside, and all pminfo printed, standard error included.
func pcpNames(t *testing.T, name string, b []byte) ([]string, string) {
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "mmv"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "mmv", name), b, 0o644))
	out, _ := pcptest.Pminfo(t, dir, "mmv") // a broken namespace fails it: the caller looks
	var names []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "mmv.") && !strings.HasPrefix(l, "mmv.control.") && !strings.Contains(l, " ") {
			names = append(names, l)
		}
	}
	return names, out
}

// pcpName is the name PCP gives a metric of a file.
func pcpName(f *mmvfile.File, file string, m *mmvfile.Metric) string {
	if f.Header.Flags&mmv.NoPrefix != 0 {
		return "mmv." + m.Name
	}
	return "mmv." + file + "." + m.Name
}
