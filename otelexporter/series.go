package otelexporter

import "github.com/gopcp/mmv"

// series is one metric's instruments by label values: a vector, or a
// single instrument when the metric has no label.
type series[T any] struct {
	one *T
	vec *mmv.Vec[T]
}

// get returns the instrument of the label values, or why the vector
// refuses them.
func (s series[T]) get(values []string) (*T, error) {
	if s.vec == nil {
		return s.one, nil
	}
	return s.vec.Get(values...)
}

// newSeries declares the metric name on r with the label names labels
// (with one, a single instrument, when there is none; with vec, a vector
// holding at most limit instances, otherwise). It panics as mmv's New
// functions do.
func newSeries[T any](r *mmv.Registry, name, help string, u mmv.Units, labels []string, limit int,
	one func(*mmv.Registry, string, string, mmv.Units) *T,
	vec func(*mmv.Registry, string, string, mmv.Units, ...string) *mmv.Vec[T]) series[T] {
	if len(labels) == 0 {
		return series[T]{one: one(r, name, help, u)}
	}
	v := vec(r, name, help, u, labels...)
	v.SetLimit(limit)
	return series[T]{vec: v}
}

// remove deletes the instance of the label values, if any; a single
// instrument stays.
func (s series[T]) remove(values []string) {
	if s.vec != nil {
		s.vec.Delete(values...)
	}
}
