package mmv

import (
	"cmp"
	"iter"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
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
	// singular counts the metrics of no indom; byIndom lists the others
	// by indom, each list in the order of metrics, and overAt finds an
	// indom's list (joinMetric). What the part's budget is charged is
	// summed by indom, and the instances added to an indom find its
	// metrics, without a scan of the part's metrics.
	singular int
	strings  int // metrics of type String (joinMetric)
	byIndom  []indomMetrics
	overAt   map[*indom]int
	charges  chargeBound // on what they charge (budget.go)
	// indoms are the part's instance domains: every one for the first
	// file, as libpcp_mmv writes them, those its metrics use for others.
	indoms []*indom
	used   itemSet // items taken
	// carried are the metrics of the last run's file at the part's name
	// (the first file, or an overflow file's tombstone) that this file
	// keeps with no value, their PMIDs kept, by their names without the
	// part's prefix, and reserved the items kept so, for the registry's
	// life, also in used (carry.go): nil when there was no such file.
	// carried is replaced, never changed: a snapshot shares it.
	carried  []placeholder
	reserved *itemSet
	// emptied are the serials of the indoms of no instances placeholders
	// of the part were written over and no longer are, which the file
	// keeps for the registry's life but where an indom of the part has
	// the serial (carry.go, keptEmptyIndoms). Replaced, never changed.
	emptied []uint32
	// slots lists the values in the order of their records: a value's
	// slot fixes its address while it lives (below).
	slots       segList[slotOwner]
	bound       int   // slots[:bound] have storage in the file, and handles on demand (handleOf), a String value once strung (unstrung)
	bindable    bool  // a value got storage since the waiters were woken (wakeLocked)
	dying, free []int // slots of removed values: dead from the next publication, dead in the file
	file        *file
	hold        setHold     // of its values' Sets while its file grows
	snap        snapArrays  // the last snapshot's arrays, for the next (snapshotLocked)
	stride      valueStride // between the value records of two slots, fixed at Start
	valuesEnd   int64       // past the file's values and the records after them, from its values
	dirty       bool        // declarations not yet in the file
	// flying says a publication without the lock is in flight
	// (publishPartUnlocking): a free slot taken meanwhile keeps its old
	// record, which the step carries and merges, until it lands, zeroed
	// (landing, land).
	flying  bool
	landing []int
	sinks   sinks // of the handles detached from the file (Value.detach)
	// unstrung is one more than the first slot of a String value that
	// the file has no string record for, 0 for none: one given a slot
	// after the file was laid out, whose record's string offset is 0
	// until a publication lays its string record out (the file's header:
	// SetString would write over it). Every String value from that slot
	// on has none either (String values take no free slot: takeSlot), and
	// none is handed out until it has (handleOf).
	unstrung int
}

// placeholder is a metric of the last run's file kept in this run's with
// no value (carry.go): its name, item and description, and the
// serial of the indom of no instances it is written over (singularIndom:
// none).
type placeholder struct {
	name  string
	item  uint32
	typ   Type
	sem   Semantics
	units Units
	indom uint32
}

// snapArrays are the arrays of a part's last snapshot, which the next
// one, after that publication, fills again: at 100,000 values, new ones
// at every publication were 1.7 MB allocated with the lock held, 0.7-0.8
// ms a snapshot against 0.06 in the last one's
// (BenchmarkPublicationSnapshot). The slots and handles are not copied
// (segList.share). The cells shown are cleared once the file is written
// (done).
type snapArrays struct {
	removed []bool
	waiting []waitingValue // the values the publication shows (showWaiting)
	lists   []shownList    // the listings of the vectors' cells it shows, cleared once run (listed)
}

// waitingValue is a value waiting for the storage of a part's slot: a
// cell's, read when shown, or another instrument's word.
type waitingValue struct {
	slot int
	c    *cell
	word uint64
}

// shownList appends to a list of values shown some of the cells of a
// vector waiting for storage (cellGroup.shownLocked).
type shownList func([]waitingValue) []waitingValue

// done clears the cells of the snapshot the arrays hold.
func (a *snapArrays) done() { clear(a.waiting) }

// reserve gives the arrays room for a snapshot of n instances, unless
// they have three quarters of it, made and their pages written while the
// publication that owns them runs without the lock: the next snapshot,
// with the lock held, then only copies into them. Grown by the snapshot
// instead, at 50,000 values, they held the lock 3-6 ms, and every first
// use meanwhile waited.
func (a *snapArrays) reserve(n int) {
	if 4*cap(a.removed) >= 3*n {
		return
	}
	a.removed = make([]bool, n)[:0]
	clear(a.removed[:n])
}

