package mmv

// What Gather hands its visitor (gather.go): one Family per metric.

import "github.com/gopcp/mmv/internal/canon"

// Family is one metric as Gather reads it.
type Family struct {
	// Metric is the declaration, as PCP's reader exports it (an Elapsed
	// metric is a counter in microseconds whatever its declaration said);
	// a histogram's is its name, units and help, with Type Double and
	// Semantics SemCounter.
	Metric
	// Labels are the PCP labels of every value of the metric: its
	// indom's, the registry's and the metric's, in that order, PCP's order
	// of precedence (a label of a name met again later is replaced); a
	// histogram's are those of its .bucket, .count and .sum metrics and
	// their indoms together, in the same order.
	Labels []Label
	// LabelNames are a vector's label names, which each Sample's Values
	// are the values of; nil for other metrics.
	LabelNames []string
	// Bounds are a histogram's buckets' upper bounds, +Inf last; nil for
	// other metrics.
	Bounds []float64
	// Samples are the values, one per instance (one for a singular
	// metric), in the order of the instances.
	Samples []Sample

	values []string // backing of the Samples' Values
}

// Sample is one value of a Family.
type Sample struct {
	// Instance is the instance's name, "" for a singular metric.
	Instance string
	// Values are a vector's label values, as Family.LabelNames.
	Values []string
	// Labels are the instance's own PCP labels (Registry.AddInstanceLabel),
	// a vector's excluded: its Values say them.
	Labels []Label
	// Value reads the value (Int, Float, String): the handle the updates
	// use, for reading only; nil for a histogram.
	Value *Value
	// Buckets, Count and Sum are a histogram's: the count of each bucket
	// (per bucket, not cumulative), of all, and the observations' sum.
	Buckets []uint64
	Count   uint64
	Sum     float64
}

func (f *Family) reset(m Metric) {
	f.Metric, f.LabelNames, f.Bounds = m, nil, nil
	f.Labels, f.Samples, f.values = f.Labels[:0], f.Samples[:0], f.values[:0]
}

// sample appends a sample for instance name, with its vector values when
// the family is a vector's.
func (f *Family) sample(name string) *Sample {
	f.Samples = append(f.Samples, Sample{Instance: name})
	s := &f.Samples[len(f.Samples)-1]
	if f.LabelNames != nil {
		n := len(f.values)
		var ok bool
		if f.values, ok = canon.Values(f.values, name, f.LabelNames); ok {
			s.Values = f.values[n:len(f.values):len(f.values)]
		} else {
			f.values = f.values[:n]
		}
	}
	return s
}
