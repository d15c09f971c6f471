package otelexporter

import (
	"sync/atomic"

	"github.com/gopcp/mmv"
)

// Data points the exporter drops are counted, at every export that drops
// them, in the counter otelexporter.dropped of the registry, by reason.
// Points a vector refuses (its limit, the registry's caps) are counted by
// the registry itself, in mmv.dropped, and not again here.

// reason is why the exporter dropped a data point.
type reason int

const (
	dropAggregation reason = iota // an exponential histogram or a summary
	dropTemporality               // delta data
	dropDeclaration               // an instrument the registry refused
	dropAttributes                // an attribute key the instrument's metric has no label for
	dropValue                     // a value a counter cannot hold
	numReasons
)

var reasonNames = [numReasons]string{"aggregation", "temporality", "declaration", "attributes", "value"}

// droppedMetric is the name of the exporter's own counter.
const droppedMetric = "otelexporter.dropped"

// drops counts dropped data points, and keeps the last error.
type drops struct {
	pcp  [numReasons]*mmv.Counter
	last atomic.Pointer[error]
}

// declare declares the counter on r, with an instance per reason so that
// PCP shows zeros, not nothing, until a drop.
func (d *drops) declare(r *mmv.Registry) {
	v := mmv.NewCounterVec(r, droppedMetric, "OpenTelemetry data points the exporter dropped, by reason\n"+
		"At every export. aggregation: exponential histogram or summary; temporality: delta; "+
		"declaration: instrument the registry refused; attributes: key not in the instrument's first export; "+
		"value: not a counter's.", mmv.Count, "reason")
	for i, name := range reasonNames {
		d.pcp[i] = v.With(name)
	}
}

// drop counts n points dropped for why, and keeps err as the last error.
func (d *drops) drop(why reason, n int, err error) {
	d.pcp[why].Add(uint64(n))
	d.keep(err)
}

// keep keeps err as the last error.
func (d *drops) keep(err error) { d.last.Store(&err) }

// err returns the last error, nil if none.
func (d *drops) err() error {
	if e := d.last.Load(); e != nil {
		return *e
	}
	return nil
}
