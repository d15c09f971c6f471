package mmv

import "os"

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

// fileLayout places the sections of a file. It is the one place where section
// offsets and the file size are computed.
type fileLayout struct {
	version int
	order   []section          // TOC order, only the sections present
	count   [numSections]int   // records per section
	offset  [numSections]int64 // section offsets
	size    int64
}

var (
	// libpcp_mmv's order of sections, in the file and in the TOC; every
	// file keeps this TOC order.
	libpcpOrder = []section{secIndoms, secInstances, secMetrics, secValues, secStrings, secLabels}
	// A grown file puts its values last, so that they keep their addresses
	// while the sections before them grow, and have room to grow after.
	grownOrder = []section{secIndoms, secInstances, secMetrics, secStrings, secLabels, secValues}
)

// growth places the values of a grown file: at an offset congruent to
// phase modulo the page size, so the file can be mapped with its values at
// the addresses they had, with room for capacity values.
type growth struct {
	phase    int64
	capacity int
}

var pageSize = int64(os.Getpagesize())

func pageRound(n int64) int64 { return (n + pageSize - 1) / pageSize * pageSize }

// newFileLayout lays sections out back to back after the header and TOC,
// leaving out the sections libpcp_mmv leaves out: indoms and instances when
// there is no indom, strings and labels when empty. With g nil the sections
// follow libpcp_mmv's order; with g they follow grownOrder.
func newFileLayout(version int, count [numSections]int, g *growth) *fileLayout {
	l := &fileLayout{version: version, count: count}
	present := func(s section) bool {
		switch s {
		case secIndoms, secInstances:
			return count[secIndoms] > 0
		case secStrings, secLabels:
			return count[s] > 0
		}
		return true
	}
	for _, s := range libpcpOrder {
		if present(s) {
			l.order = append(l.order, s)
		}
	}
	place := libpcpOrder
	if g != nil {
		place = grownOrder
	}
	off := int64(headerSize + tocSize*len(l.order))
	for _, s := range place {
		if !present(s) {
			continue
		}
		n := count[s]
		if s == secValues && g != nil {
			off += ((g.phase-off)%pageSize + pageSize) % pageSize
			n = g.capacity
		}
		l.offset[s] = off
		off += int64(n * recordSize(s, version))
	}
	l.size = off
	if g != nil {
		l.size = pageRound(off)
	}
	return l
}

// record returns the offset of record i of section s.
func (l *fileLayout) record(s section, i int) int64 {
	return l.offset[s] + int64(i*recordSize(s, l.version))
}

// putTOC writes the TOC entries after the header.
func (l *fileLayout) putTOC(b []byte) {
	for i, s := range l.order {
		e := b[headerSize+tocSize*i:]
		ne.PutUint32(e[0:], uint32(s))
		ne.PutUint32(e[4:], uint32(l.count[s]))
		ne.PutUint64(e[8:], uint64(l.offset[s]))
	}
}

// plan is one part of a registry laid out as a file: the layout and the
// offsets of the records that other records point at.
type plan struct {
	*fileLayout
	labels     []*label
	indomPos   map[*indom]int // position of each of the part's indoms
	indomOff   []int64        // per indom
	firstInst  []int64        // per indom: its first instance slot, even when it has none
	instOff    [][]int64      // per indom, per instance
	metricOff  []int64        // per metric
	instName   [][]int64      // v2/v3: per indom, per instance
	metricName []int64        // v2/v3: per metric
	valueStr   []int64        // per value slot: the string slot of a String value
	metricHelp [][2]int64
	indomHelp  [][2]int64
}

