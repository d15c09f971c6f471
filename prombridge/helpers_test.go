package prombridge_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
)

// file is the name of the tests' registries.
const file = "promtest"

// newRegistry returns a registry writing into a temporary PCP_TMP_DIR,
// and that directory, for pcptest.Info; it is closed at the test's end.
func newRegistry(t testing.TB) (*mmv.Registry, string) {
	t.Helper()
	tmp := t.TempDir()
	r := mmv.NewRegistry(file, &mmv.Options{Dir: filepath.Join(tmp, "mmv"), Cluster: 321})
	t.Cleanup(func() { r.Close() })
	return r, tmp
}

// read publishes what r declared and returns what PCP's reader shows.
func read(t *testing.T, r *mmv.Registry, tmp string) []pcptest.Metric {
	t.Helper()
	require.NoError(t, r.Flush())
	return pcptest.Info(t, tmp)
}

// find returns the metric mmv.promtest.<name>, failing the test when PCP
// does not show it.
func find(t *testing.T, ms []pcptest.Metric, name string) *pcptest.Metric {
	t.Helper()
	m := pcptest.Find(ms, "mmv."+file+"."+name)
	require.NotNil(t, m, "PCP does not show mmv.%s.%s", file, name)
	return m
}

// instance returns the value of an instance of m, failing the test when
// PCP does not show it.
func instance(t *testing.T, m *pcptest.Metric, name string) *pcptest.Instance {
	t.Helper()
	in := m.Instance(name)
	require.NotNil(t, in, "%s has no instance %q; it has %v", m.Name, name, m.Instances)
	return in
}
