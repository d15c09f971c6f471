package prombridge

import "github.com/gopcp/mmv"

// instruments are one metric of a family: a singular instrument for a
// family without labels, a vector by label values for the others.
type instruments[T any] struct {
	one *T
	vec *mmv.Vec[T]
}

// newInstruments declares the metric name with one or vec, by whether the
// family has labels; the vector holds at most limit instances.
func newInstruments[T any](one func(*mmv.Registry, string, string, mmv.Units) *T,
	vec func(*mmv.Registry, string, string, mmv.Units, ...string) *mmv.Vec[T],
	r *mmv.Registry, name, help string, units mmv.Units, labels []string, limit int) instruments[T] {
	if len(labels) == 0 {
		return instruments[T]{one: one(r, name, help, units)}
	}
	v := vec(r, name, help, units, labels...)
	v.SetLimit(limit)
	return instruments[T]{vec: v}
}

// get returns the instrument of the label values.
func (in instruments[T]) get(values []string) (*T, error) {
	if in.vec == nil {
		return in.one, nil
	}
	return in.vec.Get(values...)
}

// remove takes the instance of the label values out of PCP; a singular
// instrument stays. It reports whether an instance was removed.
func (in instruments[T]) remove(values []string) bool {
	return in.vec != nil && in.vec.Delete(values...)
}
