package goruntime

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
)

// refreshed returns the value of a singular metric of r once the bridge
// has refreshed it to non-zero, or after five seconds.
func refreshed(t *testing.T, r *mmv.Registry, metric string) int64 {
	t.Helper()
	v, err := r.Value(metric, "")
	require.NoError(t, err)
	deadline := time.Now().Add(5 * time.Second)
	for v.Int() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	return v.Int()
}
