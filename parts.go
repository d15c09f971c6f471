package mmv

import (
	"cmp"
	"slices"
	"sync"
	"unsafe"
)

// A file holds at most MaxMetrics metrics. A registry with more spreads them
// over parts: its first file, and overflow files named <file>.2, <file>.3
// and so on, each with the NoPrefix flag and metric names that carry the
// first file's name, so PCP shows every metric as mmv.<file>.<metric> (or
// mmv.<metric> under NoPrefix) whichever file holds it. An overflow file
// holds the indoms its metrics use, with their labels, and every cluster
// label. The parts share the registry's one lifecycle: Start makes them
// all or none, and Close closes them all.

// part is one file of a registry.
type part struct {
	name    string
	index   int    // 0 for the registry's first file
	prefix  string // before its metrics' names: the registry's name and a dot in overflow files
	flags   Flags  // the header's
	cluster uint32 // the header's, once started
	metrics []*metric
	// indoms are the part's instance domains: every one for the first
	// file, as libpcp_mmv writes them, those its metrics use for others.
	indoms []*indom
	used   [MaxItem + 1]bool // items taken
	// slots lists the values in the order of their records: a value's
	// slot fixes its address for good.
	slots []slotOwner
	bound int // slots[:bound] have handles
	file  *file
	dirty bool // declarations not yet in the file
}

// slotOwner is the metric and instance (index in the indom) of a value.
type slotOwner struct {
	m    *metric
	inst int
}

func newPart(name string, index int, prefix string, flags Flags) *part {
	return &part{name: name, index: index, prefix: prefix, flags: flags}
}

// metricName is the name a metric has in the part's file.
func (p *part) metricName(m *metric) string { return p.prefix + m.Name }

// hasIndom reports whether the part's file holds the indom.
func (p *part) hasIndom(in *indom) bool { return slices.Contains(p.indoms, in) }

// newSlot gives instance j of m (0 when singular) the next value slot of
// its part.
func (p *part) newSlot(m *metric, j int) {
	m.slots = append(m.slots, len(p.slots))
	m.values = append(m.values, nil)
	p.slots = append(p.slots, slotOwner{m, j})
}

// newInstanceSlots gives the instances of in from index first on a slot
// for each metric of the part over in.
func (p *part) newInstanceSlots(in *indom, first int) {
	for _, m := range p.metrics {
		if m.indom == in {
			for j := first; j < len(in.Instances); j++ {
				p.newSlot(m, j)
			}
		}
	}
}

// truncateSlots forgets the slots from n on, newest first.
func (p *part) truncateSlots(n int) {
	for i := len(p.slots) - 1; i >= n; i-- {
		m := p.slots[i].m
		m.slots, m.values = m.slots[:len(m.slots)-1], m.values[:len(m.values)-1]
	}
	p.slots = p.slots[:n]
}

// makeSlots gives every value of the part's metrics a slot, as Start does:
// metric by metric, instance by instance. The metrics' slots and values
// are cut from two shared arrays, each capped so that a later append
// copies it out instead of running into the next metric's.
func (p *part) makeSlots() {
	n := 0
	for _, m := range p.metrics {
		n += m.valueCount()
	}
	p.slots = slices.Grow(p.slots, n)
	slots, values := make([]int, n), make([]*Value, n)
	for _, m := range p.metrics {
		k := m.valueCount()
		m.slots, m.values = slots[:k:k], values[:k:k]
		slots, values = slots[k:], values[k:]
		for j := range k {
			m.slots[j] = len(p.slots)
			p.slots = append(p.slots, slotOwner{m, j})
		}
	}
}

// typeOf is the type of the value in slot s.
func (p *part) typeOf(s int) Type { return p.slots[s].m.Type }

// handle is the handle of the value in slot s, nil until bound.
func (p *part) handle(s int) *Value {
	o := p.slots[s]
	return o.m.values[o.inst]
}

