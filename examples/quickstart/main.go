// Command quickstart is the README's quick start, running: the
// instruments a web service declares (requests by route and status, the
// requests in flight, latency by route), updated by simulated traffic.
//
//	go run ./examples/quickstart            # until interrupted
//	go run ./examples/quickstart -for 30s
//
// Its metrics are mmv.quickstart.* in PCP (the program's name): it prints
// where its file is and how to read it. examples/httpserver is a real HTTP
// server with the middleware; examples/registry the registry-level API.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"github.com/gopcp/mmv"
)

// The quick start's instruments, on mmv.Default (a nil registry): its file
// is named after the program and goes when the program ends.
var (
	requests = mmv.NewCounterVec(nil, "http.requests", "Requests served", mmv.Count, "route", "status")
	inFlight = mmv.NewIntGauge(nil, "http.in_flight", "Requests being served", mmv.Count)
	latency  = mmv.NewHistogramVec(nil, "http.latency", "Request latency", mmv.Second, nil, "route")
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

// run publishes the instruments and serves simulated requests until ctx is
// done or d has passed (d <= 0: until ctx is done).
func run(ctx context.Context, out io.Writer, d time.Duration) error {
	if d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	if err := mmv.Default.Start(); err != nil { // the file: $PCP_TMP_DIR/mmv/<program>
		return err
	}
	defer mmv.Default.Close()
	name := mmv.Default.Name()
	fmt.Fprintf(out, "Publishing %s\n", mmv.Default.Path())
	fmt.Fprint(out, readHint(name, mmv.Default.Path()))

	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		for range rand.IntN(5) {
			serve()
		}
	}
}

// readHint says how to read the file at path, of the registry name, while
// the program runs (mmv.Default's Process flag removes it at the end):
// through pmcd where the file is in PCP's directory; else (no pcp.conf, nor
// PCP_TMP_DIR: files go to a directory in os.TempDir(), see mmv.Dir, which
// pmcd does not read) with mmvdump, which needs no PCP.
func readHint(name, path string) string {
	if os.Getenv("PCP_TMP_DIR") == "" && filepath.Dir(filepath.Dir(path)) == filepath.Clean(os.TempDir()) {
		return fmt.Sprintf("No PCP here: while it runs (the file goes when it ends), read it with: go run ./cmd/mmvdump %s\n", path)
	}
	return fmt.Sprintf("While it runs (its metrics leave PCP when it ends), read it with: pminfo -f mmv.%s   or   pmrep -t 1 mmv.%s.http.latency.p99\n"+
		"Without pmcd: go run ./cmd/mmvdump %s\n", name, name, path)
}

// serve is one simulated request, updating the instruments as a handler
// would: mostly fast /api calls, some slower orders, a few errors.
func serve() {
	inFlight.Inc()
	defer inFlight.Dec()
	route, status := "/api", "200"
	took := time.Duration(rand.ExpFloat64() * float64(2*time.Millisecond))
	if rand.IntN(4) == 0 {
		route, took = "/api/orders", took*10
	}
	if rand.IntN(50) == 0 {
		status = "500"
	}
	requests.With(route, status).Inc()
	latency.With(route).ObserveDuration(took)
}
