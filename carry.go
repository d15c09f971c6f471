package mmv

import (
	"math"
	"os"
	"slices"

	"github.com/gopcp/mmv/internal/osfile"
)

// The last run's first file: a registry without the Process flag started
// again renames its new first file over the one its last run left, and
// the metrics that run had declared after Start (a lazy instrument, a
// bridge's family, the registry's own mmv.dropped and mmv.expired,
// declared at their first count) were in the old file and not in the new
// one until this run declared them again, a publication later: their
// PMIDs vanished and came back, which crashes pmcd while a client fetches
// them (docs/design.md, "A pmcd crash in PCP's reader";
// TestRestartLateFirstFileMetricKeepsPMCD). So Start reads the old file
// (carryLocked): a metric of it that this run has not declared, and whose
// name is free of this run's (nameFreeLocked) and of the other files' the
// reader shows (clashesWithShown: Start checks only the registry's own
// names against them), is carried into the new
// first file as a placeholder, its name and item, so its PMID, over an
// indom of no instances and with no value record (PCP's reader shows it
// with no value, and logs nothing: overEmptyIndomsLocked); a name this run
// has declared keeps the item it had there. A declaration of the name
// later takes the placeholder's item, in its place at the first file's
// next publication; a placeholder whose name this run declares in another
// file, or clashes with at a dot, is dropped there (tendCarriedLocked).
// Every item kept so is reserved for the registry's life: no other name
// takes it.
//
// An overflow file the same way: Start rewrites the last run's as a
// tombstone (tombstone.go), and the file this run makes at its name
// later is renamed over it holding only the metrics this run had
// declared in it by then; the tombstone's others vanished there and came
// back at the next publication (TestRestartOverflowKeepsPMCD: 33 of 81
// metrics). So the part whose file replaces a tombstone carries its
// metrics as the first part carries the last run's first file's, by
// their names without the registry's prefix (bury strips it), written
// with it (part.prefix), and every rule below is the part's, not the
// first's. A part waits for the parts of lower indexes that still show a
// placeholder to drop (tendCarriedLocked). An overflow file Start makes
// itself (declarations before Start past the first file) is renamed over
// the last run's at its name with no tombstone between, and carries it
// by the first file's rule (TestRestartOverflowMadeAtStartKeepsPMCD).
//
// A Process run's Close keeps a record of each of its files and
// tombstones (its closed record, see carryLocked), read in the place of
// the file: an overflow file's by the part made at its name at Start, or
// made a tombstone at its name when Start makes no such part (bury).
// Removed at Close, a name of an overflow file that the next run declared
// there with another descriptor took its old PMID again
// (TestClosedProcessRunKeepsOverflowIdentities).

