package mmvfile_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
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

// Helpers of the tests of reading what PCP reads (pcpreads_test.go), the
// corpus (corpus_test.go) and Lint (lint_test.go).

// pcpView writes b as the only file of a directory and returns what PCP's
// reader shows of it.
func pcpView(t *testing.T, name string, b []byte) []pcptest.Metric {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "mmv"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "mmv", name), b, 0o644))
	return pcptest.Info(t, dir)
}

// writeFile writes a registry's file, built by build and patched by
// patch, into dir under name, and returns its path.
func writeFile(t *testing.T, dir, name string, opts mmv.Options, build func(r *mmv.Registry), patch func(b []byte, f *mmvfile.File)) string {
	t.Helper()
	pcptest.NeedFileLayer(t)
	opts.Dir = t.TempDir()
	r := mmv.NewRegistry(name, &opts)
	build(r)
	require.NoError(t, r.Start())
	b, err := os.ReadFile(r.Path())
	require.NoError(t, err)
	r.Close()
	f, err := mmvfile.Parse(b)
	require.NoError(t, err)
	if patch != nil {
		patch(b, f)
	}
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, b, 0o644))
	return path
}

// checkStored checks that b, a file a writer has just written, holds what
// the file stored at path holds (summary: layout and generations aside),
// or with -update stores b there.
func checkStored(t testing.TB, path string, b []byte) {
	t.Helper()
	if *update {
		require.NoError(t, os.WriteFile(path, b, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "%s: run with -update to store it", path)
	wf, err := mmvfile.Parse(want)
	require.NoError(t, err)
	gf, err := mmvfile.Parse(b)
	require.NoError(t, err)
	assert.Equal(t, summary(wf), summary(gf), "%s is not what the writer writes now: run with -update to store it", path)
}

// counterOver declares a counter over an indom of n instances.
func counterOver(name string, serial uint32, n int) func(r *mmv.Registry) {
	return func(r *mmv.Registry) {
		in := mmv.Indom{Serial: serial}
		for i := range n {
			in.Instances = append(in.Instances, mmv.Instance{ID: int32(i), Name: "i" + strconv.Itoa(i)})
		}
		if err := r.AddIndom(in); err != nil {
			panic(err)
		}
		if err := r.AddMetric(mmv.Metric{Name: name, Type: mmv.Uint64, Semantics: mmv.SemCounter, Indom: serial}); err != nil {
			panic(err)
		}
	}
}

func singular(names ...string) func(r *mmv.Registry) {
	return func(r *mmv.Registry) {
		for _, n := range names {
			if err := r.AddMetric(mmv.Metric{Name: n, Type: mmv.Uint64, Semantics: mmv.SemCounter}); err != nil {
				panic(err)
			}
		}
	}
}

// deadPID returns the id of a process that has exited: the test binary
// itself, run with no test, so that the tests need no program but Go's
// (GORACE: no second's sleep at exit under -race).
func deadPID(t *testing.T) int {
	t.Helper()
	bin, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = append(os.Environ(), "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	require.NoError(t, cmd.Run())
	return cmd.Process.Pid
}

// findings returns the findings of rule among fds.
func findings(fds []mmvfile.Finding, rule mmvfile.Rule) []mmvfile.Finding {
	var out []mmvfile.Finding
	for _, f := range fds {
		if f.Rule == rule {
			out = append(out, f)
		}
	}
	return out
}

// rules lists the rules of findings.
func rules(fs []mmvfile.Finding) []mmvfile.Rule {
	var out []mmvfile.Rule
	for _, f := range fs {
		out = append(out, f.Rule)
	}
	return out
}

// labelPayload returns a mutation of the sample file that writes payload
// into its first label.
func labelPayload(payload string) func(b []byte, f *mmvfile.File) []byte {
	return func(b []byte, f *mmvfile.File) []byte {
		copy(b[f.Labels[0].Offset+12:], payload+"\x00")
		return b
	}
}

// keptBy72 checks PCP's view of a label 6.0.3 drops and 7.2 keeps: the
// sample's first metric has labels holding shown on 7.2, none holding
// gone on 6.0.3, and the others on both.
func keptBy72(shown, gone string) func(t *testing.T, f *mmvfile.File, ms []pcptest.Metric) {
	return func(t *testing.T, f *mmvfile.File, ms []pcptest.Metric) {
		m := pcptest.Find(ms, sampleMetric(f, 0))
		require.NotNil(t, m)
		if pcptest.AtLeast(7, 2) {
			assert.Contains(t, m.Labels, shown, "7.2 keeps the label")
		} else {
			assert.NotContains(t, m.Labels, gone, "6.0.3 drops the label")
		}
		assert.Contains(t, m.Labels, `"agent":"mmv"`, "and keeps the others")
	}
}

// rawV1 builds a version 1 file by hand: nIndoms indoms (serials 1, 2,
// ...), the first of which lists nInst instances; one counter over the
// indom of serial metricIndom; nValues values of it, on the instances in
// turn. Every record is one PCP's reader reads.
func rawV1(nIndoms, nInst, nValues int, metricIndom uint32) []byte {
	return rawV1TOC(nIndoms, nInst, nValues, metricIndom)
}

// rawV1TOC is rawV1 with the TOC entries extra (type, count, offset)
// after its four.
func rawV1TOC(nIndoms, nInst, nValues int, metricIndom uint32, extra ...[3]int64) []byte {
	tocs := 4 + len(extra)
	indomOff := 40 + 16*tocs
	instOff := indomOff + 32*nIndoms
	metricOff := instOff + 80*nInst
	valueOff := metricOff + 104
	b := make([]byte, valueOff+32*nValues)
	copy(b, mmv.Magic)
	ne.PutUint32(b[4:], 1)
	ne.PutUint64(b[8:], 5)
	ne.PutUint64(b[16:], 5)
	ne.PutUint32(b[24:], uint32(tocs))
	ne.PutUint32(b[36:], 7) // cluster
	entries := append([][3]int64{{1, int64(nIndoms), int64(indomOff)}, {2, int64(nInst), int64(instOff)},
		{3, 1, int64(metricOff)}, {4, int64(nValues), int64(valueOff)}}, extra...)
	for i, s := range entries {
		ne.PutUint32(b[40+16*i:], uint32(s[0]))
		ne.PutUint32(b[44+16*i:], uint32(s[1]))
		ne.PutUint64(b[48+16*i:], uint64(s[2]))
	}
	for i := range nIndoms {
		r := indomOff + 32*i
		ne.PutUint32(b[r:], uint32(i+1))
		if i == 0 {
			ne.PutUint32(b[r+4:], uint32(nInst))
		}
		ne.PutUint64(b[r+8:], uint64(instOff))
	}
	for i := range nInst {
		r := instOff + 80*i
		ne.PutUint64(b[r:], uint64(indomOff))
		ne.PutUint32(b[r+12:], uint32(i))
		copy(b[r+16:], "i"+strconv.Itoa(i))
	}
	copy(b[metricOff:], "m")
	ne.PutUint32(b[metricOff+64:], 1)   // item
	ne.PutUint32(b[metricOff+64+4:], 3) // U64
	ne.PutUint32(b[metricOff+64+8:], 1) // counter
	ne.PutUint32(b[metricOff+64+16:], metricIndom)
	for i := range nValues {
		r := valueOff + 32*i
		ne.PutUint64(b[r+16:], uint64(metricOff))
		ne.PutUint64(b[r+24:], uint64(instOff+80*(i%max(nInst, 1))))
	}
	return b
}

// within runs f and fails the test when it has not returned after d; f
// then runs on, in the background, until the test binary exits.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	start := time.Now()
	go func() { defer close(done); f() }()
	select {
	case <-done:
		t.Logf("%s took %v", what, time.Since(start))
	case <-time.After(d):
		t.Fatalf("%s has not returned after %v", what, d)
	}
}

// setValues gives the sample's first metric the values 7 (get) and 9 (put).
func setValues(b []byte, f *mmvfile.File) {
	put64(b, f.Values[0].Offset, 7)
	put64(b, f.Values[1].Offset, 9)
}

// instanceSize is the size of an instance record of the file's version.
func instanceSize(f *mmvfile.File) uint64 { return f.Instances[1].Offset - f.Instances[0].Offset }

// listedValues returns the values of a metric of an unsigned type, by
// instance name, as PCP shows them: of the instances their indom lists,
// the first value of each.
func listedValues(f *mmvfile.File, metric string) map[string]string {
	out := map[string]string{}
	for _, v := range f.Values {
		if v.Metric.Name != metric || v.Instance == nil || v.Instance.Indom == nil {
			continue
		}
		listed := false
		for _, inst := range v.Instance.Indom.Instances {
			listed = listed || inst == v.Instance
		}
		if _, ok := out[v.Instance.Name]; listed && !ok {
			out[v.Instance.Name] = strconv.FormatUint(v.Uint, 10)
		}
	}
	return out
}

// eachMutated runs test, in a subtest named name/v<version>, on the sample
// file of each version (of version alone when it is not 0) as mutate
// changes it, with the sample parsed before the change.
func eachMutated(t *testing.T, name string, version int, mutate func(b []byte, f *mmvfile.File) []byte, test func(t *testing.T, f *mmvfile.File, b []byte)) {
	for v := 1; v <= 3; v++ {
		if version != 0 && version != v {
			continue
		}
		t.Run(name+"/v"+string(rune('0'+v)), func(t *testing.T) {
			valid := sample(t, v)
			f, err := mmvfile.Parse(valid)
			require.NoError(t, err)
			test(t, f, mutate(bytes.Clone(valid), f))
		})
	}
}

// oversized returns the path of a sparse file of MaxSize+1 bytes, free on
// disk, which Open refuses by its size.
func oversized(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sparse")
	require.NoError(t, os.WriteFile(path, nil, 0o644))
	require.NoError(t, os.Truncate(path, mmvfile.MaxSize+1))
	return path
}

// indomsAndMetrics builds a version 1 file by hand: nIndoms indoms of no
// instances (serials 1, 2, ...), and nMetrics counters over the indom of
// serial metricIndom, of no values.
func indomsAndMetrics(nIndoms, nMetrics int, metricIndom uint32) []byte {
	indomOff := 40 + 16*4
	metricOff := indomOff + 32*nIndoms // the instances' section is empty
	valueOff := metricOff + 104*nMetrics
	b := make([]byte, valueOff)
	copy(b, mmv.Magic)
	ne.PutUint32(b[4:], 1)
	ne.PutUint64(b[8:], 5)
	ne.PutUint64(b[16:], 5)
	ne.PutUint32(b[24:], 4)
	ne.PutUint32(b[36:], 7) // cluster
	for i, s := range [][3]int{{1, nIndoms, indomOff}, {2, 0, metricOff}, {3, nMetrics, metricOff}, {4, 0, valueOff}} {
		ne.PutUint32(b[40+16*i:], uint32(s[0]))
		ne.PutUint32(b[44+16*i:], uint32(s[1]))
		ne.PutUint64(b[48+16*i:], uint64(s[2]))
	}
	for i := range nIndoms {
		ne.PutUint32(b[indomOff+32*i:], uint32(i+1))
		ne.PutUint64(b[indomOff+32*i+8:], uint64(metricOff))
	}
	for i := range nMetrics {
		r := metricOff + 104*i
		copy(b[r:], "m"+strconv.Itoa(i))
		ne.PutUint32(b[r+64:], uint32(i)) // item
		ne.PutUint32(b[r+64+4:], 3)       // U64
		ne.PutUint32(b[r+64+8:], 1)       // counter
		ne.PutUint32(b[r+64+16:], metricIndom)
	}
	return b
}
