package otelexporter

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/gopcp/mmv"
)

// BenchmarkExport measures one periodic Export in steady state (every
// instrument and attribute set declared by a first export): 100, 1,000
// and 10,000 data points of counters, 1,000 points per instrument at
// most, with one attribute each.
func BenchmarkExport(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			exp := New(&Options{Limit: n, Registry: mmv.Options{Dir: filepath.Join(b.TempDir(), "mmv")}})
			defer exp.Shutdown(context.Background())
			per := min(n, 1000)
			var ms []metricdata.Metrics
			for i := 0; i < n/per; i++ {
				pts := make([]metricdata.DataPoint[int64], per)
				for j := range pts {
					pts[j] = point(int64(j), attribute.String("id", strconv.Itoa(j)))
				}
				ms = append(ms, sum("requests"+strconv.Itoa(i), metricdata.CumulativeTemporality, pts...))
			}
			rm := &metricdata.ResourceMetrics{Resource: testResource, ScopeMetrics: []metricdata.ScopeMetrics{{Metrics: ms}}}
			ctx := context.Background()
			if err := exp.Export(ctx, rm); err != nil {
				b.Fatal(err)
			}
			if err := exp.Err(); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := exp.Export(ctx, rm); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/point")
		})
	}
}