// fits reports whether the arrays take a snapshot of n instances and w
// waiting values without growing.
func (a *snapArrays) fits(n, w int) bool { return cap(a.removed) >= n && cap(a.waiting) >= w }

// reserveWaiting gives the arrays room for n waiting values, as reserve
// does: grown by the snapshot, the list of 50,000 held the lock 20-40 ms.
func (a *snapArrays) reserveWaiting(n int) {
	if 4*cap(a.waiting) >= 3*n {
		return
	}
	a.waiting = make([]waitingValue, n)[:0]
	clear(a.waiting[:n])
}

// quiet lets go the room reserved for the values a next publication
// shows, once none is due: sized by the last one's, it kept 13 MB after
// 10,000 histograms' first uses for the registry's life, where the next
// publication, of new values past the file's room, reserves its own
// (reserveSnapshotUnlocking).
func (a *snapArrays) quiet() { a.waiting = nil }

// indomMetrics are a part's metrics over an indom, in the order of its
// metrics: they all charge its budget what the indom's instances do
// (chargeOf), and get a slot for each instance added.
type indomMetrics struct {
	in      *indom
	metrics []*metric
}

// chargeBound bounds what a part's metrics charge its budget
// (chargeLocked), so that a metric finds a part with room, or passes one
// without, with no sum of the part's indoms each time: declaring n
// vectors, each over an indom of its own, cost n² (a tenth of declaring
// 1,000 vectors of 10 values), and at the default budget, where a file
// holds two vectors' reservations, every file a new vector passed was
// summed again (7.7 µs a vector at 1,000 of them, 3.4 at 100).
//
// From above: taken exactly (charge, when the registry had added added),
// it is raised by what every metric joining the part may charge
// (joinMetric) and by every instance added since, times the metrics over
// it (liveCounts.added). From below: the exact sum (least) holds while
// nothing lowered a charge (lowered, Registry.loweredLocked's count of
// removals and limits set; a metric leaving drops the bound).
type chargeBound struct {
	charge, added, budget int
	least                 int
	lowered               uint64
	ok                    bool // charge and least hold for budget
}

// chargeMost is the most m can charge its file's budget, whatever the
// budget: chargeOf's but for the budget's cap and a limit lowered since.
func (m *metric) chargeMost() int {
	if m.indom == nil {
		return 1
	}
	return max(m.indom.live, m.indom.reserve)
}

// joinMetric records m, newly last of p.metrics, by its indom and type
// (d 1), or forgets it as it leaves, last of p.metrics (d -1).
func (p *part) joinMetric(m *metric, d int) {
	if m.Type == String {
		p.strings += d
	}
	if d > 0 {
		p.charges.charge += m.chargeMost()
	} else {
		p.charges.ok = false // its least no longer holds
	}
	if m.indom == nil {
		p.singular += d
		return
	}
	i, ok := len(p.byIndom)-1, len(p.byIndom) > 0 && p.byIndom[len(p.byIndom)-1].in == m.indom
	if !ok {
		// Not the last list's: metrics over one indom mostly come in a row.
		i, ok = p.overAt[m.indom]
	}
	if !ok {
		if p.overAt == nil {
			p.overAt = make(map[*indom]int)
		}
		i = len(p.byIndom)
		p.overAt[m.indom] = i
		p.byIndom = append(p.byIndom, indomMetrics{in: m.indom})
	}
	over := &p.byIndom[i]
	if d > 0 {
		over.metrics = appendGrown(over.metrics, m)
		return
	}
	if over.metrics = over.metrics[:len(over.metrics)-1]; len(over.metrics) == 0 {
		// Metrics leave in the reverse order of joining: a list m's
		// leaving empties was made for m, after every other, the last.
		p.byIndom[i] = indomMetrics{}
		p.byIndom = p.byIndom[:i]
		delete(p.overAt, m.indom)
	}
}

// joinMetrics records p.metrics by indom afresh (joinMetric).
func (p *part) joinMetrics() {
	p.singular, p.strings, p.byIndom, p.overAt, p.charges = 0, 0, nil, nil, chargeBound{}
	for _, m := range p.metrics {
		p.joinMetric(m, 1)
	}
}

// metricsOver returns the part's metrics over in, in the order of its
// metrics.
func (p *part) metricsOver(in *indom) []*metric {
	if i, ok := p.overAt[in]; ok {
		return p.byIndom[i].metrics
	}
	return nil
}

