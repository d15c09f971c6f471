package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/mmvfile"
)

// mmvdump runs the command on a file and returns its output.
func mmvdump(t *testing.T, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	var o, e bytes.Buffer
	status = run(args, &o, &e, time.Now)
	return o.String(), e.String(), status
}

// openInterval is an open elapsed interval's running time, which the two
// tools measure at different times.
var openInterval = regexp.MustCompile(`= -?\d+ (\(value=-?\d+/extra=-\d+\))`)

// compareWithPCP checks that mmvdump prints file as PCP's mmvdump does,
// byte for byte, and exits with its status: the mmvdump of the PCP in use
// (pcptest.Version: 6.0.3 on the host, 7.2 under MMV_PCP_ROOT), which
// -pcp selects.
func compareWithPCP(t *testing.T, file string) {
	t.Helper()
	ours, stderr, status := mmvdump(t, "-pcp", pcptest.Version(), file)
	pcp, pcpStderr, pcpStatus := pcptest.DumpExit(t, file)
	if pcpStatus < 0 {
		t.Skipf("PCP's mmvdump crashed on %s (%s): nothing to compare", file, pcpStderr)
	}
	assert.Equal(t, openInterval.ReplaceAllString(pcp, "= OPEN $1"), openInterval.ReplaceAllString(ours, "= OPEN $1"), "mmvdump %s", file)
	assert.Equal(t, pcpStatus, status, "exit status of mmvdump %s (stderr %q, PCP's %q)", file, stderr, pcpStderr)
}

// compareGlobWithPCP compares the files of a glob, which are
// little-endian, with PCP's mmvdump, each a subtest named by its path
// after dir.
func compareGlobWithPCP(t *testing.T, dir, glob string) {
	pcptest.MustHavePCP(t)
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("the files are little-endian")
	}
	files, err := filepath.Glob(filepath.Join(dir, glob))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		t.Run(strings.TrimPrefix(file, dir+"/"), func(t *testing.T) { compareWithPCP(t, file) })
	}
}

func TestGoldenFilesAsPCP(t *testing.T) { compareGlobWithPCP(t, "../../testdata/golden", "*.mmv") }

// TestCorpusAsPCP: every file of mmvfile's corpus (libpcp_mmv, PCP's
// Python and Perl bindings, Speed, mmv, and hand-made files at PCP's
// limits and past them) prints as PCP's mmvdump prints it.
func TestCorpusAsPCP(t *testing.T) { compareGlobWithPCP(t, "../../mmvfile/testdata/corpus", "*/*.mmv") }

