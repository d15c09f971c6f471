package mmv

import (
	"slices"

	"github.com/gopcp/mmv/internal/reuse"
)

// The encoder: a part of a registry laid out as a file (a plan, placed by
// the layout of toc.go) and written record by record.

// plan is one part of a registry laid out as a file: the layout and the
// offsets of the records that other records point at.
type plan struct {
	*fileLayout
	labels      []label
	indomOff    []int64   // per indom
	firstInst   []int64   // per indom: its first instance record, even when it has none
	instOff     [][]int64 // per indom, per instance
	metricOff   []int64   // per metric
	metricInst  [][]int64 // per metric: its indom's instOff, nil when singular
	instName    [][]int64 // v2/v3: per indom, per instance; nil in v1, whose names are inline
	metricName  []int64   // v2/v3: per metric
	carriedName []int64   // v2/v3: per placeholder of the last run's metrics (carry.go)
	valueStr    []int64   // per value slot: the string record of a String value; empty without String metrics
	metricHelp  [][2]int64
	indomHelp   [][2]int64
	indomAt     map[*indom]int   // index in the part's indoms
	nameStr     map[string]int64 // the string record of a name that indoms share (indom.auto)
	helpStr     map[string]int64 // of a help text their metrics share
	// tailStr is nameStr of the names of instances an indom derives
	// (indom.tails), by their two parts: as one string, each would be made
	// at every publication. A derived name is not shared with an equal one
	// stored whole (a counter vector's of labels route and le can equal a
	// histogram vector's bucket's): the file then holds the text twice,
	// each record read as it is.
	tailStr map[[2]string]int64
	// emptyIndoms are the serials of the indoms of no instances that the
	// placeholders are written over (carry.go), each once, after the
	// part's indoms; emptyAt is where their instances would start.
	emptyIndoms []uint32
	emptyAt     int64
}

// plans keeps a plan for the next one, as the file layer keeps its
// buffer (reuse.Slot, one for the process): a plan's arrays are as long as
// the part's instances and values, and a growth step that made them anew
// would allocate in proportion to the file.
var plans reuse.Slot[*plan]

// labelArrays keeps a publication's array of labels for the next, as
// plans keeps a plan: a publication copies the labels of its file into
// one (model.labelsOf), where a vector's instance labels were an object
// each.
var labelArrays reuse.Slot[[]label]

// labelArray returns an empty array for the labels of a file, which
// putLabels gives back once the file is written.
func labelArray() []label {
	ls, _ := labelArrays.Get()
	return ls[:0]
}

// putLabels keeps ls for the next labelArray.
func putLabels(ls []label) {
	clear(ls) // their names and texts, for the garbage collector
	labelArrays.Put(ls[:0])
}

// sized returns s with n elements, reusing its array when it is big
// enough, else growing it as append does (the instances of an indom come
// and go); the caller sets every element.
func sized[T any](s []T, n int) []T { return slices.Grow(s[:0], n)[:n] }

