package mmv

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The helpers of the package's internal tests; those of the external ones
// are in helpers_test.go.

// newTestRegistry makes a registry writing in a temporary directory, closed
// when the test or benchmark ends.
func newTestRegistry(t testing.TB, name string) *Registry {
	t.Helper()
	r := NewRegistry(name, &Options{Dir: t.TempDir()})
	t.Cleanup(func() { r.Close() })
	return r
}

// mustValue returns the handle on a metric's instance.
func mustValue(t testing.TB, r *Registry, metric, instance string) *Value {
	t.Helper()
	v, err := r.Value(metric, instance)
	require.NoError(t, err)
	return v
}
