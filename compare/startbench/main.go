// Command startbench builds and starts an mmv registry, the Go side of
// BenchmarkStart (../start_test.go), which runs it as a subprocess beside
// testdata/start.c, libpcp_mmv's side, so that both are timed and sized alike:
//
//	PCP_TMP_DIR=DIR startbench metrics|instances ITERATIONS [KEEP]
//
// It declares what start.c declares, prints the mean nanoseconds of
// building the registry (the names, NewRegistry and the declarations) and
// of Start, the peak RSS (VmHWM) in KiB, and the mean nanoseconds of
// making the names, the part of the build that is the program's, not the
// library's. The file is removed after each iteration unless KEEP is given.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gopcp/mmv"
)

func main() {
	if len(os.Args) < 3 || os.Getenv("PCP_TMP_DIR") == "" {
		fmt.Fprintln(os.Stderr, "usage: PCP_TMP_DIR=DIR startbench metrics|instances ITERATIONS [KEEP]")
		os.Exit(2)
	}
	metrics, instances := 1000, 10
	switch os.Args[1] {
	case "metrics":
	case "instances":
		metrics, instances = 1, 10000
	default:
		fail(fmt.Errorf("unknown scenario %q", os.Args[1]))
	}
	n, err := strconv.Atoi(os.Args[2])
	if err != nil {
		fail(err)
	}
	dir := filepath.Join(os.Getenv("PCP_TMP_DIR"), "mmv")
	var build, start, names time.Duration
	for range n {
		t0 := time.Now()
		insts := make([]mmv.Instance, instances)
		for j := range insts {
			insts[j] = mmv.Instance{ID: int32(j), Name: name("inst", j)}
		}
		metricNames := make([]string, metrics)
		for j := range metricNames {
			metricNames[j] = name("metric", j)
		}
		tn := time.Now()
		r := mmv.NewRegistry("start", &mmv.Options{Cluster: 42, Dir: dir, MaxIndomInstances: -1, MaxInstances: -1, MaxFileValues: -1, MaxValues: -1})
		check(r.AddIndom(mmv.Indom{Serial: 1, ShortHelp: "Instances", Instances: insts}))
		for j, name := range metricNames {
			check(r.AddMetric(mmv.Metric{Name: name, Item: uint32(j + 1), Type: mmv.Uint64,
				Semantics: mmv.SemCounter, Units: mmv.Count, Indom: 1, ShortHelp: "A metric"}))
		}
		t1 := time.Now()
		check(r.Start())
		t2 := time.Now()
		build += t1.Sub(t0)
		start += t2.Sub(t1)
		names += tn.Sub(t0)
		check(r.Close())
		if len(os.Args) < 4 {
			check(os.Remove(filepath.Join(dir, "start")))
		}
	}
	fmt.Println(int64(build)/int64(n), int64(start)/int64(n), peakRSS(), int64(names)/int64(n))
}

// name formats prefix and j as a program would, with fmt.Sprintf, as
// start.c does with snprintf and strdup.
func name(prefix string, j int) string { return fmt.Sprintf("%s%d", prefix, j) }

// peakRSS is VmHWM, in KiB: unlike getrusage's Maxrss, which a process
// started by os/exec inherits from its parent across exec, it is this
// program's own.
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	check(err)
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kib, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			check(err)
			return kib
		}
	}
	fail(fmt.Errorf("no VmHWM in /proc/self/status"))
	return 0
}

func check(err error) {
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "startbench:", err)
	os.Exit(1)
}
