// Command web is a net/http service instrumented with client_golang only —
// promauto, a counter vector of two labels, a histogram vector, and the Go
// and process collectors of the default registry — whose metrics reach
// PCP through prombridge, with no HTTP listener for them and no
// openmetrics agent:
//
//	go run ./example/web -for 1m   # in prombridge/
//	pminfo -f mmv.web
//
// It serves on 127.0.0.1 and drives itself with a client in the same
// program, until interrupted or for the -for duration.
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
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/prombridge"
)

// The service's own metrics, as a client_golang user declares them.
var (
	requests = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "http_requests_total", Help: "HTTP requests served.",
	}, []string{"code", "method"})
	latency = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Name: "http_request_duration_seconds", Help: "HTTP request latency.", Buckets: prometheus.DefBuckets,
	}, []string{"route"})
)

func main() {
	d := flag.Duration("for", 0, "run this long, then exit (default: until interrupted)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Stdout, *d); err != nil {
		log.Fatal(err)
	}
}

// handler serves route, counting and timing each request.
func handler(route string, serve func(w http.ResponseWriter) int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		code := serve(w)
		requests.WithLabelValues(strconv.Itoa(code), r.Method).Inc()
		latency.WithLabelValues(route).Observe(time.Since(start).Seconds())
	}
}

// run serves and drives the server until ctx is done or d has passed
// (d <= 0: until ctx is done), publishing the default registry to PCP.
func run(ctx context.Context, out io.Writer, d time.Duration) error {
	if d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	reg := mmv.NewRegistry("web", &mmv.Options{Flags: mmv.Process})
	if _, err := prombridge.Register(reg, prometheus.DefaultGatherer, nil); err != nil {
		return err
	}
	if err := reg.Start(); err != nil {
		return err
	}
	defer reg.Close() // stops the bridge's refreshes; with Process, the file goes

	mux := http.NewServeMux()
	mux.Handle("/hello", handler("/hello", func(w http.ResponseWriter) int {
		io.WriteString(w, "hello\n")
		return http.StatusOK
	}))
	mux.Handle("/slow", handler("/slow", func(w http.ResponseWriter) int {
		time.Sleep(time.Duration(1+rand.IntN(10)) * time.Millisecond)
		return http.StatusOK
	}))
	mux.Handle("/fail", handler("/fail", func(w http.ResponseWriter) int {
		http.Error(w, "failed", http.StatusInternalServerError)
		return http.StatusInternalServerError
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	fmt.Fprintf(out, "Serving on http://%s, metrics in %s\n", ln.Addr(), reg.Path())
	fmt.Fprintf(out, "Read them with: pminfo -f mmv.%s\n", reg.Name())
	fmt.Fprintf(out, "Without pmcd:   PCP_TMP_DIR=%s pminfo -L -K clear -K add,70,mmv/pmda_mmv.so,mmv_init -f mmv.%s\n",
		filepath.Dir(mmv.Dir()), reg.Name())

	base := "http://" + ln.Addr().String()
	paths := []string{"/hello", "/hello", "/slow", "/fail"}
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
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
		})
	}
	wg.Wait()
	http.DefaultClient.CloseIdleConnections()
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(shutdown)
}
