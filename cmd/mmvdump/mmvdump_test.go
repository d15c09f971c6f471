package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
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

var (
	// PCP's mmvdump prints "Bad TOC[n]: invalid entry count 0" for an
	// empty section, where this one prints the section; 7.2's prints
	// empty instance and value sections as this one does.
	emptySection = regexp.MustCompile(`\nTOC\[(\d+)\]: [^\n]*\(0 entries\)\n`)
	// An open elapsed interval is printed with its length up to now.
	openInterval = regexp.MustCompile(`= -?\d+ (\(value=-?\d+/extra=-\d+\))`)
	versionLine  = regexp.MustCompile(`(?m)^Version    = (\d+)$`)
	instancesTOC = regexp.MustCompile(`^TOC\[\d+\]: offset \d+, instances offset (\d+) `)
	instanceLine = regexp.MustCompile(`^(  \[\d+/)(\d+)(\] instance = .*)$`)
)

// normalise turns mmvdump output, ours or PCP's, into the same text: this
// one's empty sections printed as PCP's, PCP's v2 and v3 instance offsets
// (stepped by 80 bytes) as this one's, open intervals' running time blanked.
func normalise(out string, ours bool) string {
	out = openInterval.ReplaceAllString(out, "= OPEN $1")
	if ours {
		return emptySection.ReplaceAllStringFunc(out, func(sec string) string {
			if pcptest.AtLeast(7, 2) && (strings.Contains(sec, "instances offset") || strings.Contains(sec, "values offset")) {
				return sec // 7.2's mmvdump prints empty instance and value sections
			}
			return emptySection.ReplaceAllString(sec, "Bad TOC[$1]: invalid entry count 0\n")
		})
	}
	if m := versionLine.FindStringSubmatch(out); m == nil || m[1] == "1" {
		return out
	}
	lines := strings.Split(out, "\n")
	start, i := uint64(0), -1
	for n, l := range lines {
		if m := instancesTOC.FindStringSubmatch(l); m != nil {
			start, _ = strconv.ParseUint(m[1], 10, 64)
			i = 0
			continue
		}
		m := instanceLine.FindStringSubmatch(l)
		if i < 0 || m == nil {
			i = -1
			continue
		}
		// Only PCP's known misprint is corrected; anything else shows in the diff.
		if off, _ := strconv.ParseUint(m[2], 10, 64); off == start+80*uint64(i) {
			lines[n] = m[1] + strconv.FormatUint(start+24*uint64(i), 10) + m[3]
		}
		i++
	}
	return strings.Join(lines, "\n")
}

var (
	valuesTOC  = regexp.MustCompile(`^TOC\[\d+\]: offset \d+, values offset `)
	recordLine = regexp.MustCompile(`^  \[\d+/(\d+)\] `)
)

// dropDead drops from PCP's mmvdump output the lines it prints for the dead
// value records of the file b (no metric, no instance: fillers and removed
// instances' values, which PCP's reader skips): PCP's mmvdump reads the
// header as their metric and instance, where this one skips them. In a v2
// or v3 file it stops the values section at the first one instead ("Bad
// file size: too small for toc[n] value[i] mname"), which no scenario has.
func dropDead(out string, b []byte) string {
	lines := strings.Split(out, "\n")
	kept := lines[:0]
	inValues, dropping := false, false
	for _, l := range lines {
		if dropping {
			// The names PCP's mmvdump prints for a dead record are the
			// header's bytes, the generation's among them: a newline there
			// continues the record, up to its " = value", on the next line.
			dropping = !strings.Contains(l, "] = ")
			continue
		}
		if strings.HasPrefix(l, "TOC[") {
			inValues = valuesTOC.MatchString(l)
		}
		if m := recordLine.FindStringSubmatch(l); inValues && m != nil {
			off, _ := strconv.Atoi(m[1])
			if off+32 <= len(b) && binary.NativeEndian.Uint64(b[off+16:]) == 0 && binary.NativeEndian.Uint64(b[off+24:]) == 0 {
				dropping = !strings.Contains(l, "] = ")
				continue
			}
		}
		kept = append(kept, l)
	}
	return strings.Join(kept, "\n")
}

// compareWithPCP checks that mmvdump prints file as PCP's mmvdump does,
// known misprints aside.
func compareWithPCP(t *testing.T, file string) {
	t.Helper()
	ours, stderr, status := mmvdump(t, file)
	require.Equal(t, 0, status, "mmvdump %s: %s", file, stderr)
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	pcp := dropDead(pcptest.Dump(t, file), b)
	assert.Equal(t, normalise(pcp, false), normalise(ours, true), "mmvdump %s", file)
}

func TestGoldenFilesAsPCP(t *testing.T) {
	pcptest.MustHavePCP(t)
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("the golden files are little-endian")
	}
	files, err := filepath.Glob("../../testdata/golden/*.mmv")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) { compareWithPCP(t, file) })
	}
}