// newPlan lays part p out as libpcp_mmv does (see the package's format
// notes), or as a grown file when g is not nil: records in declaration
// order, values in slot order, and string slots for instance names, metric
// names, string values, metric help and indom help, in that order.
func (r *Registry) newPlan(p *part, version int, g *growth) *plan {
	pl := &plan{labels: r.labelsOf(p), indomPos: make(map[*indom]int, len(p.indoms))}
	var count [numSections]int
	count[secIndoms] = len(p.indoms)
	for i, in := range p.indoms {
		count[secInstances] += len(in.Instances)
		pl.indomPos[in] = i
	}
	count[secMetrics] = len(p.metrics)
	count[secValues] = len(p.slots)
	count[secLabels] = len(pl.labels)

	// Strings are counted by handing out their slots; -1 is none.
	var slots int64
	slot := func(need bool) int64 {
		if !need {
			return -1
		}
		slots++
		return slots - 1
	}
	v2 := version != Version1
	pl.instName = make([][]int64, len(p.indoms))
	for i, in := range p.indoms {
		names := make([]int64, len(in.Instances))
		for j := range names {
			names[j] = slot(v2)
		}
		pl.instName[i] = names
	}
	pl.metricName = make([]int64, len(p.metrics))
	for i := range p.metrics {
		pl.metricName[i] = slot(v2)
	}
	pl.valueStr = make([]int64, len(p.slots))
	for i, o := range p.slots {
		pl.valueStr[i] = slot(o.m.Type == String)
	}
	pl.metricHelp = make([][2]int64, len(p.metrics))
	for i, m := range p.metrics {
		pl.metricHelp[i] = [2]int64{slot(m.ShortHelp != ""), slot(m.LongHelp != "")}
	}
	pl.indomHelp = make([][2]int64, len(p.indoms))
	for i, in := range p.indoms {
		pl.indomHelp[i] = [2]int64{slot(in.ShortHelp != ""), slot(in.LongHelp != "")}
	}
	count[secStrings] = int(slots)
	pl.fileLayout = newFileLayout(version, count, g)

	// Turn string slot numbers into offsets (0 for none), and place the
	// other records.
	str := func(i *int64) {
		if *i < 0 {
			*i = 0
		} else {
			*i = pl.record(secStrings, int(*i))
		}
	}
	for _, names := range pl.instName {
		for j := range names {
			str(&names[j])
		}
	}
	for i := range pl.metricName {
		str(&pl.metricName[i])
		str(&pl.metricHelp[i][0])
		str(&pl.metricHelp[i][1])
	}
	for i := range pl.valueStr {
		str(&pl.valueStr[i])
	}
	for i := range pl.indomHelp {
		str(&pl.indomHelp[i][0])
		str(&pl.indomHelp[i][1])
	}
	inst := 0
	pl.indomOff = make([]int64, len(p.indoms))
	pl.firstInst = make([]int64, len(p.indoms))
	pl.instOff = make([][]int64, len(p.indoms))
	for i, in := range p.indoms {
		pl.indomOff[i] = pl.record(secIndoms, i)
		pl.firstInst[i] = pl.record(secInstances, inst)
		offs := make([]int64, len(in.Instances))
		for j := range offs {
			offs[j] = pl.record(secInstances, inst)
			inst++
		}
		pl.instOff[i] = offs
	}
	pl.metricOff = make([]int64, len(p.metrics))
	for i := range p.metrics {
		pl.metricOff[i] = pl.record(secMetrics, i)
	}
	return pl
}

// encode writes the whole file of part p into b except gen2, which the
// caller stores last, and the values themselves, which stay zero.
func (r *Registry) encode(p *part, pl *plan, b []byte, gen uint64, pid int32) {
	putHeader(b, pl.version, len(pl.order), p.flags(r), pid, p.cluster, gen)
	pl.putTOC(b)
	at := func(off int64) []byte { return b[off:] }
	for i, in := range p.indoms {
		putIndom(at(pl.indomOff[i]), in.Serial, uint32(len(in.Instances)), uint64(pl.firstInst[i]),
			uint64(pl.indomHelp[i][0]), uint64(pl.indomHelp[i][1]))
		putStrings(b, pl.indomHelp[i][:], in.ShortHelp, in.LongHelp)
		for j, inst := range in.Instances {
			putInstance(at(pl.instOff[i][j]), pl.version, uint64(pl.indomOff[i]), inst.ID, inst.Name, uint64(pl.instName[i][j]))
			putStrings(b, pl.instName[i][j:j+1], inst.Name)
		}
	}
	for i, m := range p.metrics {
		indom := uint32(singularIndom)
		if m.indom != nil {
			indom = m.Indom
		}
		name := p.metricName(r, m)
		putMetric(at(pl.metricOff[i]), pl.version, name, uint64(pl.metricName[i]), metricRecord{
			item: m.item, typ: m.Type, sem: m.Semantics, units: m.Units, indom: indom,
			shortText: uint64(pl.metricHelp[i][0]), helpText: uint64(pl.metricHelp[i][1]),
		})
		putStrings(b, pl.metricName[i:i+1], name)
		putStrings(b, pl.metricHelp[i][:], m.ShortHelp, m.LongHelp)
	}
	for s, o := range p.slots {
		var instOff int64
		if o.m.indom != nil {
			instOff = pl.instOff[pl.indomPos[o.m.indom]][o.inst]
		}
		putValue(at(pl.record(secValues, s)), uint64(pl.metricOff[o.m.index]), uint64(instOff), uint64(pl.valueStr[s]))
	}
	for i, l := range pl.labels {
		identity, instance := l.target(p)
		putLabel(at(pl.record(secLabels, i)), l.kind, l.Optional, identity, instance, l.payload)
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
