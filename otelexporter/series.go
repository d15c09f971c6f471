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

// newSeries declares the metric name on d with the label names labels: a
// single instrument when there is none, else a vector holding at most
// limit instances. It returns the registry's refusal, which declares
// nothing.
func newSeries[T mmv.CellKind](d mmv.Declarer, name, help string, u mmv.Units, labels []string, limit int) (series[T], error) {
	if len(labels) == 0 {
		one, err := mmv.Declare[T](d, name, help, u)
		return series[T]{one: one}, err
	}
	v, err := mmv.DeclareVec[T](d, name, help, u, labels...)
	if err != nil {
		return series[T]{}, err
	}
	v.SetLimit(limit)
	return series[T]{vec: v}, nil
}

// remove deletes the instance of the label values, if any; a single
// instrument stays.
func (s series[T]) remove(values []string) {
	if s.vec != nil {
		s.vec.Delete(values...)
	}
}
