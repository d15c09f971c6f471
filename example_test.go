package mmv_test

import (
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/mmvfile"
)

// exampleDir stands for $PCP_TMP_DIR/mmv, where a registry writes by
// default: the examples write into a temporary directory, which clean
// removes.
func exampleDir() (dir string, clean func()) {
	d, err := os.MkdirTemp("", "mmv-example")
	if err != nil {
		log.Fatal(err)
	}
	return filepath.Join(d, "mmv"), func() { os.RemoveAll(d) }
}

// A registry declares indoms and metrics, starts, and hands out handles
// whose updates PCP reads straight from the mapped file.
func ExampleRegistry() {
	dir, clean := exampleDir()
	defer clean()
	r := mmv.NewRegistry("web", &mmv.Options{Cluster: 7, Dir: dir})
	err := errors.Join(
		r.AddIndom(mmv.Indom{Serial: 1, ShortHelp: "HTTP methods",
			Instances: []mmv.Instance{{ID: 0, Name: "GET"}, {ID: 1, Name: "POST"}}}),
		r.AddMetric(mmv.Metric{Name: "requests", Item: 1, Type: mmv.Uint64, Semantics: mmv.SemCounter,
			Units: mmv.Count, Indom: 1, ShortHelp: "Requests served"}),
		r.AddMetric(mmv.Metric{Name: "version", Item: 2, Type: mmv.String, Semantics: mmv.SemDiscrete}),
		r.Start(),
	)
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()

	get, _ := r.Value("requests", "GET")
	get.Inc()
	get.Add(2)
	version, _ := r.Value("version", "")
	version.SetString("1.2.3")

	f, _ := mmvfile.Open(r.Path())
	for _, v := range f.Values {
		name := v.Metric.Name
		if v.Instance != nil {
			name += "[" + v.Instance.Name + "]"
		}
		if v.Metric.Type == mmv.String {
			fmt.Println(name, v.String)
		} else {
			fmt.Println(name, v.Uint)
		}
	}
	// Output:
	// requests[GET] 3
	// requests[POST] 0
	// version 1.2.3
}

// Declarations are checked as PCP's reader would check them; the error
// names what is at fault and wraps a sentinel.
func ExampleRegistry_AddMetric_refused() {
	r := mmv.NewRegistry("web", nil)
	r.AddMetric(mmv.Metric{Name: "http.requests", Type: mmv.Uint64, Semantics: mmv.SemCounter})
	err := r.AddMetric(mmv.Metric{Name: "http.requests.total", Type: mmv.Uint64, Semantics: mmv.SemCounter})
	fmt.Println(errors.Is(err, mmv.ErrNamespace))
	fmt.Println(err)
	// Output:
	// true
	// mmv: metric "http.requests.total": namespace conflict: metric "http.requests" is a prefix of it, which makes PCP drop every MMV metric on the host
}

// Metrics and instances declared after Start can be updated at once; Flush
// publishes them to PCP without waiting for Options.PublishDelay.
func ExampleRegistry_Flush() {
	dir, clean := exampleDir()
	defer clean()
	r := mmv.NewRegistry("tenants", &mmv.Options{Dir: dir})
	r.AddIndom(mmv.Indom{Serial: 1})
	r.AddMetric(mmv.Metric{Name: "requests", Type: mmv.Uint64, Semantics: mmv.SemCounter, Indom: 1})
	if err := r.Start(); err != nil {
		log.Fatal(err)
	}
	defer r.Close()

	r.AddInstance(1, mmv.Instance{ID: 1, Name: "acme"}) // a new tenant
	acme, _ := r.Value("requests", "acme")
	acme.Inc()
	r.Flush()

	f, _ := mmvfile.Open(r.Path())
	fmt.Println(len(f.Indoms[0].Instances), f.Values[0].Instance.Name, f.Values[0].Uint)
	// Output: 1 acme 1
}

// Units print as PCP prints them.
func ExampleUnits() {
	fmt.Println(mmv.Kbyte.Per(mmv.Second))
	fmt.Println(mmv.Count.Per(mmv.Millisecond))
	fmt.Println(mmv.NewUnits(0, 0, 1, 0, 0, 3))
	// Output:
	// Kbyte / sec
	// count / millisec
	// count x 10^3
}

// An Elapsed value accumulates time: from many goroutines with
// AddDuration, or as libpcp's intervals for a single owner.
func ExampleValue_AddDuration() {
	dir, clean := exampleDir()
	defer clean()
	r := mmv.NewRegistry("jobs", &mmv.Options{Dir: dir})
	r.AddMetric(mmv.Metric{Name: "busy", Type: mmv.Elapsed, Semantics: mmv.SemCounter, Units: mmv.Microsecond})
	if err := r.Start(); err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	busy, _ := r.Value("busy", "")
	busy.AddDuration(1500 * time.Microsecond)
	fmt.Println(busy.Int(), "microseconds")
	// Output: 1500 microseconds
}