// newPlan lays part p out as libpcp_mmv does (see the package's format
// notes), or as a grown file when g is not nil: records in declaration
// order, values in slot order, and string records for instance names, metric
// names, string values, metric help and indom help, in that order; labels
// are the file's (model.labelsOf). It reads only p: a publication lays out
// its snapshot without the registry's lock (publishPartUnlocking). The
// plan is the caller's to give back with putPlan once the file is written.
func newPlan(p *part, labels []label, version int, g *growth) *plan {
	pl, _ := plans.Get()
	if pl == nil {
		pl = new(plan)
	}
	pl.labels = labels
	pl.emptyIndoms = keptEmptyIndoms(carriedIndoms(pl.emptyIndoms[:0], p.carried), p)
	var count [numSections]int
	count[secIndoms] = len(p.indoms) + len(pl.emptyIndoms)
	for _, in := range p.indoms {
		count[secInstances] += in.live
	}
	count[secMetrics] = len(p.metrics) + len(p.carried)
	count[secValues] = p.slots.len()
	count[secLabels] = len(pl.labels)

	// String records are counted by handing out their numbers; -1 is none.
	var strs int64
	str := func(need bool) int64 {
		if !need {
			return -1
		}
		strs++
		return strs - 1
	}
	v2 := version != Version1
	// The instances of the indoms the registry made for instruments share
	// one string record per name: 1,000 vectors of the same 10 label
	// values need 10 records, not 10,000 (docs/design.md, "What a
	// vector's values take in the file"). So do the help texts of the
	// metrics over them. Indoms and metrics the program declares keep a
	// record per text, as libpcp_mmv writes them.
	//
	// Names are unique within an indom, so an indom's names are looked up
	// only when an earlier indom of their kind (whole, or derived: tails)
	// may hold them, and kept for sharing only when a later one may share
	// them: a part of one vector (its limit raised, its values filling the
	// file) hashes none of its names, where each name of a growth step
	// made a map insert, a tenth of a step of 10,000; of two vectors, the
	// first's are kept without a lookup and the last's looked up alone.
	if pl.nameStr == nil {
		pl.nameStr, pl.helpStr, pl.tailStr = map[string]int64{}, map[string]int64{}, map[[2]string]int64{}
	}
	var left, seen [2]int // auto indoms of each kind: all, laid out
	for _, in := range p.indoms {
		if in.auto {
			left[nameKind(in)]++
		}
	}
	pl.instName = sized(pl.instName, len(p.indoms))
	for i, in := range p.indoms {
		if !v2 {
			pl.instName[i] = nil
			continue
		}
		var find, keep bool
		if k := nameKind(in); in.auto {
			seen[k]++
			find, keep = seen[k] > 1, seen[k] < left[k]
		}
		names := sized(pl.instName[i], in.count())
		for j, inst := range in.all() {
			names[j] = -1
			switch {
			case in.isRemoved(j):
			case !in.auto:
				names[j] = str(true)
			case in.tails == nil:
				names[j] = sharedRecord(pl.nameStr, inst.head, find, keep, str)
			default:
				names[j] = sharedRecord(pl.tailStr, [2]string{inst.head, inst.tail}, find, keep, str)
			}
		}
		pl.instName[i] = names
	}
	pl.metricName = sized(pl.metricName, len(p.metrics))
	for i := range p.metrics {
		pl.metricName[i] = str(v2)
	}
	pl.carriedName = sized(pl.carriedName, len(p.carried))
	for i := range p.carried {
		pl.carriedName[i] = str(v2)
	}
	pl.valueStr = pl.valueStr[:0]
	if p.strings > 0 {
		pl.valueStr = sized(pl.valueStr, p.slots.len())
		for i := range p.slots.len() {
			pl.valueStr[i] = str(p.typeOf(i) == String)
		}
	}
	pl.metricHelp = sized(pl.metricHelp, len(p.metrics))
	for i, m := range p.metrics {
		if m.indom == nil || !m.indom.auto {
			pl.metricHelp[i] = [2]int64{str(m.ShortHelp != ""), str(m.LongHelp != "")}
			continue
		}
		// An instrument's: its help shares a record with the same text of
		// another's, as instance names do.
		for k, text := range [2]string{m.ShortHelp, m.LongHelp} {
			pl.metricHelp[i][k] = -1
			if text != "" {
				pl.metricHelp[i][k] = sharedRecord(pl.helpStr, text, true, true, str)
			}
		}
	}
	pl.indomHelp = sized(pl.indomHelp, len(p.indoms))
	for i, in := range p.indoms {
		pl.indomHelp[i] = [2]int64{str(in.ShortHelp != ""), str(in.LongHelp != "")}
	}
	count[secStrings] = int(strs)
	pl.fileLayout = newFileLayout(version, count, p.stride, g)

	// Turn string record numbers into offsets (0 for none), and place the
	// other records.
	at := func(i *int64) {
		if *i < 0 {
			*i = 0
		} else {
			*i = pl.record(secStrings, int(*i))
		}
	}
	for _, names := range pl.instName {
		for j := range names {
			at(&names[j])
		}
	}
	for i := range pl.metricName {
		at(&pl.metricName[i])
		at(&pl.metricHelp[i][0])
		at(&pl.metricHelp[i][1])
	}
	for i := range pl.carriedName {
		at(&pl.carriedName[i])
	}
	for i := range pl.valueStr {
		at(&pl.valueStr[i])
	}
	for i := range pl.indomHelp {
		at(&pl.indomHelp[i][0])
		at(&pl.indomHelp[i][1])
	}
	next, size := pl.record(secInstances, 0), int64(recordSize(secInstances, version))
	pl.indomOff = sized(pl.indomOff, len(p.indoms))
	pl.firstInst = sized(pl.firstInst, len(p.indoms))
	pl.instOff = sized(pl.instOff, len(p.indoms))
	for i, in := range p.indoms {
		pl.indomOff[i] = pl.record(secIndoms, i)
		pl.firstInst[i] = next
		offs := sized(pl.instOff[i], in.count())
		for j := range offs {
			offs[j] = 0
			if !in.isRemoved(j) {
				offs[j] = next
				next += size
			}
		}
		pl.instOff[i] = offs
	}
	pl.emptyAt = next
	// By a map, not a search per metric: 1,000 vectors, each a metric
	// over an indom of its own, made that a million compares.
	if pl.indomAt == nil {
		pl.indomAt = map[*indom]int{}
	}
	clear(pl.indomAt)
	for i, in := range p.indoms {
		pl.indomAt[in] = i
	}
	pl.metricOff = sized(pl.metricOff, len(p.metrics))
	pl.metricInst = sized(pl.metricInst, len(p.metrics))
	for i, m := range p.metrics {
		pl.metricOff[i] = pl.record(secMetrics, i)
		pl.metricInst[i] = nil
		if m.indom != nil {
			pl.metricInst[i] = pl.instOff[pl.indomAt[m.indom]]
		}
	}
	return pl
}