// carryLocked reads the file the last run left at the name of p, about
// to be made in d on its cluster (every part's at Start, an overflow
// part's later when this run made a tombstone there: tombAtLocked,
// whatever its flags), and keeps what it says: the items of the names p
// declares without one, the others as placeholders (see above), but those
// whose names clash with a name of another file of shown, the files the
// reader shows, whose items are kept all the same. Only a file of this
// registry's: an MMV file on the cluster p claims (other PMIDs are not
// this file's), with the NoPrefix flag for an overflow file. A Process
// run's Close renames each file to its closed record (osfile.ClosedName,
// .<file>.closed, .<file>.N.closed, which PCP ignores), read here when
// no file of ours is at the name (none, another writer's, another
// cluster's), at Start, and removed once this run's file is
// at the name (Start): removed at Close, it left the next run nothing to
// read, which derived every item again, its retyped names under their old
// PMIDs (TestClosedProcessRunKeepsIdentities,
// TestClosedProcessRunKeepsOverflowIdentities). A Process run killed (SIGKILL,
// the OOM killer) leaves its file at its name, with its dead writer's
// pid: PCP stopped showing it, and a
// client that held its PMIDs (pmval, pmlogger) fetches them again once
// this run shows them, reading their values by the descriptors it held.
// Ignored, it let a name declared with another descriptor take its old
// PMID (pmval showed an Int64 of -3 as 18446744073709551613, pmlogger
// archived a Uint64 of 2.5e9 ns under a Double's sec as 1.2e-314) and a
// name another one had collided with take that one's
// (TestKilledProcessRunKeepsIdentities): it is carried as any other. The first file's
// may have either NoPrefix flag: a deploy that sets or clears it keeps
// the file's PMIDs (the cluster derives from the file's name, items from
// the metrics'), their full names changed, and a metric the last run
// declared after Start vanished and came back
// (TestNoPrefixToggleKeepsLatePMID). Whatever pid its header
// names: PCP ignores it without the Process flag, and it is often a live
// process's (a writer draining after its Close while its successor
// starts, a pid reused after a reboot, another user's); a registry
// holding the name fails this Start (osfile.File.Hold), and a writer
// that takes no lock (libpcp_mmv's) has its file replaced by this one
// whether or not its metrics are carried: carried, their PMIDs stay, with
// no value, never a wrong one. Called as p's file is made, before its
// items are derived (part.assignItems).
func (r *Registry) carryLocked(p *part, d *osfile.Dir, shown []shownFile) {
	l := openLast(d, p.name)
	h, ok := readHead(l.bytes())
	if (!ok || h.cluster != p.cluster) && r.state != started {
		// None of ours at the name: a Process run's, closed (Close).
		l.close()
		closed := osfile.ClosedName(p.name)
		if l = openLast(d, closed); l != nil {
			r.closedRecords = append(r.closedRecords, closed) // removed once this run's file is at the name (Start)
		}
		h, ok = readHead(l.bytes())
	}
	defer l.close()
	b := l.bytes()
	if !ok || h.cluster != p.cluster {
		return
	}
	switch {
	case r.state != started: // a file Start makes, the first or an overflow file: the last run's, as PCP shows it
		if p.index > 0 && h.flags&NoPrefix == 0 {
			return // an overflow file's has the flag: without it, a registry's first file
		}
	case !r.tombAtLocked(p.name, b):
		return // an overflow part's made later: only the tombstone this run made at its name (tombstone.go)
	}
	old, ok := fileMetrics(l)
	if !ok {
		return
	}
	if p.index > 0 { // an overflow file's names carry the registry's, as the run that wrote it had it (bury strips it)
		prefix := r.prefixAtLocked(p.name, b)
		if !allUnder(namesOf(old), prefix) {
			return
		}
		for i := range old {
			old[i].name = old[i].name[len(prefix):]
		}
	}
	clashes := r.clashesWithShown(d, shown)
	reserved := new(itemSet)
	room := MaxItem - len(p.metrics) // items left once every metric has one
	var carried, bare []placeholder
	keep := func(item uint32) { // its PMID this run gives no other name
		reserved.add(item)
		p.used.add(item)
		room--
	}
	seen := map[string]bool{}
	for _, o := range old {
		if seen[o.name] || p.used.has(o.item) {
			continue // a name twice (no file of ours), an item this run declares
		}
		seen[o.name] = true
		switch m := r.named(o.name); {
		case m != nil && m.part == p && m.auto() && m.item == 0 && o.describes(&m.Metric):
			m.item = o.item
			p.used.add(o.item)
		case m == nil && room > 0 && r.nameFreeLocked(o.name, "") && checkMetricName("", o.name, r.opts.Flags) == nil && len(p.prefix)+len(o.name) <= MaxStringLen && !clashes(o.name) && !r.carriedElsewhereLocked(p, o.name):
			carried = append(carried, o)
			keep(o.item)
		default:
			bare = append(bare, o)
		}
	}
	// The items of names declared elsewhere, or with another item: a
	// client that holds the PMID fetches no other name's value under it.
	for _, o := range bare {
		if room > 0 && !p.used.has(o.item) {
			keep(o.item)
		}
	}
	if reserved.count() > 0 {
		p.carried, p.reserved = r.overEmptyIndomsLocked(p, carried), reserved
	}
}

// reserveCutLocked keeps the items of the metrics that the tombstone at
// p's name, on p's cluster, could not keep (bury: renamed into this
// run's prefix, a name did not fit) from p's names for the registry's
// life, as carryLocked keeps those of names declared elsewhere. Their
// PMIDs vanished at Start, and a declaration in p, made after Start, took
// one back, which crashes pmcd while a client fetches it (docs/design.md,
// "A pmcd crash in PCP's reader";
// TestNoPrefixClearedLongNameKeepsOverflowPMID).
func (r *Registry) reserveCutLocked(p *part) {
	c, ok := r.cut[p.name]
	if !ok || c.cluster != p.cluster {
		return
	}
	room := MaxItem - len(p.metrics) // as carryLocked's
	if p.reserved != nil {
		room -= p.reserved.count()
	}
	for _, item := range c.items {
		if room > 0 && !p.used.has(item) {
			if p.reserved == nil {
				p.reserved = new(itemSet)
			}
			p.reserved.add(item)
			p.used.add(item)
			room--
		}
	}
}

