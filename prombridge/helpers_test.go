package prombridge_test

import (
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/canon"
	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/prombridge"
)

// file is the name of the tests' registries.
const file = "promtest"

// newRegistry returns a registry with flags writing into a temporary
// PCP_TMP_DIR, and that directory, for pcptest.Info; it is closed at the
// test's end.
func newRegistry(t testing.TB, flags ...mmv.Flags) (*mmv.Registry, string) {
	t.Helper()
	tmp := t.TempDir()
	o := &mmv.Options{Dir: filepath.Join(tmp, "mmv"), Cluster: 321}
	for _, f := range flags {
		o.Flags |= f
	}
	r := mmv.NewRegistry(file, o)
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

// started registers a bridge of g on r with options o, starts r and waits
// for Start's refresh and the first of the poll it begins, failing the
// test on an error.
func started(t *testing.T, r *mmv.Registry, g prometheus.Gatherer, o *prombridge.Options) *prombridge.Bridge {
	t.Helper()
	b, err := prombridge.Register(r, g, o)
	require.NoError(t, err)
	pcptest.NeedFileLayer(t)
	require.NoError(t, r.Start())
	// The refresh of the poll Start begins (after Start's own), so that
	// the test's own are the only ones while Options.Interval has not
	// passed.
	require.Eventually(t, func() bool { return b.Stats().Refreshes >= 2 }, 10*time.Second, time.Millisecond)
	return b
}

// unnamable is the instance of label values no instance name can hold:
// such a sample cannot be in PCP.
const unnamable = "\x00"

// instanceName returns the name of the instance of the label names and
// values, with label l of value v after them when l is not "": "" for
// none, unnamable when no instance name can hold them.
func instanceName(names, values []string, l, v string) string {
	if l != "" {
		names, values = append(slices.Clone(names), l), append(slices.Clone(values), v)
	}
	if len(names) == 0 {
		return ""
	}
	n, ok := canon.Name(names, values)
	if !ok {
		return unnamable
	}
	return n
}

// gaugeFamily is a gauge family of one metric, of label k=v when k is
// not "".
func gaugeFamily(name, k, v string, x float64) *dto.MetricFamily {
	m := &dto.Metric{Gauge: &dto.Gauge{Value: proto.Float64(x)}}
	if k != "" {
		m.Label = []*dto.LabelPair{{Name: proto.String(k), Value: proto.String(v)}}
	}
	return &dto.MetricFamily{Name: proto.String(name), Help: proto.String(name), Type: dto.MetricType_GAUGE.Enum(), Metric: []*dto.Metric{m}}
}

// droppedTotal returns the sum of prombridge.dropped over its reasons.
func droppedTotal(t *testing.T, ms []pcptest.Metric) uint64 {
	t.Helper()
	var n uint64
	for _, in := range find(t, ms, "prombridge.dropped").Instances {
		v, err := strconv.ParseUint(in.Value, 10, 64)
		require.NoError(t, err)
		n += v
	}
	return n
}
