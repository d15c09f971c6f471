package otelexporter

import (
	"context"
	"fmt"
	"iter"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/gopcp/mmv"
)

// Options configure an Exporter; the zero value of each field means its
// default.
type Options struct {
	// Name is the MMV file's name. Default: the resource's service.name
	// made a PCP name (every byte other than a letter, digit or '_' turned
	// into '_', "otel_" before one that does not start with a letter), or
	// "otel" without one.
	Name string
	// Registry are the options of the registry the exporter makes (Dir,
	// Flags, caps...). A zero Cluster is the registry's derived one: from
	// the file name, so from service.name, the same on every host and
	// restart while no other live file of the directory has it (see
	// mmv.Options.Cluster). A Cluster given that another live file of the
	// directory has fails the first Export with mmv.ErrClusterInUse.
	Registry mmv.Options
	// Limit is how many attribute sets one instrument may have in PCP.
	// Default: mmv.DefaultVecLimit.
	Limit int
	// ResourceKeys are the resource attributes published as labels of
	// every metric. Default: DefaultResourceKeys.
	ResourceKeys []attribute.Key
}

// DefaultResourceKeys are the resource attributes published as registry
// labels by default: those that tell a service's metrics apart from
// another's, and its hosts apart.
var DefaultResourceKeys = []attribute.Key{"service.name", "service.namespace", "service.version", "service.instance.id", "host.name"}

// Exporter writes the metrics of an OpenTelemetry MeterProvider into an
// MMV file, for use with sdkmetric.NewPeriodicReader. It makes its
// registry at the first Export, from the resource, and closes it at
// Shutdown. Its methods are safe for concurrent use.
type Exporter struct {
	o Options

	mu          sync.Mutex
	r           *mmv.Registry
	started     bool
	shut        bool
	instruments map[string]*instrument // by PCP name
	drops       drops
}

var _ sdkmetric.Exporter = (*Exporter)(nil)

// New returns an exporter with options o (nil for the defaults).
func New(o *Options) *Exporter {
	e := &Exporter{instruments: map[string]*instrument{}}
	if o != nil {
		e.o = *o
	}
	if e.o.Limit == 0 {
		e.o.Limit = mmv.DefaultVecLimit
	}
	if e.o.ResourceKeys == nil {
		e.o.ResourceKeys = DefaultResourceKeys
	}
	return e
}

// Temporality returns cumulative for every kind: PCP computes rates from
// counters itself.
func (e *Exporter) Temporality(sdkmetric.InstrumentKind) metricdata.Temporality {
	return metricdata.CumulativeTemporality
}

// Aggregation returns the SDK's default aggregation of each kind: sums for
// counters, last values for gauges, explicit-bucket histograms for
// histograms (never exponential ones, which the exporter drops).
func (e *Exporter) Aggregation(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	return sdkmetric.DefaultAggregationSelector(k)
}

// Registry returns the exporter's registry, nil before the first Export.
func (e *Exporter) Registry() *mmv.Registry {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.r
}

// Err returns why the exporter last dropped data points or could not
// store them, nil if it never did.
func (e *Exporter) Err() error { return e.drops.err() }

// Export stores every data point of rm in the registry, declaring the
// metrics of instruments and attribute sets seen for the first time; the
// registry is made and started at the first call. Points it cannot store
// are counted (see the package doc), and Err says why; they make no error
// here, which the SDK would report again at every interval. It returns an
// error when the registry cannot start, or after Shutdown.
func (e *Exporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.shut {
		return fmt.Errorf("otelexporter: export: %w", sdkmetric.ErrExporterShutdown)
	}
	if e.r == nil {
		e.open(rm.Resource)
	}
	for i := range rm.ScopeMetrics {
		sm := &rm.ScopeMetrics[i]
		for j := range sm.Metrics {
			e.export(sm.Scope, &sm.Metrics[j])
		}
	}
	if !e.started {
		if err := e.r.Start(); err != nil {
			return fmt.Errorf("otelexporter: start the registry %q: %w", e.r.Name(), err)
		}
		e.started = true
	}
	return nil
}

// open makes the registry of resource res, with its labels and the
// exporter's own counter.
func (e *Exporter) open(res *resource.Resource) {
	service := serviceName(res)
	name := e.o.Name
	if name == "" {
		name = fileName(service)
	}
	opts := e.o.Registry
	e.r = mmv.NewRegistry(name, &opts)
	for _, k := range e.o.ResourceKeys {
		v, ok := res.Set().Value(k)
		if !ok {
			continue
		}
		if err := e.r.AddLabel(mmv.Label{Name: labelName(k), Value: v.Emit()}); err != nil {
			e.drops.keep(fmt.Errorf("otelexporter: resource attribute %q as a label: %w", k, err))
		}
	}
	e.drops.declare(e.r)
}

// ForceFlush publishes the metrics declared since the registry's last
// publication, so that PCP shows them now rather than after
// mmv.Options.PublishDelay; values are in the file as soon as Export
// stores them.
func (e *Exporter) ForceFlush(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.started || e.shut {
		return nil
	}
	if err := e.r.Flush(); err != nil {
		return fmt.Errorf("otelexporter: flush the registry %q: %w", e.r.Name(), err)
	}
	return nil
}

