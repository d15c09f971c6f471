// Command httpserver is a small service measured the way a service
// author would measure it with mmv: it serves HTTP on 127.0.0.1 behind
// mmv's middleware, drives itself with a client in the same program, and
// publishes to PCP, in a registry of its own (httpserver, with the Process
// flag: its metrics vanish from PCP when it ends, even by SIGKILL):
//
//   - http.requests: requests by route and status (instances such as
//     "route=/hello,status=200", with route and status as PCP labels);
//
//   - http.latency: a latency histogram by route, in seconds;
//
//   - http.in_flight: requests being served;
//
//   - http.response_bytes: bytes written, by route;
//
//   - app.work_time: time spent in the handlers' simulated work (a timer);
//
//   - go.*: the Go runtime's metrics (package goruntime).
//
//     go run ./examples/httpserver -for 1m
//     pminfo -f mmv.httpserver.http
//     pmrep -t 1 mmv.httpserver.http.latency.p99
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
	"strings"
	"sync"
	"time"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/goruntime"
	"github.com/gopcp/mmv/middleware"
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

// newMux returns the service's routes; /slow's work is timed by work.
func newMux(work *mmv.Timer) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello\n")
	})
	mux.HandleFunc("/data", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Repeat("0123456789abcdef", 64+rand.IntN(1024)))
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		work.Time(func() { time.Sleep(time.Duration(1+rand.IntN(20)) * time.Millisecond) })
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
	reg := mmv.NewRegistry("httpserver", &mmv.Options{Cluster: 71, Flags: mmv.Process})
	if err := reg.AddLabel(mmv.Label{Name: "service", Value: "httpserver"}); err != nil {
		return err
	}
	m := middleware.New(reg, nil)
	work := mmv.NewTimer(reg, "app.work_time", "Time spent in the handlers' work")
	if err := goruntime.Register(reg, &goruntime.Options{Prefix: "go"}); err != nil {
		return err
	}
	if err := reg.Start(); err != nil {
		return err
	}
	defer reg.Close()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: m.Wrap(newMux(work))}
	go srv.Serve(ln)

	name := reg.Name()
	fmt.Fprintf(out, "Serving on http://%s, metrics in %s\n", ln.Addr(), reg.Path())
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
