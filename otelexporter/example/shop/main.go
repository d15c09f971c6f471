// Command shop is a toy service instrumented only with the OpenTelemetry
// metrics API, its metrics published to PCP by otelexporter in the MMV
// file "shop".
//
//	go run ./example/shop -for 1m
//	pminfo -f mmv.shop
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
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/gopcp/mmv/otelexporter"
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

// run serves orders until ctx is done or d has passed (d <= 0: until ctx
// is done), exporting every second.
func run(ctx context.Context, out io.Writer, d time.Duration) (err error) {
	if d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	// Without the mmv.Process flag the file stays after exit, with the
	// last values; with it PCP would stop showing the shop at exit.
	exp := otelexporter.New(nil)
	res := resource.NewSchemaless(attribute.String("service.name", "shop"), attribute.String("service.version", "1.0.0"))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(res),
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(time.Second))))
	defer func() {
		// Shutdown exports once more: after a failed export (Start's
		// ErrUnsupported where mmv writes no files) it fails alike, so
		// the first error is the one told.
		if serr := mp.Shutdown(context.Background()); err == nil {
			err = serr
		}
	}()
	otel.SetMeterProvider(mp)

	s, err := newShop()
	if err != nil {
		return err
	}
	s.order(ctx) // one order, so that the first export has something
	if err := mp.ForceFlush(ctx); err != nil {
		return err
	}
	path := exp.Registry().Path()
	fmt.Fprintf(out, "Publishing the shop's OpenTelemetry metrics in %s\n", path)
	fmt.Fprintf(out, "Read them with: pminfo -f mmv.shop   (or pmrep mmv.shop.shop.orders)\n")
	fmt.Fprintf(out, "Without pmcd:   PCP_TMP_DIR=%s pminfo -L -K clear -K add,70,mmv/pmda_mmv.so,mmv_init -f mmv.shop\n", filepath.Dir(filepath.Dir(path)))

	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			s.order(ctx)
		}
	}
}

// shop is the service: it knows only the OpenTelemetry API.
type shop struct {
	orders   metric.Int64Counter
	revenue  metric.Float64Counter
	duration metric.Float64Histogram
	open     metric.Int64UpDownCounter
}

func newShop() (*shop, error) {
	m := otel.Meter("example.com/shop")
	var s shop
	var errs [4]error
	s.orders, errs[0] = m.Int64Counter("orders", metric.WithUnit("{order}"), metric.WithDescription("Orders placed"))
	s.revenue, errs[1] = m.Float64Counter("revenue", metric.WithUnit("1"), metric.WithDescription("Revenue, in euros"))
	s.duration, errs[2] = m.Float64Histogram("checkout.duration", metric.WithUnit("s"), metric.WithDescription("Time to check out"),
		metric.WithExplicitBucketBoundaries(0.001, 0.01, 0.1, 1))
	s.open, errs[3] = m.Int64UpDownCounter("carts.open", metric.WithUnit("{cart}"), metric.WithDescription("Carts open"))
	return &s, errors.Join(errs[:]...)
}

// order places one order of a random payment method and country.
func (s *shop) order(ctx context.Context) {
	payment := []string{"card", "cash", "gift card"}[rand.IntN(3)]
	country := []string{"France", "Österreich", "日本"}[rand.IntN(3)]
	attrs := metric.WithAttributes(attribute.String("payment", payment), attribute.String("country", country))
	s.open.Add(ctx, 1, attrs)
	s.orders.Add(ctx, 1, attrs)
	s.revenue.Add(ctx, 5+rand.Float64()*100, attrs)
	s.duration.Record(ctx, rand.ExpFloat64()/100, attrs)
	s.open.Add(ctx, -1, attrs)
}
