package mmv

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestInstanceIndex: an indom whose ids are their indexes keeps no id
// index; the first other id makes one, and lookups and duplicates work the same
// before and after, and after a truncation.
func TestInstanceIndex(t *testing.T) {
	r := newTestRegistry(t, "ids")
	require.NoError(t, r.AddIndom(Indom{Serial: 1, Instances: []Instance{{ID: 0, Name: "a"}, {ID: 1, Name: "b"}}}))
	in := r.serials[1]
	assert.False(t, in.sparse, "ids numbered from 0 in order need no index")
	assert.Zero(t, in.ids.n)
	check := func(id int32, want int, ok bool) {
		t.Helper()
		i, found := in.index(id)
		assert.Equal(t, ok, found, "id %d found", id)
		if ok {
			assert.Equal(t, want, i, "index of id %d", id)
		}
	}
	check(1, 1, true)
	check(2, 0, false)
	check(-1, 0, false)
	require.ErrorIs(t, r.AddInstance(1, Instance{ID: 1, Name: "c"}), ErrDuplicate)
	require.NoError(t, r.AddInstance(1, Instance{ID: 2, Name: "c"}))
	assert.False(t, in.sparse)

	require.NoError(t, r.AddInstance(1, Instance{ID: 7, Name: "d"}))
	require.True(t, in.sparse, "an id that is not its index")
	require.Equal(t, 4, in.ids.n)
	check(0, 0, true)
	check(2, 2, true)
	check(7, 3, true)
	check(3, 0, false)
	require.ErrorIs(t, r.AddInstance(1, Instance{ID: 2, Name: "e"}), ErrDuplicate)
	r.mu.Lock()
	err := r.addInstancesLocked(r.serials[1], []Instance{{ID: 8, Name: "e"}, {ID: 8, Name: "f"}}, undoDeclared, (*indom).add)
	r.mu.Unlock()
	require.ErrorIs(t, err, ErrDuplicate)
	check(8, 0, false) // the refused instances are truncated away
}