// putPlan keeps pl for the next plan.
func putPlan(pl *plan) {
	pl.labels = nil
	clear(pl.indomAt) // the indoms and names, for the garbage collector
	clear(pl.nameStr)
	clear(pl.helpStr)
	clear(pl.tailStr)
	plans.Put(pl)
}

// encode writes the whole file of part p into b, zeroed, except gen2, which the
// caller stores last, and the values themselves, which stay zero.
func (r *Registry) encode(p *part, pl *plan, b []byte, gen uint64, pid int32) {
	putHeader(b, pl.version, len(pl.order), p.flags, pid, p.cluster, gen)
	pl.putTOC(b)
	at := func(off int64) []byte { return b[off:] }
	for i, in := range p.indoms {
		putIndom(at(pl.indomOff[i]), in.Serial, uint32(in.live), uint64(pl.firstInst[i]),
			uint64(pl.indomHelp[i][0]), uint64(pl.indomHelp[i][1]))
		putStrings(b, pl.indomHelp[i][:], in.ShortHelp, in.LongHelp)
		offs, names, indomOff := pl.instOff[i], pl.instName[i], uint64(pl.indomOff[i])
		for j, inst := range in.all() {
			if in.isRemoved(j) {
				continue
			}
			var nameOff int64 // none in v1: the name inline
			if names != nil {
				nameOff = names[j]
				putName(b, nameOff, inst.head, inst.tail)
			}
			putInstance(at(offs[j]), pl.version, indomOff, inst.id, inst.head, inst.tail, uint64(nameOff))
		}
	}
	for i, m := range p.metrics {
		indom := uint32(singularIndom)
		if m.indom != nil {
			indom = m.Indom
		}
		name := p.metricName(m)
		putMetric(at(pl.metricOff[i]), pl.version, name, uint64(pl.metricName[i]), metricRecord{
			item: m.item, typ: m.Type, sem: m.Semantics, units: m.Units, indom: indom,
			shortText: uint64(pl.metricHelp[i][0]), helpText: uint64(pl.metricHelp[i][1]),
		})
		putStrings(b, pl.metricName[i:i+1], name)
		putStrings(b, pl.metricHelp[i][:], m.ShortHelp, m.LongHelp)
	}
	// The last run's metrics this file keeps with no value: a metric
	// record over an indom of no instances, no value record, no help
	// (carry.go).
	for k, serial := range pl.emptyIndoms {
		putIndom(at(pl.record(secIndoms, len(p.indoms)+k)), serial, 0, uint64(pl.emptyAt), 0, 0)
	}
	for i, c := range p.carried {
		name := p.prefix + c.name // as the part writes its metrics' (part.metricName)
		putMetric(at(pl.record(secMetrics, len(p.metrics)+i)), pl.version, name, uint64(pl.carriedName[i]), metricRecord{
			item: c.item, typ: c.typ, sem: c.sem, units: c.units, indom: c.indom,
		})
		putStrings(b, pl.carriedName[i:i+1], name)
	}
	values := b[pl.offset[secValues]:]
	for s, o := range p.slots.all() {
		rec := values[p.stride.at(s):][:valueSize]
		if o.m == 0 { // a removed value's record: no metric, no instance
			putValue(rec, 0, 0, 0)
			continue
		}
		m := o.m - 1
		var instOff int64
		if insts := pl.metricInst[m]; insts != nil {
			instOff = insts[o.inst]
		}
		var str int64
		if len(pl.valueStr) > 0 {
			str = pl.valueStr[s]
		}
		putValue(rec, uint64(pl.metricOff[m]), uint64(instOff), uint64(str))
	}
	for i := range pl.labels {
		l := &pl.labels[i]
		identity, instance := l.target(p)
		putLabel(at(pl.record(secLabels, i)), identity, instance, l)
	}
}

