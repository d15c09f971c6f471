package mmv

import (
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
	wantOwners := p.slots
	wantSlots := map[string][]int32{}
	for _, m := range p.metrics {
		wantSlots[m.Name] = m.slots
	}
	p.clearSlots()
	p.makeSlots()
	require.Equal(t, wantOwners, p.slots)
	for _, m := range p.metrics {
		require.Equal(t, wantSlots[m.Name], m.slots, "metric %s", m.Name)
		require.Nil(t, m.values, "metric %s: handles are made at their first use", m.Name)
	}
	require.Contains(t, wantSlots["m0"], int32(-1), "a removed instance has no slot")
}