// lastHomes returns the part of each metric name in the last run's files
// in d, as the files PCP shows (carryLocked's rule) hold them, but those a
// live registry holds (another's, named so): index 0 for the first file,
// N-1 for <file>.N, every overflow file of the directory, past a missing
// name too; the lowest index for a name in two. Placement
// keeps a name in its file (placeLocked, partWithRoomLocked), and so its
// PMID's cluster: laid out in the order of their names before Start and
// in the order declared after it, the same metrics took other files when
// a version, or its traffic, moved their declarations across Start, 11 of
// 33 at each run (TestIdentityAcrossDeclarationTiming). A name may be
// missing before a file of ours: a part left with no metric (the parts
// before a name's file are made, and their last run's names may have gone
// elsewhere) is removed by a Start that does not make it (buryLocked), and
// read up to it, the names of the files past it went to other files
// (TestEmptyOverflowFileKeepsLaterHomes).
func (r *Registry) lastHomes(d *osfile.Dir) map[string]int {
	var homes map[string]int
	read := func(index int) (found bool) {
		name := partName(r.name, index)
		l := openLast(d, name)
		if l == nil {
			return false
		}
		defer l.close()
		h, ok := readHead(l.bytes())
		if !ok || h.flags&Process != 0 || index > 0 && h.flags&NoPrefix == 0 || d.Held(name) {
			return true
		}
		ms, _ := fileMetrics(l)
		prefix := ""
		if index > 0 {
			if prefix = r.prefixAtLocked(name, l.bytes()); !allUnder(namesOf(ms), prefix) {
				return true // another writer's, named so
			}
		}
		for _, m := range ms {
			short := m.name[len(prefix):]
			if _, seen := homes[short]; !seen {
				if homes == nil {
					homes = map[string]int{}
				}
				homes[short] = index
			}
		}
		return true
	}
	read(0)
	index := 1
	for read(index) {
		index++
	}
	var past []int // the overflow files past the missing name
	for _, name := range d.List() {
		if n, ok := overflowIndex(r.name, name); ok && n-1 > index && n-1 <= maxHomePart {
			past = append(past, n-1)
		}
	}
	slices.Sort(past)
	for _, i := range past {
		read(i)
	}
	return homes
}

// lastOverflowPrefix returns the prefix of the metric names of the last
// run's overflow files in d (overflowPrefix): its registry's name and a
// dot, or none for a NoPrefix run, as its first file's flags say; this
// run's when there is none. A deploy that set or cleared the flag read
// them with this run's, found none of its names, and carried none of
// them: their PMIDs vanished at Start and came back at their declaration
// (TestNoPrefixToggleKeepsOverflowPMIDs).
func (r *Registry) lastOverflowPrefix(d *osfile.Dir) string {
	flags := r.opts.Flags
	l := openLast(d, r.name)
	defer l.close()
	if h, ok := readHead(l.bytes()); ok && h.flags&Process == 0 {
		flags = h.flags
	}
	return overflowPrefix(r.name, flags)
}

// namesOf returns the names of ms.
func namesOf(ms []placeholder) []string {
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = m.name
	}
	return names
}

// maxHomePart bounds the index of an overflow file lastHomes reads: Start
// makes every part up to a name's, each on a cluster of its own, and one
// of ours moved to <file>.100000 made Start fail after 2 s, no cluster
// left for <file>.2048 (TestFarOverflowFileMakesNoParts).
const maxHomePart = maxIndomCluster

// overEmptyIndomsLocked returns the placeholders cs of part p,
// each over the indom of no instances it is written over: a placeholder
// of a metric that had an indom keeps its serial, so PCP describes its
// PMID as before; one whose serial this run's registry gives another
// indom, and one of a singular metric, share an indom of a serial none of
// its indoms has (emptySerial): PCP then fetches no instance of it and
// shows no value. A singular metric's placeholder so has an indom, its
// PMID described so until the program declares it again, which is better
// than what PCP 7 did with one left singular with no value record: each
// fetch of it logged a line in pmcd.log ("Instance -1 of PMID ... not
// handled by fetch callback"). On a cluster above 2047 every placeholder
// stays singular: PCP keeps 11 bits of an indom's cluster, its indom
// would be another cluster's. cs is not changed: a new array when a
// serial is.
func (r *Registry) overEmptyIndomsLocked(p *part, cs []placeholder) []placeholder {
	var shared uint32 // emptySerial, once needed
	out := cs
	for i, c := range cs {
		serial := c.indom
		switch {
		case p.cluster > maxIndomCluster:
			serial = singularIndom
		case serial == 0 || serial > MaxSerial || r.taken.has(serial):
			if shared == 0 {
				shared = emptySerial(&r.taken)
			}
			serial = shared
		}
		if serial != c.indom {
			if &out[0] == &cs[0] {
				out = slices.Clone(cs)
			}
			out[i].indom = serial
		}
	}
	return out
}