// sharedRecord returns the number of the string record m holds for key,
// when find and it holds one, else a new one str numbers, which m then
// holds when keep.
func sharedRecord[K comparable](m map[K]int64, key K, find, keep bool, str func(bool) int64) int64 {
	if find {
		if n, ok := m[key]; ok {
			return n
		}
	}
	n := str(true)
	if keep {
		m[key] = n
	}
	return n
}

// carriedIndoms appends to serials the serial of each indom that the
// placeholders cs are written over, once each, in their order: none for
// a singular placeholder.
func carriedIndoms(serials []uint32, cs []placeholder) []uint32 {
	var seen serialSet
	for _, c := range cs {
		if c.indom != singularIndom && !seen.has(c.indom) {
			seen.add(c.indom)
			serials = append(serials, c.indom)
		}
	}
	return serials
}

// keptEmptyIndoms appends to serials, the empty indoms of p's
// placeholders (carriedIndoms), each serial of p.emptied that is none of
// them and none of p's indoms': an indom a placeholder was written over
// stays in the file once it is not. A singular metric's placeholder is
// described over such an indom, and a client that looked the metric up
// then (pmval, or a pmlogger started meanwhile) holds that indom in its
// descriptor: once the program declared the metric, singular again, PCP
// 6.0.3's pmval and pmlogger asked for the indom at its first value, and
// exited when it was gone ("pmGetInDom(...): Unknown or illegal instance
// domain identifier"; TestDeclaredPlaceholderKeepsClients).
func keptEmptyIndoms(serials []uint32, p *part) []uint32 {
	for _, s := range p.emptied {
		if !slices.Contains(serials, s) && !slices.ContainsFunc(p.indoms, func(in *indom) bool { return in.Serial == s }) {
			serials = append(serials, s)
		}
	}
	return serials
}

// nameKind is the kind of in's names, as newPlan shares them: whole (0)
// or derived, a head and a tail (1).
func nameKind(in *indom) int {
	if in.tails != nil {
		return 1
	}
	return 0
}

// putStrings fills the string records at offs (zero: none) with texts. b
// is zeroed, as encode's is: the texts are copied, the zeros after them
// left as they are (putString clears them in a live file).
func putStrings(b []byte, offs []int64, texts ...string) {
	for i, off := range offs {
		if off != 0 {
			copy(b[off:off+MaxStringLen], texts[i])
		}
	}
}

// putName is putStrings of an instance's name, in its two parts, at off.
func putName(b []byte, off int64, head, tail string) {
	if off != 0 {
		copyName(b[off:off+MaxStringLen], head, tail)
	}
}

// versionWith chooses the format version of p's file, which has the
// given number of labels, as libpcp_mmv does, or checks the forced one.
func (r *Registry) versionWith(p *part, labels int) (int, error) {
	need := Version1
	if labels > 0 {
		need = Version3 // whatever the names: a publication asks with the lock held
	}
	for _, m := range p.metrics {
		if need == Version1 && len(p.prefix)+len(m.Name) > maxV1Name {
			need = Version2
		}
	}
	for _, c := range p.carried {
		if len(p.prefix)+len(c.name) > maxV1Name {
			need = Version2
		}
	}
	for _, in := range p.indoms {
		if need != Version1 {
			break
		}
		for j, inst := range in.all() {
			if len(inst.head)+len(inst.tail) > maxV1Name && !in.isRemoved(j) {
				need = Version2
				break
			}
		}
	}
	switch v := r.opts.Version; {
	case v == 0:
		return need, nil
	case v != Version2 && v != Version3:
		return 0, errorf(ErrRange, subject("file", p.name), "version %d: only 2 or 3 can be forced", v)
	case v < need:
		return 0, errorf(ErrRange, subject("file", p.name), "version %d is forced but labels need version 3", v)
	default:
		return v, nil
	}
}

// target returns the identity and internal instance of a label's record
// in part p: the cluster, the metric's item, or the indom serial and
// instance.
func (l *label) target(p *part) (identity uint32, instance int32) {
	switch l.kind {
	case labelCluster:
		return p.cluster, labelNoInstance
	case labelItem:
		return l.metric.item, labelNoInstance
	case labelIndom:
		return l.serial, labelNoInstance
	}
	return l.serial, l.instance
}
