//go:build (linux || darwin || freebsd) && !mmv_noport

// The examples start their registries: they run where files are written
// (the other tests skip elsewhere; an example cannot).

package mmv_test

import (
	"errors"
	"fmt"
	"log"
	"math"
	"sync/atomic"
	"time"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/mmvfile"
)

// Example_quickStart is the README's quick start, on a registry of its own
// rather than mmv.Default, whose file a test must not leave in PCP's
// directory.
func Example_quickStart() {
	r, done := exampleRegistry("shop", &mmv.Options{Flags: mmv.Process})
	defer done()
	var (
		requests = mmv.NewCounterVec(r, "http.requests", "Requests served", mmv.Count, "route", "status")
		inFlight = mmv.NewIntGauge(r, "http.in_flight", "Requests being served", mmv.Count)
		latency  = mmv.NewHistogramVec(r, "http.latency", "Request latency", mmv.Second, nil, "route")
	)
	if err := r.Start(); err != nil {
		log.Fatal(err)
	}
	inFlight.Inc()
	requests.With("/api", "200").Inc()
	latency.With("/api").Observe(0.012)

	fmt.Println(requests.Instances(), inFlight.Get(), latency.With("/api").Stats().Count)
	// Output: [route=/api,status=200] 1 1
}

func ExampleNewCounter() {
	r, done := exampleRegistry("shop", nil)
	defer done()
	orders := mmv.NewCounter(r, "orders", "Orders placed", mmv.Count)
	orders.Inc() // before Start: kept in memory, carried into the file by Start
	if err := r.Start(); err != nil {
		log.Fatal(err)
	}
	orders.Add(2)

	v, _ := r.Value("orders", "") // what PCP reads as mmv.shop.orders
	fmt.Println(orders.Get(), v.Int(), v.Type())
	// Output: 3 3 64-bit unsigned int
}

func ExampleNewGauge() {
	r, done := exampleRegistry("room", nil)
	defer done()
	temp := mmv.NewGauge(r, "temperature", "Room temperature in degrees Celsius", mmv.NoUnits)
	if err := r.Start(); err != nil {
		log.Fatal(err)
	}
	temp.Set(20.5)
	temp.Add(1.25)
	temp.Dec()
	fmt.Println(temp.Get())
	// Output: 20.75
}

func ExampleNewIntGauge() {
	r, done := exampleRegistry("queue", nil)
	defer done()
	depth := mmv.NewIntGauge(r, "depth", "Jobs waiting", mmv.Count)
	if err := r.Start(); err != nil {
		log.Fatal(err)
	}
	depth.Add(3)
	depth.Dec()
	v, _ := r.Value("depth", "")
	fmt.Println(depth.Get(), v.Int())
	// Output: 2 2
}

func ExampleNewTimer() {
	r, done := exampleRegistry("db", nil)
	defer done()
	queries := mmv.NewTimer(r, "query_time", "Time spent in queries")
	if err := r.Start(); err != nil {
		log.Fatal(err)
	}
	queries.Observe(1500 * time.Microsecond)
	queries.Observe(700 * time.Nanosecond) // sub-microsecond times add up exactly
	queries.Observe(300 * time.Nanosecond)

	v, _ := r.Value("query_time", "") // PCP: a counter, in nanoseconds
	fmt.Println(queries.Get(), v.Int())
	// Output: 1.501ms 1501000
}

func ExampleTimer_Start() {
	r, done := exampleRegistry("jobs", nil)
	defer done()
	busy := mmv.NewTimer(r, "busy", "Time spent working")
	if err := r.Start(); err != nil {
		log.Fatal(err)
	}
	work := func() {
		defer busy.Start().Stop() // safe from any number of goroutines
		time.Sleep(time.Millisecond)
	}
	work()
	busy.Time(work)
	fmt.Println(busy.Get() >= 2*time.Millisecond)
	// Output: true
}

func ExampleNewHistogram() {
	r, done := exampleRegistry("api", nil)
	defer done()
	latency := mmv.NewHistogram(r, "latency", "Request latency", mmv.Millisecond,
		&mmv.HistogramOptions{Min: 0.01, Max: 10000, SubBuckets: 16})
	if err := r.Start(); err != nil {
		log.Fatal(err)
	}
	for i := 1; i <= 1000; i++ {
		latency.Observe(float64(i) / 10) // 0.1 ms to 100 ms
	}
	latency.ObserveDuration(250 * time.Millisecond) // in the histogram's units: 250

	s := latency.Stats()
	fmt.Println(s.Count, s.Min, s.Max)
	// Exact: 50.1 and 99.1; 16 sub-buckets bound the error to 1/32.
	fmt.Printf("p50 %.3g p99 %.3g\n", latency.Quantile(0.5), latency.Quantile(0.99))
	// PCP reads mmv.api.latency.bucket (one instance per bucket), .count,
	// .sum, .min, .max, .mean, .p50, .p90, .p99 and .p999.

	// Output:
	// 1001 0.1 250
	// p50 51 p99 98
}