// newPart returns part index (0 for the first file) of a registry of
// that name and flags.
func newPart(index int, name string, flags Flags) *part {
	p := &part{index: index}
	p.configure(name, flags)
	return p
}

// configure names the part after its registry's name and flags, as
// Registry.Configure changes them.
func (p *part) configure(name string, flags Flags) {
	p.name, p.prefix, p.flags = partName(name, p.index), "", flags
	if p.index > 0 {
		p.prefix, p.flags = overflowPrefix(name, flags), flags|NoPrefix
	}
}

// partName is the name of the file of part index of the registry named
// registry: its own, or <registry>.N for overflow part N-1.
func partName(registry string, index int) string {
	if index == 0 {
		return registry
	}
	return registry + "." + strconv.Itoa(index+1)
}

// overflowPrefix is what the metric names of an overflow file of a
// registry of that name and flags start with: the registry's name and a
// dot, for PCP to name them as the first file's (NoPrefix files), none
// for a registry that has NoPrefix itself; and so what PCP puts between
// "mmv." and every metric name of the registry.
func overflowPrefix(name string, flags Flags) string {
	if flags&NoPrefix != 0 {
		return ""
	}
	return name + "."
}

// allUnder reports whether names, the metric names of an overflow file,
// all have prefix (bury, carryLocked, lastHomes, earlierOverflow). Those
// of the last run's files have the last run's (lastPrefix): its own
// files, and its tombstones, which bury writes in the run's prefix; a
// file at such a name whose names do not is another writer's. Those of
// the tombstones this run made have this run's (prefixAtLocked).
func allUnder(names []string, prefix string) bool {
	return !slices.ContainsFunc(names, func(n string) bool { return !strings.HasPrefix(n, prefix) })
}

// fitsOverflow reports whether a metric of that name fits an overflow
// file of a registry of that name and flags, where the metric's name
// carries the registry's (configure): a longer one fits only the first
// file, which is where it is placed (budget.go).
func fitsOverflow(registry string, flags Flags, metric string) bool {
	return flags&NoPrefix != 0 || len(registry)+1+len(metric) <= MaxStringLen
}

// metricName is the name a metric has in the part's file.
func (p *part) metricName(m *metric) string { return p.prefix + m.Name }

// hasIndom reports whether the part's file holds the indom.
// The first file holds every indom declared: no search, which cost every
// instance added a scan of the registry's indoms.
func (p *part) hasIndom(in *indom) bool {
	return p.index == 0 && in != nil && in.counts != nil || slices.Contains(p.indoms, in)
}

// holdIndom makes p, an overflow part, hold in, which it did not: in
// p.indoms, and p's index in in.over, ascending.
func (p *part) holdIndom(in *indom) {
	p.indoms = append(p.indoms, in)
	i, _ := slices.BinarySearch(in.over, p.index)
	in.over = slices.Insert(in.over, i, p.index)
}

// unholdIndom undoes holdIndom of in, the last indom p took.
func (p *part) unholdIndom(in *indom) {
	p.indoms = p.indoms[:len(p.indoms)-1]
	if i, ok := slices.BinarySearch(in.over, p.index); ok {
		in.over = slices.Delete(in.over, i, i+1)
	}
}

// holdIndoms sets every indom's in.over from parts, laid out anew
// (Registry.placeLocked).
func holdIndoms(indoms []*indom, parts []*part) {
	for _, in := range indoms {
		in.over = in.over[:0]
	}
	for _, p := range parts[1:] {
		for _, in := range p.indoms {
			in.over = append(in.over, p.index)
		}
	}
}

// partsHolding yields the parts, of a registry's parts, whose files hold
// in, in order: the first, which holds every indom declared, then the
// overflow parts holding metrics over it (indom.over). Looking at every
// part instead cost a vector's first use 8 µs at 2,000 vectors of the
// default budget, in 1,000 files.
func partsHolding(parts []*part, in *indom) iter.Seq[*part] {
	return func(yield func(*part) bool) {
		if in.counts != nil && !yield(parts[0]) {
			return
		}
		for _, i := range in.over {
			if !yield(parts[i]) {
				return
			}
		}
	}
}

