package mmv_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/goruntime"
)

func capInstances(prefix string, n int) []mmv.Instance {
	insts := make([]mmv.Instance, n)
	for i := range insts {
		insts[i] = mmv.Instance{ID: int32(i), Name: fmt.Sprintf("%s%d", prefix, i)}
	}
	return insts
}

// An indom holds DefaultMaxIndomInstances and no more, whether declared
// whole or grown by AddInstance; the error names the indom and the cap.
func TestIndomCap(t *testing.T) {
	r := mmv.NewRegistry("caps", &mmv.Options{Dir: t.TempDir()})
	err := r.AddIndom(mmv.Indom{Serial: 1, ShortHelp: "routes", Instances: capInstances("i", mmv.DefaultMaxIndomInstances+1)})
	require.ErrorIs(t, err, mmv.ErrTooMany)
	assert.Contains(t, err.Error(), `indom 1 ("routes")`)
	assert.Contains(t, err.Error(), fmt.Sprintf("cap of %d per indom", mmv.DefaultMaxIndomInstances))

	require.NoError(t, r.AddIndom(mmv.Indom{Serial: 1, Instances: capInstances("i", mmv.DefaultMaxIndomInstances)}))
	err = r.AddInstance(1, mmv.Instance{ID: 1 << 20, Name: "one-more"})
	require.ErrorIs(t, err, mmv.ErrTooMany)
	assert.Contains(t, err.Error(), "indom 1")

	raised := mmv.NewRegistry("caps", &mmv.Options{Dir: t.TempDir(), MaxIndomInstances: 5000, MaxFileValues: 5000})
	require.NoError(t, raised.AddIndom(mmv.Indom{Serial: 1, Instances: capInstances("i", 5000)}))
	require.ErrorIs(t, raised.AddInstance(1, mmv.Instance{ID: 5000, Name: "one-more"}), mmv.ErrTooMany)

	none := mmv.NewRegistry("caps", &mmv.Options{Dir: t.TempDir(), MaxIndomInstances: -1, MaxFileValues: -1})
	require.NoError(t, none.AddIndom(mmv.Indom{Serial: 1, Instances: capInstances("i", 5000)}))
}

// The registry's cap counts the instances of all its indoms.
func TestRegistryCap(t *testing.T) {
	r := mmv.NewRegistry("caps", &mmv.Options{Dir: t.TempDir(), MaxInstances: 10})
	require.NoError(t, r.AddIndom(mmv.Indom{Serial: 1, Instances: capInstances("a", 6)}))
	err := r.AddIndom(mmv.Indom{Serial: 2, Instances: capInstances("b", 5)})
	require.ErrorIs(t, err, mmv.ErrTooMany)
	assert.Contains(t, err.Error(), "its cap of 10 (Options.MaxInstances)")
	require.NoError(t, r.AddIndom(mmv.Indom{Serial: 2, Instances: capInstances("b", 4)}))
	require.ErrorIs(t, r.AddInstance(1, mmv.Instance{ID: 6, Name: "a6"}), mmv.ErrTooMany)
}

// The defaults are pinned: a registry with default Options holds 16,384
// instances over its indoms (eight at their default cap of 2,048) and not
// one more, however the next comes (a new indom, AddInstance, a vector).
func TestDefaultRegistryCap(t *testing.T) {
	require.Equal(t, 2048, mmv.DefaultMaxIndomInstances)
	require.Equal(t, 16384, mmv.DefaultMaxInstances)
	r := mmv.NewRegistry("caps", &mmv.Options{Dir: t.TempDir()})
	for serial := uint32(1); serial <= 8; serial++ {
		require.NoError(t, r.AddIndom(mmv.Indom{Serial: serial, Instances: capInstances(fmt.Sprint("s", serial, "-"), 2048)}))
	}
	err := r.AddIndom(mmv.Indom{Serial: 9, Instances: capInstances("s9-", 1)})
	require.ErrorIs(t, err, mmv.ErrTooMany)
	assert.Contains(t, err.Error(), "16385 instances in the registry would pass its cap of 16384")
	require.NoError(t, r.AddIndom(mmv.Indom{Serial: 9}))
	require.ErrorIs(t, r.AddInstance(9, mmv.Instance{ID: 0, Name: "one-more"}), mmv.ErrTooMany)
	v := mmv.NewCounterVec(r, "requests", "", mmv.Count, "route")
	_, err = v.Get("one-more")
	require.ErrorIs(t, err, mmv.ErrTooMany)
	assert.Contains(t, err.Error(), "cap of 16384")
}

