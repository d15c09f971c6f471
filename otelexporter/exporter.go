package otelexporter

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcpname"
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
	// Flags, caps...). With the mmv.Sentinel flag PCP shows an int64
	// gauge's -1 as no value, as it shows every all-ones integer, and a
	// singular metric whose instrument a collection lacks, or whose point
	// is dropped, shows no value rather than its last one (see the
	// package doc), as prombridge's singular families do. A zero
	// Cluster is the registry's derived one: from the file name, so from
	// service.name, the same on every host and restart while no other
	// live file of the directory has it (see mmv.Options.Cluster). A
	// Cluster given that another live file of the directory has fails
	// the first Export with mmv.ErrClusterInUse, one above 2047 every
	// Export with mmv.ErrRange (the exporter's counter is a vector).
	Registry mmv.Options
	// Limit is how many attribute sets one instrument may have in PCP.
	// Default: mmv.DefaultVecLimit.
	Limit int
	// ResourceKeys are the resource attributes published as labels of
	// every metric, a key made a label as an attribute's is, one PCP puts
	// on every metric itself (hostname) made exported_hostname. Default:
	// DefaultResourceKeys.
	ResourceKeys []attribute.Key
}

// DefaultResourceKeys are the resource attributes published as registry
// labels by default: those that tell a service's metrics apart from
// another's, and its hosts apart.
var DefaultResourceKeys = []attribute.Key{"service.name", "service.namespace", "service.version", "service.instance.id", "host.name"}

// Exporter writes the metrics of an OpenTelemetry MeterProvider into an
// MMV file, for use with sdkmetric.NewPeriodicReader. It makes its
// registry at the first Export, from the resource, and closes it at
// Shutdown. Its methods are safe for concurrent use; it serves one reader
// of one provider all the same, whose every collection it takes for the
// whole of the provider's instruments (see the package doc).
type Exporter struct {
	o Options

	mu          sync.Mutex
	r           *mmv.Registry
	started     bool
	shut        bool
	instruments map[string]*instrument // by PCP name
	gen         uint64                 // exports made
	coll        uint64                 // the collection running (see instrument.coll)
	collGen     uint64                 // the export that started it
	carried     bool                   // the export running has data points
	// lastExport is when the export before the running one began, in
	// Unix ns: a point of a later Time was collected after it, so in a
	// collection of its own, where the batches of one collection were
	// all collected before the first was exported.
	lastExport int64
	collEnd    int64     // the latest end Time of the running collection's points, Unix ns
	pending    []pending // of the export running: metrics of PCP names not declared yet
	drops      drops
	// resource is the first export's resource, the registry's (shared.go).
	resource     attribute.Distinct
	resourceText string
	// scopes are the collections in which each scope last had points,
	// exportScopes those of the export running (shared.go).
	scopes       map[instrumentation.Scope]scopeColls
	exportScopes []instrumentation.Scope
	cadence      cadence // of the collections, for Err (gap.go)
}

// pending is a metric of an export whose PCP name is not declared yet.
type pending struct {
	id   ident
	m    *metricdata.Metrics
	name string
}

var _ sdkmetric.Exporter = (*Exporter)(nil)

