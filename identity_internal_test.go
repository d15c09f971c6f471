package mmv

import (
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv/internal/pcptest"
)

// pcpIDs returns the instance ids PCP's reader shows for a metric of the
// files in tmp/mmv, by instance name.
func pcpIDs(t *testing.T, tmp, metric string) map[string]int {
	t.Helper()
	ids := map[string]int{}
	if m := pcptest.Find(pcptest.Info(t, tmp), metric); m != nil {
		for _, in := range m.Instances {
			ids[in.Name] = in.ID
		}
	}
	return ids
}

// TestVecIDCollision: two values whose names derive the same id: the one
// used first keeps it, the other takes the next, so a restart where they
// come in the other order swaps them; a value alone on its hash has its
// derived id whatever else is there.
func TestVecIDCollision(t *testing.T) {
	pcptest.MustHavePCP(t)
	a, b := vecIDColliders()
	home := int(fnv32("k="+a) % (1 << 30))
	run := func(values ...string) map[string]int {
		tmp := t.TempDir()
		r := NewRegistry("vec", &Options{Dir: filepath.Join(tmp, "mmv"), Cluster: 311})
		defer r.Close()
		v := NewCounterVec(r, "hits", "", Count, "k")
		startOrSkip(t, r)
		for _, x := range values {
			v.With(x).Inc()
		}
		require.NoError(t, r.Flush())
		return pcpIDs(t, tmp, "mmv.vec.hits")
	}
	assert.Equal(t, map[string]int{"k=" + a: home, "k=" + b: home + 1, "k=alone": int(fnv32("k=alone") % (1 << 30))}, run(a, "alone", b))
	assert.Equal(t, map[string]int{"k=" + b: home, "k=" + a: home + 1}, run(b, a), "in the other order they swap")
	assert.Equal(t, map[string]int{"k=" + b: home}, run(b), "alone")
}

// TestVecIDNeverReused: a vector that forgets a deleted value keeps its
// id from every other value, a colliding one included, and gives it back
// to the value when it comes again; once it has forgotten more values than
// its limit, and 64, it drops those ids and counts new values' ids in the
// upper half, and no id ever names two values (PCP's reader shows them,
// publication after publication).
func TestVecIDNeverReused(t *testing.T) {
	pcptest.MustHavePCP(t)
	tmp := t.TempDir()
	r := NewRegistry("vec", &Options{Dir: filepath.Join(tmp, "mmv"), Cluster: 312, PublishDelay: time.Hour})
	t.Cleanup(func() { r.Close() })
	v := NewCounterVec(r, "hits", "", Count, "k")
	v.SetLimit(200)
	startOrSkip(t, r)
	named := map[int]string{} // every id PCP showed, and its name
	idOf := func(value string) int {
		t.Helper()
		require.NoError(t, r.Flush())
		ids := pcpIDs(t, tmp, "mmv.vec.hits")
		for name, id := range ids {
			if o, ok := named[id]; ok {
				require.Equal(t, o, name, "id %d", id)
			}
			named[id] = name
		}
		id, ok := ids["k="+value]
		require.True(t, ok, "k=%s not shown", value)
		return id
	}
	churn := func(from, n int) {
		for i := from; i < from+n; i++ {
			v.With("x" + strconv.Itoa(i)).Inc()
			require.True(t, v.Delete("x"+strconv.Itoa(i)))
			if i%20 == 0 {
				require.NoError(t, r.Flush())
			}
		}
	}
	a, b := vecIDColliders()
	v.With(a).Inc()
	idA := idOf(a)
	assert.EqualValues(t, fnv32("k="+a)%(1<<30), idA)
	require.True(t, v.Delete(a))
	churn(0, 150) // the vector forgets the deleted values, a too
	r.mu.Lock()
	_, remembered := v.kind.idOfLocked("k=" + a)
	assert.False(t, remembered, "a is forgotten")
	assert.Equal(t, "k="+a, v.forgotten[int32(idA)], "a's id is kept")
	r.mu.Unlock()
	v.With(b).Inc()
	assert.Equal(t, idA+1, idOf(b), "b does not take a's id")
	v.With(a).Inc()
	assert.Equal(t, idA, idOf(a), "a comes back with its id")

	// Past its limit of forgotten values, the vector counts new ones.
	require.True(t, v.Delete(a))
	churn(150, 500)
	r.mu.Lock()
	assert.True(t, v.counting)
	assert.Empty(t, v.forgotten, "no ids of forgotten values kept")
	r.mu.Unlock()
	v.With("late").Inc()
	late := idOf("late")
	assert.GreaterOrEqual(t, late, 1<<30, "counted")
	v.With(a).Inc()
	assert.Equal(t, late+1, idOf(a), "a, forgotten, is new")
	assert.Equal(t, idA+1, idOf(b), "b, never deleted, keeps its id")
}

// autoSerial's order: the serial derived from the key, else the next free
// one up the upper half, wrapping, else the highest free one below it,
// else none. A refused declaration frees the serial it took.
func TestAutoSerialOrder(t *testing.T) {
	var taken serialSet
	home := firstDerivedSerial + fnv32("k")%derivedSerials
	require.Equal(t, home, autoSerial("k", &taken))
	taken.add(home)
	require.Equal(t, home+1, autoSerial("k", &taken), "the next one up")
	for s := home; s <= MaxSerial; s++ {
		taken.add(s)
	}
	require.Equal(t, uint32(firstDerivedSerial), autoSerial("k", &taken), "wrapped to the half's first")
	for s := uint32(firstDerivedSerial); s < home; s++ {
		taken.add(s)
	}
	require.Equal(t, uint32(firstDerivedSerial-1), autoSerial("k", &taken), "the upper half full: the highest below")
	taken.add(firstDerivedSerial - 1)
	require.Equal(t, uint32(firstDerivedSerial-2), autoSerial("k", &taken))
	for s := uint32(1); s < firstDerivedSerial; s++ {
		taken.add(s)
	}
	require.Zero(t, autoSerial("k", &taken), "none left")
	taken.remove(7)
	require.Equal(t, uint32(7), autoSerial("k", &taken))

	r := newTestRegistry(t, "serials")
	NewCounterVec(r, "a", "", Count, "x")
	_, err := DeclareVec[Counter](r, "a", "", Count, "x") // refused: its indom undone
	require.ErrorIs(t, err, ErrDuplicate)
	require.Len(t, r.serials, 1)
	for s := range uint32(MaxSerial + 1) {
		assert.Equal(t, r.serials[s] != nil, r.taken.has(s), "serial %d", s)
	}
}
