package mmv

import (
	"slices"
	"sync/atomic"
	"unsafe"
)

// A part's values have slots: their indexes in the values section, which
// fix their addresses. A slot is live while its value is; when an
// instance is removed its slots are dying (their records are written dead,
// with no metric or instance, which PCP's reader skips, from the next
// publication on), then free once that is published, and a value declared
// later takes a free slot before a new one. Before that publication a
// removed value still shows in PCP, so its slot cannot serve another yet.

// slotOwner is the metric and instance (index in the indom) of a value;
// m is nil for a dead record.
type slotOwner struct {
	m    *metric
	inst int
}

// newSlot gives instance j of m (0 when singular) a slot: a free one, its
// value zeroed, else the next, and returns it.
func (p *part) newSlot(m *metric, j int) int {
	s := len(p.slots)
	if n := len(p.free); n > 0 {
		s, p.free = p.free[n-1], p.free[:n-1]
		p.slots[s] = slotOwner{m, j}
		if s < p.bound {
			p.zero(s)
			p.rebind = append(p.rebind, s)
		}
	} else {
		p.slots = append(p.slots, slotOwner{m, j})
	}
	for len(m.slots) <= j {
		m.slots, m.values = append(m.slots, -1), append(m.values, nil)
	}
	m.slots[j], m.values[j] = s, nil
	return s
}

// zero clears the value of slot s in the file, left by a removed one.
func (p *part) zero(s int) {
	rec := unsafe.Add(p.file.values, s*valueSize)
	atomic.StoreUint64((*uint64)(rec), 0)
	atomic.StoreUint64((*uint64)(unsafe.Add(rec, valueExtraOff)), 0)
}

// unslot takes instance j of m's slot away, detaching its handle, and
// returns the slot, or -1 when it had none.
func (p *part) unslot(m *metric, j int) int {
	if j >= len(m.slots) || m.slots[j] < 0 {
		return -1
	}
	s := m.slots[j]
	m.values[j].detach()
	m.slots[j], m.values[j] = -1, nil
	p.slots[s] = slotOwner{}
	p.rebind = slices.DeleteFunc(p.rebind, func(r int) bool { return r == s })
	return s
}

// release undoes newSlot for instance j of m, the newest slot given: the
// slot is popped when it is the last, freed otherwise.
func (p *part) release(m *metric, j int) {
	switch s := p.unslot(m, j); {
	case s < 0:
	case s == len(p.slots)-1:
		p.slots = p.slots[:s]
		p.bound = min(p.bound, s)
	default:
		p.free = append(p.free, s)
	}
}

// remove takes the slots of instance j of the part's metrics over in, to
// be published dead.
func (p *part) remove(in *indom, j int) {
	for _, m := range p.metrics {
		if m.indom == in {
			if s := p.unslot(m, j); s >= 0 {
				p.dying = append(p.dying, s)
			}
		}
	}
}

// published frees the slots of the values removed before a publication.
func (p *part) published() {
	p.free, p.dying = append(p.free, p.dying...), nil
}

// newInstanceSlots gives the instances of in from index first on, and
// instance revived if not negative, a slot for each metric of the part
// over in.
func (p *part) newInstanceSlots(in *indom, first, revived int) {
	for _, m := range p.metrics {
		if m.indom != in {
			continue
		}
		if revived >= 0 {
			p.newSlot(m, revived)
		}
		for j := first; j < len(in.Instances); j++ {
			p.newSlot(m, j)
		}
	}
}

// releaseInstanceSlots undoes newInstanceSlots(in, first, -1).
func (p *part) releaseInstanceSlots(in *indom, first int) {
	for _, m := range slices.Backward(p.metrics) {
		if m.indom != in {
			continue
		}
		for j := len(m.slots) - 1; j >= first; j-- {
			p.release(m, j)
		}
		m.slots, m.values = m.slots[:first], m.values[:first]
	}
}

// makeSlots gives every value of the part's metrics a slot, as Start does:
// metric by metric.
func (p *part) makeSlots() {
	for _, m := range p.metrics {
		p.newMetricSlots(m)
	}
}

// newMetricSlots gives every value of m a slot, instance by instance;
// removed instances have none.
func (p *part) newMetricSlots(m *metric) {
	for j := range m.valueCount() {
		if m.indom != nil && m.indom.removed[j] {
			m.slots, m.values = append(m.slots, -1), append(m.values, nil)
			continue
		}
		p.newSlot(m, j)
	}
}

// releaseMetricSlots undoes newMetricSlots.
func (p *part) releaseMetricSlots(m *metric) {
	for j := len(m.slots) - 1; j >= 0; j-- {
		p.release(m, j)
	}
	m.slots, m.values = nil, nil
}

// clearSlots forgets every slot, as before Start.
func (p *part) clearSlots() {
	for _, m := range p.metrics {
		m.slots, m.values = nil, nil
	}
	p.slots, p.rebind, p.dying, p.free = nil, nil, nil, nil
}

// typeOf is the type of the value in slot s; a dead record's is any.
func (p *part) typeOf(s int) Type {
	if m := p.slots[s].m; m != nil {
		return m.Type
	}
	return Uint64
}

// handle is the handle of the value in slot s, nil until bound or dead.
func (p *part) handle(s int) *Value {
	if o := p.slots[s]; o.m != nil {
		return o.m.values[o.inst]
	}
	return nil
}

// bindHandles makes the handles of the slots the file has room for.
func (p *part) bindHandles(strs *stringLock) {
	bind := func(s int) {
		if o := p.slots[s]; o.m != nil {
			o.m.values[o.inst] = newValue(unsafe.Add(p.file.values, s*valueSize), o.m.Type, strs, p.file)
		}
	}
	for _, s := range p.rebind {
		bind(s)
	}
	p.rebind = p.rebind[:0]
	for ; p.bound < min(len(p.slots), p.file.capacity); p.bound++ {
		bind(p.bound)
	}
}

// detach points every handle of the part away from its file.
func (p *part) detach() {
	for _, m := range p.metrics {
		for _, v := range m.values {
			v.detach()
		}
	}
}