// New returns an exporter with options o (nil for the defaults).
func New(o *Options) *Exporter {
	e := &Exporter{instruments: map[string]*instrument{}, scopes: map[instrumentation.Scope]scopeColls{}}
	e.cadence.made = monotonic()
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

// Err returns why the last collection dropped data points or could not
// store them, nil when it stored them all: one error per instrument and
// reason (each with the number of points when more than one), at most 32
// of them, then how many more; or why the registry could not start. A
// collection is every export of it when the SDK splits it
// (sdkmetric.WithMaxExportBatchSize; see the package doc), up to the
// last one so far. The first collection's also names the resource
// attributes that could not be labels. Err names, first, a gap in the
// exports: no collection for more than three export intervals (the
// median spacing of the last eight collections; after the first alone,
// see the package doc) and a second, the SDK
// having skipped them, PCP showing the last export's values as current;
// and an exporter that looks shared by two readers (see the package doc).
func (e *Exporter) Err() error {
	err := e.drops.err()
	if gap := e.cadence.gap(monotonic()); gap != nil {
		return errors.Join(gap, err)
	}
	return err
}

// Export stores every data point of rm in the registry, declaring the
// metrics of instruments and attribute sets seen for the first time; the
// registry is made at the first call and started then, before any
// instrument is declared. Points it cannot store are counted (see the
// package doc), and Err says why; they make no error here, which the SDK
// would report again at every interval. It returns an error, which Err
// names too, when the registry cannot start (tried again at the next
// call), and after Shutdown.
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
		if err := e.open(rm.Resource); err != nil {
			e.drops.add(droppedMetric, "start", 0, err)
			e.drops.done(true, nil) // Err names this alone
			return err
		}
	} else {
		e.checkResource(rm.Resource)
	}
	first := !e.started
	if first {
		// Started before any instrument is declared: each is then checked
		// alone against the directory's other files, and one whose name
		// clashes with another file's is refused alone (ErrNamespace),
		// where declared before Start it had Start refuse the registry,
		// and every export after it. Tried again at every export.
		if err := e.r.Start(); err != nil {
			err = fmt.Errorf("otelexporter: start the registry %q: %w", e.r.Name(), err)
			e.drops.add(e.r.Name(), "start", 0, err)
			e.drops.done(true, nil) // Err names this alone
			return err
		}
		e.started = true
	}
	began, at := time.Now().UnixNano(), monotonic()
	defer func() { e.lastExport = began }()
	e.gen++
	e.carried = false
	for i := range rm.ScopeMetrics {
		sm := &rm.ScopeMetrics[i]
		points := false
		for j := range sm.Metrics {
			points = e.route(sm.Scope, &sm.Metrics[j]) || points
		}
		if points {
			e.exportScopes = append(e.exportScopes, sm.Scope)
		}
	}
	e.exportPending()
	if !e.carried {
		e.newCollection() // a collection of nothing: every instrument is absent
	}
	for _, in := range e.instruments {
		in.sweep(&e.drops, e.gen, e.coll)
	}
	if first {
		// The first export's instruments are in PCP as it returns, as
		// when they were declared before Start and in its file.
		if err := e.r.Flush(); err != nil {
			e.drops.add(e.r.Name(), "flush", 0, fmt.Errorf("otelexporter: flush the registry %q: %w", e.r.Name(), err))
		}
	}
	e.markScopes()
	if e.collGen == e.gen {
		e.cadence.begin(at)
	}
	// Err names the refusals of the whole collection: of every export
	// of it when the SDK splits it, not only the last.
	e.drops.done(e.collGen == e.gen, e.sharedNote())
	return nil
}

// open makes the registry of resource res, with its labels and the
// exporter's own counter; or, when the registry refuses the counter, none,
// and returns the refusal: made again at the next Export.
func (e *Exporter) open(res *resource.Resource) error {
	service := serviceName(res)
	name := e.o.Name
	if name == "" {
		name = fileName(service)
	}
	opts := e.o.Registry
	r := mmv.NewRegistry(name, &opts)
	// The counter first: mmv refuses a vector labelled as its registry,
	// and a resource key making its label, reason, took the first Export
	// down (TestResourceKeyNamedAsDropsLabel); this way the key is
	// refused as a label, and named by Err.
	if err := e.drops.declare(r); err != nil {
		return err
	}
	e.r = r
	e.resource, e.resourceText = res.Equivalent(), res.Set().Encoded(attribute.DefaultEncoder())
	for _, k := range e.o.ResourceKeys {
		v, ok := res.Set().Value(k)
		if !ok {
			continue
		}
		// A label PCP puts on every metric itself (hostname) is renamed,
		// as an attribute key's is: mmv refuses it.
		name := pcpname.Unclash(labelName(k), pcpname.IsOwn)
		if err := e.r.AddLabel(mmv.Label{Name: name, Value: v.Emit()}); err != nil {
			e.drops.add(string(k), "label", 0, fmt.Errorf("otelexporter: resource attribute %q as a label: %w", k, err))
			continue
		}
	}
	return nil
}

