// Command httpserver serves HTTP on 127.0.0.1 behind a metrics middleware
// and drives itself with a client in the same program, publishing to PCP:
//
//   - http.requests: requests by route and status (a counter vector,
//     instances such as "/hello:200");
//   - http.latency: a latency histogram by route, in seconds (buckets,
//     count, sum, min, max, mean, p50, p90, p99, p999);
//   - http.in_flight: requests being served (an integer gauge);
//   - http.response_bytes: bytes written, by route (a counter vector);
//   - http.handler_time: time spent in handlers (a timer).
//
// It declares them on mmv.Default, so the file is named after the program:
// mmv.httpserver.* under `go run ./examples/httpserver`.
//
//	go run ./examples/httpserver -for 1m
//	pminfo -f mmv.httpserver.http
//	pmrep -t 1 mmv.httpserver.http.latency.p99
//
// It runs until interrupted, or for the -for duration.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gopcp/mmv"
)

// The routes the server knows; a request for anything else is "other".
var routes = []string{"/hello", "/data", "/slow", "/fail", "other"}

func main() {
	d := flag.Duration("for", 0, "run this long, then exit (default: until interrupted)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Stdout, *d); err != nil {
		log.Fatal(err)
	}
}

// Metrics is the middleware's instruments.
type Metrics struct {
	requests      *mmv.Vec[mmv.Counter]
	latency       *mmv.Vec[mmv.Histogram]
	inFlight      *mmv.IntGauge
	responseBytes *mmv.Vec[mmv.Counter]
	handlerTime   *mmv.Timer
}

// NewMetrics declares the middleware's instruments on r (mmv.Default when
// nil), for the given routes. Requests are counted by route and status, as
// instances that appear when a status is first seen on a route.
func NewMetrics(r *mmv.Registry, routes []string) *Metrics {
	return &Metrics{
		requests: mmv.NewCounterVec(r, "http.requests", "HTTP requests served, by route:status", mmv.Count),
		latency: mmv.NewHistogramVec(r, "http.latency", "HTTP request latency, by route", mmv.Second,
			&mmv.HistogramOptions{Min: 1e-6, Max: 10}, routes...),
		inFlight:      mmv.NewIntGauge(r, "http.in_flight", "HTTP requests being served", mmv.Count),
		responseBytes: mmv.NewCounterVec(r, "http.response_bytes", "HTTP response body bytes, by route", mmv.Byte, routes...),
		handlerTime:   mmv.NewTimer(r, "http.handler_time", "Time spent in HTTP handlers"),
	}
}

func instance(route string, code int) string { return route + ":" + strconv.Itoa(code) }

// Wrap returns h measured: mux's patterns (without a method or host) name
// the routes, and requests no pattern matched count as "other".
func (m *Metrics) Wrap(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		m.inFlight.Inc()
		defer m.inFlight.Dec()
		rw := &recorder{ResponseWriter: w, code: http.StatusOK}
		timing := m.handlerTime.Start()
		mux.ServeHTTP(rw, r)
		timing.Stop()
		route := r.Pattern
		if route == "" {
			route = "other"
		}
		m.requests.With(instance(route, rw.code)).Inc()
		m.responseBytes.With(route).Add(uint64(rw.bytes))
		m.latency.With(route).Since(start)
	})
}

// recorder notes the status and body size of a response.
type recorder struct {
	http.ResponseWriter
	code  int
	bytes int
}

func (r *recorder) WriteHeader(code int) {
	r.code = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	n, err := r.ResponseWriter.Write(b)
	r.bytes += n
	return n, err
}

func newMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello\n")
	})
	mux.HandleFunc("/data", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Repeat("0123456789abcdef", 64+rand.IntN(1024)))
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(time.Duration(1+rand.IntN(20)) * time.Millisecond)
		io.WriteString(w, "done\n")
	})
	mux.HandleFunc("/fail", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "failed", http.StatusInternalServerError)
	})
	return mux
}

// run serves and drives the server until ctx is done or d has passed
// (d <= 0: until ctx is done).
func run(ctx context.Context, out io.Writer, d time.Duration) error {
	if d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	m := NewMetrics(nil, routes)
	if err := mmv.Default.Start(); err != nil {
		return err
	}
	defer mmv.Default.Close()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: m.Wrap(newMux())}
	go srv.Serve(ln)

	name := mmv.Default.Name()
	fmt.Fprintf(out, "Serving on http://%s, metrics in %s\n", ln.Addr(), mmv.Default.Path())
	fmt.Fprintf(out, "Read them with: pminfo -f mmv.%s.http   or   pmrep -t 1 mmv.%s.http.latency.p99\n", name, name)
	fmt.Fprintf(out, "Without pmcd:   PCP_TMP_DIR=%s pminfo -L -K clear -K add,70,mmv/pmda_mmv.so,mmv_init -f mmv.%s\n",
		filepath.Dir(mmv.Dir()), name)

	// The client: a few goroutines, each a request every millisecond or so.
	base := "http://" + ln.Addr().String()
	paths := []string{"/hello", "/hello", "/hello", "/data", "/slow", "/fail", "/missing"}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, "GET", base+paths[rand.IntN(len(paths))], nil)
				resp, err := http.DefaultClient.Do(req)
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				} else if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
					log.Print(err)
				}
				time.Sleep(time.Millisecond)
			}
		}()
	}
	wg.Wait()
	// A request cancelled as its connection was made leaves the connection
	// idle in the client and new in the server, which Shutdown would wait
	// 5s for: close them.
	http.DefaultClient.CloseIdleConnections()
	// Let the requests in flight finish, so the file's last values add up.
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(shutdown)
}
