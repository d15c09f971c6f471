package prombridge

import "github.com/gopcp/mmv"

// instruments are one metric of a family: a singular instrument for a
// family without labels, a vector by label values for the others.
type instruments[T any] struct {
	one *T
	vec *mmv.Vec[T]
}

// newInstruments declares the metric name on d: a singular instrument, or
// a vector holding at most limit instances when the family has labels. It
// returns the registry's refusal, which declares nothing.
func newInstruments[T mmv.CellKind](d mmv.Declarer, name, help string, units mmv.Units, labels []string, limit int) (instruments[T], error) {
	if len(labels) == 0 {
		one, err := mmv.Declare[T](d, name, help, units)
		return instruments[T]{one: one}, err
	}
	v, err := mmv.DeclareVec[T](d, name, help, units, labels...)
	if err != nil {
		return instruments[T]{}, err
	}
	v.SetLimit(limit)
	return instruments[T]{vec: v}, nil
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