func ExampleNewCounterVec() {
	r, done := exampleRegistry("web", nil)
	defer done()
	requests := mmv.NewCounterVec(r, "requests", "Requests by route and status", mmv.Count, "route", "status")
	requests.SetLimit(3) // at most 3 instances
	if err := r.Start(); err != nil {
		log.Fatal(err)
	}
	ok := requests.With("/api", "200") // look up once, keep for the hot path
	ok.Inc()
	ok.Inc()
	requests.With("/", "200").Inc()
	requests.With("GET /x", "404").Inc() // any values: the name escapes what PCP cannot tell apart
	requests.With("/more", "500").Inc()  // beyond the limit: With returns nil, which ignores it
	fmt.Println(errors.Is(requests.Err(), mmv.ErrTooMany), requests.Err())
	r.Flush() // PCP sees the new instances now, rather than after Options.PublishDelay

	snap, _ := r.Snapshot() // what PCP reads: mmv.web.requests, by instance
	for _, m := range snap {
		if m.Name == "requests" {
			for _, v := range m.Values {
				fmt.Println(v.Instance, v.Value)
			}
		}
	}
	// Output:
	// true mmv: vector "requests" instance "route=/more,status=500": too many: the vector holds its limit of 3 instances (see SetLimit)
	// route=/api,status=200 2
	// route=/,status=200 1
	// route=GET%20/x,status=404 1
}

func ExampleNewHistogramVec() {
	r, done := exampleRegistry("rpc", nil)
	defer done()
	sizes := mmv.NewHistogramVec(r, "reply_size", "Reply size by method", mmv.Byte,
		&mmv.HistogramOptions{Buckets: []float64{1024, 65536}, Quantiles: []float64{0.5, 0.999}}, "method")
	if err := r.Start(); err != nil {
		log.Fatal(err)
	}
	sizes.With("get").Observe(512)
	sizes.With("get").Observe(4096)
	// "put" is made on first use: an instance of the statistics, and one
	// instance of reply_size.bucket per bucket.
	fmt.Println(sizes.With("get").Stats().Mean, sizes.With("put").Stats().Count)
	r.Flush()
	// PCP reads mmv.rpc.reply_size.p50 and .p999 over instances "method=get"
	// and "method=put", and mmv.rpc.reply_size.bucket over instances such as
	// "method=get,le=1024".
	snap, _ := r.Snapshot()
	for _, m := range snap {
		if m.Name == "reply_size.bucket" {
			for _, v := range m.Values[3:] { // put's, after get's
				fmt.Println(v.Instance)
			}
		}
	}

	// Output:
	// 2304 0
	// method=put,le=1024
	// method=put,le=65536
	// method=put,le=+Inf
}

func ExampleNewGaugeVec() {
	r, done := exampleRegistry("sensors", nil)
	defer done()
	temps := mmv.NewGaugeVec(r, "temperature", "Temperature by sensor", mmv.NoUnits, "sensor")
	if err := r.Start(); err != nil {
		log.Fatal(err)
	}
	temps.With("cpu").Set(61.5)
	fmt.Println(temps.With("cpu").Get(), temps.With("disk").Get())
	// Output: 61.5 0
}

func ExampleNewIntGaugeVec() {
	r, done := exampleRegistry("pool", nil)
	defer done()
	conns := mmv.NewIntGaugeVec(r, "connections", "Open connections by peer", mmv.Count, "peer")
	if err := r.Start(); err != nil {
		log.Fatal(err)
	}
	conns.With("db").Inc()
	conns.With("db").Inc()
	conns.With("cache").Inc()
	conns.With("db").Dec()
	fmt.Println(conns.With("db").Get(), conns.With("cache").Get())
	// Output: 1 1
}

func ExampleNewTimerVec() {
	r, done := exampleRegistry("stages", nil)
	defer done()
	stages := mmv.NewTimerVec(r, "time", "Time by pipeline stage", "stage")
	if err := r.Start(); err != nil {
		log.Fatal(err)
	}
	stages.With("parse").Observe(2 * time.Millisecond)
	fmt.Println(stages.With("parse").Get()) // PCP reads nanoseconds: 2000000
	// Output: 2ms
}

func ExampleRegistry_Poll() {
	r, done := exampleRegistry("app", nil)
	defer done()
	jobs := make(chan string, 10) // a value kept elsewhere: the queue's length
	jobs <- "a"
	jobs <- "b"
	queued := mmv.NewIntGauge(r, "queued_jobs", "Jobs waiting in the queue", mmv.Count)
	polled := make(chan bool, 1)
	// Copy it into the file at Start, then every 10 seconds.
	r.Poll(10*time.Second, func() {
		queued.Set(int64(len(jobs)))
		select {
		case polled <- true:
		default:
		}
	})
	if err := r.Start(); err != nil {
		log.Fatal(err)
	}
	<-polled // the first run, on a goroutine of its own

	v, _ := r.Value("queued_jobs", "") // what PCP reads as mmv.app.queued_jobs
	fmt.Println(v.Int())
	// Output: 2
}