// writerScenarios are registries of our writer; each returns the registry
// started, its values updated.
var writerScenarios = []struct {
	name  string
	opts  mmv.Options
	build func(t *testing.T, r *mmv.Registry)
}{
	{"singular_v1", mmv.Options{Cluster: 7}, func(t *testing.T, r *mmv.Registry) {
		for i, typ := range []mmv.Type{mmv.Int32, mmv.Uint32, mmv.Int64, mmv.Uint64, mmv.Float, mmv.Double, mmv.String, mmv.Elapsed} {
			require.NoError(t, r.AddMetric(mmv.Metric{Name: "m" + strconv.Itoa(i), Type: typ, Semantics: mmv.SemInstant,
				Units: mmv.Kbyte.Per(mmv.Second), ShortHelp: "short " + typ.String()}))
		}
		require.NoError(t, r.Start())
		set := func(name string, f func(v *mmv.Value)) {
			v, err := r.Value(name, "")
			require.NoError(t, err)
			f(v)
		}
		set("m0", func(v *mmv.Value) { v.Set(-42) })
		set("m1", func(v *mmv.Value) { v.Set(math.MaxUint32) })
		set("m2", func(v *mmv.Value) { v.Set(math.MinInt64) })
		set("m3", func(v *mmv.Value) { v.Set(-1) })
		set("m4", func(v *mmv.Value) { v.SetFloat(math.Inf(-1)) })
		set("m5", func(v *mmv.Value) { v.SetFloat(1e300) })
		set("m6", func(v *mmv.Value) { require.NoError(t, v.SetString("a \"quoted\" string")) })
		set("m7", func(v *mmv.Value) { v.AddDuration(1500 * time.Millisecond) })
	}},
	{"indoms_v2", mmv.Options{Flags: mmv.Process | mmv.Sentinel}, func(t *testing.T, r *mmv.Registry) {
		long := strings.Repeat("x", 200)
		require.NoError(t, r.AddIndom(mmv.Indom{Serial: 5, ShortHelp: "disks", LongHelp: "all\nthe disks",
			Instances: []mmv.Instance{{ID: 1, Name: "sda"}, {ID: 2, Name: long}}}))
		require.NoError(t, r.AddIndom(mmv.Indom{Serial: 2047}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "disk.bytes", Type: mmv.Uint64, Semantics: mmv.SemCounter, Units: mmv.Byte, Indom: 5}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "disk.none", Item: 1023, Type: mmv.Double, Semantics: mmv.SemInstant, Indom: 2047}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "disk.time", Type: mmv.Elapsed, Semantics: mmv.SemCounter, Units: mmv.Microsecond, Indom: 5}))
		require.NoError(t, r.Start())
		v, err := r.Value("disk.bytes", long)
		require.NoError(t, err)
		v.Add(1 << 40)
		v, err = r.Value("disk.time", "sda")
		require.NoError(t, err)
		v.StartInterval()
	}},
	{"labels_v3", mmv.Options{Cluster: 2047, Flags: mmv.NoPrefix}, func(t *testing.T, r *mmv.Registry) {
		require.NoError(t, r.AddIndom(mmv.Indom{Serial: 1, Instances: []mmv.Instance{{ID: 0, Name: "a"}, {ID: 3, Name: "b c"}}}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "lab.m", Type: mmv.String, Semantics: mmv.SemDiscrete, Indom: 1}))
		require.NoError(t, r.AddLabel(mmv.Label{Name: "app", Value: "web"}))
		require.NoError(t, r.AddMetricLabel("lab.m", mmv.Label{Name: "n", Value: 1.5, Optional: true}))
		require.NoError(t, r.AddIndomLabel(1, mmv.Label{Name: "list", Value: []any{1, "two", nil}}))
		require.NoError(t, r.AddInstanceLabel(1, 3, mmv.Label{Name: "m", Value: map[string]any{"k": true}}))
		require.NoError(t, r.Start())
		v, err := r.Value("lab.m", "b c")
		require.NoError(t, err)
		require.NoError(t, v.SetString("value"))
	}},
	{"forced_v3", mmv.Options{Version: mmv.Version3}, func(t *testing.T, r *mmv.Registry) {
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "only", Type: mmv.Int32, Semantics: mmv.SemCounter, Units: mmv.Count}))
		require.NoError(t, r.Start())
	}},
	// PCP 7.2's extra units, which 6.0.3 does not show, and a count scale
	// alone, which each spells its own way.
	{"units_v1", mmv.Options{Cluster: 9}, func(t *testing.T, r *mmv.Registry) {
		for i, u := range []mmv.Units{mmv.Celsius, mmv.Watt.Mul(mmv.Hour), mmv.Millivolt.Per(mmv.Second),
			mmv.Count.Mul(mmv.Microampere), mmv.NewUnits(0, 0, 0, 0, 0, 3), mmv.Kelvin.Mul(mmv.NewUnits(0, 0, 0, 0, 0, -2))} {
			require.NoError(t, r.AddMetric(mmv.Metric{Name: "u" + strconv.Itoa(i), Type: mmv.Double, Semantics: mmv.SemInstant, Units: u}))
		}
		require.NoError(t, r.Start())
	}},
	// Values 128 bytes apart, fillers between, a gap before them.
	{"padded_v1", mmv.Options{Cluster: 8, PadValues: true}, padded(false)},
	// The same grown, values last, and an instance removed.
	{"padded_grown_v1", mmv.Options{Cluster: 8, PadValues: true}, padded(true)},
}