func TestLibpcpFilesAsPCP(t *testing.T) {
	pcptest.MustHavePCP(t)
	pcptest.MustHaveLibPCPMMV(t)
	dir := t.TempDir()
	gen := filepath.Join(dir, "gen")
	pcptest.BuildC(t, "testdata/libpcp.c", gen, "-lpcp_mmv", "-lpcp", "-lm")
	cmd := pcptest.Command(context.Background(), gen)
	cmd.Env = append(os.Environ(), "PCP_TMP_DIR="+dir)
	require.NoError(t, os.Mkdir(filepath.Join(dir, "mmv"), 0o755))
	out, err := cmd.Output()
	require.NoError(t, err)
	names := strings.Fields(string(out))
	require.Len(t, names, 6)
	for _, name := range names {
		t.Run(name, func(t *testing.T) { compareWithPCP(t, filepath.Join(dir, "mmv", name)) })
	}
}

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
	s := writerScenarios[i]
	opts := s.opts
	opts.Dir = t.TempDir()
	r := mmv.NewRegistry(s.name, &opts)
	s.build(t, r)
	t.Cleanup(func() { r.Close() })
	return r.Path()
}

func TestWriterFilesAsPCP(t *testing.T) {
	pcptest.MustHavePCP(t)
	for i, s := range writerScenarios {
		t.Run(s.name, func(t *testing.T) { compareWithPCP(t, startWriter(t, i)) })
	}
}

// TestJSON checks that -json prints the content of the text form.
func TestJSON(t *testing.T) {
	for i, s := range writerScenarios {
		t.Run(s.name, func(t *testing.T) {
			path := startWriter(t, i)
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
						got = cFloat(f)
					}
				}
				want := valueText(v, time.Now())
				if v.Metric.Type != mmv.String && strings.HasPrefix(got, `"`) {
					got, _ = strconv.Unquote(got) // NaN and infinities
				} else if v.Metric.Type == mmv.String {
					want = strconv.Quote(v.String)
				}
				assert.Equal(t, want, got, "value %d", k)
			}
		})
	}
}

// TestCorrupt checks that corrupt files are refused with exit status 1 and
// a message, never a panic: truncated at every section boundary and within
// the header and TOC, and with broken fields.
func TestCorrupt(t *testing.T) {
	for i, s := range writerScenarios {
		valid, err := os.ReadFile(startWriter(t, i))
		require.NoError(t, err)
		f, err := mmvfile.Parse(valid)
		require.NoError(t, err)
		cuts := map[int]bool{}
		for n := range 40 + 16*len(f.TOC) {
			cuts[n] = true
		}
		for _, sec := range f.TOC {
			if sec.Count > 0 {
				cuts[int(sec.Offset)] = true
				cuts[int(sec.Offset)+1] = true
			}
		}
		bad := map[string][]byte{}
		for n := range cuts {
			bad["truncated at "+strconv.Itoa(n)] = valid[:n]
		}
		patch := func(name string, off int, v uint64, size int) {
			b := bytes.Clone(valid)
			if size == 4 {
				binary.NativeEndian.PutUint32(b[off:], uint32(v))
			} else {
				binary.NativeEndian.PutUint64(b[off:], v)
			}
			bad[name] = b
		}
		patch("bad magic", 0, 0x00564d4e, 4)
		patch("bad version", 4, 4, 4)
		patch("zero generations", 8, 0, 8)
		patch("mismatched generations", 16, 1, 8)
		patch("unknown section type", 40, 9, 4)
		patch("count beyond the file", 40+4, 1<<30, 4)
		patch("offset beyond the file", 40+8, 1<<40, 8)
		patch("offset wrapping around", 40+8, math.MaxUint64-7, 8)
		patch("value at a non-metric", int(f.Values[0].Offset)+16, f.Values[0].Metric.Offset+8, 8)
		dir := t.TempDir()
		for name, b := range bad {
			t.Run(s.name+"/"+name, func(t *testing.T) {
				path := filepath.Join(dir, "bad")
				require.NoError(t, os.WriteFile(path, b, 0o644))
				for _, args := range [][]string{{path}, {"-json", path}} {
					out, stderr, status := mmvdump(t, args...)
					assert.Equal(t, 1, status)
					assert.Empty(t, out)
					assert.Contains(t, stderr, "mmvdump: "+path+": mmvfile: ")
				}
			})
		}
	}
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
}

// TestDropDead: the lines PCP's mmvdump prints for a dead record go, even
// when the header bytes it prints as names hold a newline (the generation
// is a time: CI met one), and the live records stay.
func TestDropDead(t *testing.T) {
	b := make([]byte, 200)
	binary.NativeEndian.PutUint64(b[100+16:], 1) // live: metric offset 1
	out := strings.Join([]string{
		"TOC[3]: offset 88, values offset 100 (3 entries)",
		`  [1/100] live = 3`,
		`  [1/132] MMV[0 or "garbage`,
		`more"] = 0`,
		`  [1/164] MMV[0 or "garbage"] = 0`,
		"",
		"TOC[4]: offset 104, string offset 196 (0 entries)",
	}, "\n")
	want := strings.Join([]string{
		"TOC[3]: offset 88, values offset 100 (3 entries)",
		`  [1/100] live = 3`,
		"",
		"TOC[4]: offset 104, string offset 196 (0 entries)",
	}, "\n")
	assert.Equal(t, want, dropDead(out, b))
}
