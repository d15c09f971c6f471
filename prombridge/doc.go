// Package prombridge publishes a prometheus/client_golang Gatherer (a
// *prometheus.Registry, or prometheus.DefaultGatherer) to Performance
// Co-Pilot through an mmv registry, so that a service instrumented only
// with client_golang is read by pminfo, pmlogger, pmproxy and Grafana
// without an HTTP listener or PCP's openmetrics agent:
//
//	r := mmv.NewRegistry("myservice", nil)
//	b, err := prombridge.Register(r, prometheus.DefaultGatherer, nil)
//	if err := r.Start(); err != nil { ... }
//	defer r.Close() // stops the bridge too (see Close below)
//
// Register gathers nothing itself: the registry's Poll does, before Start
// at each Gather and Snapshot of the registry, at Start before it makes
// its file, so that the families present are in the registry's first
// file, then every Options.Interval (1 s) on the Poll goroutine, until
// the registry's or the bridge's Close. A Gather error, a
// family or a series refused is never fatal: Err says what the last
// refresh met, Stats counts it, and the counter
// mmv.<file>.<prefix>.prombridge.dropped counts the samples not copied
// (see below); a Gather error's families are copied, and the series it
// lacks (the collector that failed may have left them out) leave after
// Options.Grace. A Gather that does
// not return (client_golang's has no deadline) holds up no method of the
// bridge but Refresh, and Register never (Start, and the registry's Gather
// and Snapshot before Start, wait for it 1 s at most):
// Err names it once it has run longer than Grace and Interval, PCP
// showing the values of the refresh before, and Close does not wait for
// it. The package is a module of its own so that mmv's users never
// download client_golang.
//
// A family declared before Start is in the registry's first file, and
// Start checks the registry's names against the directory's other live
// files as a whole: one family named as another program's metric (the
// same PCP name, or a leaf where the other is a prefix) makes Start
// refuse the registry with mmv.ErrNamespace naming both. Register after
// Start, and such a family is refused alone, counted and named by Err,
// and declared again once the other file is gone.
//
// # Mapping
//
// Families become metrics below mmv.<file> (and Options.Prefix):
//
//	Prometheus                  PCP                                   type, semantics
//	counter x_total             x                                     u64 counter
//	gauge x, untyped x          x                                     double instant
//	histogram x                 x.bucket (labels, then le)            u64 counter
//	                            x.sum, x.count                        u64 counter
//	summary x                   x.quantile (labels, then quantile)    double instant
//	                            x.sum, x.count                        u64 counter
//	gauge histogram             not published (Err says so)
//
// A family with labels is a vector (mmv.Vec): each distinct label set is
// one instance, named in mmv's canonical form, name=value pairs in label
// name order, joined by ',', with spaces, ',', '=', '%' and control bytes
// written %XX: code=200,method=GET. Constant labels are labels like the
// others, in every instance's name: a label constant at first sight may
// vary later, and published instance names never change. Instances carry
// their labels as PCP instance labels while the file's label budget
// allows (see mmv.Vec), so pmseries selects them, such as
// mmv.app.http_requests{code:"200"}. A label named as one of the
// registry's (mmv.Registry.AddLabel, a program's version beside go_info's)
// is exported_<name>, as a Prometheus scrape renames a series' label that
// a target label has: go_info{exported_version="go1.26"}; so is one PCP
// puts on every metric itself (mmv.PCPLabelNames: hostname, agent...),
// whose value PCP would show on the buckets. Label names
// are made PCP label names as family names are (a UTF-8 name's bytes
// other than a letter, digit or '_' made '_', an x before one not
// starting with a letter), and of two that make one, a.b and a_b, or _a
// and x_a, the one spelt as the label keeps it, the other is
// exported_<label>: exported_a_b=1,a_b=2. A family without labels is a
// singular metric.
//
// A histogram's buckets are cumulative, as in the exposition, with the
// +Inf bucket (equal to the count) added when the gathered buckets lack it
// (a histogram with no classic bucket, native only or a const histogram
// of no bucket, has the +Inf bucket alone),
// le written as the text format writes it: the instance names are
// route=/api,le=0.005 ... route=/api,le=+Inf. Bucket instances carry no
// PCP labels (a histogram would spend the file's 255 label records on its
// own): pmseries and Grafana see them by instance name, le last, so that
// the names of one series' buckets share their beginning; grafana-pcp's
// heatmap, which wants instances named by numeric ranges, does not read
// them as buckets. Summaries' quantiles are named quantile=0.5 after the
// labels (exported_quantile=0.5 on a registry labelled quantile). The
// summary's quantiles are x.quantile rather than x, as x beside x.sum
// would make x a prefix of another name at a dot, which makes PCP drop
// every MMV metric on the host.
//
// A family's help is the help text: its first line the short help, the
// rest the long help, each cut to 255 bytes ("..." ending a cut one), a NUL
// byte, which mmv refuses in a help text, made a space; the metrics a
// histogram or summary is split into have the family's short help and a
// long help saying what they hold.
//
// # Values
//
// Counters mirror the gathered total (mmv.Counter.Set). PCP counters are
// integers, so a total is published in units fine enough to keep what
// matters of its fraction, then rounded. A histogram's or summary's sum,
// fractional by nature, keeps it: in microseconds for a time in seconds,
// milliseconds (or minutes, hours), in bytes for a space, in thousandths
// for a count or a dimensionless value ("count x 10^-3", "x 10^-3": a
// ratio histogram that observed 0.2 shows a sum of 200 x 10^-3), as
// otelexporter keeps float totals; the sum's long help says so. A
// counter's value in seconds or milliseconds is published in
// microseconds, so that process_cpu_seconds_total keeps its fraction; in
// any other units it is rounded to whole units: most counters count
// whole events (http_requests_total), which thousandths would show a
// thousandfold in every tool, and a total's rounding is at most half a
// unit, never accumulated, so it shows only in a counter that grows by
// fractions of its unit (one at 0.4 shows 0). A
// total that is negative, not finite or beyond a uint64 is not copied, and
// nothing of its series stays in PCP at that refresh (see Drops): PCP
// never shows an old total as the current one. Gauges, untyped values and quantiles are
// copied as they are (NaN included: PCP 6.0.3 shows it as a value). A
// sample carrying its own timestamp (client_golang's
// NewMetricWithTimestamp, a federated or pushed value a collector relays)
// is copied, its value shown as current, while that timestamp is at most
// Options.MaxSampleAge (5 minutes) old at the refresh; an older one is
// absent from the refresh (see Drops), as Prometheus, storing it at its
// own time (honor_timestamps), stops returning it after its lookback
// delta: a collector relaying an hour-old value shows nothing in PCP, as
// in Prometheus, not a live one. A sample without a timestamp, or one in
// the future, is never too old; a negative MaxSampleAge copies every
// sample as current, as a scrape with honor_timestamps false stores it
// at the scrape's time.
//
// # Units
//
// From the family's name, by the OpenMetrics naming conventions
// (Units): the word before an optional _total is the unit, seconds,
// milliseconds, microseconds, nanoseconds (time) or bytes (space); a
// name ending in _total without such a unit counts (Count); any other
// name (_ratio, _percent, _celsius, _info, none) is dimensionless, PCP 6
// having no dimension for temperatures and the like. Buckets and counts
// are Count. Options.Units replaces the rule, family by family.
//
// # Names
//
// Name maps a family's name: a counter's _total is dropped, and every
// byte other than a letter, digit or '_' (the ':' of recording rules,
// UTF-8) becomes '_', with an x in front of a name that does not then
// start with a letter. A counter keeps its _total when dropping it would
// make the PCP name of another family gathered with it (the Go collector
// has both go_memstats_alloc_bytes and go_memstats_alloc_bytes_total;
// a:b_total beside a_b), or one already published: the rule compares the
// PCP names, not the Prometheus ones. The only dots are those of
// Options.Prefix and the suffixes above, so foo beside foo_bar is fine.
//
// Names never poison PCP's namespace. A family whose PCP name another
// family published first (a:b after a_b; a histogram foo, whose
// foo.bucket would sit below the leaf foo of a counter foo_total published
// earlier) is skipped; so is a family mmv refuses (a name the program
// declared itself, a name beyond 255 bytes, prombridge, whose PCP name
// would be a leaf above the bridge's own prombridge.dropped; a histogram
// labelled le, a collector's const histogram, which client_golang's
// Registry gathers where its own histograms refuse the label: its
// buckets would have le twice), and a
// family of a type the bridge does not publish (gauge histogram). The
// bridge declares a family's metrics in one mmv transaction
// (Registry.Transact), so a family refused at any of them, a histogram's
// sum or count included, declares none. The first to come keeps a name:
// in one Gather the families come in name order, so the outcome is the
// same on every run. A skipped family is
// counted in Stats.Skipped, and its samples at every refresh, named by
// Err. It is retried while mmv's refusal may pass: a clash with another
// program's live file (mmv.ErrNamespace; the file may go, where a clash
// with mmv's or the registry's own names is refused again), the registry's
// caps (mmv.ErrTooMany; deleted series free room), mmv.ErrInUse and
// mmv.ErrFile; such a family is declared again once at each refresh that
// gathers it, and published at the first that mmv accepts. A refusal that
// lasts, a name another family or the program holds, one PCP cannot take,
// a type not bridged, is never retried.
//
// A Prefix under which every family would be refused (mmv, which mmv
// keeps for its own metrics; a metric the program declared; one too long
// for any name below it) is refused by Register, which declares the
// bridge's counter <prefix>.prombridge.dropped there; so is, under any
// prefix, a registry with a label named reason (mmv.Registry.AddLabel),
// the counter's label, which mmv refuses on a vector of the registry.
//
// A family is its name and its type. Registered again with another type,
// it is another family: the series of the old one leave PCP at once (see
// below for a singular one), and the new one is published if its PCP
// name is free (a gauge x_total after a counter x_total, published as x)
// and skipped otherwise, PCP being unable to change a metric's type while
// the file lives. Registered again with other buckets or quantiles, a
// series' instances of the old bounds leave PCP at the refresh that
// gathers the new ones.
//
// # Drops
//
// Nothing gathered is left out silently. At every refresh, the samples
// (values of the exposition: a histogram's buckets, +Inf included, sum
// and count; a summary's quantiles, sum and count) the bridge does not
// copy are counted in mmv.<file>.<prefix>.prombridge.dropped by reason:
// name (the family's PCP name is another family's; a name gathered
// twice in one Gather with two types, or a series gathered twice in one
// Gather: the first is copied, the second counted), declaration (mmv
// refused the family's metrics), type (not bridged; or a metric without
// the value of its family's type, such as a gauge family's metric holding
// an untyped value or a histogram family's none: a Gatherer's own
// families, which client_golang's Registry checks and a GathererFunc does
// not; nothing of its series stays in PCP at that refresh), labels (a metric
// whose label names are not its family's), series (a series mmv
// refused: the family's Limit, the registry's caps; mmv counts the
// refusal once too, in mmv.<file>.mmv.dropped), value (a counter's
// value, a histogram's or summary's sum, no PCP counter holds) and stale
// (a sample whose own timestamp is older than Options.MaxSampleAge: its
// series is absent from the refresh, and leaves PCP at once, even after a
// Gather error, as below). Err names them, once per
// family and reason with the number of samples: at most 32 such pairs,
// then how many more pairs and samples.
//
// # Growth, caps and disappearing series
//
// Families and label sets that appear while running are declared at the
// refresh that first gathers them (mmv grows its file; PCP sees them
// after the registry's next publication). Each family holds at most
// Options.Limit series (mmv.DefaultVecLimit), and the registry's caps
// (mmv.Options.MaxIndomInstances) hold too: a series refused there is
// counted in Stats.DroppedSeries, leaves nothing of itself in PCP (no
// sum without its buckets), and is not retried while it is gathered. A
// series an error-free Gather lacks (CounterVec's DeleteLabelValues,
// Unregister, a collector no longer emitting it) is removed from PCP
// with mmv.Vec's Delete at that refresh: such a Gather is the whole
// truth. A Gather that reported an error (a collector that failed sends
// client_golang an invalid metric, and may have left its series out)
// removes nothing at once: a series absent from it stays, with its last
// value, until absent for Options.Grace (a minute), so that a collector
// failing for a few refreshes does not reset its counters; but a series
// gathered with a timestamp older than Options.MaxSampleAge leaves at
// once, no failure having hidden it. A series
// removed starts again from its gathered value if it comes back. A
// singular family (no labels) cannot
// be removed: on a registry with the mmv.Sentinel flag its values then
// show no value (a counter's all ones; a gauge's NaN, which PCP 6.0.3
// shows as nan), the staleness marker of PCP; without the flag they keep
// their last values, and Err says so at every refresh.
//
// # Close
//
// Bridge.Close takes the bridge out of a registry that lives on (a
// service that swaps its Gatherer, or stops bridging a subsystem), so
// that PCP shows none of its values as current: its vectors' instances,
// prombridge.dropped's included, are deleted, and its singular metrics
// show no value on a registry with the mmv.Sentinel flag; without the
// flag they keep their last values, which Close's error names. Close
// gathers nothing and waits for no Gather (a refresh running copies
// nothing once its Gather returns). Its refreshes stop, and it lets its
// Gatherer go; the registry's poll of it, which does nothing, goes on
// until the next Register of its prefix on the registry stops it, so
// that a registry keeps one closed bridge's poll a prefix at most. Nor can mmv
// undeclare a metric: the closed bridge's stay
// declared, and the next Register on the registry with the same prefix
// takes them over (a new bridge of that prefix was refused, its
// prombridge.dropped declared already): a family declared alike, the
// same family (Prometheus name and type) with the same label names and
// units, publishes through them again (a counter goes on from its
// gathered value); any other under a name they hold is refused for good, counted as
// declaration and named by Err (mmv.ErrDuplicate), but a counter whose
// name without _total is such a name keeps its _total.
// Their help texts stay the first bridge's. The singular metrics the new
// bridge does not gather keep their state, named by its Err at every
// refresh when they keep an old value.
//
// A program that ends closes its registry, which stops the bridge's
// refreshes: with the mmv.Process flag its file goes; without it the file
// keeps the values of the bridge's last refresh (call Refresh before the
// registry's Close for the latest), and a Bridge.Close after the
// registry's takes nothing out of it. A Bridge.Close before the
// registry's takes the bridge's series out of the file first.
//
// # Cost
//
// A refresh copies values into the file without allocating for the
// series it knows; Gather's own allocations dominate
// (BenchmarkRefresh).
package prombridge