// padded returns the build of a padded scenario, grown after Start or not.
func padded(grow bool) func(t *testing.T, r *mmv.Registry) {
	return func(t *testing.T, r *mmv.Registry) {
		hits := mmv.NewCounterVec(r, "hits", "Hits", mmv.Count, "route")
		hits.SetInstanceLabels(false) // a v1 file
		hits.With("/a").Add(3)
		hits.With("/b").Add(5)
		mmv.NewGauge(r, "level", "Level", mmv.Count).Set(0.5)
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "note", Type: mmv.String, Semantics: mmv.SemDiscrete}))
		require.NoError(t, r.Start())
		v, err := r.Value("note", "")
		require.NoError(t, err)
		require.NoError(t, v.SetString("padded"))
		if grow {
			hits.With("/c").Add(7)
			require.True(t, hits.Delete("/a"))
			require.NoError(t, r.Flush())
		}
	}
}

// startWriter runs a writer scenario and returns the path of its file.
func startWriter(t *testing.T, i int) string {
	t.Helper()
	pcptest.NeedFileLayer(t)
	s := writerScenarios[i]
	opts := s.opts
	opts.Dir = t.TempDir()
	r := mmv.NewRegistry(s.name, &opts)
	s.build(t, r)
	t.Cleanup(func() { r.Close() })
	return r.Path()
}

// writtenFile is a file TestJSON and TestCorruptAsPCP read.
type writtenFile struct{ name, path string }

// writtenFiles returns the writer scenarios' files, or where mmv writes no
// files libpcp_mmv's goldens of the three versions, which are byte for byte
// ours for the same declarations: mmvdump reads either alike.
func writtenFiles(t *testing.T) []writtenFile {
	var files []writtenFile
	if pcptest.HasFileLayer() != nil {
		for _, name := range []string{"types_indom", "strings", "v2_metric_name", "v3_labels"} {
			files = append(files, writtenFile{name, filepath.Join("../../testdata/golden", name+".mmv")})
		}
		return files
	}
	for i, s := range writerScenarios {
		files = append(files, writtenFile{s.name, startWriter(t, i)})
	}
	return files
}

func TestWriterFilesAsPCP(t *testing.T) {
	pcptest.MustHavePCP(t)
	for i, s := range writerScenarios {
		t.Run(s.name, func(t *testing.T) { compareWithPCP(t, startWriter(t, i)) })
	}
}

// TestJSON checks that -json prints the content of the text form.
func TestJSON(t *testing.T) {
	for _, w := range writtenFiles(t) {
		t.Run(w.name, func(t *testing.T) {
			path := w.path
			out, stderr, status := mmvdump(t, "-json", path)
			require.Equal(t, 0, status, stderr)
			var j jsonFile
			dec := json.NewDecoder(strings.NewReader(out))
			dec.UseNumber()
			require.NoError(t, dec.Decode(&j))
			f, err := mmvfile.Open(path)
			require.NoError(t, err)
			assert.Equal(t, path, j.File)
			assert.Equal(t, f.Header.Gen1, j.Gen1)
			require.Len(t, j.Sections, len(f.TOC))
			var values []jsonValue
			for k, s := range j.Sections {
				assert.Equal(t, f.TOC[k].Type.String(), s.Type)
				if f.TOC[k].Type != mmvfile.Values { // dead value records are left out
					assert.Equal(t, f.TOC[k].Count, len(s.Indoms)+len(s.Instances)+len(s.Metrics)+len(s.Strings)+len(s.Labels))
				}
				values = append(values, s.Values...)
			}
			require.Len(t, values, len(f.Values))
			for k, v := range f.Values {
				if v.Metric.Type == mmv.Elapsed {
					continue // the clock moved on
				}
				var got string
				switch x := values[k].Value.(type) {
				case string:
					got = strconv.Quote(x)
				case json.Number:
					got = x.String()
					if v.Metric.Type == mmv.Float || v.Metric.Type == mmv.Double {
						f, err := x.Float64()
						require.NoError(t, err)
						got = strconv.FormatFloat(f, 'g', -1, 64)
					}
				}
				assert.Equal(t, jsonWant(v), got, "value %d", k)
			}
		})
	}
}

