package prombridge

import (
	"slices"
	"time"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/canon"
)

// series is one label set of a family: its instruments, found again at
// each refresh without allocating.
type series struct {
	values  []string  // label values, in the family's label order
	seen    time.Time // the last refresh that gathered it; zero: gathered too old (Options.MaxSampleAge)
	refused error     // why mmv refused an instrument: not retried while present
	shown   bool      // its values are in PCP, counted in Stats.Series

	counter   *mmv.Counter // a counter's value, or a histogram's or summary's sum
	gauge     *mmv.Gauge
	count     *mmv.Counter
	bounds    []float64      // buckets' upper bounds or quantiles, as bound
	buckets   []*mmv.Counter // by bound
	quantiles []*mmv.Gauge   // by bound

	next *series // another with the same hash
}

// seriesTable finds a family's series by label values.
type seriesTable map[uint64]*series

// find returns the series of values, nil when there is none.
func (t seriesTable) find(values []string) *series {
	for s := t[canon.Hash(values)]; s != nil; s = s.next {
		if slices.Equal(s.values, values) {
			return s
		}
	}
	return nil
}

// add adds the series of values, which it copies.
func (t seriesTable) add(values []string) *series {
	s := &series{values: slices.Clone(values)}
	h := canon.Hash(s.values)
	s.next = t[h]
	t[h] = s
	return s
}

// drop removes the series for which gone is true, and returns them.
func (t seriesTable) drop(gone func(*series) bool) []*series {
	var dropped []*series
	for h, s := range t {
		var kept *series
		for s != nil {
			next := s.next
			if gone(s) {
				dropped = append(dropped, s)
			} else {
				s.next = kept
				kept = s
			}
			s = next
		}
		if kept == nil {
			delete(t, h)
		} else {
			t[h] = kept
		}
	}
	return dropped
}