// reset forgets what Start gave the part: its file, slots, derived items
// and cluster.
func (p *part) reset() {
	p.clearSlots()
	p.file, p.bound, p.dirty, p.unstrung, p.sinks = nil, 0, false, 0, nil
	for _, m := range p.metrics {
		if m.auto() {
			p.used.remove(m.item)
			m.item = 0
		}
	}
	p.cluster = 0
	if p.reserved != nil { // a Start keeps them again
		p.used.removeAll(p.reserved)
		p.carried, p.reserved = nil, nil
	}
	p.emptied = nil
}

// assignItems gives every metric of the part declared without an item
// one derived from its name (takeItem). Names are taken in sorted order
// and collisions probe to the next free item, so the same set of names
// gets the same items whatever the order of declaration.
func (p *part) assignItems() {
	var auto []*metric
	for _, m := range p.metrics {
		if m.item == 0 {
			auto = append(auto, m)
		}
	}
	slices.SortFunc(auto, func(a, b *metric) int { return cmp.Compare(a.Name, b.Name) })
	for _, m := range auto {
		m.item = takeItem(m.Name, &p.used)
	}
}

// A part's values have slots: their indexes in the values section, which
// fix their addresses. A slot is live while its value is; when an
// instance is removed its slots are dying (their records are written dead,
// with no metric or instance, which PCP's reader skips, from the next
// publication on), then free once that is published, and a value declared
// later takes a free slot before a new one. Before that publication a
// removed value still shows in PCP, so its slot cannot serve another yet.

// slotOwner is the metric (its index in the part, plus one; 0 for a dead
// record) and the instance (index in the indom) of a value. Indexes, not a
// pointer: a part keeps one per value, and a pointer in each cost Start a
// write barrier per value and the garbage collector a scan of them all.
type slotOwner struct {
	m, inst int32
}

// ownedBy is the slotOwner of instance j of m.
func ownedBy(m *metric, j int) slotOwner { return slotOwner{m.index + 1, int32(j)} }

// owner returns the metric owning o, nil for a dead record.
func (p *part) owner(o slotOwner) *metric {
	if o.m == 0 {
		return nil
	}
	return p.metrics[o.m-1]
}

// newSlot gives instance j of m (0 when singular) a slot (see takeSlot),
// and returns it.
func (p *part) newSlot(m *metric, j int) int {
	for m.slots.len() <= j {
		m.slots.push(-1)
		if m.values.len() > 0 {
			m.values.push(nil)
		}
	}
	s := p.takeSlot(m, j)
	*m.slots.at(j) = int32(s)
	return s
}

// record is where slot s's value record is mapped.
func (p *part) record(s int) unsafe.Pointer { return unsafe.Add(p.file.values, p.stride.at(s)) }

// takeSlot gives instance j of m a slot, a free one, its value zeroed,
// else the next, and returns it; m's slots and handles are the caller's.
// A publication in flight does not stop it taking a free one: taking the
// next then made a file grow at every publication under churn, without
// bound (TestChurnKeepsSlotsBounded).
//
// A String value never takes a free slot: the file holds its record,
// whose string offset (the extra word) points at no string record, and
// only a publication lays one out. It takes the next, and is unstrung
// until then. String values are the program's alone (AddMetric), whose
// instances are never removed: they free no slot, and taking none keeps
// no file growing.
func (p *part) takeSlot(m *metric, j int) int {
	n := len(p.free)
	if n == 0 || m.Type == String {
		p.slots.push(ownedBy(m, j))
		s := p.slots.len() - 1
		if m.Type == String && p.unstrung == 0 {
			p.unstrung = s + 1
		}
		return s
	}
	s := p.free[n-1]
	p.free = p.free[:n-1]
	*p.slots.set(s) = ownedBy(m, j)
	if p.flying {
		p.landing = append(p.landing, s)
	} else {
		p.reuse(s)
	}
	return s
}

// strung reports whether slot s, a String value's, has its string
// record in the file (unstrung).
func (p *part) strung(s int) bool { return p.unstrung == 0 || s < p.unstrung-1 }

// strungTo writes down that a publication of the part wrote a string
// record for every String value of its first n slots (as the part was
// when its file was laid out, for one without the lock): those taken
// after, from n on, stay unstrung. Only a part with an unstrung value
// looks for them.
func (p *part) strungTo(n int) {
	if p.unstrung == 0 || p.unstrung-1 >= n {
		return
	}
	p.unstrung = 0
	for s := n; s < p.slots.len(); s++ {
		if p.typeOf(s) == String {
			p.unstrung = s + 1
			return
		}
	}
}

// reuse zeroes the value of free slot s, taken again, if the file holds
// it: the value then has storage.
func (p *part) reuse(s int) {
	if s < p.bound {
		p.zero(s)
		p.bindable = true
	}
}