// corruptFiles returns the files of writtenFiles broken in every way:
// truncated at every byte of the header and TOC (every step-th) and at
// every section boundary, and with broken fields.
func corruptFiles(t *testing.T, step int) map[string][]byte {
	bad := map[string][]byte{}
	for i, w := range writtenFiles(t) {
		valid, err := os.ReadFile(w.path)
		require.NoError(t, err)
		f, err := mmvfile.Parse(valid)
		require.NoError(t, err)
		cuts := map[int]bool{}
		for n := 0; n < 40+16*len(f.TOC); n += step {
			cuts[n] = true
		}
		for _, sec := range f.TOC {
			if sec.Count > 0 {
				cuts[int(sec.Offset)] = true
				cuts[int(sec.Offset)+1] = true
			}
		}
		for n := range cuts {
			bad[w.name+"/truncated at "+strconv.Itoa(n)] = valid[:n]
		}
		patch := func(name string, off int, v uint64, size int) {
			b := bytes.Clone(valid)
			if size == 4 {
				binary.NativeEndian.PutUint32(b[off:], uint32(v))
			} else {
				binary.NativeEndian.PutUint64(b[off:], v)
			}
			bad[w.name+"/"+name] = b
		}
		patch("bad magic", 0, 0x00564d4e, 4)
		patch("bad version", 4, 4, 4)
		patch("zero generations", 8, 0, 8)
		patch("mismatched generations", 16, 1, 8)
		patch("1 TOC entry", 24, 1, 4)
		patch("cluster 4096", 36, 4096, 4)
		patch("unknown flags", 28, 0x80000003, 4)
		patch("unknown section type", 40, 9, 4)
		patch("count beyond the file", 40+4, 1<<30, 4)
		patch("negative count", 40+4, math.MaxUint32, 4)
		patch("offset beyond the file", 40+8, 1<<40, 8)
		for _, count := range []uint32{0, math.MaxUint32} {
			b := bytes.Clone(valid)
			binary.NativeEndian.PutUint32(b[40:], 9)
			binary.NativeEndian.PutUint32(b[44:], count)
			bad[w.name+"/unknown section type, count "+strconv.Itoa(int(int32(count)))] = b
		}
		for k := range f.TOC {
			// 7.2 prints empty and negative instance and value sections.
			patch("TOC "+strconv.Itoa(k)+" count 0", 40+16*k+4, 0, 4)
			patch("TOC "+strconv.Itoa(k)+" count -1", 40+16*k+4, math.MaxUint32, 4)
		}
		patch("value at a non-metric", int(f.Values[0].Offset)+16, f.Values[0].Metric.Offset+8, 8)
		patch("value at offset 0", int(f.Values[0].Offset)+16, 0, 8)
		patch("value beyond the file", int(f.Values[0].Offset)+16, uint64(len(valid)), 8)
		body := 8 // a metric record's fields after the name
		if f.Header.Version == 1 {
			body = 64
		}
		patch("unknown type", int(f.Metrics[0].Offset)+body+4, 7, 4)
		patch("unknown semantics", int(f.Metrics[0].Offset)+body+8, 0, 4)
		patch("unknown units", int(f.Metrics[0].Offset)+body+12, 0x01006000, 4)
		if i == 0 {
			// Units words as 6.0.3 and 7.2 spell them: 7.2's extra units
			// valid and not, negative (dividing), beside dimensions and
			// count scales.
			for _, w := range []uint32{0x100, 0xff00, 0x08, 0x09, 0x0c, 0x14, 0x1c, 0x24, 0x25, 0x28, 0x80, 0xf8,
				0xf0, 0xd8, 0x01, 0x109, 0x10000009, 0xf0000009, 0xff100309, 0xf01000f8, 0x101000f8, 0xf0000028} {
				patch(fmt.Sprintf("units 0x%x", w), int(f.Metrics[0].Offset)+body+12, uint64(w), 4)
			}
		}
		if v := f.Values[0]; v.Instance != nil {
			patch("instance beyond the file", int(v.Offset)+24, uint64(len(valid)), 8)
		}
		if len(f.Instances) > 0 {
			patch("instance of an indom beyond the file", int(f.Instances[0].Offset), uint64(len(valid)), 8)
			if f.Header.Version > 1 {
				patch("instance name at 0", int(f.Instances[0].Offset)+16, 0, 8)
				patch("instance name beyond the file", int(f.Instances[0].Offset)+16, uint64(len(valid)), 8)
			}
		}
		if f.Header.Version > 1 {
			patch("metric name at 0", int(f.Metrics[0].Offset), 0, 8)
			patch("metric name beyond the file", int(f.Metrics[0].Offset), uint64(len(valid))-255, 8)
		}
		for _, v := range f.Values {
			if v.Metric.Type == mmv.String {
				patch("string value beyond the file", int(v.Offset)+8, uint64(len(valid))-100, 8)
			}
			if v.Metric.Type == mmv.Elapsed {
				patch("positive elapsed extra", int(v.Offset)+8, 5, 8)
			}
		}
	}
	return bad
}

