// Package promcheck holds the tests that prove package expose's output
// with Prometheus's own parsers (prometheus/common's expfmt for the text
// format, prometheus/prometheus's textparse for OpenMetrics) and against
// what PCP's reader shows of the same registry. A module of its own, so
// that the mmv module depends on neither.
package promcheck