// land zeroes the values of the free slots taken while a publication was
// in flight, once it is done: their values, having no storage until then
// (handleLocked), are bound by the next wake.
func (p *part) land() {
	p.flying = false
	for _, s := range p.landing {
		p.reuse(s)
	}
	p.landing = p.landing[:0]
}

// zero clears the value of slot s in the file, left by a removed one.
func (p *part) zero(s int) {
	rec := p.record(s)
	atomic.StoreUint64((*uint64)(rec), 0)
	atomic.StoreUint64((*uint64)(unsafe.Add(rec, valueExtraOff)), 0)
}

// unslot takes instance j of m's slot away, detaching its handle, and
// returns the slot, or -1 when it had none.
func (p *part) unslot(m *metric, j int) int {
	if j >= m.slots.len() || *m.slots.at(j) < 0 {
		return -1
	}
	s := int(*m.slots.at(j))
	if m.values.len() > 0 {
		v := m.values.set(j)
		if *v != nil {
			(*v).detach(&p.sinks.take(1)[0])
		}
		*v = nil
	}
	*m.slots.at(j) = -1
	*p.slots.set(s) = slotOwner{}
	return s
}

// release undoes newSlot for instance j of m, the newest slot given: the
// slot is popped when it is the last, freed otherwise.
func (p *part) release(m *metric, j int) {
	switch s := p.unslot(m, j); {
	case s < 0:
	case s == p.slots.len()-1:
		p.slots.truncate(s)
		p.bound = min(p.bound, s)
		if p.unstrung > s { // every slot from s on is gone
			p.unstrung = 0
		}
	default:
		p.free = append(p.free, s)
	}
}

