// Command registry publishes the metrics of a small web server to PCP
// through the registry-level API (indoms, metrics with their items,
// Values), as a C program would with libpcp_mmv, and keeps updating them
// as the server would: requests by method, the bytes sent, the requests in
// flight, busy time, a smoothed load and the server's version. Its file is
// byte for byte the one libpcp_mmv writes for the same declarations
// (TestSameAsLibpcp).
//
//	go run ./examples/registry            # until interrupted
//	go run ./examples/registry -for 30s
//
// It prints where its file is and how to read it with PCP.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"github.com/gopcp/mmv"
)

// declare builds the registry: the same declarations, in the same order,
// as a C program would make with libpcp_mmv.
func declare(opts *mmv.Options) (*mmv.Registry, error) {
	r := mmv.NewRegistry("registry", opts)
	steps := []func() error{
		func() error {
			return r.AddIndom(mmv.Indom{
				Serial:    1,
				ShortHelp: "HTTP request methods",
				LongHelp:  "Request methods seen by the quickstart server.",
				Instances: []mmv.Instance{{ID: 0, Name: "GET"}, {ID: 1, Name: "POST"}, {ID: 2, Name: "PUT"}, {ID: 3, Name: "DELETE"}},
			})
		},
		func() error {
			return r.AddMetric(mmv.Metric{Name: "requests.total", Item: 1, Type: mmv.Uint64, Semantics: mmv.SemCounter,
				Units: mmv.Count, Indom: 1, ShortHelp: "Requests served, by method"})
		},
		func() error {
			return r.AddMetric(mmv.Metric{Name: "requests.bytes", Item: 2, Type: mmv.Uint64, Semantics: mmv.SemCounter,
				Units: mmv.Byte, Indom: 1, ShortHelp: "Response bytes sent, by method",
				LongHelp: "Total size of the response bodies written, by request method."})
		},
		func() error {
			return r.AddMetric(mmv.Metric{Name: "inflight", Item: 3, Type: mmv.Int32, Semantics: mmv.SemInstant,
				Units: mmv.Count, ShortHelp: "Requests being served now"})
		},
		func() error {
			return r.AddMetric(mmv.Metric{Name: "busy.time", Item: 4, Type: mmv.Elapsed, Semantics: mmv.SemCounter,
				Units: mmv.Microsecond, ShortHelp: "Time spent serving requests"})
		},
		func() error {
			return r.AddMetric(mmv.Metric{Name: "load", Item: 5, Type: mmv.Double, Semantics: mmv.SemInstant,
				ShortHelp: "Requests per second, smoothed over one minute"})
		},
		func() error {
			return r.AddMetric(mmv.Metric{Name: "version", Item: 6, Type: mmv.String, Semantics: mmv.SemDiscrete,
				ShortHelp: "Server version"})
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// server holds the handles the simulated server updates.
type server struct {
	total, bytes [4]*mmv.Value
	inflight     *mmv.Value
	busy         *mmv.Value
	load         *mmv.Value
}

var methods = [4]string{"GET", "POST", "PUT", "DELETE"}

func handles(r *mmv.Registry) (*server, error) {
	s := &server{}
	var err error
	get := func(metric, inst string) *mmv.Value {
		v, e := r.Value(metric, inst)
		if err == nil {
			err = e
		}
		return v
	}
	for i, m := range methods {
		s.total[i] = get("requests.total", m)
		s.bytes[i] = get("requests.bytes", m)
	}
	s.inflight, s.busy, s.load = get("inflight", ""), get("busy.time", ""), get("load", "")
	if err == nil {
		err = get("version", "").SetString("1.0.0")
	}
	return s, err
}

// serve simulates requests until ctx ends: a few per tick, by a skewed mix
// of methods, each taking a while and sending a body.
func (s *server) serve(ctx context.Context) {
	const tick = 100 * time.Millisecond
	t := time.NewTicker(tick)
	defer t.Stop()
	load := 0.0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n := rand.IntN(20)
		for range n {
			m := min(rand.IntN(10)/3, 3) // mostly GET, some POST, few PUT and DELETE
			s.inflight.Inc()
			took := time.Duration(rand.IntN(2000)+100) * time.Microsecond
			s.busy.AddDuration(took)
			s.total[m].Inc()
			s.bytes[m].Add(int64(rand.IntN(4096) + 200))
			s.inflight.Add(-1)
		}
		// An exponentially weighted moving average over one minute.
		alpha := 1 - math.Exp(-tick.Seconds()/60)
		load += alpha * (float64(n)/tick.Seconds() - load)
		s.load.SetFloat(load)
	}
}

func main() {
	d := flag.Duration("for", 0, "run this long, then exit (default: until interrupted)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Stdout, *d); err != nil {
		log.Fatal(err)
	}
}

// run publishes the simulated server's metrics until ctx is done or d has
// passed (d <= 0: until ctx is done). With the Process flag, the file goes
// when run returns.
func run(ctx context.Context, out io.Writer, d time.Duration) error {
	if d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	r, err := declare(&mmv.Options{Cluster: 42, Flags: mmv.Process})
	if err != nil {
		return err
	}
	if err := r.Start(); err != nil {
		return err
	}
	defer r.Close()
	s, err := handles(r)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Publishing %s\n", r.Path())
	fmt.Fprintf(out, "Read it with: pminfo -f mmv.registry   or   pmrep -t 1 mmv.registry.requests.total\n")
	fmt.Fprintf(out, "Without pmcd: PCP_TMP_DIR=%s pminfo -L -K clear -K add,70,mmv/pmda_mmv.so,mmv_init -f mmv.registry\n", filepath.Dir(mmv.Dir()))
	s.serve(ctx)
	return nil
}
