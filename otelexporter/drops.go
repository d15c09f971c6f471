package otelexporter

import (
	"sync/atomic"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/errset"
)

// Data points the exporter drops are counted, at every export that drops
// them, in the counter otelexporter.dropped of the registry, by reason.
// Points a vector refuses (its limit, the registry's caps) are counted by
// the registry itself, in mmv.dropped, and not again here. Both are named
// by Err: the refusals of the last export, once per instrument and reason.

// reason is why the exporter dropped a data point.
type reason int

const (
	dropAggregation reason = iota // an exponential histogram or a summary
	dropTemporality               // delta data
	dropDeclaration               // an instrument the registry refused
	dropConflict                  // an instrument whose PCP name another instrument has
	dropAttributes                // an attribute key the instrument's metric has no label for, or sets making one instance
	dropValue                     // a value a counter cannot hold, a malformed histogram point
	numReasons
)

var reasonNames = [numReasons]string{"aggregation", "temporality", "declaration", "conflict", "attributes", "value"}

// droppedMetric is the name of the exporter's own counter.
const droppedMetric = "otelexporter.dropped"

// drops counts dropped data points, and names them for Err.
type drops struct {
	pcp  [numReasons]*mmv.Counter
	errs errset.Set // of the export running
	last atomic.Pointer[error]
}

// declare declares the counter on r, with an instance per reason so that
// PCP shows zeros, not nothing, until a drop.
func (d *drops) declare(r *mmv.Registry) {
	v := mmv.NewCounterVec(r, droppedMetric, "OpenTelemetry data points the exporter dropped, by reason\n"+
		"At every export. aggregation: exponential histogram or summary; temporality: delta; "+
		"declaration: registry refused it; conflict: another instrument's PCP name; "+
		"attributes: key not in first export, or sets alike; value: not a counter's, or bad histogram.", mmv.Count, "reason")
	for i, name := range reasonNames {
		d.pcp[i] = v.With(name)
	}
	d.errs.Unit = "points"
}

// drop counts n points of subject (an instrument, for errors) dropped for
// why, err saying why.
func (d *drops) drop(why reason, n int, subject string, err error) {
	d.pcp[why].Add(uint64(n))
	d.errs.Add(subject, reasonNames[why], n, err)
}

// refused names a point of subject the registry refused (and counted).
func (d *drops) refused(subject string, err error) { d.errs.Add(subject, "registry", 1, err) }

// done ends an export: Err returns its refusals from now on.
func (d *drops) done() {
	err := d.errs.Err()
	if err == nil {
		d.last.Store(nil) // nothing allocated in the steady state
		return
	}
	p := new(error)
	*p = err
	d.last.Store(p)
	d.errs.Reset()
}

// err returns the refusals of the last export, nil if none.
func (d *drops) err() error {
	if e := d.last.Load(); e != nil {
		return *e
	}
	return nil
}
