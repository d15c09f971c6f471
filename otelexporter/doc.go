// Package otelexporter publishes the metrics of an OpenTelemetry
// MeterProvider to Performance Co-Pilot (PCP): an implementation of the
// SDK's metric Exporter that writes an MMV file with package mmv, which
// PCP's MMV agent reads at every fetch.
//
//	exp := otelexporter.New(nil)
//	mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(res),
//		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)))
//	defer mp.Shutdown(ctx)
//
// then `pminfo -f mmv.<service>` shows what the program records with the
// OpenTelemetry API. The package is a module of its own, so that users of
// mmv never download the SDK.
//
// # Registry, resource, lifecycle
//
// One Exporter serves one reader (sdkmetric.NewPeriodicReader) of one
// MeterProvider: the reader owns it (it shuts it down with itself), and
// the exporter takes each of the reader's collections for the whole of
// the provider's instruments (see Collections below). Shared by two providers' readers,
// each reader's export takes the other's instruments out of PCP; give
// each provider an exporter of its own Options.Name. Err names what can
// be seen of a shared exporter: an export of another resource than the
// first's, and a collection whose instrumentation scopes share none with
// the collection before's (a provider's synchronous instruments, once
// they have a point, are in all its collections). Two providers of one
// resource exporting a scope of one name go unseen.
//
// The exporter makes its registry at the first Export, when it knows the
// resource: the file is named Options.Name, or after service.name
// ("shop test" → mmv.shop_test). Its cluster is the registry's rule: a
// zero Options.Registry.Cluster is derived from the file name (FNV-1a,
// 1..2047), the same on every host and restart unless another live file of
// the directory has it, when it is the next free one; a cluster given
// that another live file has fails the first Export with
// mmv.ErrClusterInUse. No two files of the directory ever share a
// cluster, so PCP never shows one service's values under another's
// names. The resource
// attributes of Options.ResourceKeys (service.name, service.namespace,
// service.version, service.instance.id, host.name by default) become
// labels of every metric, named with '.' made '_' (service_name); but one
// that makes le, which the registry refuses as a label of every metric (a
// histogram's buckets carry their bound as le in their names), or reason,
// the label of the exporter's counter otelexporter.dropped (PCP would
// show the resource's value on its instances without a label of their
// own), and Err names.
//
// The registry starts at the first Export, before any instrument is
// declared: each instrument's name is then checked alone against the
// other live files of the directory, so that one whose PCP name clashes
// with another file's is refused alone (mmv.ErrNamespace, counted as
// declaration, see Limits and drops), not the whole registry. A registry
// that cannot start (mmv.ErrClusterInUse, mmv.ErrInUse, a file system
// error; a Cluster above 2047, which PCP takes for a file without
// instance domains alone, where the exporter's counter has one:
// mmv.ErrRange) fails Export, stores nothing, and is named by Err; Start
// is tried again at the next Export.
//
// Export stores every value in the file before it returns: nothing of the
// SDK's data, which it reuses, is kept. Instruments and attribute sets
// seen for the first time are declared then; PCP sees those of the first
// export as it returns, the later ones after the registry's next
// publication (mmv.Options.PublishDelay after them, up to a second while
// the registry's publications follow each other), or at once after
// ForceFlush.
// Shutdown closes the registry, also when its context is done (it
// returns the context's error then, as the SDK's exporters do): without
// the mmv.Process flag the file stays with its last values (the SDK's
// reader exports them just before), and PCP goes on showing them; with
// it the file is removed, and PCP stops showing the service.
//
// Temporality is cumulative for every instrument kind: PCP computes rates
// from counters itself. Aggregation is the SDK's default for each kind:
// sums for counters and up-down counters, last values for gauges,
// explicit-bucket histograms for histograms. Exponential histograms (only
// ever chosen by a View) are not exported: re-bucketing them would make
// new instances whenever their scale changes. Their points are counted as
// dropped, as are summaries (from bridges) and delta data.
//
// # Mapping
//
// An instrument is one or more PCP metrics named after its scope and its
// name: the last element of the scope's name (after its last '/'), a dot,
// the instrument's name, each part between dots made a PCP name part
// (every byte other than a letter, digit or '_' made '_', an "x" before a
// part that does not start with a letter). Instrument "http.server.duration"
// of scope "go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
// is otelhttp.http.server.duration. Its help is the description's first
// line (the instrument's name without one), its long help names the
// instrument, each cut to 255 bytes, a NUL byte, which mmv refuses in a
// help text, made a space.
//
// One PCP name is one instrument's. The SDK tells instruments apart by
// their scope (name, version, schema URL and attributes), name, unit,
// description and kind; several of them map to one PCP name when their
// scopes' last elements are the same (example.com/db and example.org/db),
// when a scope of one name comes in several versions or with other
// attributes, when an instrument comes in several units or kinds, or when
// two instrument names make one PCP name (x-y and x_y). The name then goes to
// one of them, and the points of the others are dropped, counted as
// conflicts at every export and named by Err, never written into the
// same metric. Which one gets it does not depend on the SDK's order, a
// map's: at the first export in which instruments of that name have
// points, the one that sorts first by scope name, version, schema URL,
// attributes (as attribute.DefaultEncoder writes them), then instrument
// name, unit, description and kind gets it, and keeps it while the
// registry lives (published names never change). So the same
// instruments give the same PCP metric on every host and every restart
// where they come together; one that comes at a later export than the
// holder of its name loses to it, whatever its order.
//
//	OpenTelemetry data                PCP metrics
//	Sum, monotonic, int64             counter (u64), the instrument's units
//	Sum, monotonic, float64           counter (u64) in fine units, see below
//	Sum, not monotonic (UpDown...)    instant: int64 → i64, float64 → double
//	Gauge                             instant: int64 → i64, float64 → double
//	Histogram (explicit buckets)      NAME.bucket  counter, count per bucket (not cumulative), label le
//	                                  NAME.count   counter
//	                                  NAME.sum     counter, as a sum above
//	                                  NAME.min, NAME.max  instant doubles, when recorded
//	ExponentialHistogram, Summary     dropped, counted
//
// A point's min and max are shown while its points have them (see Limits
// and drops for one that has none).
//
// A float total is a u64 counter, not a double: PCP's counter semantics
// (rates, wrap detection) are what a total needs, and a gauge would make
// tools show its level instead of its rate. It is kept in finer units,
// rounded: a time in nanoseconds, a space in bytes, a count or a
// dimensionless value in thousandths ("count x 10^-3", "x 10^-3"), other
// units in whole units. A value a counter cannot hold (negative, NaN,
// 2^64 and beyond) is dropped, counted. So is a histogram point of
// another shape than the SDK's (a Producer's): bucket counts other than
// one per bound and one for +Inf, bounds that do not increase to a finite
// last one, a count that is not the sum of its bucket counts.
//
// Each attribute set of an instrument is one instance of its metrics,
// named in the canonical form of package mmv's vectors: label=value pairs
// joined by ',', with spaces, ',', '=', '%' and control bytes written %XX
// (UTF-8 stays as it is: "http_request_method=GET,region=Zürich%20Nord").
// The labels are the attribute keys with '.' made '_', sorted by key,
// but where a label would clash, renamed as a Prometheus scrape renames a
// label that clashes: a histogram's key le is label exported_le in each
// of its metrics (its buckets' label is le), a key that makes a label of
// the registry's, a resource label (service.name) or one the program
// added (Exporter.Registry, mmv.Registry.AddLabel), is
// exported_service_name, as is one PCP puts on every metric itself
// (mmv.PCPLabelNames: host.name's host_name is free, a key hostname is
// exported_hostname), and of two or more keys
// that make one label, each but the key spelt as the label (a.b and a_b:
// exported_a_b and a_b), or the first in key order when none is; and
// exported_exported_le when a key makes exported_le, and so on. A key
// spelt as its label is named first: one the registry lacks keeps it,
// whatever the other keys of the first export; a rename takes the first
// name no other key makes, so it depends on them (key x of a registry
// labelled x is exported_x, or exported_exported_x beside a key
// exported_x). The values are the attributes' values as OpenTelemetry prints them
// (attribute.Value.Emit). An instance carries its values as PCP instance
// labels while the file's label budget allows (bucket instances do not:
// their names say enough). The label names of
// an instrument are the keys of the points of its first export: a point
// lacking one has "" for it. Attribute sets of one export that make one
// instance (a key missing and one set to "", an int 200 and a string
// "200") are all dropped, counted: PCP shows none of them; unless at
// most one of them has no key outside the labels, when they add up (see
// below). An instrument whose first export has no attributes is a
// singular metric.
//
// A point with a key outside those labels (instrumentation that sets a key
// only as things happen, such as the semantic conventions' error.type on a
// failed request only, when the first export saw none) is added into the
// instance of its other attributes, where totals add up: a counter's, and
// a histogram's buckets, count and sum (its min and max the least and
// greatest), as a View whose sdkmetric.Stream AttributeFilter drops the
// key would add it, each attribute set apart (an int 1 and a string "1"
// are two). The totals count the failed requests, and Err names the key as
// it names drops, for each collection carrying it; telling them apart in
// PCP takes a restart whose first export has the key, or the key set on
// every point. The instance keeps the last values of each attribute set
// added into it, so that a total never goes down (a counter wrap, to PCP),
// whichever batch of a collection brings which set, and one absent from
// collections comes back exact. Past 64 such sets in an instance (a
// high-cardinality key, a request id), those absent from a whole
// collection leave: their last values stay in the totals, no longer kept
// apart, so that the sets do not pile up; one exported again is a new
// set, its values added anew, as a set coming back to PCP starts anew
// (an observable callback's that reports its running total again counts
// it twice). When a histogram's bounds change (a
// producer's), the bucket counts of a set of the old bounds go into the
// first new bucket at or above theirs until its next point. A total a
// counter cannot hold (2^64 and beyond) is dropped, counted, as one set's
// would be. A gauge's or up-down counter's point with such a key is
// dropped, counted: levels do not add up.
//
// # Units
//
// UCUM units map to PCP units; a unit PCP has none for is shown as none,
// and the metric's help text says which unit it was.
//
//	UCUM                   PCP
//	"", "1", "%"           none
//	ns, us, ms, s          nanosec, microsec, millisec, sec
//	min, h                 min, hour
//	By, KiBy, MiBy         byte, Kbyte, Mbyte
//	GiBy, TiBy             Gbyte, Tbyte
//	{anything}             count (an annotation: a count of things)
//	A/B, both above        A / B, such as By/s → byte / sec
//	A/B of one dimension   none: s/s, By/By; ms/s, min/h, KiBy/By as well,
//	                       with the help naming them (see below)
//	anything else          none (kBy, MBy: PCP's scales are binary)
//
// A quotient of two scales of one dimension (ms/s, min/h, KiBy/By) is a
// ratio only once scaled (by 1/1000, 1/60, 1024), and a dimension that
// cancels has no scale in PCP: it is a unit PCP has none for, its value
// shown as recorded (500 ms/s as 500, not 0.5, which an int64 gauge could
// not hold), the help naming the unit.
//
// # Limits and drops
//
// Each metric of an instrument holds at most Options.Limit attribute sets
// (mmv.DefaultVecLimit by default; a histogram's buckets that many times
// the most buckets of its points so far), within the registry's caps on
// instances. Beyond them the vector refuses the point and the registry counts it in
// mmv.<file>.mmv.dropped (reasons limit, cap...). What the exporter
// itself drops is counted in mmv.<file>.otelexporter.dropped, at every
// export that drops it, by reason: aggregation, temporality, declaration
// (an instrument whose name the registry refused, such as a name that is
// a leaf and a prefix of another; one refused for a reason that may pass,
// a clash with another program's live file (mmv.ErrNamespace, the file
// may go), the registry's caps (mmv.ErrTooMany), mmv.ErrInUse or
// mmv.ErrFile, is declared again once at each export that carries it,
// and published at the first the registry accepts; the others, such as a
// name declared already, for good), conflict (an instrument whose PCP name
// another instrument has, see Mapping), attributes, value (a value a
// counter cannot hold, a malformed histogram point). Export returns
// no error for them, which the SDK would report at every interval; Err
// names the drops of the last collection (all its exports, when the SDK
// splits it: see below), both kinds, once per instrument and reason with
// the number of points, at most 32 such pairs and then how many more.
//
// A data point is in PCP whole or not at all: when the registry refuses
// one of a histogram point's instances (the instance name of its le too
// long, the limit), or a point's value is dropped, the instances of its
// attribute set leave every metric of the instrument, so that PCP shows
// neither a part of it nor an old value. A singular metric cannot leave:
// on a registry with the mmv.Sentinel flag (Options.Registry) it shows no
// value, PCP's staleness marker (all ones in a counter or an int64 gauge,
// NaN in a double, which PCP 6.0.3 shows as nan), as a singular family of
// prombridge does, and starts anew from its next point, as a set that
// leaves; without the flag it keeps the last value stored (zero before
// any; a histogram whose buckets the registry refused, its count, sum,
// min and max of that point, and no bucket), and the point is counted
// and named all the same, Err saying the value stays. A histogram point without
// min and max (a Producer's) takes them out likewise: its set's min and
// max instances leave, a singular metric's show no value with the flag,
// and keep the last ones, named by Err, without it.
//
// # Collections
//
// A collection is the whole of an instrument's series. The SDK stamps
// every point of an instrument in one collection with the same end Time,
// and a reader given sdkmetric.WithMaxExportBatchSize splits a collection
// into several exports: an export carrying an instrument's points of the
// Time of its last export continues that collection and removes nothing
// of it. An export of another Time starts the instrument's next
// collection: an attribute set it does not hold leaves PCP then (an
// observable instrument's callback no longer observing it; a synchronous
// instrument's cumulative series never vanish), and comes back, with its
// instance id of before, when exported again. An instrument with no point
// leaves PCP at the exports of a newer collection than its last, which
// the exporter sees begin when a point was collected after the export
// before began (the batches of one collection are all collected before
// the first is exported), when an instrument it wrote in the running one
// comes with a new Time, or when an export has no point. A zero Time (a
// producer's data) tells no collection: each such export is one, as it
// is without batching. A set or instrument the SDK puts in a later export
// of a collection than the first is out of PCP between the two. A
// histogram's buckets are those of its last bounds. A singular metric
// not exported shows no value on a registry with the mmv.Sentinel flag,
// and keeps its last value, named by Err, without it (see Limits and
// drops).
//
// The SDK's periodic reader exports nothing when its collect fails (one
// observable callback returning an error fails it, reported to otel's
// error handler only), nor while it is stuck: PCP, whose values carry no
// time, shows the last export's as current. Err names such a gap: no
// collection for more than three export intervals and a second, the
// interval being learned as the median spacing of the last eight
// collections (after the first alone, it is the SDK's default, a minute,
// or OTEL_METRIC_EXPORT_INTERVAL, or the time from New to the first
// collection when longer, as a periodic reader given a longer interval
// exports first an interval after it starts: one whose first export was
// a ForceFlush's may be named a gap before its second; a program calling
// ForceFlush more often than the interval makes it look shorter, and Err
// may name a gap when the calls stop, until the reader's own exports set
// it again). The values are not
// withdrawn: the exporter runs only within the SDK's calls, with no timer
// to withdraw them at; they were true at the last export (a counter's
// rate reads zero during the gap and high after it, its average over
// both right), where withdrawn they would make a hole in every metric of
// the service for as long as a callback fails, often one collection.
package otelexporter
