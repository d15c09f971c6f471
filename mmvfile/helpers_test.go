package mmvfile_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

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

// deadPID returns the id of a process that has exited.
func deadPID(t *testing.T) int {
	cmd := exec.Command("true")
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