// ForceFlush publishes the metrics declared since the registry's last
// publication, so that PCP shows them now rather than after
// mmv.Options.PublishDelay (up to a second while the registry's
// publications follow each other); values are in the file as soon as
// Export stores them.
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
// and PCP stops showing the service. Later calls do nothing. It closes the
// registry also when ctx is done (a context a signal handler cancelled, a
// deadline the final collect used up), and then returns ctx's error, as
// the SDK's own exporters do: left open, the registry would hold its file
// and its lock while the process lives, PCP showing its values as
// current, and a new exporter of the name would fail with mmv.ErrInUse.
// Closing waits on nothing a context could bound: it unmaps the files,
// and removes them with the flag.
func (e *Exporter) Shutdown(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.shut {
		e.shut = true
		e.cadence.stop()
		if e.r != nil {
			if err := e.r.Close(); err != nil {
				return fmt.Errorf("otelexporter: close the registry %q: %w", e.r.Name(), err)
			}
		}
	}
	return ctx.Err()
}

// route exports the points of m, of scope, now when its PCP name is
// declared, or keeps it for exportPending; it reports whether m has
// points.
func (e *Exporter) route(scope instrumentation.Scope, m *metricdata.Metrics) bool {
	n, end := pointsOf(m.Data)
	if n > 0 {
		e.carried = true
		switch {
		case end == 0:
			e.newCollection() // no Time to tell a collection by: the export is one
		case end > e.lastExport && end > e.collEnd:
			// Collected since the last export began, and after the
			// running collection's points: the SDK's next collection,
			// even when it holds only instruments the running one did
			// not (instrument sees the others). The SDK's instruments
			// each take their Time; a producer's, of another clock, may
			// be ahead of this one's, its batches of one Time.
			e.newCollection()
		}
	}
	k, ok := kindOf(m.Data)
	if !ok {
		e.dropAggregation(scope, m)
		return n > 0
	}
	id := identOf(scope, m, k)
	name := metricName(scope, m.Name)
	if _, ok := e.instruments[name]; ok {
		e.export(&id, m, name)
		return n > 0
	}
	e.pending = append(e.pending, pending{id, m, name})
	return n > 0
}

// exportPending exports the metrics whose PCP names were not declared,
// in an order of their own rather than the SDK's (which follows a map):
// by PCP name, then by ident.compare. So when several instruments first
// take one name in the same export, the one that sorts first gets it,
// whatever the SDK's order; the others are conflicts.
func (e *Exporter) exportPending() {
	slices.SortStableFunc(e.pending, func(a, b pending) int {
		return cmp.Or(strings.Compare(a.name, b.name), a.id.compare(&b.id))
	})
	for i := range e.pending {
		p := &e.pending[i]
		e.export(&p.id, p.m, p.name)
	}
	clear(e.pending)
	e.pending = e.pending[:0]
}

// kindOf returns the kind of instrument data is; ok is false for the
// aggregations the exporter drops.
func kindOf(data metricdata.Aggregation) (k kind, ok bool) {
	switch a := data.(type) {
	case metricdata.Sum[int64]:
		return sumKind(a.IsMonotonic, kindCounter, kindIntGauge), true
	case metricdata.Sum[float64]:
		return sumKind(a.IsMonotonic, kindFloatCounter, kindGauge), true
	case metricdata.Gauge[int64]:
		return kindIntGauge, true
	case metricdata.Gauge[float64]:
		return kindGauge, true
	case metricdata.Histogram[int64]:
		return kindHistogram, true
	case metricdata.Histogram[float64]:
		return kindFloatHistogram, true
	}
	return 0, false
}