// TestCorruptAsPCP: mmvdump prints every corrupt file as PCP's mmvdump
// does, warnings and exit status included; -json refuses those mmvfile
// refuses, with a message. Against a PCP in a chroot (MMV_PCP_ROOT: 7.2
// in CI), where each mmvdump costs a mount namespace, the files cut
// inside the header and TOC are a sample, every 8th byte: the two
// mmvdumps print the header alike, and CI runs them all against the
// host's 6.0.3.
func TestCorruptAsPCP(t *testing.T) {
	dir := t.TempDir()
	hasPCP := pcptest.WantPCP(t)
	step := 1
	if hasPCP && pcptest.Root() != "" {
		step = 8
	}
	for name, b := range corruptFiles(t, step) {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, "bad")
			require.NoError(t, os.WriteFile(path, b, 0o644))
			if hasPCP {
				compareWithPCP(t, path)
			}
			if _, err := mmvfile.Parse(b); err != nil {
				out, stderr, status := mmvdump(t, "-json", path)
				assert.Equal(t, 1, status)
				assert.Empty(t, out)
				assert.Contains(t, stderr, "mmvdump: "+path+": mmvfile: ")
			}
		})
	}
}

// jsonWant is a value as -json prints it, quoted when a string.
func jsonWant(v *mmvfile.Value) string {
	switch v.Metric.Type {
	case mmv.Int32, mmv.Int64:
		return strconv.FormatInt(v.Int, 10)
	case mmv.Uint32, mmv.Uint64:
		return strconv.FormatUint(v.Uint, 10)
	case mmv.Float, mmv.Double:
		if math.IsNaN(v.Float) || math.IsInf(v.Float, 0) {
			return strconv.Quote(strconv.FormatFloat(v.Float, 'g', -1, 64))
		}
		return strconv.FormatFloat(v.Float, 'g', -1, 64)
	}
	return strconv.Quote(v.String)
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"a", "b"}, {"-nosuchflag", "a"}} {
		_, stderr, status := mmvdump(t, args...)
		assert.Equal(t, 2, status, "%q", args)
		assert.Contains(t, stderr, "usage: mmvdump", "%q", args)
	}
	_, stderr, status := mmvdump(t, filepath.Join(t.TempDir(), "missing"))
	assert.Equal(t, 1, status)
	assert.Contains(t, stderr, "no such file")
	_, stderr, status = mmvdump(t, "-pcp", "6.3", "../../testdata/golden/empty.mmv")
	assert.Equal(t, 2, status, "a PCP whose mmvdump is not proven")
	assert.Contains(t, stderr, `mmvdump: -pcp: mmvfile: PCP "6.3": Dump prints as PCP 6.0 or 7.2`)
}

// TestHelpExitsZero: -h and -help print the usage and exit 0, as a Go
// command's flags do (flag.ExitOnError), where they exited 2, bad usage,
// failing a script that asks for the help.
func TestHelpExitsZero(t *testing.T) {
	for _, arg := range []string{"-h", "-help", "--help"} {
		_, stderr, status := mmvdump(t, arg)
		assert.Equal(t, 0, status, arg)
		assert.Contains(t, stderr, "usage: mmvdump", arg)
	}
}

