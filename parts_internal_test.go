package mmv

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMakeSlotsAsSlotMetric: Start's slots (makeSlots, one loop over the
// values) are those slotMetric gives metric by metric, slot by slot, as a
// metric declared after Start gets them: the same owners in the same order,
// the same slot for every value, none for a removed instance's, over
// singular metrics, indoms with removed instances and a String metric.
func TestMakeSlotsAsSlotMetric(t *testing.T) {
	r := newTestRegistry(t, "slots")
	for serial, n := range map[uint32]int{1: 7, 2: 1, 3: 40} {
		insts := make([]Instance, n)
		for j := range insts {
			insts[j] = Instance{ID: int32(j), Name: "i" + strconv.Itoa(j)}
		}
		require.NoError(t, r.AddIndom(Indom{Serial: serial, Instances: insts}))
	}
	for i, m := range []Metric{
		{Type: Uint64, Semantics: SemCounter, Indom: 1},
		{Type: Double, Semantics: SemInstant},
		{Type: String, Semantics: SemDiscrete, Indom: 3},
		{Type: Int32, Semantics: SemInstant, Indom: 2},
		{Type: Uint64, Semantics: SemCounter, Indom: 3},
		{Type: Uint64, Semantics: SemCounter, Indom: 1},
	} {
		m.Name = "m" + strconv.Itoa(i)
		require.NoError(t, r.AddMetric(m))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for serial, removed := range map[uint32][]int{1: {0, 3, 6}, 3: {5, 39}} {
		for _, j := range removed {
			r.removeInstanceLocked(r.serials[serial], j)
		}
	}
	p := r.parts[0]
	for _, m := range p.metrics {
		p.slotMetric(m, make([]int32, m.valueCount()))
	}
	wantOwners := p.slots.appendTo(nil)
	wantSlots := map[string][]int32{}
	for _, m := range p.metrics {
		wantSlots[m.Name] = m.slots.appendTo(nil)
	}
	p.clearSlots()
	p.makeSlots()
	require.Equal(t, wantOwners, p.slots.appendTo(nil))
	for _, m := range p.metrics {
		require.Equal(t, wantSlots[m.Name], m.slots.appendTo(nil), "metric %s", m.Name)
		require.Zero(t, m.values.len(), "metric %s: handles are made at their first use", m.Name)
	}
	require.Contains(t, wantSlots["m0"], int32(-1), "a removed instance has no slot")
}

// TestItemSetAsBools: a part's set of items taken (itemSet, a bit each)
// answers as the array of bools it replaced, over every item from 0 to
// MaxItem through random additions and removals, and takeItem gives from
// it the items it gave from the bools, collisions probing past the
// taken ones and wrapping from MaxItem to 1.
func TestItemSetAsBools(t *testing.T) {
	var set itemSet
	var bools [MaxItem + 1]bool
	rng := rand.New(rand.NewPCG(26, 2))
	for i := range 20000 {
		it := rng.Uint32N(MaxItem + 1)
		if i%3 == 0 {
			set.remove(it)
			bools[it] = false
		} else {
			set.add(it)
			bools[it] = true
		}
		for it := range uint32(MaxItem + 1) {
			if set.has(it) != bools[it] {
				require.Failf(t, "item set differs", "after %d changes, item %d: set has %v, bools %v", i+1, it, set.has(it), bools[it])
			}
		}
	}

	set, bools = itemSet{}, [MaxItem + 1]bool{}
	for j := range MaxItem {
		name := "metric" + strconv.Itoa(j%97) + "_" + strconv.Itoa(j)
		want := 1 + fnv32(name)%MaxItem
		for bools[want] {
			want = 1 + want%MaxItem
		}
		bools[want] = true
		require.Equal(t, want, takeItem(name, &set), "item of %s, the %dth taken", name, j+1)
	}
	for it := range uint32(MaxItem + 1) {
		require.Equal(t, bools[it], set.has(it), "item %d once every item is taken", it)
	}
}