// A vector at the cap, started or not, drops the new instance (With is
// nil, Get says why, naming the vector's indom) and keeps counting the
// others.
func TestVecAtCap(t *testing.T) {
	for _, started := range []bool{false, true} {
		t.Run(fmt.Sprint("started=", started), func(t *testing.T) {
			r := mmv.NewRegistry("caps", &mmv.Options{Dir: filepath.Join(t.TempDir(), "mmv"), MaxIndomInstances: 10})
			if started {
				startOrSkip(t, r)
			}
			defer r.Close()
			v := mmv.NewCounterVec(r, "requests", "Requests", mmv.Count, "route")
			require.Equal(t, mmv.DefaultVecLimit, v.Limit())
			for i := range 10 {
				require.NotNil(t, v.With(fmt.Sprint("r", i)))
			}
			assert.Nil(t, v.With("r10"))
			_, err := v.Get("r10")
			require.ErrorIs(t, err, mmv.ErrTooMany)
			assert.Contains(t, err.Error(), `"Instances of requests"`)
			assert.Contains(t, err.Error(), "cap of 10")
			v.With("r3").Add(2)
			assert.Equal(t, uint64(2), v.With("r3").Get())
		})
	}
}

// TestDroppedCountedAtEveryCap: the refusals of each cap are counted in
// mmv.dropped, whose own few instances and values are declared beyond the
// caps; declared under them, the caps on instances refused it, silently,
// with the very refusals it was to count. A file budget below its 4
// values, where no file can hold it, Registry.Err names.
func TestDroppedCountedAtEveryCap(t *testing.T) {
	for _, c := range []struct {
		name string
		opts mmv.Options
	}{
		{"MaxValues", mmv.Options{MaxValues: 4}},
		{"MaxInstances", mmv.Options{MaxInstances: 4}},
		{"MaxIndomInstances", mmv.Options{MaxIndomInstances: 3}},
		{"MaxFileValues", mmv.Options{MaxFileValues: 4}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.opts.PublishDelay = time.Hour
			r := newRegistry(t, "drops", t.TempDir(), c.opts)
			v := mmv.NewCounterVec(r, "hits", "", mmv.Count, "k")
			startOrSkip(t, r)
			refused := 0
			for _, k := range []string{"a", "b", "c", "d", "e", "f"} {
				if _, err := v.Get(k); err != nil {
					require.ErrorIs(t, err, mmv.ErrTooMany)
					refused++
				}
			}
			require.NotZero(t, refused)
			require.NoError(t, r.Flush())
			require.NoError(t, r.Err())
			assert.EqualValues(t, refused, filesValues(t, r)["mmv.dropped"]["cap"].Uint)
		})
	}
	r := newRegistry(t, "nodrops", t.TempDir(), mmv.Options{PublishDelay: time.Hour, MaxFileValues: 3})
	v := mmv.NewCounterVec(r, "hits", "", mmv.Count, "k")
	startOrSkip(t, r)
	for _, k := range []string{"a", "b", "c", "d"} {
		v.With(k).Inc()
	}
	require.NoError(t, r.Flush())
	err := r.Err()
	require.ErrorIs(t, err, mmv.ErrTooMany)
	assert.ErrorContains(t, err, "metric mmv.dropped")
	assert.ErrorContains(t, err, "Options.MaxFileValues")
	assert.NotContains(t, filesValues(t, r), "mmv.dropped")
}

// A histogram vector's default limit keeps its buckets' indom within the
// cap, for the default buckets and the log-linear layout alike, and the
// vector takes instances up to that limit.
func TestHistogramVecLimitWithinCap(t *testing.T) {
	r := mmv.NewRegistry("caps", &mmv.Options{Dir: t.TempDir()})
	def := mmv.NewHistogramVec(r, "lat", "", mmv.Second, nil, "route")
	assert.Equal(t, mmv.DefaultMaxIndomInstances/(len(mmv.DefaultBuckets)+1), def.Limit())
	fine := mmv.NewHistogramVec(r, "fine", "", mmv.Second, &mmv.HistogramOptions{SubBuckets: 8}, "route")
	assert.Equal(t, mmv.DefaultMaxIndomInstances/242, fine.Limit())
	for i := range fine.Limit() {
		require.NotNil(t, fine.With(fmt.Sprint("r", i)))
	}
	assert.Nil(t, fine.With("over"))

	small := mmv.NewRegistry("caps", &mmv.Options{Dir: t.TempDir(), MaxIndomInstances: 100})
	v := mmv.NewHistogramVec(small, "lat", "", mmv.Second, nil, "route")
	assert.Equal(t, 100/19, v.Limit())
	v.SetLimit(1000) // past what the cap allows: the cap still holds
	for i := range 100 / 19 {
		require.NotNil(t, v.With(fmt.Sprint("r", i)))
	}
	_, err := v.Get("over")
	require.ErrorIs(t, err, mmv.ErrTooMany)
	assert.Contains(t, err.Error(), `"Buckets of lat, by upper bound"`)
}

// The runtime bridge declares through the same checks: on a registry whose
// cap its buckets pass, Register fails with ErrTooMany.
func TestGoruntimeRespectsCap(t *testing.T) {
	r := mmv.NewRegistry("caps", &mmv.Options{Dir: t.TempDir(), MaxInstances: 20})
	require.ErrorIs(t, goruntime.Register(r, nil), mmv.ErrTooMany)
}

