//go:build (linux || darwin || freebsd) && !mmv_noport

package goruntime_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/goruntime"
)

// The runtime's metrics on a registry of their own, started: PCP shows
// them as mmv.goruntime.* (Options.Dir keeps the example's file out of
// PCP's directory; a service leaves it empty).
func ExampleRegister() {
	dir, err := os.MkdirTemp("", "mmv-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	r := mmv.NewRegistry("goruntime", &mmv.Options{Dir: filepath.Join(dir, "mmv"), Flags: mmv.Process})
	if err := goruntime.Register(r, nil); err != nil {
		log.Fatal(err)
	}
	if err := r.Start(); err != nil {
		log.Fatal(err)
	}
	defer r.Close()

	s, err := r.Snapshot()
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range s {
		switch m.Name {
		case "sched.goroutines_goroutines", "gc.heap.allocs_bytes", "sched.latencies_seconds.bucket":
			fmt.Printf("mmv.goruntime.%s\n", m.Name) // three of the metrics PCP shows
		}
	}
	// Unordered output:
	// mmv.goruntime.sched.goroutines_goroutines
	// mmv.goruntime.gc.heap.allocs_bytes
	// mmv.goruntime.sched.latencies_seconds.bucket
}
