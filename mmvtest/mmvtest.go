// Package mmvtest helps a service's unit tests assert the metrics it
// publishes through package mmv, with no PCP installed: read a value by
// metric name and label values, compare a registry, or some of its
// metrics, with an expected listing and get a readable diff, and make a
// registry that lives in t.TempDir() and closes when the test ends.
//
// Everything reads Registry.Snapshot, so it works alike on a registry that
// was never started (instruments count in memory) and on a started one
// (values in its files), and sees every update made before the call:
// histograms' statistics and callback metrics are computed afresh, not as
// of their last refresh.
//
//	func TestHandler(t *testing.T) {
//		r := mmvtest.NewRegistry(t, nil)
//		requests := mmv.NewCounterVec(r, "requests", "Requests", mmv.Count, "route")
//		serve(requests, "/api")
//		require.Equal(t, 1.0, mmvtest.Get(t, r, "requests", "/api"))
//		require.NoError(t, mmvtest.Compare(r, `
//			requests: counter uint64 (count)
//			  "route=/api" {route="/api"} = 1
//		`))
//	}
//
// # Cost
//
// Nothing on the hot path: mmvtest reads the values the instruments
// already keep. A snapshot takes the registry's lock, as a declaration
// does, and allocates in proportion to the registry's values; call it from
// tests and diagnostics, not per request.
package mmvtest

import (
	"errors"
	"fmt"
	"hash/fnv"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gopcp/mmv"
)

// NewRegistry returns a registry for a test, not yet started: its file
// goes in t.TempDir()'s mmv directory, under a name made from the test's
// (so parallel tests never share one), and it is closed when the test and
// its subtests end; PCP_TMP_DIR=$(dirname $(dirname r.Path())) shows it
// to PCP's tools. opts may be nil; its Dir is replaced. Start it for a test of the
// started registry, or leave it declaring: its instruments count in
// memory, and Get, Listing and Compare read them all the same.
func NewRegistry(t testing.TB, opts *mmv.Options) *mmv.Registry {
	t.Helper()
	var o mmv.Options
	if opts != nil {
		o = *opts
	}
	o.Dir = filepath.Join(t.TempDir(), "mmv")
	r := mmv.NewRegistry(fileName(t.Name()), &o)
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("mmvtest: closing the registry of %s: %v", t.Name(), err)
		}
	})
	return r
}

// Started is NewRegistry, started: the test fails at once if Start does,
// and is skipped where Start returns mmv.ErrUnsupported (a system on which
// mmv writes no files, where a test of the registry started cannot run;
// those of NewRegistry's, never started, still do).
func Started(t testing.TB, opts *mmv.Options) *mmv.Registry {
	t.Helper()
	r := NewRegistry(t, opts)
	switch err := r.Start(); {
	case errors.Is(err, mmv.ErrUnsupported):
		t.Skipf("mmvtest: starting the registry of %s: %v", t.Name(), err)
	case err != nil:
		t.Fatalf("mmvtest: starting the registry of %s: %v", t.Name(), err)
	}
	return r
}

var notName = regexp.MustCompile(`[^A-Za-z0-9_]+`)

// fileName makes a valid MMV file name from a test's name: letters,
// digits and '_', its first 40 bytes and, when longer, a hash of it whole.
func fileName(test string) string {
	s := "t_" + strings.Trim(notName.ReplaceAllString(test, "_"), "_")
	if len(s) > 40 {
		// The hash of the whole name keeps apart tests whose names share
		// their first 40 bytes (subtests of one long test).
		h := fnv.New32a()
		h.Write([]byte(test))
		s = fmt.Sprintf("%s_%08x", s[:40], h.Sum32())
	}
	return s
}

// Get returns the value of metric in r as a float64, failing the test
// when r has no such value: the only value of a singular metric; for a
// metric over instances, that of the instance the values name (see
// Lookup); failing it too when the value has none to read (see
// mmv.InstanceValue). Strings read as 0; Elapsed values in microseconds.
func Get(t testing.TB, r *mmv.Registry, metric string, values ...string) float64 {
	t.Helper()
	return ToFloat64(value(t, r, metric, values))
}

// value is the value Lookup finds, failing the test when there is none.
func value(t testing.TB, r *mmv.Registry, metric string, values []string) any {
	t.Helper()
	iv, err := Lookup(r, metric, values...)
	if err != nil {
		t.Fatalf("mmvtest: %v", err)
	}
	if iv.Value == nil {
		t.Fatalf("mmvtest: metric %q instance %q has no value (no storage yet, or the Sentinel's no value)", metric, iv.Instance)
	}
	return iv.Value
}

