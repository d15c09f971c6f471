package otelexporter

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/errset"
)

// Data points the exporter drops are counted, at every export that drops
// them, in the counter otelexporter.dropped of the registry, by reason.
// Points a vector refuses (its limit, the registry's caps) are counted by
// the registry itself, in mmv.dropped, and not again here. Both are named
// by Err: the refusals of the last collection (every export of it, when
// the SDK splits it, sdkmetric.WithMaxExportBatchSize), once per
// instrument and reason.

// reason is why the exporter dropped a data point.
type reason int

const (
	dropAggregation reason = iota // an exponential histogram or a summary
	dropTemporality               // delta data
	dropDeclaration               // an instrument the registry refused
	dropConflict                  // an instrument whose PCP name another instrument has
	dropAttributes                // a gauge's attribute key the instrument's metric has no label for, or sets making one instance
	dropValue                     // a value a counter cannot hold, a malformed histogram point
	numReasons
)

var reasonNames = [numReasons]string{"aggregation", "temporality", "declaration", "conflict", "attributes", "value"}

// droppedMetric is the name of the exporter's own counter.
const droppedMetric = "otelexporter.dropped"

// drops counts dropped data points, and names them for Err.
type drops struct {
	pcp [numReasons]*mmv.Counter
	// errs are the refusals of the collection running, but for those of
	// the export running, in export until it ends: only then is it known
	// whether the export began a collection or continued one.
	errs   errset.Set
	export []refusal
	// notes say what the collection so far leaves in PCP as it was
	// (a singular metric absent from it keeps its last value): made
	// again at every export, as a later export of the collection may
	// bring what an earlier one lacked.
	notes errset.Set
	last  atomic.Pointer[error]
}

// refusal is one errset.Set.Add of an export.
type refusal struct {
	subject, reason string
	n               int
	err             error
}

// declare declares the counter on r, with an instance per reason so that
// PCP shows zeros, not nothing, until a drop, and returns r's refusal,
// which declares nothing: a cluster given PCP takes for a file without
// instance domains alone had mmv refuse the vector, and the first
// Export panicked (TestClusterWithoutIndomsFailsExport).
func (d *drops) declare(r *mmv.Registry) error {
	d.errs.Unit = "points"
	v, err := mmv.DeclareVec[mmv.Counter](r, droppedMetric, "OpenTelemetry data points the exporter dropped, by reason\n"+
		"At every export. aggregation: exponential histogram or summary; temporality: delta; "+
		"declaration: registry refused it; conflict: PCP name taken by another; "+
		"attributes: gauge key not in first export, or sets alike; value: not a counter's, or bad histogram.", mmv.Count, "reason")
	if err != nil {
		return fmt.Errorf("otelexporter: the registry %q refused the exporter's counter %s: %w", r.Name(), droppedMetric, err)
	}
	for i, name := range reasonNames {
		// nil past the registry's caps (counted in mmv.dropped), which
		// counts nothing: the exporter goes on.
		d.pcp[i] = v.With(name)
	}
	return nil
}

// drop counts n points of subject (an instrument, for errors) dropped for
// why, err saying why.
func (d *drops) drop(why reason, n int, subject string, err error) {
	d.pcp[why].Add(uint64(n))
	d.add(subject, reasonNames[why], n, err)
}

// refused names a point of subject the registry refused (and counted).
func (d *drops) refused(subject string, err error) { d.add(subject, "registry", 1, err) }

// add names n things of subject refused for reason, err saying why, in
// the export running: counted in the refusal before when it is of the
// same subject and reason (the points of an instrument come together),
// so that the export's list stays short.
func (d *drops) add(subject, reason string, n int, err error) {
	if k := len(d.export) - 1; k >= 0 && d.export[k].subject == subject && d.export[k].reason == reason {
		d.export[k].n += n
		return
	}
	d.export = append(d.export, refusal{subject, reason, n, err})
}

// note says of subject, for reason, what the collection so far leaves in
// PCP as it was.
func (d *drops) note(subject, reason string, err error) { d.notes.Add(subject, reason, 0, err) }

// done ends an export, which began a collection (or stands alone, as a
// registry that could not start) when fresh: Err returns the refusals of
// the collection so far from now on, after note (nil for none), then the
// notes of the export.
func (d *drops) done(fresh bool, note error) {
	if fresh {
		d.errs.Reset()
	}
	for _, r := range d.export {
		d.errs.Add(r.subject, r.reason, r.n, r.err)
	}
	clear(d.export)
	d.export = d.export[:0]
	err := d.errs.Err()
	if notes := d.notes.Err(); notes != nil || note != nil {
		err = errors.Join(note, err, notes)
		d.notes.Reset()
	}
	if err == nil {
		d.last.Store(nil) // nothing allocated in the steady state
		return
	}
	p := new(error)
	*p = err
	d.last.Store(p)
}

// err returns the refusals of the last collection, nil if none.
func (d *drops) err() error {
	if e := d.last.Load(); e != nil {
		return *e
	}
	return nil
}
