package otelexporter

import (
	"context"
	"hash/fnv"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/mmvfile"
)

// TestGrowthThroughPCP: an instrument and an attribute set that appear
// after the first export appear in PCP at the next one, with the values
// recorded, beside the old ones.
func TestGrowthThroughPCP(t *testing.T) {
	pcptest.NeedFileLayer(t) // Export starts the service's registry
	pcptest.MustHavePCP(t)
	p := newProvider(t, Options{})
	ctx := context.Background()
	m := p.Meter("shop")
	reqs, err := m.Int64Counter("requests")
	require.NoError(t, err)
	reqs.Add(ctx, 2, metric.WithAttributes(attribute.String("route", "/a")))
	ms, _ := p.flush(t)
	require.NotNil(t, pcptest.Find(ms, "mmv.shop_test.shop.requests"))
	assert.Nil(t, pcptest.Find(ms, "mmv.shop_test.shop.queue"))

	reqs.Add(ctx, 5, metric.WithAttributes(attribute.String("route", "/b c")))
	reqs.Add(ctx, 1, metric.WithAttributes(attribute.String("route", "/a")))
	queue, err := m.Int64UpDownCounter("queue")
	require.NoError(t, err)
	queue.Add(ctx, -4)
	ms, _ = p.flush(t)
	r := pcptest.Find(ms, "mmv.shop_test.shop.requests")
	require.NotNil(t, r)
	for inst, want := range map[string]string{"route=/a": "3", "route=/b%20c": "5"} {
		if in := r.Instance(inst); assert.NotNil(t, in, inst) {
			assert.Equal(t, want, in.Value, inst)
		}
	}
	q := pcptest.Find(ms, "mmv.shop_test.shop.queue")
	require.NotNil(t, q)
	assert.Equal(t, "-4", q.Value)
	require.NoError(t, p.exp.Err())
}

// TestShutdown: Shutdown exports the last values; without the Process
// flag the file stays with them, with it the file is removed; Export
// after Shutdown is refused.
func TestShutdown(t *testing.T) {
	pcptest.NeedFileLayer(t) // Export starts the service's registry
	pcptest.MustHavePCP(t)
	for _, flags := range []mmv.Flags{0, mmv.Process} {
		p := newProvider(t, Options{Registry: mmv.Options{Flags: flags}})
		c, err := p.Meter("shop").Int64Counter("orders")
		require.NoError(t, err)
		c.Add(context.Background(), 1)
		p.flush(t)
		c.Add(context.Background(), 41) // exported by Shutdown alone
		path := p.exp.Registry().Path()
		require.NoError(t, p.Shutdown(context.Background()))

		ms := pcptest.Info(t, p.tmp)
		o := pcptest.Find(ms, "mmv.shop_test.shop.orders")
		_, statErr := os.Stat(path)
		if flags == 0 {
			require.NotNil(t, o, "without Process the file stays")
			assert.Equal(t, "42", o.Value)
			assert.NoError(t, statErr)
		} else {
			assert.Nil(t, o, "with Process the file goes")
			assert.ErrorIs(t, statErr, os.ErrNotExist)
		}
		err = p.exp.Export(context.Background(), &metricdata.ResourceMetrics{})
		assert.ErrorIs(t, err, sdkmetric.ErrExporterShutdown)
		assert.NoError(t, p.exp.Shutdown(context.Background()), "a second Shutdown")
		assert.Equal(t, filepath.Join(p.tmp, "mmv", "shop_test"), path)
	}
}

// TestShutdownDoneContextCloses: Shutdown with a done context (the one a
// signal handler cancelled, or a deadline the final collect used up)
// closes the registry all the same and returns the context's error, as
// the SDK's own exporters do: the mmv.Process file goes, PCP stops
// showing the service, and a new exporter of the same name starts. It
// returned at once, the registry left open for as long as the process
// lived: its file, its lock, its last values shown as current, and a
// rebuilt provider's every Export failing with mmv.ErrInUse.
func TestShutdownDoneContextCloses(t *testing.T) {
	pcptest.NeedFileLayer(t)
	pcptest.MustHavePCP(t)
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "mmv")
	provider := func() (*Exporter, *sdkmetric.MeterProvider) {
		exp := New(&Options{Registry: mmv.Options{Dir: dir, Flags: mmv.Process}})
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(testResource),
			sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(time.Hour))))
		return exp, mp
	}
	exp, mp := provider()
	t.Cleanup(func() { _ = exp.Shutdown(context.Background()) })
	orders, err := mp.Meter("shop").Int64Counter("orders")
	require.NoError(t, err)
	orders.Add(context.Background(), 3)
	require.NoError(t, mp.ForceFlush(context.Background()))

	done, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, mp.Shutdown(done), context.Canceled)
	assert.ErrorIs(t, exp.Shutdown(done), context.Canceled, "a later call still says the context is done")

	_, statErr := os.Stat(filepath.Join(dir, "shop_test"))
	assert.ErrorIs(t, statErr, os.ErrNotExist, "the mmv.Process file is still there after Shutdown (a done context): the registry was never closed")
	if m := pcptest.Find(pcptest.Info(t, tmp), "mmv.shop_test.shop.orders"); m != nil {
		t.Errorf("PCP still shows mmv.shop_test.shop.orders = %s after the provider's Shutdown", m.Value)
	}

	_, mp2 := provider()
	t.Cleanup(func() { _ = mp2.Shutdown(context.Background()) })
	orders2, err := mp2.Meter("shop").Int64Counter("orders")
	require.NoError(t, err)
	orders2.Add(context.Background(), 1)
	assert.NoError(t, mp2.ForceFlush(context.Background()), "a new exporter of the same service cannot start: the shut-down one still holds the file")
}

