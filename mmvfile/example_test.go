//go:build (linux || darwin || freebsd) && !mmv_noport

// The examples start their registries: they run where files are written
// (the other tests skip elsewhere; an example cannot).

package mmvfile_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/mmvfile"
)

// A directory's hazards: here two files on one cluster, as when a program
// is copied under another name. PCP would show one file's values under the
// other's names.
func ExampleLintDir() {
	dir, err := os.MkdirTemp("", "lint")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	r := mmv.NewRegistry("app", &mmv.Options{Dir: dir, Cluster: 7})
	mmv.NewCounter(r, "requests", "Requests served", mmv.Count).Inc()
	if err := r.Start(); err != nil {
		panic(err)
	}
	defer r.Close()
	b, err := os.ReadFile(r.Path())
	if err != nil {
		panic(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "app2"), b, 0o644); err != nil {
		panic(err)
	}

	findings, err := mmvfile.LintDir(dir)
	if err != nil {
		panic(err)
	}
	for _, f := range findings {
		if f.Rule == mmvfile.RuleGroup {
			continue // depends on who runs the example
		}
		fmt.Println(filepath.Base(f.File), f.Record, f.Rule)
	}
	// Output:
	// app2 header shared-cluster
	// app2 metric [0] at offset 88 (requests) pmid-collision
}

// Dump prints a file as PCP's mmvdump does.
func ExampleDump() {
	dir, err := os.MkdirTemp("", "dump")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	r := mmv.NewRegistry("app", &mmv.Options{Dir: dir, Cluster: 7})
	mmv.NewCounter(r, "requests", "Requests served", mmv.Count).Add(3)
	if err := r.Start(); err != nil {
		panic(err)
	}
	defer r.Close()
	b, err := os.ReadFile(r.Path())
	if err != nil {
		panic(err)
	}
	clear(b[8:24])  // the generations, a time: zero for a stable output
	clear(b[32:36]) // and the writer's pid

	if _, err := mmvfile.Dump(os.Stdout, "app", b, time.Now()); err != nil {
		panic(err)
	}
	// Output:
	// MMV file   = app
	// Version    = 1
	// Generated  = 0
	// TOC count  = 3
	// Cluster    = 7
	// Process    = 0
	// Flags      = 0x0 (none)
	//
	// TOC[0]: toc offset 40, metrics offset 88 (1 entries)
	//   [151/88] requests
	//        type=64-bit unsigned int (0x3), sem=counter (0x1), pad=0x0
	//        units=count
	//        (no indom)
	//        shorttext=Requests served
	//        (no helptext)
	//
	// TOC[1]: offset 56, values offset 192 (1 entries)
	//   [151/192] requests = 3
	//
	// TOC[2]: offset 72, string offset 224 (1 entries)
	//   [1/224] Requests served
}

// DumpAs prints a file as the mmvdump of either PCP: here a temperature,
// one of PCP 7.2's extra units, which 6.0.3 does not show.
func ExampleDumpAs() {
	dir, err := os.MkdirTemp("", "dump")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	r := mmv.NewRegistry("app", &mmv.Options{Dir: dir, Cluster: 7})
	mmv.NewGauge(r, "cpu.temp", "CPU temperature", mmv.Celsius).Set(61.5)
	if err := r.Start(); err != nil {
		panic(err)
	}
	defer r.Close()
	b, err := os.ReadFile(r.Path())
	if err != nil {
		panic(err)
	}
	for _, pcp := range []mmvfile.PCP{mmvfile.PCP603, mmvfile.PCP72} {
		var out strings.Builder
		if _, err := mmvfile.DumpAs(&out, "app", b, time.Now(), pcp); err != nil {
			panic(err)
		}
		for _, l := range strings.Split(out.String(), "\n") {
			if strings.Contains(l, "units=") || strings.Contains(l, "cpu.temp = ") {
				fmt.Printf("%s:%s\n", pcp, l)
			}
		}
	}
	// Output:
	// 6.0.3:       units=
	// 6.0.3:  [859/192] cpu.temp = 61.500000
	// 7.2:       units=temperature (C)
	// 7.2:  [859/192] cpu.temp = 61.500000
}
