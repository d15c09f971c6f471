package reuse

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSlotFromAnyGoroutine: what one goroutine puts, another gets, whatever
// processor either runs on (a sync.Pool's Get on another processor than
// its Put's finds nothing); a Get empties the slot.
func TestSlotFromAnyGoroutine(t *testing.T) {
	var s Slot[*[]byte]
	for range 100 {
		b := new([]byte)
		s.Put(b)
		var got *[]byte
		var ok bool
		var wg sync.WaitGroup
		wg.Go(func() { got, ok = s.Get() })
		wg.Wait()
		require.True(t, ok)
		require.Same(t, b, got)
		_, ok = s.Get()
		require.False(t, ok, "a Get empties the slot")
	}
}

// TestSlotLetGoAtSecondCollection: an object put survives one collection
// and is let go at the second (age, as each collection's tick calls it); a
// Put starts the count again.
func TestSlotLetGoAtSecondCollection(t *testing.T) {
	var s Slot[int]
	s.Put(1)
	s.age()
	v, ok := s.Get()
	require.True(t, ok, "kept through one collection")
	assert.Equal(t, 1, v)
	s.Put(2)
	s.age()
	s.Put(3)
	s.age()
	v, ok = s.Get()
	require.True(t, ok, "a Put starts the count again")
	assert.Equal(t, 3, v)
	s.Put(4)
	s.age()
	s.age()
	_, ok = s.Get()
	require.False(t, ok, "let go at the second collection")
}

// TestCollectionsTick: collections age the slots used, one tick each, for
// as long as the process runs: a slot put and left is let go after two.
func TestCollectionsTick(t *testing.T) {
	var s Slot[int]
	s.Put(1)
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return ticks
	}
	for n := range 3 {
		before := count()
		runtime.GC()
		require.Eventually(t, func() bool { return count() > before }, 5*time.Second, time.Millisecond, "collection %d", n)
	}
	_, ok := s.Get()
	require.False(t, ok, "let go after collections")
}
