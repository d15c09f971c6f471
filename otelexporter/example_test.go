//go:build (linux || darwin || freebsd) && !mmv_noport

// The examples start their registries: they run where files are written
// (the other tests skip elsewhere; an example cannot).

package otelexporter_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/otelexporter"
)

// An exporter behind a periodic reader: the file is named after the
// service, and every instrument the service records with the OpenTelemetry
// API is a metric below it.
func ExampleNew() {
	dir, _ := os.MkdirTemp("", "otelexporter")
	defer os.RemoveAll(dir)

	exp := otelexporter.New(&otelexporter.Options{Registry: mmv.Options{Dir: dir}}) // Dir: default $PCP_TMP_DIR/mmv
	mp := sdkmetric.NewMeterProvider(
		sdkmetric.WithResource(resource.NewSchemaless(attribute.String("service.name", "shop"))),
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)))
	ctx := context.Background()

	orders, _ := mp.Meter("example.com/shop").Int64Counter("orders", metric.WithUnit("{order}"))
	orders.Add(ctx, 1, metric.WithAttributes(attribute.String("payment", "gift card")))

	_ = mp.ForceFlush(ctx) // an export now, not in a minute
	r := exp.Registry()
	fmt.Println("file:", filepath.Base(r.Path()), "errors:", exp.Err())
	// What pminfo -f mmv.shop.shop.orders shows:
	snap, err := r.Snapshot()
	for _, m := range snap {
		if m.Name == "shop.orders" {
			fmt.Println(m.Values[0].Instance, m.Values[0].Value, err)
		}
	}
	_ = mp.Shutdown(ctx)
	// Output:
	// file: shop errors: <nil>
	// payment=gift%20card 1 <nil>
}