// TestPCPFlag: -pcp chooses the mmvdump printed as, whatever the PCP
// installed: the golden empty file, whose values section counts 0.
func TestPCPFlag(t *testing.T) {
	const file = "../../testdata/golden/empty.mmv"
	for version, want := range map[string]string{
		"6.0.3": "Bad TOC[1]: invalid entry count 0\n",
		"6.0":   "Bad TOC[1]: invalid entry count 0\n",
		"7.2":   "\nTOC[1]: offset 56, values offset 72 (0 entries)\n",
		"7.2.2": "\nTOC[1]: offset 56, values offset 72 (0 entries)\n",
	} {
		out, stderr, status := mmvdump(t, "-pcp", version, file)
		require.Equal(t, 0, status, stderr)
		assert.True(t, strings.HasSuffix(out, "Bad TOC[0]: invalid entry count 0\n"+want), "-pcp %s: %s", version, out)
	}
	out, _, _ := mmvdump(t, file)
	assert.Contains(t, out, "Bad TOC[1]", "6.0.3's by default")
}

// TestLint: -lint reports a directory's hazards one a line or as JSON,
// with exit status 1, nothing and status 0 when there are none, and
// status 2 for a path it cannot read.
func TestLint(t *testing.T) {
	pcptest.NeedFileLayer(t)
	dir := t.TempDir()
	r := mmv.NewRegistry("app", &mmv.Options{Dir: dir, Cluster: 5})
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "x", Type: mmv.Uint64, Semantics: mmv.SemCounter}))
	require.NoError(t, r.Start())
	r.Close() // no Process flag: the file stays
	clean := func(out string) string {
		// A file not in PCP's group is a finding of its own.
		var kept []string
		for _, l := range strings.SplitAfter(out, "\n") {
			if !strings.Contains(l, ": group: ") {
				kept = append(kept, l)
			}
		}
		return strings.Join(kept, "")
	}
	out, stderr, status := mmvdump(t, "-lint", dir)
	require.Empty(t, stderr)
	require.Equal(t, clean(out), "")
	if g, err := user.LookupGroup("pcp"); err == nil && os.Geteuid() == 0 {
		gid, err := strconv.Atoi(g.Gid)
		require.NoError(t, err)
		require.NoError(t, os.Chown(filepath.Join(dir, "app"), -1, gid))
		out, _, status = mmvdump(t, "-lint", dir)
		assert.Empty(t, out)
		assert.Equal(t, 0, status)
	}

	b, err := os.ReadFile(filepath.Join(dir, "app"))
	require.NoError(t, err)
	binary.NativeEndian.PutUint32(b[36:], 0) // cluster 0
	require.NoError(t, os.WriteFile(filepath.Join(dir, "other"), b, 0o644))
	out, stderr, status = mmvdump(t, "-lint", dir)
	assert.Empty(t, stderr)
	assert.Equal(t, 1, status)
	assert.Equal(t, filepath.Join(dir, "other")+": header: cluster-zero: cluster 0: PCP picks the next free cluster, which moves with the files present\n", clean(out))

	out, _, status = mmvdump(t, "-lint", "-json", filepath.Join(dir, "other"))
	assert.Equal(t, 1, status)
	var fds []mmvfile.Finding
	require.NoError(t, json.Unmarshal([]byte(out), &fds))
	var rules []mmvfile.Rule
	for _, f := range fds {
		rules = append(rules, f.Rule)
	}
	assert.Contains(t, rules, mmvfile.RuleClusterZero)
	assert.Contains(t, out, `"rule": "cluster-zero"`)
	assert.Contains(t, out, `"record": "header"`)

	_, stderr, status = mmvdump(t, "-lint", filepath.Join(dir, "missing"))
	assert.Equal(t, 2, status)
	assert.Contains(t, stderr, "no such file")
}