// Lookup returns one value of metric in r: with no values, the only value
// of a singular metric; otherwise the instance whose label values are
// values, in the order of the vector's label names, or else, for one
// value, the instance named it (an explicit indom's, or a vector's
// canonical name). The error wraps mmv.ErrUnknown when there is no
// such metric or instance, and says which instances there are.
func Lookup(r *mmv.Registry, metric string, values ...string) (mmv.InstanceValue, error) {
	ms, err := r.Snapshot()
	if err != nil {
		return mmv.InstanceValue{}, fmt.Errorf("metric %q: %w", metric, err)
	}
	for _, m := range ms {
		if m.Name != metric {
			continue
		}
		if len(values) == 0 {
			if m.Indom != 0 {
				return mmv.InstanceValue{}, fmt.Errorf("metric %q has instances %q: give label values: %w", metric, names(m), mmv.ErrUnknown)
			}
			return m.Values[0], nil
		}
		for _, byName := range []bool{false, true} { // label values first
			for _, iv := range m.Values {
				if byName && len(values) == 1 && iv.Instance == values[0] || !byName && matches(iv, values) {
					return iv, nil
				}
			}
		}
		return mmv.InstanceValue{}, fmt.Errorf("metric %q has no instance of values %q, only %q: %w", metric, values, names(m), mmv.ErrUnknown)
	}
	return mmv.InstanceValue{}, fmt.Errorf("no metric %q in registry %q: %w", metric, r.Name(), mmv.ErrUnknown)
}

// Instances returns the names of metric's live instances in r, in their
// indom's order; none for a singular metric or one r does not have.
func Instances(r *mmv.Registry, metric string) []string {
	ms, _ := r.Snapshot()
	for _, m := range ms {
		if m.Name == metric && m.Indom != 0 {
			return names(m)
		}
	}
	return nil
}

func names(m mmv.MetricSnapshot) []string {
	var ns []string
	for _, iv := range m.Values {
		ns = append(ns, iv.Instance)
	}
	return ns
}

// matches reports whether iv is the instance of a vector's values.
func matches(iv mmv.InstanceValue, values []string) bool {
	return iv.Values != nil && slices.Equal(iv.Values, values)
}

// ToFloat64 returns a value of a snapshot (InstanceValue.Value), or an
// instrument's value, as a float64: a *mmv.Counter's total, a
// *mmv.Gauge's or *mmv.IntGauge's level, a *mmv.Timer's time in seconds,
// a *mmv.Histogram's count of observations, a *mmv.Value's number. It
// panics on anything else, as client_golang's testutil.ToFloat64 does.
func ToFloat64(v any) float64 {
	switch v := v.(type) {
	case int32:
		return float64(v)
	case uint32:
		return float64(v)
	case int64:
		return float64(v)
	case uint64:
		return float64(v)
	case float32:
		return float64(v)
	case float64:
		return v
	case string:
		return 0
	case *mmv.Counter:
		return float64(v.Get())
	case *mmv.Gauge:
		return v.Get()
	case *mmv.IntGauge:
		return float64(v.Get())
	case *mmv.Timer:
		return v.Get().Seconds()
	case *mmv.Histogram:
		return float64(v.Stats().Count)
	case *mmv.Value:
		return v.Float()
	}
	panic(fmt.Sprintf("mmvtest.ToFloat64: %T is no value", v))
}

// Baseline is the values of a registry at one moment, for a test of
// instruments that other tests updated before it, such as package-level
// ones on mmv.Default: Delta reads the change since.
type Baseline struct {
	r      *mmv.Registry
	values map[[2]string]float64 // by metric and instance name
}

// Mark returns r's values now, failing the test if r cannot be read
// (closed).
func Mark(t testing.TB, r *mmv.Registry) *Baseline {
	t.Helper()
	ms, err := r.Snapshot()
	if err != nil {
		t.Fatalf("mmvtest: %v", err)
	}
	b := &Baseline{r: r, values: map[[2]string]float64{}}
	for _, m := range ms {
		for _, iv := range m.Values {
			if iv.Value != nil {
				b.values[[2]string{m.Name, iv.Instance}] = ToFloat64(iv.Value)
			}
		}
	}
	return b
}

// Delta returns how much a value of the registry changed since Mark, as
// Get reads it: an instance new since counts from zero, and one deleted
// (or expired) and made again from zero may show a negative change.
func (b *Baseline) Delta(t testing.TB, metric string, values ...string) float64 {
	t.Helper()
	iv, err := Lookup(b.r, metric, values...)
	if err != nil {
		t.Fatalf("mmvtest: %v", err)
	}
	return ToFloat64(value(t, b.r, metric, values)) - b.values[[2]string{metric, iv.Instance}]
}
