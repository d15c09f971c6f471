package prombridge_test

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/prombridge"
)

// BenchmarkRefresh is one refresh (Gather and copy) of a registry of n
// series: counter vectors of 1,000 label sets each, started, every series
// already published.
func BenchmarkRefresh(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			pr := prometheus.NewRegistry()
			for f := 0; f*1000 < n; f++ {
				v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: fmt.Sprintf("requests%d_total", f), Help: "r"}, []string{"route", "code"})
				pr.MustRegister(v)
				for i := f * 1000; i < min(n, (f+1)*1000); i++ {
					v.WithLabelValues("/api/"+strconv.Itoa(i), "200").Add(float64(i))
				}
			}
			r, _ := newRegistry(b)
			br, err := prombridge.Register(r, pr, nil)
			require.NoError(b, err)
			pcptest.NeedFileLayer(b)
			require.NoError(b, r.Start())
			require.NoError(b, br.Refresh())
			require.Equal(b, n, br.Stats().Series)
			b.ReportAllocs()
			for b.Loop() {
				br.Refresh()
			}
		})
	}
}
