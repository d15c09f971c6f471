package prombridge

import (
	"math"

	dto "github.com/prometheus/client_model/go"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/errset"
)

// Samples the bridge does not copy are counted, at every refresh that
// gathers them, in the counter prombridge.dropped below Options.Prefix,
// by reason, and named by Err once per family and reason. A series a
// vector refuses (its limit, the registry's caps) is counted by the
// registry too, once, in mmv.dropped.

// reason is why the bridge did not copy a sample.
type reason int

const (
	dropName        reason = iota // the family's PCP name is another family's; a name or series gathered twice
	dropDeclaration               // mmv refused the family's metrics
	dropType                      // a type the bridge does not publish (gauge histogram), or a metric without its family's type's value
	dropLabels                    // a metric whose label names are not its family's
	dropSeries                    // a series mmv refused: the family's limit, the registry's caps
	dropValue                     // a total no PCP counter holds
	dropStale                     // a sample whose own timestamp is older than Options.MaxSampleAge
	numReasons
)

var reasonNames = [numReasons]string{"name", "declaration", "type", "labels", "series", "value", "stale"}

// droppedMetric is the name of the bridge's own counter, below the prefix.
const droppedMetric = "prombridge.dropped"

// drops counts the samples not copied, and names them for Err.
type drops struct {
	vec  *mmv.Vec[mmv.Counter] // prombridge.dropped
	pcp  [numReasons]*mmv.Counter
	errs errset.Set // of the refresh running
}

// declare declares the counter name on r, with an instance per reason so
// that PCP shows zeros, not nothing, until a drop. It returns the
// registry's refusal.
func (d *drops) declare(r *mmv.Registry, name string) error {
	v, err := mmv.DeclareVec[mmv.Counter](r, name, "Prometheus samples the bridge did not copy, by reason\n"+
		// The long help holds 255 bytes at most: mmv refuses more.
		"At every refresh. name: the PCP name taken, or gathered twice; declaration: refused by the registry; "+
		"type: not bridged, or a value not of it; labels: not the family's; series: refused by the registry; value: not a counter's; stale: too old.", mmv.Count, "reason")
	if err != nil {
		return err
	}
	d.adopt(v)
	return nil
}

// adopt counts into v, the counter declared by declare, a closed
// bridge's maybe (its instances deleted: they start again from zero).
func (d *drops) adopt(v *mmv.Vec[mmv.Counter]) {
	d.vec = v
	for i, n := range reasonNames {
		d.pcp[i] = v.With(n)
	}
	d.errs.Unit = "samples"
}

// drop counts n samples of family not copied for why, err saying why.
func (d *drops) drop(family string, why reason, n int, err error) {
	d.pcp[why].Add(uint64(n))
	d.errs.Add(family, reasonNames[why], n, err)
}

// done ends a refresh and returns its refusals, nil if none.
func (d *drops) done() error {
	err := d.errs.Err()
	d.errs.Reset()
	return err
}

// samples returns how many samples the exposition of mf has.
func samples(mf *dto.MetricFamily) int {
	n := 0
	for _, m := range mf.Metric {
		n += samplesOf(mf.GetType(), m)
	}
	return n
}

// samplesOf returns how many samples the exposition of m, of type t, has:
// a histogram's buckets (+Inf included), sum and count; a summary's
// quantiles, sum and count; one value otherwise.
func samplesOf(t dto.MetricType, m *dto.Metric) int {
	switch t {
	case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
		bs := m.GetHistogram().GetBucket()
		n := len(bs) + 2
		if len(bs) == 0 || !math.IsInf(bs[len(bs)-1].GetUpperBound(), 1) {
			n++
		}
		return n
	case dto.MetricType_SUMMARY:
		return len(m.GetSummary().GetQuantile()) + 2
	}
	return 1
}
