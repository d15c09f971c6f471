package mmv

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"
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
	cluster uint32 // the header's cluster, once started
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

func newPart(name string, index int) *part {
	return &part{name: name, index: index}
}

// metricName is the name a metric has in the part's file.
func (p *part) metricName(r *Registry, m *metric) string {
	if p.index == 0 || r.opts.Flags&NoPrefix != 0 {
		return m.Name
	}
	return r.name + "." + m.Name
}

// flags are the header flags of the part's file.
func (p *part) flags(r *Registry) Flags {
	if p.index == 0 {
		return r.opts.Flags
	}
	return r.opts.Flags | NoPrefix
}

// hasIndom reports whether the part's file holds the indom.
func (p *part) hasIndom(in *indom) bool { return slices.Contains(p.indoms, in) }

// partWithRoomLocked returns the last part, or a new overflow part when it
// is full. A new part's name is checked here, when the metric that needs
// it is declared; the caller drops the part if the declaration fails.
func (r *Registry) partWithRoomLocked() (p *part, isNew bool, err error) {
	last := r.parts[len(r.parts)-1]
	if len(last.metrics) < MaxMetrics {
		return last, false, nil
	}
	p = newPart(r.name+"."+strconv.Itoa(len(r.parts)+1), len(r.parts))
	if err := checkFileName(p.name, NoPrefix); err != nil {
		return nil, false, fmt.Errorf("mmv: file %q: more than %d metrics need an overflow file: %w", r.name, MaxMetrics, err)
	}
	r.parts = append(r.parts, p)
	return p, true, nil
}

// newSlot gives instance j of m (0 when singular) the next value slot of
// its part.
func (p *part) newSlot(m *metric, j int) {
	m.slots = append(m.slots, len(p.slots))
	m.values = append(m.values, nil)
	p.slots = append(p.slots, slotOwner{m, j})
}

// truncateSlots forgets the slots from n on, newest first.
func (p *part) truncateSlots(n int) {
	for i := len(p.slots) - 1; i >= n; i-- {
		m := p.slots[i].m
		m.slots, m.values = m.slots[:len(m.slots)-1], m.values[:len(m.values)-1]
	}
	p.slots = p.slots[:n]
}

// startPartLocked gives the part's metrics their items and values their
// slots, and makes its file in d. On failure the part is as it was.
func (r *Registry) startPartLocked(p *part, d *dir) error {
	version, err := r.version(p)
	if err != nil {
		return err
	}
	p.cluster, err = r.clusterOf(p, d)
	if err != nil {
		return err
	}
	p.assignItems()
	for _, m := range p.metrics {
		for j := range m.valueCount() {
			p.newSlot(m, j)
		}
	}
	plan := r.newPlan(p, version, nil)
	gen, pid := generation(time.Now()), int32(os.Getpid())
	f, err := createFile(d, p.name, plan.size, plan.offset[secValues], len(p.slots), func(b []byte) { r.encode(p, plan, b, gen, pid) })
	if err != nil {
		r.resetPart(p)
		return fileError(p.name, "cannot start", err)
	}
	p.file, p.dirty, p.bound = f, false, 0
	return nil
}

// stopPartsLocked points every handle away from the files, closes them,
// removing them if asked, and returns the parts to how they were before
// Start.
func (r *Registry) stopPartsLocked(remove bool) error {
	var errs []error
	for _, p := range r.parts {
		for _, m := range p.metrics {
			for _, v := range m.values {
				v.detach()
			}
		}
		if p.file != nil {
			if err := p.file.close(remove); err != nil {
				errs = append(errs, fileError(p.name, "cannot close", err))
			}
		}
		r.resetPart(p)
	}
	return errors.Join(errs...)
}

// resetPart forgets what Start gave the part: its file, slots, derived
// items and cluster.
func (r *Registry) resetPart(p *part) {
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

// clusterOf chooses and claims the cluster of a part about to start: the
// registry's for its first file; for an overflow file the first cluster
// after it (wrapping within 1..2047, the clusters a file with indoms may
// have) that no started file of the process and no other file in d uses.
// Zero stays zero: PCP's reader then picks a cluster for every file.
func (r *Registry) clusterOf(p *part, d *dir) (uint32, error) {
	c := r.opts.Cluster
	clusters.Lock()
	defer clusters.Unlock()
	if c == 0 || p.index == 0 {
		if c != 0 {
			clusters.used[c]++
		}
		return c, nil
	}
	taken := clustersInDir(d, func(name string) bool {
		return slices.ContainsFunc(r.parts, func(q *part) bool { return q.name == name })
	})
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
