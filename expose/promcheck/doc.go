// Package promcheck holds the tests that prove package expose's output
// with Prometheus's own parsers (for the text format prometheus/common's
// expfmt and prometheus/prometheus's textparse, which Prometheus's scrapes
// read it with; textparse for OpenMetrics) and against
// what PCP's reader shows of the same registry. A module of its own, so
// that the mmv module depends on neither.
package promcheck
