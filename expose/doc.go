// Package expose serves an mmv registry to Prometheus: an http.Handler
// that writes the registry's metrics in the Prometheus text format
// (version 0.0.4) or in OpenMetrics (1.0.0), as the scraper's Accept
// header asks, so that one instrumentation serves PCP and a Prometheus
// scrape, on hosts with PCP or without, with no client_golang in the
// program:
//
//	http.Handle("/metrics", expose.Handler(mmv.Default))
//
// The handler reads the registry with [mmv.Registry.Gather]: a registry
// that is never started serves its instruments from their own memory, a
// started one what PCP's reader reads in its file (an instrument's memory
// while its value waits for room there), a closed one nothing.
// Updates pay nothing for it; a scrape holds the registry's lock while it
// formats (declarations and a vector's new label values wait for it), then
// writes the response, gzipped when the scraper accepts gzip.
//
// # Names, units and types
//
// A metric's name is its PCP name below mmv.<file>, with '.' turned into
// '_' (requests.bytes is requests_bytes). Times and sizes are in
// Prometheus's base units: a metric whose units are a time (Nanosecond to
// Hour) has its values in seconds and "_seconds" after its name, one in
// bytes (Byte to Ybyte) in bytes with "_bytes", unless the name ends so
// already; OpenMetrics gets a "# UNIT" line for them. Other units (counts,
// rates) leave name and values as they are.
//
// Counter semantics make a counter, whose sample is named with "_total"
// (a name ending in "_total" keeps one), in both formats; instant and
// discrete semantics make a gauge. A histogram ([mmv.Histogram],
// [mmv.NewHistogramVec]) is a Prometheus histogram: "_bucket" series
// cumulative over the bounds, with le and +Inf last, then "_sum" and
// "_count" (in PCP its .bucket metric counts per bucket); its window
// statistics (min, max, mean and quantiles) are gauges of their own, once
// started. String metrics are left out, and so is a metric whose name,
// once made, is one an earlier metric's family took (a.b_c after a_b.c).
//
// # Labels
//
// A vector's label names and values are the series' labels. PCP labels
// are labels too, in PCP's order of precedence: the indom's, the
// registry's ([mmv.Registry.AddLabel]), the metric's, then the
// instance's; a later label replaces an earlier one of the same name, as
// PCP shows it, and a vector's labels replace them all. A histogram's
// series carry the labels of its .bucket, .count and .sum metrics
// together, a histogram vector's indom's (Vec.Indom) included; a label
// of theirs named le, the buckets' label, is exported_le, as Prometheus
// renames a clash (exported_exported_le when that name is taken too); a
// histogram vector's own label names never are le (mmv.NewHistogramVec
// refuses it). A label le of any other family is exported_le too: le is
// a histogram's cumulative bound, which histogram_quantile reads, and a
// counter vector labelled le (goruntime's NAME.bucket, a bridge's) counts
// per bucket.
// PCP label values that are not JSON strings are written as their JSON
// text (a named string type or a time.Time, which are, as the string).
// An instance of an indom that is not a vector's has its name in label
// "instname" (as pmproxy's /metrics names it); a PCP label of that name
// on its metric is exported_instname, as le is on a histogram.
package expose