// TestJSONTombstoneNoValue: a tombstone's values (the Sentinel flag, every
// value all ones), which PCP shows as none, are null with noValue in
// mmvdump -json, where each counter read 18446744073709551615.
func TestJSONTombstoneNoValue(t *testing.T) {
	pcptest.NeedFileLayer(t)
	dir := filepath.Join(t.TempDir(), "mmv")
	const name = "procts"
	last := mmv.NewRegistry(name, &mmv.Options{Dir: dir})
	mmv.NewCounter(last, "first", "", mmv.Count).Inc()
	require.NoError(t, last.Start())
	for i := range mmv.MaxMetrics + 10 { // declared after Start: an overflow file
		mmv.NewCounter(last, fmt.Sprintf("late%04d", i), "", mmv.Count).Inc()
	}
	require.NoError(t, last.Flush())
	require.NoError(t, last.Close())
	r := mmv.NewRegistry(name, &mmv.Options{Dir: dir, Flags: mmv.Process})
	mmv.NewCounter(r, "first", "", mmv.Count).Inc()
	require.NoError(t, r.Start())
	defer r.Close()

	out, _, status := mmvdump(t, "-json", filepath.Join(dir, name+".2"))
	require.Zero(t, status)
	var f struct {
		FlagNames []string `json:"flagNames"`
		Sections  []struct {
			Values []struct {
				Metric  string `json:"metric"`
				Value   any    `json:"value"`
				NoValue bool   `json:"noValue"`
			} `json:"values"`
		} `json:"sections"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &f))
	require.Contains(t, f.FlagNames, "sentinel", "a tombstone")
	var n int
	var valued []string
	for _, s := range f.Sections {
		for _, v := range s.Values {
			n++
			if v.Value != nil || !v.NoValue {
				valued = append(valued, fmt.Sprintf("%s=%v", v.Metric, v.Value))
			}
		}
	}
	require.NotZero(t, n, "the tombstone's values")
	assert.Empty(t, valued, "-json gives tombstone metrics, no value in PCP, a value (2^64-1)")
}

// TestJSONSentinelNaNAsPCPShowsIt: a NaN double in a file with the
// Sentinel flag is a value, "NaN", in mmvdump -json, as PCP 6.0.3 shows
// it (nan), and no value with -pcp 7.2, as 7.2 shows it: -json called it
// no value whatever -pcp said.
func TestJSONSentinelNaNAsPCPShowsIt(t *testing.T) {
	pcptest.NeedFileLayer(t)
	dir := filepath.Join(t.TempDir(), "mmv")
	r := mmv.NewRegistry("nan", &mmv.Options{Dir: dir, Flags: mmv.Sentinel})
	mmv.NewGauge(r, "ratio", "", mmv.NoUnits).Set(math.NaN())
	require.NoError(t, r.Start())
	defer r.Close()
	for _, c := range []struct {
		pcp     string
		value   any
		noValue bool
	}{{"6.0.3", "NaN", false}, {"7.2", nil, true}} {
		out, stderr, status := mmvdump(t, "-pcp", c.pcp, "-json", r.Path())
		require.Zero(t, status, stderr)
		var f struct {
			Sections []struct {
				Values []struct {
					Value   any  `json:"value"`
					NoValue bool `json:"noValue"`
				} `json:"values"`
			} `json:"sections"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &f))
		var got []any
		for _, s := range f.Sections {
			for _, v := range s.Values {
				got = append(got, v.Value, v.NoValue)
			}
		}
		assert.Equal(t, []any{c.value, c.noValue}, got, "-pcp %s", c.pcp)
	}
}

// TestOversizedFileNamed: mmvdump FILE names a file it refuses for its
// size, as it names one it cannot open; it printed "mmvdump: mmvfile: bad
// count: file is larger than 1073741824 bytes" alone.
func TestOversizedFileNamed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sparse") // free on disk
	require.NoError(t, os.WriteFile(path, nil, 0o644))
	require.NoError(t, os.Truncate(path, mmvfile.MaxSize+1))
	for _, args := range [][]string{{path}, {"-json", path}} {
		_, stderr, status := mmvdump(t, args...)
		assert.Equal(t, 1, status, "%q", args)
		assert.Contains(t, stderr, path+": mmvfile: bad count: file is larger than", "%q", args)
	}
}
