package mmv

import "os"

// The table of contents follows the header: one 16-byte entry per section,
// giving its type, record count and offset.
const tocSize = 16

// maxTocs is the most TOC entries mmv reads of another writer's file
// (readTOC): no writer makes more than the six sections.
const maxTocs = 16

// section is a TOC entry type, as PCP numbers them.
type section int32

// readTOC reads the header and TOC at the start of another writer's file
// b: its version, and its sections' TOC entries by type, in b, the last
// of a type listed twice, as PCP's reader takes it. It reports false for
// no MMV version or TOC it reads.
func readTOC(b []byte) (version int, toc [numSections][]byte, ok bool) {
	if len(b) < headerSize {
		return 0, toc, false
	}
	version, tocs := int(ne.Uint32(b[hdrVersionOff:])), int(ne.Uint32(b[hdrTocsOff:]))
	if version < Version1 || version > Version3 || tocs > maxTocs || headerSize+tocs*tocSize > len(b) {
		return 0, toc, false
	}
	for i := range tocs {
		e := b[headerSize+i*tocSize:][:tocSize]
		if t := section(ne.Uint32(e)); t > 0 && t < numSections {
			toc[t] = e
		}
	}
	return version, toc, true
}

// tocEntry returns the record count and offset of a TOC entry.
func tocEntry(e []byte) (count int, off uint64) { return int(ne.Uint32(e[4:])), ne.Uint64(e[8:]) }

const (
	secIndoms    section = 1
	secInstances section = 2
	secMetrics   section = 3
	secValues    section = 4
	secStrings   section = 5
	secLabels    section = 6
	numSections          = 7 // one past the last type, for arrays indexed by section
)

// recordSize is the size of one record of a section in a file version;
// value records are placed by their stride instead.
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
	stride  valueStride
	order   []section          // TOC order, only the sections present
	count   [numSections]int   // records per section; for values, slots
	offset  [numSections]int64 // section offsets
	size    int64
	end     int64 // the end of the last record: size, but for a grown file's page rounding
	used    int64 // the end of the last record in use: zeros follow, a grown file's spare values
}

var (
	// libpcp_mmv's order of sections, in the file and in the TOC; every
	// file keeps this TOC order.
	libpcpOrder = []section{secIndoms, secInstances, secMetrics, secValues, secStrings, secLabels}
	// A grown file puts its values last, so that they keep their addresses
	// while the sections before them grow, and have room to grow after.
	grownOrder = []section{secIndoms, secInstances, secMetrics, secStrings, secLabels, secValues}
)

// growth places the values of a grown file: at from, the offset of the
// values in the file before, or whole pages further when the sections
// before them need more room, never nearer the start. The file can then be
// mapped page-aligned with its values at the addresses they had, starting
// no later than the file before, whose mapping it covers. It has room for
// capacity values.
type growth struct {
	from     int64
	capacity int
}

var pageSize = int64(os.Getpagesize())

func pageRound(n int64) int64 { return (n + pageSize - 1) / pageSize * pageSize }

// newFileLayout lays sections out back to back after the header and TOC,
// leaving out the sections libpcp_mmv leaves out: indoms and instances when
// there is no indom, strings and labels when empty. With g nil the sections
// follow libpcp_mmv's order; with g they follow grownOrder. Values are
// stride apart; padded, their section starts on a multiple of the stride
// (a grown file's, where the file before had it), the bytes before it zero.
func newFileLayout(version int, count [numSections]int, stride valueStride, g *growth) *fileLayout {
	l := &fileLayout{version: version, stride: stride, count: count}
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
		if s != secValues {
			l.offset[s] = off
			off += int64(count[s] * recordSize(s, version))
			continue
		}
		n := count[s]
		switch {
		case g != nil:
			off = g.from + pageRound(max(off-g.from, 0))
			n = g.capacity
		case stride != valueSize: // the next multiple of the stride
			off = stride.at(stride.covering(off))
		}
		l.offset[s] = off
		off += stride.at(n)
	}
	l.size, l.end, l.used = off, off, off
	if g != nil {
		l.size = pageRound(off)
		l.used = l.record(secValues, count[secValues])
	}
	return l
}

// record returns the offset of record i of section s; for values, of
// slot i's.
func (l *fileLayout) record(s section, i int) int64 {
	if s == secValues {
		return l.offset[s] + l.stride.at(i)
	}
	return l.offset[s] + int64(i*recordSize(s, l.version))
}

// records is the count of section s's records in the TOC: for values,
// every slot's, fillers included.
func (l *fileLayout) records(s section) int {
	if s == secValues {
		return int(l.stride.at(l.count[s]) / valueSize)
	}
	return l.count[s]
}

// putTOC writes the TOC entries after the header.
func (l *fileLayout) putTOC(b []byte) {
	for i, s := range l.order {
		e := b[headerSize+tocSize*i:]
		ne.PutUint32(e[0:], uint32(s))
		ne.PutUint32(e[4:], uint32(l.records(s)))
		ne.PutUint64(e[8:], uint64(l.offset[s]))
	}
}