// Shutdown closes the registry (the SDK's reader exports the last values
// just before). Without the mmv.Process flag, the file stays with its
// last values and PCP goes on showing them; with it, the file is removed
// and PCP stops showing the service. Later calls do nothing.
func (e *Exporter) Shutdown(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.shut {
		return nil
	}
	e.shut = true
	if e.r == nil {
		return nil
	}
	if err := e.r.Close(); err != nil {
		return fmt.Errorf("otelexporter: close the registry %q: %w", e.r.Name(), err)
	}
	return nil
}

// export stores the points of one instrument.
func (e *Exporter) export(scope instrumentation.Scope, m *metricdata.Metrics) {
	switch a := m.Data.(type) {
	case metricdata.Sum[int64]:
		exportSums(e, scope, m, sumKind(a.IsMonotonic, kindCounter, kindIntGauge), a.Temporality, a.DataPoints)
	case metricdata.Sum[float64]:
		exportSums(e, scope, m, sumKind(a.IsMonotonic, kindFloatCounter, kindGauge), a.Temporality, a.DataPoints)
	case metricdata.Gauge[int64]:
		exportSums(e, scope, m, kindIntGauge, metricdata.CumulativeTemporality, a.DataPoints)
	case metricdata.Gauge[float64]:
		exportSums(e, scope, m, kindGauge, metricdata.CumulativeTemporality, a.DataPoints)
	case metricdata.Histogram[int64]:
		exportHistograms(e, scope, m, kindHistogram, a)
	case metricdata.Histogram[float64]:
		exportHistograms(e, scope, m, kindFloatHistogram, a)
	case metricdata.ExponentialHistogram[int64]:
		e.dropAggregation(scope, m, "an exponential histogram", len(a.DataPoints))
	case metricdata.ExponentialHistogram[float64]:
		e.dropAggregation(scope, m, "an exponential histogram", len(a.DataPoints))
	case metricdata.Summary:
		e.dropAggregation(scope, m, "a summary", len(a.DataPoints))
	}
}

func sumKind(monotonic bool, counter, gauge kind) kind {
	if monotonic {
		return counter
	}
	return gauge
}

func (e *Exporter) dropAggregation(scope instrumentation.Scope, m *metricdata.Metrics, what string, n int) {
	e.drops.drop(dropAggregation, n, fmt.Errorf("otelexporter: %s: %s is not exported; use the default explicit-bucket aggregation", owner(scope, m.Name), what))
}

// cumulative reports whether the n points of m are cumulative, counting
// them as dropped when they are not.
func (e *Exporter) cumulative(scope instrumentation.Scope, m *metricdata.Metrics, t metricdata.Temporality, n int) bool {
	if t == metricdata.CumulativeTemporality {
		return true
	}
	e.drops.drop(dropTemporality, n, fmt.Errorf("otelexporter: %s: %s data is not exported; the exporter asks for cumulative", owner(scope, m.Name), t))
	return false
}

// instrument returns the instrument of m, declared as kind k at its first
// export with the shape sh returns, or nil when its n points are dropped.
func (e *Exporter) instrument(scope instrumentation.Scope, m *metricdata.Metrics, k kind, sh func() shape, n int) *instrument {
	name := metricName(scope, m.Name)
	in, ok := e.instruments[name]
	if !ok {
		if n == 0 {
			return nil // the attribute keys are not known yet
		}
		in = declare(e.r, name, scope, m, k, sh(), e.o.Limit)
		e.instruments[name] = in
	}
	switch {
	case in.err != nil:
		e.drops.drop(dropDeclaration, n, in.err)
		return nil
	case in.scope != scope.Name || in.name != m.Name || in.kind != k:
		e.drops.drop(dropDeclaration, n, fmt.Errorf("otelexporter: %s, a %s, as metric %q: the metric is %s, a %s",
			owner(scope, m.Name), kindNames[k], name, owner(instrumentation.Scope{Name: in.scope}, in.name), kindNames[in.kind]))
		return nil
	}
	return in
}

func exportSums[N int64 | float64](e *Exporter, scope instrumentation.Scope, m *metricdata.Metrics, k kind, t metricdata.Temporality, pts []metricdata.DataPoint[N]) {
	if !e.cumulative(scope, m, t, len(pts)) {
		return
	}
	in := e.instrument(scope, m, k, func() shape {
		return shape{keys: keysOf(sets(pts, func(p *metricdata.DataPoint[N]) attribute.Set { return p.Attributes }))}
	}, len(pts))
	if in != nil {
		writeSums(&e.drops, in, pts)
	}
}

func exportHistograms[N int64 | float64](e *Exporter, scope instrumentation.Scope, m *metricdata.Metrics, k kind, a metricdata.Histogram[N]) {
	pts := a.DataPoints
	if !e.cumulative(scope, m, a.Temporality, len(pts)) {
		return
	}
	in := e.instrument(scope, m, k, func() shape {
		sh := shape{keys: keysOf(sets(pts, func(p *metricdata.HistogramDataPoint[N]) attribute.Set { return p.Attributes }))}
		for i := range pts {
			_, ok := pts[i].Min.Value()
			sh.minmax = sh.minmax || ok
			sh.buckets = max(sh.buckets, len(pts[i].BucketCounts))
		}
		return sh
	}, len(pts))
	if in != nil {
		writeHistograms(&e.drops, in, pts)
	}
}

// sets returns the attribute sets of points.
func sets[P any](pts []P, attrs func(*P) attribute.Set) iter.Seq[attribute.Set] {
	return func(yield func(attribute.Set) bool) {
		for i := range pts {
			if !yield(attrs(&pts[i])) {
				return
			}
		}
	}
}