// emptySerial is the serial of the indom of no instances that
// placeholders share: the highest free one below the serials derived for
// instruments (1024), those a program chooses itself usually starting
// from 1, else the highest free one; singularIndom when none is free.
func emptySerial(taken *serialSet) uint32 {
	for _, from := range [2]uint32{firstDerivedSerial - 1, MaxSerial} {
		if s := highestFree(taken, from); s != 0 {
			return s
		}
	}
	return singularIndom
}

// lastFile is the file the last run left at a part's name, read in the
// pieces carryLocked needs, its head and its metrics with their names,
// not whole: read whole, a last run's file of 100,000 instances took Start
// over it from 0.24 to 10 ms (BenchmarkStartOverLastRun/over).
type lastFile struct {
	f    *os.File
	size int64
	head []byte // the header and the TOC
}

// openLast opens the file at name in d, nil when it is none or larger
// than a file of ours (maxTombstone). Its caller closes it.
func openLast(d *osfile.Dir, name string) *lastFile {
	f := d.OpenRead(name)
	if f == nil {
		return nil
	}
	l := &lastFile{f: f}
	if st, err := f.Stat(); err == nil && st.Size() <= maxTombstone {
		l.size = st.Size()
		if l.head, _ = l.read(0, min(int(l.size), headerSize+maxTocs*tocSize)); l.head != nil {
			return l
		}
	}
	f.Close()
	return nil
}

func (l *lastFile) close() {
	if l != nil {
		l.f.Close()
	}
}

// bytes returns l's head, nil for no file.
func (l *lastFile) bytes() []byte {
	if l == nil {
		return nil
	}
	return l.head
}

// read returns the n bytes of the file at off, false when they are not
// all in it.
func (l *lastFile) read(off uint64, n int) ([]byte, bool) {
	if off > uint64(l.size) || uint64(l.size)-off < uint64(n) {
		return nil, false
	}
	b := make([]byte, n)
	_, err := l.f.ReadAt(b, int64(off))
	return b, err == nil
}

// fileMetrics returns the metrics of the MMV file l as placeholders, in
// the order of its records, leaving out those whose records hold no name,
// an item out of range, or a type or semantics PCP does not know; ok is
// false when l is no MMV file whose metrics it can read. A version 2
// file's names are read in one piece when they are near one another, as
// a writer lays them out, else one by one.
func fileMetrics(l *lastFile) (ms []placeholder, ok bool) {
	version, toc, ok := readTOC(l.head)
	if !ok || toc[secMetrics] == nil {
		return nil, ok
	}
	size := recordSize(secMetrics, version)
	count, o := tocEntry(toc[secMetrics])
	if count > MaxMetrics {
		return nil, false
	}
	recs, ok := l.read(o, count*size)
	if !ok {
		return nil, false
	}
	nameLen := metricNameLen(version)
	var lo, hi uint64 = math.MaxUint64, 0 // the span of a version 2 file's names
	for j := range count {
		if at := ne.Uint64(recs[j*size:]); version != Version1 && at <= uint64(l.size)-stringSize {
			lo, hi = min(lo, at), max(hi, at+stringSize)
		}
	}
	var names []byte
	if lo < hi && hi-lo <= maxNameSpan {
		names, _ = l.read(lo, int(hi-lo))
	}
	for j := range count {
		rec := recs[j*size:][:size]
		var name string
		var ok bool
		switch at := ne.Uint64(rec); {
		case version == Version1:
			name, ok = cString(rec[:inlineNameLen])
		case names != nil && at >= lo && at-lo <= uint64(len(names))-stringSize:
			name, ok = cString(names[at-lo:][:stringSize])
		default:
			if s, read := l.read(at, stringSize); read {
				name, ok = cString(s)
			}
		}
		body := rec[nameLen:]
		c := placeholder{name: name, item: ne.Uint32(body[metricItemOff:]), typ: Type(ne.Uint32(body[metricTypeOff:])),
			sem: Semantics(ne.Uint32(body[metricSemOff:])), units: Units(ne.Uint32(body[metricUnitsOff:])),
			indom: ne.Uint32(body[metricIndomOff:])}
		if ok && name != "" && c.item >= 1 && c.item <= MaxItem && c.typ.valid() && c.sem.valid() {
			ms = append(ms, c)
		}
	}
	return ms, true
}

