//go:build (linux || darwin || freebsd) && !mmv_noport

// The examples start their registries: they run where files are written
// (the other tests skip elsewhere; an example cannot).

package mmv_test

import (
	"errors"
	"fmt"
	"log"
	"path/filepath"
	"time"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/mmvfile"
)

// A registry declares indoms and metrics, starts, and hands out handles
// whose updates PCP reads straight from the mapped file.
func ExampleRegistry() {
	r, done := exampleRegistry("web", &mmv.Options{Cluster: 7})
	defer done()
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
	r, done := exampleRegistry("tenants", nil)
	defer done()
	r.AddIndom(mmv.Indom{Serial: 1})
	r.AddMetric(mmv.Metric{Name: "requests", Type: mmv.Uint64, Semantics: mmv.SemCounter, Indom: 1})
	if err := r.Start(); err != nil {
		log.Fatal(err)
	}

	r.AddInstance(1, mmv.Instance{ID: 1, Name: "acme"}) // a new tenant
	acme, _ := r.Value("requests", "acme")
	acme.Inc()
	r.Flush()

	f, _ := mmvfile.Open(r.Path())
	fmt.Println(len(f.Indoms[0].Instances), f.Values[0].Instance.Name, f.Values[0].Uint)
	// Output: 1 acme 1
}

// Units print as PCP prints them. Each dimension's scale has its own type,
// so that NewUnits takes no time scale for a space scale.
func ExampleUnits() {
	fmt.Println(mmv.Kbyte.Per(mmv.Second))
	fmt.Println(mmv.Count.Per(mmv.Millisecond))
	fmt.Println(mmv.NewUnits(0, 0, 1, 0, 0, 3))
	perHour := mmv.NewUnits(1, -1, 0, mmv.ScaleZbyte, mmv.ScaleHour, 0)
	fmt.Println(perHour, "|", perHour.ScaleSpace(), perHour.ScaleTime())
	// Output:
	// Kbyte / sec
	// count / millisec
	// count x 10^3
	// Zbyte / hour | Zbyte hour
}

// An Elapsed value accumulates time: from many goroutines with
// AddDuration, or as libpcp's intervals for a single owner.
func ExampleValue_AddDuration() {
	r, done := exampleRegistry("jobs", nil)
	defer done()
	r.AddMetric(mmv.Metric{Name: "busy", Type: mmv.Elapsed, Semantics: mmv.SemCounter, Units: mmv.Microsecond})
	if err := r.Start(); err != nil {
		log.Fatal(err)
	}
	busy, _ := r.Value("busy", "")
	busy.AddDuration(1500 * time.Microsecond)
	fmt.Println(busy.Int(), "microseconds")
	// Output: 1500 microseconds
}

// Configure names a registry and sets its options after instruments were
// declared on it, as package-level variables declare on mmv.Default before
// main runs: they are published in the configured file.
func ExampleRegistry_Configure() {
	r, done := exampleRegistry("example", nil) // stands for mmv.Default
	defer done()
	requests := mmv.NewCounter(r, "requests", "Requests served", mmv.Count)

	o := r.Options() // keep the other options, such as Default's Process flag
	o.Cluster = 12
	if err := r.Configure("shop", o); err != nil {
		log.Fatal(err)
	}
	if err := r.Start(); err != nil {
		log.Fatal(err)
	}
	requests.Inc()

	f, _ := mmvfile.Open(r.Path())
	fmt.Println(filepath.Base(r.Path()), f.Header.Cluster, f.Values[0].Metric.Name, f.Values[0].Uint)
	// Output: shop 12 requests 1
}

// A counter vector whose series are incremented from several cores at
// high rates gets a registry of its own with PadValues: each value alone
// on 128 bytes, so that the cores do not share a cache line. The file is
// then not libpcp_mmv's, and its values take four times the room.
func ExampleOptions_padValues() {
	r, done := exampleRegistry("hot", &mmv.Options{PadValues: true})
	defer done()
	shards := mmv.NewCounterVec(r, "shard.ops", "Operations by shard", mmv.Count, "shard")
	a, b := shards.With("0"), shards.With("1") // one per worker, looked up once
	if err := r.Start(); err != nil {
		log.Fatal(err)
	}
	a.Inc()
	b.Add(2)

	f, _ := mmvfile.Open(r.Path())
	fmt.Println(f.Values[0].Instance.Name, f.Values[0].Uint)
	fmt.Println(f.Values[1].Instance.Name, f.Values[1].Uint)
	fmt.Println("bytes apart:", f.Values[1].Offset-f.Values[0].Offset)
	// Output:
	// shard=0 1
	// shard=1 2
	// bytes apart: 128
}