// bindHandles makes the handles of the slots the file has room for, in
// one allocation.
func (p *part) bindHandles(strs *stringLock) {
	end := min(len(p.slots), p.file.capacity)
	if end <= p.bound {
		return
	}
	vs := make([]Value, end-p.bound)
	for i := range vs {
		o := p.slots[p.bound+i]
		vs[i].init(unsafe.Add(p.file.values, (p.bound+i)*valueSize), o.m.Type, strs, p.file)
		o.m.values[o.inst] = &vs[i]
	}
	p.bound = end
}

// detach points every handle of the part away from its file.
func (p *part) detach() {
	for _, m := range p.metrics {
		for _, v := range m.values {
			v.detach()
		}
	}
}

// reset forgets what Start gave the part: its file, slots, derived items
// and cluster.
func (p *part) reset() {
	p.truncateSlots(0)
	p.file, p.bound, p.dirty = nil, 0, false
	for _, m := range p.metrics {
		if m.auto {
			p.used[m.item] = false
			m.item = 0
		}
	}
	releaseCluster(p.cluster)
	p.cluster = 0
}

// assignItems gives every metric of the part declared without an item
// one derived from its name. Names are taken in sorted order and
// collisions probe to the next free item, so the same set of names gets
// the same items whatever the order of declaration.
func (p *part) assignItems() {
	var auto []*metric
	for _, m := range p.metrics {
		if m.item == 0 {
			auto = append(auto, m)
		}
	}
	slices.SortFunc(auto, func(a, b *metric) int { return cmp.Compare(a.Name, b.Name) })
	for _, m := range auto {
		p.takeItem(m)
	}
}

// takeItem gives m the item its name hashes to, or the next free one.
func (p *part) takeItem(m *metric) {
	it := 1 + fnv32(m.Name)%MaxItem
	for p.used[it] {
		it = 1 + it%MaxItem
	}
	p.used[it] = true
	m.item = it
}

func fnv32(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

// Clusters of the process's started files, so an overflow file never takes
// one that another registry of the process uses.
var clusters = struct {
	sync.Mutex
	used map[uint32]int // files using each cluster
}{used: map[uint32]int{}}

// claimCluster chooses and claims the cluster of a part about to start,
// in a registry on cluster c whose files are named ours: c for its first
// file; for an overflow file the first cluster after c (wrapping within
// 1..2047, the clusters a file with indoms may have) that no started file
// of the process and no other file in d uses. Zero stays zero: PCP's
// reader then picks a cluster for every file.
func (p *part) claimCluster(c uint32, d *dir, ours func(name string) bool) (uint32, error) {
	clusters.Lock()
	defer clusters.Unlock()
	if c == 0 || p.index == 0 {
		if c != 0 {
			clusters.used[c]++
		}
		return c, nil
	}
	taken := clustersInDir(d, ours)
	for j := uint32(1); j < maxIndomCluster; j++ {
		cand := (c-1+j)%maxIndomCluster + 1
		if cand != c && clusters.used[cand] == 0 && !taken[cand] {
			clusters.used[cand]++
			return cand, nil
		}
	}
	return 0, errorf(ErrTooMany, "file "+quote(p.name), "no cluster left for an overflow file: every one of 1..%d is in use", maxIndomCluster)
}

func releaseCluster(c uint32) {
	if c == 0 {
		return
	}
	clusters.Lock()
	defer clusters.Unlock()
	if clusters.used[c]--; clusters.used[c] <= 0 {
		delete(clusters.used, c)
	}
}

// clustersInDir returns the clusters in the headers of the MMV files in
// d, but those ours reports as the registry's own.
func clustersInDir(d *dir, ours func(name string) bool) map[uint32]bool {
	taken := map[uint32]bool{}
	for _, name := range d.list() {
		if name[0] == '.' || ours(name) {
			continue
		}
		var h [headerSize]byte
		if d.readHead(name, h[:]) == headerSize && string(h[:4]) == Magic {
			taken[ne.Uint32(h[hdrClusterOff:])] = true
		}
	}
	return taken
}