// TestConfigureAfterOwnMetricsBeyondCaps: Configure checks the program's
// instances against the caps without the registry's own (mmv.dropped,
// declared beyond them), where a registry at its cap refused every
// Configure after its first refusal.
func TestConfigureAfterOwnMetricsBeyondCaps(t *testing.T) {
	opts := mmv.Options{Dir: t.TempDir(), MaxInstances: 2}
	r := mmv.NewRegistry("caps", &opts)
	t.Cleanup(func() { r.Close() })
	v := mmv.NewCounterVec(r, "hits", "", mmv.Count, "k")
	v.With("a").Inc()
	v.With("b").Inc()
	_, err := v.Get("c")
	require.ErrorIs(t, err, mmv.ErrTooMany, "the registry's cap")
	assert.NoError(t, r.Configure("", r.Options()), "the same options, after a refusal counted in mmv.dropped")
	assert.NoError(t, r.Configure("renamed", r.Options()), "only a new name")
}

// A registry holds DefaultMaxRegistryMetrics metrics, every file
// together, and not one more, however the next comes (AddMetric, an
// instrument after Start, counting in its own memory, whose refusal Err
// names); a histogram refused at the cap leaves none of its metrics; a
// negative option removes the cap, and Configure checks the declarations
// against it.
func TestRegistryMetricsCap(t *testing.T) {
	require.Equal(t, 2048, mmv.DefaultMaxRegistryMetrics)
	r := mmv.NewRegistry("caps", &mmv.Options{Dir: t.TempDir(), PublishDelay: time.Hour})
	t.Cleanup(func() { r.Close() })
	for i := range mmv.DefaultMaxRegistryMetrics - 10 {
		require.NoError(t, r.AddMetric(mmv.Metric{Name: fmt.Sprint("m", i), Type: mmv.Uint64, Semantics: mmv.SemCounter}))
	}
	mmv.NewHistogram(r, "lat", "", mmv.Second, nil) // 10 metrics: the cap
	startOrSkip(t, r)
	err := r.AddMetric(mmv.Metric{Name: "over", Type: mmv.Uint64, Semantics: mmv.SemCounter})
	require.ErrorIs(t, err, mmv.ErrTooMany)
	assert.EqualError(t, err, `mmv: metric "over": too many: 2049 metrics in the registry would pass its cap of 2048 metrics (Options.MaxRegistryMetrics): PCP's agent rebuilds its names and tables, in time growing faster than the metrics, at every request after any file of its directory changed`)

	h := mmv.NewHistogram(r, "late", "", mmv.Second, nil)
	h.Observe(1) // counts in memory, never in PCP
	require.NoError(t, r.Flush())
	require.ErrorIs(t, r.Err(), mmv.ErrTooMany)
	assert.ErrorContains(t, r.Err(), "Options.MaxRegistryMetrics")
	values := filesValues(t, r)
	for name := range values {
		require.NotContains(t, name, "late", "none of the refused histogram's metrics")
	}
	assert.Equal(t, mmv.DefaultMaxRegistryMetrics, len(values), "the program's metrics")

	none := mmv.NewRegistry("caps", &mmv.Options{Dir: t.TempDir(), MaxRegistryMetrics: -1})
	for i := range mmv.DefaultMaxRegistryMetrics + 1 {
		require.NoError(t, none.AddMetric(mmv.Metric{Name: fmt.Sprint("m", i), Type: mmv.Uint64, Semantics: mmv.SemCounter}))
	}
	opts := none.Options()
	opts.MaxRegistryMetrics = 0
	err = none.Configure("", opts)
	require.ErrorIs(t, err, mmv.ErrTooMany)
	assert.ErrorContains(t, err, `file "caps" as declared: too many: 2049 metrics in the registry would pass its cap of 2048 metrics (Options.MaxRegistryMetrics)`)
}

// TestConfigureAfterOwnMetricsBeyondMetricsCap: Configure checks the
// program's metrics against the cap without the registry's own
// (mmv.dropped, declared beyond it at a refusal), as for the caps on
// instances.
func TestConfigureAfterOwnMetricsBeyondMetricsCap(t *testing.T) {
	r := mmv.NewRegistry("caps", &mmv.Options{Dir: t.TempDir(), MaxRegistryMetrics: 1, MaxInstances: 1})
	t.Cleanup(func() { r.Close() })
	v := mmv.NewCounterVec(r, "hits", "", mmv.Count, "k")
	v.With("a").Inc()
	_, err := v.Get("b")
	require.ErrorIs(t, err, mmv.ErrTooMany, "the cap on instances: mmv.dropped declared")
	assert.NoError(t, r.Configure("", r.Options()), "the same options, the program's one metric")
}
