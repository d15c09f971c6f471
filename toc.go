package mmv

// The table of contents follows the header: one 16-byte entry per section,
// giving its type, record count and offset.
const tocSize = 16

// section is a TOC entry type, as PCP numbers them.
type section int32

const (
	secIndoms    section = 1
	secInstances section = 2
	secMetrics   section = 3
	secValues    section = 4
	secStrings   section = 5
	secLabels    section = 6
	numSections          = 7 // one past the last type, for arrays indexed by section
)

// recordSize is the size of one record of a section in a file version.
func recordSize(s section, version int) int {
	switch s {
	case secIndoms:
		return indomSize
	case secInstances:
		if version == Version1 {
			return instanceSizeV1
		}
		return instanceSizeV2
	case secMetrics:
		if version == Version1 {
			return metricSizeV1
		}
		return metricSizeV2
	case secValues:
		return valueSize
	case secStrings:
		return stringSize
	case secLabels:
		return labelSize
	}
	return 0
}

// layout places the sections of a file. It is the one place where section
// offsets and the file size are computed.
type layout struct {
	version int
	order   []section          // TOC order, only the sections present
	count   [numSections]int   // records per section
	offset  [numSections]int64 // section offsets
	size    int64
}

// newLayout lays sections out back to back after the header and TOC, in
// the order libpcp_mmv uses, leaving out the sections it leaves out: indoms
// and instances when there is no indom, strings and labels when empty.
func newLayout(version int, count [numSections]int) *layout {
	l := &layout{version: version, count: count}
	for _, s := range []section{secIndoms, secInstances, secMetrics, secValues, secStrings, secLabels} {
		switch {
		case s == secIndoms || s == secInstances:
			if count[secIndoms] == 0 {
				continue
			}
		case s == secStrings || s == secLabels:
			if count[s] == 0 {
				continue
			}
		}
		l.order = append(l.order, s)
	}
	off := int64(headerSize + tocSize*len(l.order))
	for _, s := range l.order {
		l.offset[s] = off
		off += int64(count[s] * recordSize(s, version))
	}
	l.size = off
	return l
}

// record returns the offset of record i of section s.
func (l *layout) record(s section, i int) int64 {
	return l.offset[s] + int64(i*recordSize(s, l.version))
}

// putTOC writes the TOC entries after the header.
func (l *layout) putTOC(b []byte) {
	for i, s := range l.order {
		e := b[headerSize+tocSize*i:]
		ne.PutUint32(e[0:], uint32(s))
		ne.PutUint32(e[4:], uint32(l.count[s]))
		ne.PutUint64(e[8:], uint64(l.offset[s]))
	}
}

// plan is a registry laid out as a file: the layout and the offsets of the
// records that records and handles point at.
type plan struct {
	*layout
	items      []uint32  // per metric
	indomOff   []int64   // per indom
	firstInst  []int64   // per indom: its first instance slot, even when it has none
	instOff    [][]int64 // per indom, per instance
	metricOff  []int64   // per metric
	valueOff   [][]int64 // per metric, per instance (one when singular)
	instName   [][]int64 // v2/v3: per indom, per instance
	metricName []int64   // v2/v3: per metric
	valueStr   [][]int64 // per metric: the string slots of String values
	metricHelp [][2]int64
	indomHelp  [][2]int64
}