// maxNameSpan bounds the span of a file's metric names that fileMetrics
// reads in one piece: 1,023 names of 256 bytes, and some room.
const maxNameSpan = 1 << 20

// carriedItem returns the item of the placeholder of p that m, declared
// in p, takes (carriedFor), else one derived from its name (takeItem).
func (p *part) carriedItem(m *Metric) uint32 {
	if i := p.carriedFor(m); i >= 0 {
		return p.carried[i].item
	}
	return takeItem(m.Name, &p.used)
}

// carriedFor returns the index of the placeholder of p whose item m
// takes, -1 for none: the one of m's name, when it describes m. One of
// m's name that does not is dropped as another name's placeholder is,
// its item reserved, and m takes another: its PMID is not m's.
func (p *part) carriedFor(m *Metric) int {
	return slices.IndexFunc(p.carried, func(c placeholder) bool { return c.name == m.Name && c.describes(m) })
}

// describes reports whether the last run's record c describes m as PCP
// describes a PMID: the same type, semantics and units, and singular or
// over the same indom. A client holds a PMID's descriptor (pmval,
// pmlogger, which writes it once in its archive) and reads every value of
// the PMID by it: a new version of a program that declares a name with
// another descriptor gives it another PMID, or PCP showed a Double gauge
// of 2.25 Kbyte under a Uint64 byte counter's descriptor as 4612248968380809216
// bytes, and pmlogger exited at a vector turned singular
// (TestChangedMetricTakesNewPMID). A singular metric's placeholder
// is written over an indom of no instances, below the derived serials
// unless all of them are taken (emptySerial): a record over such a
// serial describes a singular metric as well as one over it, as nothing
// tells which it was. A program's own indom of a serial below 1024 whose
// metric turns singular so keeps its PMID.
func (c placeholder) describes(m *Metric) bool {
	if c.typ != m.Type || c.sem != m.Semantics || c.units != m.Units {
		return false
	}
	if c.indom == 0 || c.indom > MaxSerial { // singular
		return m.Indom == 0
	}
	return c.indom == m.Indom || m.Indom == 0 && c.indom < firstDerivedSerial
}

// itemHolder names, for an error, what holds item in p, which name may
// not take: a metric, or a placeholder of another name, or an item kept
// for a metric of the last run's file at the part's name; taken is false when the
// item is free for name (none holds it, or name's placeholder does).
func (p *part) itemHolder(item uint32, name string) (holder string, taken bool) {
	if !p.used.has(item) {
		return "", false
	}
	if i := slices.IndexFunc(p.metrics, func(o *metric) bool { return o.item == item }); i >= 0 {
		return quote(p.metrics[i].Name), true
	}
	if i := slices.IndexFunc(p.carried, func(c placeholder) bool { return c.item == item }); i >= 0 {
		if p.carried[i].name == name {
			return "", false
		}
		return quote(p.carried[i].name) + " of the file's last run, which the file keeps with no value", true
	}
	return "a metric of the file's last run, whose PMID no other name takes", true
}

// unreserve undoes the taking of item by a metric of p: the item stays
// taken when it is kept for a metric of the last run (carryLocked).
func (p *part) unreserve(item uint32) {
	if p.reserved == nil || !p.reserved.has(item) {
		p.used.remove(item)
	}
}

// hasItemRoom reports whether p has an item for the metric m: its
// placeholder's (carriedFor), or one free of those its metrics took and
// those kept for the last run's.
func (p *part) hasItemRoom(m *Metric) bool {
	return p.reserved == nil || p.used.count() < MaxItem || p.carriedFor(m) >= 0
}

// uncarryLocked marks for a publication every part that shows a
// placeholder the metric named name, just declared, takes the place of or
// clashes with at a dot (tendCarriedLocked drops it there), and reports
// whether one did.
func (r *Registry) uncarryLocked(name string) bool {
	marked := false
	for _, p := range r.parts {
		if len(p.carried) > 0 && slices.ContainsFunc(p.carried, func(c placeholder) bool { return related(c.name, name) }) {
			p.dirty, marked = true, true
		}
	}
	return marked
}