// The package-level convenience: instruments on mmv.Default, the registry
// named after the program.
func Example_default() {
	requests := mmv.NewCounter(nil, "example.requests", "Requests served", mmv.Count)
	requests.Inc() // counted in memory until mmv.Default.Start
	// In main, once the instruments are declared:
	//
	//	if err := mmv.Default.Start(); err != nil { ... }
	//	defer mmv.Default.Close()
	fmt.Println(requests.Get())
	// Output: 1
}

// ExampleDeclareVec declares metrics whose names come from elsewhere, as a
// bridge from another metrics library does: a name the registry refuses
// is an error to report, not a crash, and declares nothing.
func ExampleDeclareVec() {
	r, done := exampleRegistry("bridge", nil)
	defer done()
	for _, name := range []string{"jobs.done", "jobs", "jobs.done"} {
		jobs, err := mmv.DeclareVec[mmv.Counter](r, name, "Jobs done", mmv.Count, "queue")
		if err != nil {
			fmt.Println("skipped:", errors.Is(err, mmv.ErrNamespace), errors.Is(err, mmv.ErrDuplicate))
			continue
		}
		jobs.With("mail").Inc()
	}
	if err := r.Start(); err != nil {
		log.Fatal(err)
	}
	snap, _ := r.Snapshot()
	for _, m := range snap {
		for _, v := range m.Values {
			fmt.Println(m.Name, v.Instance, v.Value)
		}
	}
	// Output:
	// skipped: true false
	// skipped: false true
	// jobs.done queue=mail 1
}

// ExampleRegistry_Transact declares the metrics of one histogram from
// another library, buckets, count and sum, together or not at all: here
// the program has taken the name of its sum, so none is declared, and no
// bucket is left in PCP without its count and sum.
func ExampleRegistry_Transact() {
	r, done := exampleRegistry("bridge", nil)
	defer done()
	mmv.NewGauge(r, "latency.sum", "the program's own", mmv.Second)

	err := r.Transact(func(tx *mmv.Tx) error {
		buckets, err := mmv.DeclareVec[mmv.Counter](tx, "latency.bucket", "Latency by bucket", mmv.Count, "le")
		if err != nil {
			return err
		}
		buckets.SetInstanceLabels(false)
		if _, err := mmv.Declare[mmv.Counter](tx, "latency.count", "Observations", mmv.Count); err != nil {
			return err
		}
		_, err = mmv.Declare[mmv.Gauge](tx, "latency.sum", "Sum of the observations", mmv.Second)
		return err
	})
	fmt.Println(errors.Is(err, mmv.ErrDuplicate))
	if err := r.Start(); err != nil {
		log.Fatal(err)
	}
	_, err = r.Value("latency.count", "")
	fmt.Println(errors.Is(err, mmv.ErrUnknown))
	// Output:
	// true
	// true
}

// A vector of series by client forgets the clients that went quiet: their
// instances leave PCP, and come back with their ids if the client does.
func ExampleVec_SetExpiry() {
	r, done := exampleRegistry("clients", nil)
	defer done()
	bytes := mmv.NewCounterVec(r, "bytes", "Bytes sent, by client", mmv.Byte, "client")
	bytes.SetExpiry(100 * time.Millisecond) // unchanged this long: forgotten
	if err := r.Start(); err != nil {
		log.Fatal(err)
	}
	bytes.With("10.0.0.1").Add(512)
	bytes.With("10.0.0.2").Add(128)
	for deadline := time.Now().Add(10 * time.Second); len(bytes.Instances()) > 1 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		bytes.With("10.0.0.1").Add(512) // still sending
	}
	fmt.Println(bytes.Instances())
	// Output:
	// [client=10.0.0.1]
}

// Callback metrics publish values kept elsewhere, such as a pool's open
// connections or a cache's hit ratio: the registry reads them at Start,
// every mmv.DefaultInterval, and at Close.
func ExampleNewIntGaugeFunc() {
	r, done := exampleRegistry("pool", nil)
	defer done()
	var open atomic.Int64 // kept by a connection pool
	open.Store(3)
	var hits, lookups atomic.Uint64 // kept by a cache
	hits.Store(3)
	lookups.Store(4)
	mmv.NewIntGaugeFunc(r, "connections", "Open connections", mmv.Count, open.Load)
	mmv.NewCounterFunc(r, "cache.lookups", "Cache lookups", mmv.Count, lookups.Load)
	mmv.NewGaugeFunc(r, "cache.hit_ratio", "Cache hits per lookup", mmv.NoUnits, func() float64 {
		return float64(hits.Load()) / math.Max(1, float64(lookups.Load()))
	})
	if err := r.Start(); err != nil {
		log.Fatal(err)
	}

	f, _ := mmvfile.Open(r.Path())
	for _, v := range f.Values {
		fmt.Println(v.Metric.Name, v.Int, v.Uint, v.Float)
	}
	// Output:
	// connections 3 0 0
	// cache.lookups 0 4 0
	// cache.hit_ratio 0 0 0.75
}
