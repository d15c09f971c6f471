package errset

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSet: each pair of subject and reason is named once with its count;
// past Max the pairs are counted, and Err says how many; Reset empties.
func TestSet(t *testing.T) {
	s := Set{Max: 2, Unit: "series"}
	require.NoError(t, s.Err())
	sentinel := errors.New("limit")
	s.Add("a", "limit", 1, fmt.Errorf("a: %w", sentinel))
	s.Add("a", "limit", 2, errors.New("a again"))
	s.Add("a", "name", 1, errors.New("a: name"))
	s.Add("b", "limit", 4, errors.New("b"))
	s.Add("c", "limit", 1, errors.New("c"))
	s.Add("b", "limit", 1, errors.New("b again"))
	err := s.Err()
	assert.ErrorIs(t, err, sentinel)
	assert.Equal(t, "a: limit (3 series)\na: name\nand 2 more refusals of other subjects or reasons (6 series)", err.Error())
	assert.Equal(t, 4, s.Len())
	s.Reset()
	assert.NoError(t, s.Err())
	assert.Equal(t, 0, s.Len())
	s.Add("d", "x", 1, errors.New("d"))
	assert.EqualError(t, s.Err(), "d")
}
