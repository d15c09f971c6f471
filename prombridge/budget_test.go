package prombridge_test

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/prombridge"
)

// TestValuesCapRefuses: series past the registry's cap on values
// (mmv.Options.MaxValues) are refused, and Err says so with an error
// wrapping mmv.ErrTooMany that names the option.
func TestValuesCapRefuses(t *testing.T) {
	pr := prometheus.NewRegistry()
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "requests_total", Help: "r"}, []string{"code"})
	pr.MustRegister(requests)
	for code := range 10 {
		requests.WithLabelValues(fmt.Sprint(code)).Inc()
	}
	r := mmv.NewRegistry("budget", &mmv.Options{Dir: t.TempDir(), MaxValues: 5})
	defer r.Close()
	b, err := prombridge.Register(r, pr, nil)
	require.NoError(t, err)
	err = b.Refresh()
	require.ErrorIs(t, err, mmv.ErrTooMany)
	assert.ErrorContains(t, err, "Options.MaxValues")
}
