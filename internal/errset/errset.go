// Package errset gathers the refusals of one pass of a bridge (a refresh
// of prombridge, an export of otelexporter) once per distinct subject and
// reason, so that the error the bridge's Err returns names every refusal
// it counted and stays bounded however many series or points share one.
package errset

import (
	"errors"
	"fmt"
)

// Set is the refusals of one pass. The zero value names DefaultMax
// pairs of subject and reason; Unit says what their counts count.
type Set struct {
	// Max is how many distinct pairs of subject and reason Err names;
	// the others are counted. Zero means DefaultMax.
	Max int
	// Unit is what a count counts, such as "points" or "series".
	Unit string

	keys  map[key]int // index in errs; -1 for a pair counted in more
	errs  []entry
	more  int // pairs past Max
	moreN int // and what they counted
}

// DefaultMax is how many pairs of subject and reason a Set names unless
// told otherwise.
const DefaultMax = 32

type key struct{ subject, reason string }

type entry struct {
	err error // the first error of the pair
	n   int
}

// Add records that n things were refused for reason, err saying why:
// the first error of each subject and reason is kept, the next ones only
// counted.
func (s *Set) Add(subject, reason string, n int, err error) {
	k := key{subject, reason}
	if s.keys == nil {
		s.keys = map[key]int{}
	}
	i, ok := s.keys[k]
	switch {
	case ok && i >= 0:
		s.errs[i].n += n
	case ok:
		s.moreN += n
	case len(s.errs) < s.max():
		s.keys[k] = len(s.errs)
		s.errs = append(s.errs, entry{err, n})
	default:
		s.keys[k] = -1
		s.more++
		s.moreN += n
	}
}

func (s *Set) max() int {
	if s.Max > 0 {
		return s.Max
	}
	return DefaultMax
}

// Len returns how many distinct pairs of subject and reason were added.
func (s *Set) Len() int { return len(s.keys) }

// Err returns the errors added, one per pair of subject and reason, each
// followed by its count when it is more than one, then how many more
// pairs there were; nil when nothing was added.
func (s *Set) Err() error {
	if len(s.errs) == 0 {
		return nil
	}
	errs := make([]error, 0, len(s.errs)+1)
	for _, e := range s.errs {
		if e.n > 1 {
			errs = append(errs, fmt.Errorf("%w (%d %s)", e.err, e.n, s.Unit))
		} else {
			errs = append(errs, e.err)
		}
	}
	if s.more > 0 {
		errs = append(errs, fmt.Errorf("and %d more refusals of other subjects or reasons (%d %s)", s.more, s.moreN, s.Unit))
	}
	return errors.Join(errs...)
}

// Reset empties the set for the next pass.
func (s *Set) Reset() {
	clear(s.keys)
	clear(s.errs)
	s.errs = s.errs[:0]
	s.more, s.moreN = 0, 0
}