// remove takes the slots of instance j of the part's metrics over in, to
// be published dead.
func (p *part) remove(in *indom, j int) {
	for _, m := range p.metricsOver(in) {
		if s := p.unslot(m, j); s >= 0 {
			p.dying = append(p.dying, s)
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
	n := in.count()
	for _, m := range p.metricsOver(in) {
		if revived >= 0 {
			p.newSlot(m, revived)
		}
		j := first
		if len(p.free) == 0 && m.slots.len() == j && n-j > 1 && m.Type != String {
			// A run of new instances given the next slots, and no handle
			// yet (nil) where the metric has handles, which are as many
			// as its slots. Slot by slot (newSlot), it was 28% of a
			// histogram's first use after Start, 19 buckets each; one
			// instance, a vector's statistics' value, is the loop's below,
			// whose pushes cost a histogram's first use after Start 7%
			// less than a run's extend and span (its 9 statistics). A
			// String value's slot is takeSlot's, which marks it unstrung.
			if m.values.len() > 0 {
				m.values.extend(n - j)
			}
			s := p.slots.len()
			p.slots.extend(n - j)
			for i := s; i < p.slots.len(); {
				run := p.slots.span(i, p.slots.len())
				for k := range run {
					run[k] = ownedBy(m, j+i-s+k)
				}
				i += len(run)
			}
			m.slots.extend(n - j)
			for i := j; i < n; {
				run := m.slots.span(i, n)
				for k := range run {
					run[k] = int32(s + i - j + k)
				}
				i += len(run)
			}
			j = n
		}
		for ; j < n; j++ {
			p.newSlot(m, j)
		}
	}
}

// releaseInstanceSlots undoes newInstanceSlots(in, first, -1).
func (p *part) releaseInstanceSlots(in *indom, first int) {
	for _, m := range slices.Backward(p.metricsOver(in)) {
		for j := m.slots.len() - 1; j >= first; j-- {
			p.release(m, j)
		}
		m.slots.truncate(first)
		if m.values.len() > 0 {
			m.values.truncate(first)
		}
	}
}

// renumber gives the values of the part's metrics over in the new indexes
// of its instances, to: old index to new, -1 for a removed instance
// forgotten, which has no slot.
func (p *part) renumber(in *indom, to []int) {
	for _, m := range p.metricsOver(in) {
		made := m.values.len() > 0
		kept := 0
		for j, s := range m.slots.all() {
			if to[j] < 0 {
				continue
			}
			kept = to[j] + 1
			*m.slots.at(to[j]) = s
			if made {
				*m.values.set(to[j]) = *m.values.at(j)
			}
			if s >= 0 {
				p.slots.set(int(s)).inst = int32(to[j])
			}
		}
		m.slots.truncate(kept)
		if made {
			m.values.truncate(kept)
		}
	}
}

// makeSlots gives every value of the part's metrics a slot, as Start does
// to a part that has none: metric by metric, instance by instance, in two
// arrays sized once, the values of removed instances left out. It is
// slotMetric's loop for each metric, without a call per value. The
// owners are written by index into an array of every value, not
// appended: a tenth less of encoding 1,000 metrics of 10 values.
func (p *part) makeSlots() {
	n := 0
	for _, m := range p.metrics {
		n += m.valueCount()
	}
	all := make([]int32, n)
	owners := make([]slotOwner, n)
	used := 0
	for _, m := range p.metrics {
		k := m.valueCount()
		slots := all[:k:k]
		all = all[k:]
		m.slots, m.values = segListOf(slots), segList[*Value]{}
		var removed []bool
		if m.indom != nil && m.indom.live < k {
			removed = m.indom.removed
		}
		for j := range slots {
			if removed != nil && removed[j] {
				slots[j] = -1
				continue
			}
			slots[j] = int32(used)
			owners[used] = ownedBy(m, j)
			used++
		}
	}
	p.slots = segListOf(owners[:used])
}

// newMetricSlots gives every value of m, declared after Start, a slot.
func (p *part) newMetricSlots(m *metric) {
	p.slotMetric(m, make([]int32, m.valueCount()))
}

// slotMetric gives every value of m a slot, instance by instance, kept in
// slots, of m's value count; removed instances have none. The handles are
// made at their first use (handleOf).
func (p *part) slotMetric(m *metric, slots []int32) {
	m.slots, m.values = segListOf(slots), segList[*Value]{}
	for j := range slots {
		slots[j] = -1
		if m.indom == nil || !m.indom.removed[j] {
			slots[j] = int32(p.takeSlot(m, j))
		}
	}
}

// releaseMetricSlots undoes newMetricSlots.
func (p *part) releaseMetricSlots(m *metric) {
	for j := m.slots.len() - 1; j >= 0; j-- {
		p.release(m, j)
	}
	m.slots, m.values = segList[int32]{}, segList[*Value]{}
}

// clearSlots forgets every slot, as before Start.
func (p *part) clearSlots() {
	for _, m := range p.metrics {
		m.slots, m.values = segList[int32]{}, segList[*Value]{}
	}
	p.slots, p.dying, p.free = segList[slotOwner]{}, nil, nil
}

// typeOf is the type of the value in slot s; a dead record's is any.
func (p *part) typeOf(s int) Type {
	if m := p.owner(*p.slots.at(s)); m != nil {
		return m.Type
	}
	return Uint64
}

// handle is the handle of the value in slot s, nil until bound or dead.
func (p *part) handle(s int) *Value {
	o := *p.slots.at(s)
	if m := p.owner(o); m != nil && m.values.len() > 0 {
		return *m.values.at(int(o.inst))
	}
	return nil
}

// handles yields the handles made on the first live slots.
func (p *part) handles(live int) iter.Seq[*Value] {
	return func(yield func(*Value) bool) {
		for s := range live {
			if v := p.handle(s); v != nil && !yield(v) {
				return
			}
		}
	}
}

// handleOf returns the handle of instance j of m (0 when singular), made
// at its first use, so that Start makes none for values nobody asks for;
// nil while the value has no storage in the file, or, a String value's,
// no string record there (unstrung): SetString would write through the
// record's string offset, 0 until then, over the file's header.
func (p *part) handleOf(m *metric, j int) *Value {
	if j >= m.slots.len() {
		return nil
	}
	s := int(*m.slots.at(j))
	if s < 0 || s >= p.bound || m.Type == String && !p.strung(s) {
		return nil
	}
	if m.values.len() == 0 {
		m.values = segListOf(make([]*Value, m.slots.len()))
	}
	if v := *m.values.at(j); v != nil {
		return v
	}
	v := new(Value)
	v.init(p.record(s), m.Type, p.file)
	*m.values.set(j) = v
	p.hold.add(v)
	return v
}

// detach points every handle of the part away from its file, each at a
// record of its own in one array.
func (p *part) detach() {
	n := 0
	for _, m := range p.metrics {
		for _, v := range m.values.all() {
			if v != nil {
				n++
			}
		}
	}
	if n == 0 {
		return
	}
	recs := p.sinks.take(n)
	for _, m := range p.metrics {
		for _, v := range m.values.all() {
			if v != nil {
				v.detach(&recs[0])
				recs = recs[1:]
			}
		}
	}
}