// mustUncarryLocked reports whether part p shows a placeholder whose name
// this run has declared since, or a name clashing with it, or one over an
// indom whose serial this run has given an indom since.
func (r *Registry) mustUncarryLocked(p *part) bool {
	return len(p.carried) > 0 && slices.ContainsFunc(p.carried, func(c placeholder) bool {
		return !r.nameFreeLocked(c.name, "") || c.indom != singularIndom && r.taken.has(c.indom)
	})
}

// uncarryFirstLocked returns the part of the lowest index that shows a
// placeholder to drop or move (mustUncarryLocked), nil when none does.
func (r *Registry) uncarryFirstLocked() *part {
	for _, p := range r.parts {
		if r.mustUncarryLocked(p) {
			return p
		}
	}
	return nil
}

// inUncarryOrderLocked returns ps with the parts that show a placeholder
// to drop or move first, in the order of their indexes, those of them not
// in ps added: a part waits for them (tendCarriedLocked). ps is not
// changed.
func (r *Registry) inUncarryOrderLocked(ps []*part) []*part {
	var first []*part
	for _, p := range r.parts {
		if r.mustUncarryLocked(p) {
			first = append(first, p)
		}
	}
	if len(first) == 0 {
		return ps
	}
	for _, p := range ps {
		if !slices.Contains(first, p) {
			first = append(first, p)
		}
	}
	return first
}

// carriedElsewhereLocked reports whether a part of the registry other
// than p keeps a placeholder whose name is name or clashes with it at a
// dot.
func (r *Registry) carriedElsewhereLocked(p *part, name string) bool {
	return slices.ContainsFunc(r.parts, func(q *part) bool {
		return q != p && slices.ContainsFunc(q.carried, func(c placeholder) bool { return related(c.name, name) })
	})
}

// tendCarriedLocked keeps the placeholders right before part p is
// published, with the lock held from here to the part's snapshot: p
// drops those whose names this run has declared since (a declaration in
// p took the item), or clashes with at a dot, their items reserved, and
// moves those over an indom whose serial this run has given an indom
// since to another empty one (overEmptyIndomsLocked). A publication that
// fails puts them back (publishPartLocked, publishPartUnlocking): a
// placeholder leaves the file only with one that succeeds, so that a
// declaration undone after its publication failed (a full disk;
// undeclareMetric) leaves the placeholder, and the item its name takes
// again, as they were. A part waits (later) while a part of a lower
// index, or another when it has none to tend itself, still shows one to
// drop or move: its names may be theirs, and that part, marked dirty, is
// published first (the publications take those parts first:
// inUncarryOrderLocked). The part of the lowest index never waits, so
// no two wait for each other.
func (r *Registry) tendCarriedLocked(p *part) (later bool) {
	first := r.uncarryFirstLocked()
	if first == nil {
		return false
	}
	if first != p {
		first.dirty = true
		return true
	}
	kept := slices.DeleteFunc(slices.Clone(p.carried), func(c placeholder) bool { return !r.nameFreeLocked(c.name, "") })
	was := p.carried
	p.carried = r.overEmptyIndomsLocked(p, kept)
	p.emptied = emptiedBy(p.emptied, was, p.carried)
	return false
}

// emptiedBy returns emptied with the serials of the indoms of no
// instances the placeholders was were written over and now are not (now),
// a new array when it adds one: the file keeps them (keptEmptyIndoms).
func emptiedBy(emptied []uint32, was, now []placeholder) []uint32 {
	before, after := carriedIndoms(nil, was), carriedIndoms(nil, now)
	out := emptied
	for _, s := range before {
		if !slices.Contains(after, s) && !slices.Contains(out, s) {
			out = append(slices.Clip(out), s)
		}
	}
	return out
}

// tendLeftoversLocked keeps what Start kept of the last run's files right
// before part p is published: the parts' placeholders, the overflow
// files' tombstones. later says p is to wait for another part's
// publication, dirty and due (tendCarriedLocked); a failure is the
// publication's (pubErr).
func (r *Registry) tendLeftoversLocked(p *part) (later bool, err error) {
	if r.tendCarriedLocked(p) {
		return true, nil
	}
	if err := r.tendTombstonesLocked(); err != nil {
		r.pubErr = err
		return false, err
	}
	return false, nil
}
