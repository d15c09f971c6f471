package compare

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gopcp/mmv/internal/golden"
	"github.com/gopcp/mmv/internal/pcptest"
)

// BenchmarkStart builds and starts the same registry with mmv and with
// libpcp_mmv, each in a subprocess that times itself in-process and
// reports (startbench/main.go, testdata/start.c): 1,000 metrics over an
// indom of 10 instances, and one metric over 10,000 instances. ns/op is
// build + start; peak-RSS-KiB is that of a process that builds and starts
// once. names-ns/op is the part of the build that makes the names
// (fmt.Sprintf; snprintf and strdup), the program's, not the library's.
// Both write byte-identical files (checked here) into the same directory,
// one of their own: a Start of mmv reads the head of every MMV file of its
// directory to claim a cluster no live file has (identity.go), and would
// count in the files the other benchmarks of the run leave in tmpDir.
func BenchmarkStart(b *testing.B) {
	pcptest.MustHaveLibPCPMMV(b)
	bin, dir := b.TempDir(), b.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "mmv"), 0o755); err != nil {
		b.Fatal(err)
	}
	progs := map[string][]string{
		"mmv":        {"go", "build", "-o", filepath.Join(bin, "mmv"), "./startbench"},
		"libpcp_mmv": {"gcc", "-O2", "-o", filepath.Join(bin, "libpcp_mmv"), "testdata/start.c", "-lpcp_mmv", "-lpcp"},
	}
	for name, cmd := range progs {
		if out, err := exec.Command(cmd[0], cmd[1:]...).CombinedOutput(); err != nil {
			b.Fatalf("building %s's start program: %v: %s", name, err, out)
		}
	}
	for _, scenario := range []string{"metrics", "instances"} {
		files := map[string][]byte{}
		for _, lib := range []string{"libpcp_mmv", "mmv"} {
			b.Run(scenario+"/"+lib, func(b *testing.B) {
				prog := filepath.Join(bin, lib)
				_, _, rss, _ := runStart(b, dir, prog, scenario, 1, true)
				f, err := os.ReadFile(filepath.Join(dir, "mmv", "start"))
				if err != nil {
					b.Fatal(err)
				}
				files[lib] = f
				os.Remove(filepath.Join(dir, "mmv", "start"))
				build, start, _, names := runStart(b, dir, prog, scenario, b.N, false)
				b.ReportMetric(build+start, "ns/op")
				b.ReportMetric(build, "build-ns/op")
				b.ReportMetric(start, "start-ns/op")
				b.ReportMetric(names, "names-ns/op")
				b.ReportMetric(rss, "peak-RSS-KiB")
			})
		}
		if d := golden.Diff(files["mmv"], files["libpcp_mmv"]); len(d) > 0 {
			b.Fatalf("%s: mmv's file differs from libpcp_mmv's: %v", scenario, d)
		}
	}
}

// runStart runs a start program for n iterations, with PCP_TMP_DIR dir,
// and returns what it
// reports: the mean nanoseconds of build and of start, its peak RSS, and
// the mean nanoseconds of making the names.
func runStart(b *testing.B, dir, prog, scenario string, n int, keep bool) (build, start, rss, names float64) {
	b.Helper()
	args := []string{scenario, strconv.Itoa(n)}
	if keep {
		args = append(args, "keep")
	}
	cmd := exec.Command(prog, args...)
	cmd.Env = append(os.Environ(), "PCP_TMP_DIR="+dir)
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("%s %s: %v", prog, strings.Join(args, " "), err)
	}
	var v [4]float64
	f := strings.Fields(string(out))
	if len(f) != len(v) {
		b.Fatalf("%s: report %q: want build, start, RSS and names", prog, out)
	}
	for i := range v {
		if v[i], err = strconv.ParseFloat(f[i], 64); err != nil {
			b.Fatalf("%s: report %q: %v", prog, out, err)
		}
	}
	return v[0], v[1], v[2], v[3]
}
