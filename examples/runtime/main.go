// Command runtime publishes the Go runtime's metrics (runtime/metrics) to
// PCP in the MMV file "goruntime", while churning a little memory so that
// the GC and heap metrics move.
//
//	go run ./examples/runtime -for 1m
//	pminfo -f mmv.goruntime
//
// It runs until interrupted, or for the -for duration.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/goruntime"
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

// run publishes the runtime's metrics until ctx is done or d has passed
// (d <= 0: until ctx is done).
func run(ctx context.Context, out io.Writer, d time.Duration) error {
	if d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	// The Process flag, as mmv.Default's: PCP stops showing the runtime's
	// metrics once the program ends, instead of its last values for good.
	r := mmv.NewRegistry("goruntime", &mmv.Options{Flags: mmv.Process})
	if err := goruntime.Register(r, nil); err != nil {
		return err
	}
	if err := r.Start(); err != nil {
		return err
	}
	defer r.Close()
	fmt.Fprintf(out, "Publishing the Go runtime's metrics in %s\n", r.Path())
	fmt.Fprintf(out, "Read them with: pminfo -f mmv.goruntime   (or pmrep mmv.goruntime.sched.goroutines_goroutines)\n")
	fmt.Fprintf(out, "Without pmcd:   PCP_TMP_DIR=%s pminfo -L -K clear -K add,70,mmv/pmda_mmv.so,mmv_init -f mmv.goruntime\n", filepath.Dir(mmv.Dir()))

	// Some garbage, so that there is something to see.
	var keep [][]byte
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			keep = append(keep, make([]byte, 1<<(i%16)))
			if len(keep) > 1000 {
				keep = keep[:0]
			}
		}
	}
}