// export stores the points of one instrument, of identity id, in the
// metrics of PCP name name.
func (e *Exporter) export(id *ident, m *metricdata.Metrics, name string) {
	switch a := m.Data.(type) {
	case metricdata.Sum[int64]:
		exportSums(e, id, m, name, a.Temporality, a.DataPoints)
	case metricdata.Sum[float64]:
		exportSums(e, id, m, name, a.Temporality, a.DataPoints)
	case metricdata.Gauge[int64]:
		exportSums(e, id, m, name, metricdata.CumulativeTemporality, a.DataPoints)
	case metricdata.Gauge[float64]:
		exportSums(e, id, m, name, metricdata.CumulativeTemporality, a.DataPoints)
	case metricdata.Histogram[int64]:
		exportHistograms(e, id, m, name, a)
	case metricdata.Histogram[float64]:
		exportHistograms(e, id, m, name, a)
	}
}

func sumKind(monotonic bool, counter, gauge kind) kind {
	if monotonic {
		return counter
	}
	return gauge
}

// dropAggregation drops the points of m, an exponential histogram or a
// summary.
func (e *Exporter) dropAggregation(scope instrumentation.Scope, m *metricdata.Metrics) {
	what, n := "a summary", 0
	switch a := m.Data.(type) {
	case metricdata.ExponentialHistogram[int64]:
		what, n = "an exponential histogram", len(a.DataPoints)
	case metricdata.ExponentialHistogram[float64]:
		what, n = "an exponential histogram", len(a.DataPoints)
	case metricdata.Summary:
		n = len(a.DataPoints)
	default:
		what = fmt.Sprintf("data of type %T", m.Data)
	}
	o := owner(scope, m.Name)
	e.drops.drop(dropAggregation, n, o, fmt.Errorf("otelexporter: %s: %s is not exported; use the default explicit-bucket aggregation", o, what))
}

// cumulative reports whether the n points of m are cumulative, counting
// them as dropped when they are not.
func (e *Exporter) cumulative(id *ident, t metricdata.Temporality, n int) bool {
	if t == metricdata.CumulativeTemporality {
		return true
	}
	o := owner(id.scope, id.name)
	e.drops.drop(dropTemporality, n, o, fmt.Errorf("otelexporter: %s: %s data is not exported; the exporter asks for cumulative", o, t))
	return false
}

// instrument returns the instrument of m, of identity id, declared under
// PCP name name at its first export with the shape sh returns, or nil
// when it has no point (it is then absent from the export, as a metric
// missing from it) or its n points are dropped: the metric is another
// instrument's, the registry refused it, or it was written already in
// this export.
func (e *Exporter) instrument(id *ident, m *metricdata.Metrics, name string, sh func() shape, n int) *instrument {
	if n == 0 {
		// No point is no instrument in this export: marked seen, a known
		// one kept its sets and its singular value, unnamed by Err.
		return nil
	}
	in, ok := e.instruments[name]
	if !ok || in.retry && in.tried != e.gen && in.id.equal(id) {
		// First seen, or refused for a reason that may pass: declared
		// (again) once per export, with this export's shape; refused
		// again, it keeps its name and is counted and named as before.
		in = declare(e.r, name, *id, m, sh(), e.o.Limit)
		in.tried = e.gen
		e.instruments[name] = in
	}
	switch {
	case !in.id.equal(id):
		o := owner(id.scope, id.name)
		e.drops.drop(dropConflict, n, o, fmt.Errorf("otelexporter: %s, %s, as metric %q: dropped, the metric is %s's, %s (the first export of the name gave it to the instrument that sorts first by scope name, version, schema URL, attributes, then unit, description, kind)",
			o, id.what(&in.id), name, in.owner, in.id.what(id)))
		return nil
	case in.err != nil:
		e.drops.drop(dropDeclaration, n, in.owner, in.err)
		return nil
	case in.gen == e.gen:
		e.drops.drop(dropConflict, n, in.owner, fmt.Errorf("otelexporter: %s as metric %q: dropped, a second stream of the same instrument in one export (views that make one stream twice?)", in.owner, name))
		return nil
	}
	in.gen = e.gen
	// The SDK stamps every point of an instrument in one collection with
	// the same end Time, and may split the collection into several
	// exports (WithMaxExportBatchSize): an export of the Time before
	// continues its collection, whose sets it must not remove.
	_, end := pointsOf(m.Data)
	in.continues = end != 0 && end == in.end
	if !in.continues {
		if in.coll == e.coll {
			e.newCollection() // its second collection since the running one began
		}
		in.end = end
		in.prevColl = in.coll
	}
	in.coll = e.coll
	e.collEnd = max(e.collEnd, end)
	return in
}