// newPlan lays the registry out as libpcp_mmv does (see the package's
// format notes): sections in TOC order, records in declaration order, and
// string slots for instance names, metric names, string values, metric
// help and indom help, in that order.
func (r *Registry) newPlan(version int) *plan {
	var count [numSections]int
	count[secIndoms] = len(r.indoms)
	for _, in := range r.indoms {
		count[secInstances] += len(in.Instances)
	}
	count[secMetrics] = len(r.metrics)
	for _, m := range r.metrics {
		count[secValues] += m.valueCount()
	}
	count[secLabels] = len(r.labels)

	p := &plan{items: assignItems(r.metrics)}
	// Strings are counted by handing out their slots.
	var slots int
	slot := func(need bool) int64 {
		if !need {
			return -1
		}
		slots++
		return int64(slots - 1)
	}
	v2 := version != Version1
	for _, in := range r.indoms {
		names := make([]int64, len(in.Instances))
		for j := range names {
			names[j] = slot(v2)
		}
		p.instName = append(p.instName, names)
	}
	for range r.metrics {
		p.metricName = append(p.metricName, slot(v2))
	}
	for _, m := range r.metrics {
		strs := make([]int64, m.valueCount())
		for j := range strs {
			strs[j] = slot(m.Type == String)
		}
		p.valueStr = append(p.valueStr, strs)
	}
	for _, m := range r.metrics {
		p.metricHelp = append(p.metricHelp, [2]int64{slot(m.ShortHelp != ""), slot(m.LongHelp != "")})
	}
	for _, in := range r.indoms {
		p.indomHelp = append(p.indomHelp, [2]int64{slot(in.ShortHelp != ""), slot(in.LongHelp != "")})
	}
	count[secStrings] = slots
	p.layout = newLayout(version, count)

	// Turn slot numbers into offsets, and place the other records.
	str := func(i int64) int64 {
		if i < 0 {
			return 0
		}
		return p.record(secStrings, int(i))
	}
	for _, names := range p.instName {
		for j := range names {
			names[j] = str(names[j])
		}
	}
	for i := range p.metricName {
		p.metricName[i] = str(p.metricName[i])
		p.metricHelp[i] = [2]int64{str(p.metricHelp[i][0]), str(p.metricHelp[i][1])}
		for j := range p.valueStr[i] {
			p.valueStr[i][j] = str(p.valueStr[i][j])
		}
	}
	for i := range p.indomHelp {
		p.indomHelp[i] = [2]int64{str(p.indomHelp[i][0]), str(p.indomHelp[i][1])}
	}
	inst := 0
	for i, in := range r.indoms {
		p.indomOff = append(p.indomOff, p.record(secIndoms, i))
		p.firstInst = append(p.firstInst, p.record(secInstances, inst))
		offs := make([]int64, len(in.Instances))
		for j := range offs {
			offs[j] = p.record(secInstances, inst)
			inst++
		}
		p.instOff = append(p.instOff, offs)
	}
	val := 0
	for i, m := range r.metrics {
		p.metricOff = append(p.metricOff, p.record(secMetrics, i))
		offs := make([]int64, m.valueCount())
		for j := range offs {
			offs[j] = p.record(secValues, val)
			val++
		}
		p.valueOff = append(p.valueOff, offs)
	}
	return p
}

// encode writes the whole file into b except gen2, which the caller
// stores last.
func (r *Registry) encode(p *plan, b []byte, gen uint64, pid int32) {
	putHeader(b, p.version, len(p.order), r.opts.Flags, pid, r.opts.Cluster, gen)
	p.putTOC(b)
	at := func(off int64) []byte { return b[off:] }
	for i, in := range r.indoms {
		putIndom(at(p.indomOff[i]), in.Serial, uint32(len(in.Instances)), uint64(p.firstInst[i]),
			uint64(p.indomHelp[i][0]), uint64(p.indomHelp[i][1]))
		putStrings(b, []int64{p.indomHelp[i][0], p.indomHelp[i][1]}, in.ShortHelp, in.LongHelp)
		for j, inst := range in.Instances {
			putInstance(at(p.instOff[i][j]), p.version, uint64(p.indomOff[i]), inst.ID, inst.Name, uint64(p.instName[i][j]))
			putStrings(b, []int64{p.instName[i][j]}, inst.Name)
		}
	}
	for i, m := range r.metrics {
		indom := uint32(singularIndom)
		if m.indom != nil {
			indom = m.Indom
		}
		putMetric(at(p.metricOff[i]), p.version, m.Name, uint64(p.metricName[i]), metricRecord{
			item: p.items[i], typ: m.Type, sem: m.Semantics, units: m.Units, indom: indom,
			shortText: uint64(p.metricHelp[i][0]), helpText: uint64(p.metricHelp[i][1]),
		})
		putStrings(b, []int64{p.metricName[i], p.metricHelp[i][0], p.metricHelp[i][1]}, m.Name, m.ShortHelp, m.LongHelp)
		for j, off := range p.valueOff[i] {
			var instOff int64
			if m.indom != nil {
				instOff = p.instOff[m.indom.index][j]
			}
			putValue(at(off), uint64(p.metricOff[i]), uint64(instOff), uint64(p.valueStr[i][j]))
		}
	}
	for i, l := range r.labels {
		identity, instance := r.labelTarget(l, p)
		putLabel(at(p.record(secLabels, i)), l.kind, l.Optional, identity, instance, l.payload)
	}
}

// putStrings fills the string slots at offs (zero: no slot) with texts.
func putStrings(b []byte, offs []int64, texts ...string) {
	for i, off := range offs {
		if off != 0 {
			putString(b[off:], texts[i])
		}
	}
}