// TestServicesShareNoCluster (issue 21, item 1): two services whose names
// hash to one cluster (by service name, as the exporter once derived it
// itself, and by file name, as the registry derives it) export into one
// directory: each file gets a cluster of its own, and PCP shows each
// service's counter under its own name, where it once showed one
// service's value under the other's. A cluster given in
// Options.Registry that a live file holds fails the export with
// mmv.ErrClusterInUse.
func TestServicesShareNoCluster(t *testing.T) {
	pcptest.NeedFileLayer(t) // Export starts the service's registry
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "mmv")
	services := clashingServices()
	export := func(service string, o Options, n int64) (*Exporter, error) {
		o.Registry.Dir = dir
		exp := New(&o)
		t.Cleanup(func() { exp.Shutdown(context.Background()) })
		manual := sdkmetric.NewManualReader()
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(resource.NewSchemaless(attribute.String("service.name", service))),
			sdkmetric.WithReader(manual))
		c, err := mp.Meter("shop").Int64Counter("requests")
		require.NoError(t, err)
		c.Add(context.Background(), n)
		var rm metricdata.ResourceMetrics
		require.NoError(t, manual.Collect(context.Background(), &rm))
		return exp, exp.Export(context.Background(), &rm)
	}
	clusters := map[uint32]string{}
	for i, s := range services {
		exp, err := export(s, Options{}, int64(i+1))
		require.NoError(t, err, s)
		f, err := mmvfile.Open(exp.Registry().Path())
		require.NoError(t, err)
		assert.NotContains(t, clusters, f.Header.Cluster, "%s takes the cluster of %s", s, clusters[f.Header.Cluster])
		clusters[f.Header.Cluster] = s
	}
	for c, s := range clusters {
		squatter, err := export("squatter", Options{Registry: mmv.Options{Cluster: c}}, 99)
		require.ErrorIs(t, err, mmv.ErrClusterInUse, "the cluster of %s, given explicitly", s)
		t.Log(err)
		assert.ErrorIs(t, squatter.Err(), mmv.ErrClusterInUse, "a registry that cannot start is named by Err, not only the SDK's error handler")
		break
	}

	pcptest.MustHavePCP(t)
	ms := pcptest.Info(t, tmp)
	for i, s := range services {
		name := "mmv." + fileName(s) + ".shop.requests"
		if m := pcptest.Find(ms, name); assert.NotNil(t, m, name) {
			assert.Equal(t, strconv.Itoa(i+1), m.Value, name)
		}
	}
}

// clashingServices returns two service names that hash to one cluster by
// their names and by their file names (FNV-1a, 1..2047).
func clashingServices() [2]string {
	key := func(s string) [2]uint32 {
		var k [2]uint32
		for i, in := range []string{s, fileName(s)} {
			h := fnv.New32a()
			h.Write([]byte(in))
			k[i] = 1 + h.Sum32()%2047
		}
		return k
	}
	seen := map[[2]uint32]string{}
	for i := 0; ; i++ {
		s := "svc-" + strconv.Itoa(i)
		if other, ok := seen[key(s)]; ok {
			return [2]string{other, s}
		}
		seen[key(s)] = s
	}
}

// TestFirstExportClashCostsOneInstrument: an instrument of the first
// export whose PCP name clashes with another live file's is refused alone,
// as one first exported later is (TestNameOfAnotherFileRetried): the
// exporter declared the first export's instruments before Start, whose
// refusal of the whole registry failed every export for ever, PCP showing
// none of the service's instruments, Err nil.
func TestFirstExportClashCostsOneInstrument(t *testing.T) {
	exp, tmp := pcpExporter(t, Options{})
	ctx := context.Background()
	otherProgram(t, tmp, "shop_test.s.late")

	require.NoError(t, exp.Export(ctx, sumsExport("a", "late")))
	assert.ErrorIs(t, exp.Err(), mmv.ErrNamespace, "the clashing instrument named by Err")
	ms := pcptest.Info(t, tmp) // no ForceFlush: the first export's instruments are in PCP as it returns
	if m := pcptest.Find(ms, "mmv.shop_test.s.a"); assert.NotNil(t, m, "instrument a, free of any clash, not in PCP") {
		assert.Equal(t, "5", m.Value)
	}
	require.NoError(t, exp.Export(ctx, sumsExport("a", "late")))
	assert.ErrorIs(t, exp.Err(), mmv.ErrNamespace)
}

// TestServiceNamedAsOverflowFile: a service named api.2 (the second of
// its instances) gets the file api_2: a registry's name ending in '.' and
// digits is refused (mmv.ErrName), <file>.N being the overflow files of
// the registry <file>.
func TestServiceNamedAsOverflowFile(t *testing.T) {
	pcptest.NeedFileLayer(t) // Export starts the service's registry
	exp := New(&Options{Registry: mmv.Options{Dir: filepath.Join(t.TempDir(), "mmv")}})
	t.Cleanup(func() { exp.Shutdown(context.Background()) })
	manual := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(resource.NewSchemaless(attribute.String("service.name", "api.2"))),
		sdkmetric.WithReader(manual))
	c, err := mp.Meter("shop").Int64Counter("requests")
	require.NoError(t, err)
	c.Add(context.Background(), 1)
	var rm metricdata.ResourceMetrics
	require.NoError(t, manual.Collect(context.Background(), &rm))
	require.NoError(t, exp.Export(context.Background(), &rm))
	require.NoError(t, exp.Err())
	assert.Equal(t, "api_2", exp.Registry().Name())
	assert.Equal(t, "api_2", filepath.Base(exp.Registry().Path()))
}