// newCollection starts a collection, once per export: the instruments not
// written in it since are absent (sweep).
func (e *Exporter) newCollection() {
	if e.collGen != e.gen {
		e.coll++
		e.collGen = e.gen
		e.collEnd = 0
	}
}

// nanos returns t, a data point's Time, in Unix nanoseconds, 0 when
// zero; generic so that the time package stays out and t is not boxed.
func nanos[T interface {
	IsZero() bool
	UnixNano() int64
}](t T) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// pointsOf returns the number of points of data, and the end Time of the
// first in Unix nanoseconds: 0 when it has none or a zero Time.
func pointsOf(data metricdata.Aggregation) (n int, end int64) {
	switch a := data.(type) {
	case metricdata.Sum[int64]:
		return stamp(a.DataPoints, func(p *metricdata.DataPoint[int64]) int64 { return nanos(p.Time) })
	case metricdata.Sum[float64]:
		return stamp(a.DataPoints, func(p *metricdata.DataPoint[float64]) int64 { return nanos(p.Time) })
	case metricdata.Gauge[int64]:
		return stamp(a.DataPoints, func(p *metricdata.DataPoint[int64]) int64 { return nanos(p.Time) })
	case metricdata.Gauge[float64]:
		return stamp(a.DataPoints, func(p *metricdata.DataPoint[float64]) int64 { return nanos(p.Time) })
	case metricdata.Histogram[int64]:
		return stamp(a.DataPoints, func(p *metricdata.HistogramDataPoint[int64]) int64 { return nanos(p.Time) })
	case metricdata.Histogram[float64]:
		return stamp(a.DataPoints, func(p *metricdata.HistogramDataPoint[float64]) int64 { return nanos(p.Time) })
	case metricdata.ExponentialHistogram[int64]:
		return stamp(a.DataPoints, func(p *metricdata.ExponentialHistogramDataPoint[int64]) int64 { return nanos(p.Time) })
	case metricdata.ExponentialHistogram[float64]:
		return stamp(a.DataPoints, func(p *metricdata.ExponentialHistogramDataPoint[float64]) int64 { return nanos(p.Time) })
	case metricdata.Summary:
		return stamp(a.DataPoints, func(p *metricdata.SummaryDataPoint) int64 { return nanos(p.Time) })
	}
	return 0, 0
}

// stamp returns len(pts) and the end Time of the first, as pointsOf.
func stamp[P any](pts []P, at func(*P) int64) (n int, end int64) {
	if len(pts) == 0 {
		return 0, 0
	}
	return len(pts), at(&pts[0])
}

func exportSums[N int64 | float64](e *Exporter, id *ident, m *metricdata.Metrics, name string, t metricdata.Temporality, pts []metricdata.DataPoint[N]) {
	if !e.cumulative(id, t, len(pts)) {
		return
	}
	in := e.instrument(id, m, name, func() shape {
		return shape{keys: keysOf(sets(pts, func(p *metricdata.DataPoint[N]) attribute.Set { return p.Attributes }))}
	}, len(pts))
	if in != nil {
		writeSums(&e.drops, in, pts)
	}
}

func exportHistograms[N int64 | float64](e *Exporter, id *ident, m *metricdata.Metrics, name string, a metricdata.Histogram[N]) {
	pts := a.DataPoints
	if !e.cumulative(id, a.Temporality, len(pts)) {
		return
	}
	in := e.instrument(id, m, name, func() shape {
		sh := shape{keys: keysOf(sets(pts, func(p *metricdata.HistogramDataPoint[N]) attribute.Set { return p.Attributes }))}
		for i := range pts {
			_, ok := pts[i].Min.Value()
			sh.minmax = sh.minmax || ok
			if malformed(&pts[i]) == nil { // a malformed point's buckets make no room: it is dropped
				sh.buckets = max(sh.buckets, len(pts[i].BucketCounts))
			}
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
