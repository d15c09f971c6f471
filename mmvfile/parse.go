package mmvfile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"

	"github.com/gopcp/mmv"
)

// minTOCs is PCP's limit on one file: its reader skips a file of fewer
// TOC entries. It takes any number more (those of a type mmv(5) does not
// define, or of a negative count, it ignores), as the file holds.
const minTOCs = 2

// nullInstance is PCP's PM_IN_NULL; other negative ids are instances as
// any (Speed hashes names to them).
const nullInstance = -1

// MMV files are in the writer's byte order; PCP reads them on the same host.
var ne = binary.NativeEndian

// parser holds the state of one Parse. Every read is of a range checked
// first: sections are checked against the file size before any record in
// them is read, and every offset found in a record is located in a section
// before it is followed.
type parser struct {
	b       []byte
	size    uint64
	version int
	f       *File
	sec     [Labels + 1]*Section // by type; nil when absent
	// unterminated marks the string slots with no NUL in their 256
	// bytes, used the marks those a record refers to.
	unterminated, used []bool
}

// Open reads and parses the file at path. It parses a copy of the bytes,
// so a file being updated is safe to read: values may be torn, but the
// structure written when the file was created is not.
func Open(path string) (*File, error) {
	b, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(b)
}

// ReadFile reads the bytes of the regular file at path, of at most
// MaxSize bytes, as Open does. Anything else at the path (a directory, a
// FIFO, a device) is refused at once: a FIFO with no writer would block
// the open until one came.
func ReadFile(path string) ([]byte, error) {
	fd, err := os.OpenFile(path, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, err
	}
	defer fd.Close()
	fi, err := fd.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &os.PathError{Op: "open", Path: path, Err: errors.New("not a regular file")}
	}
	// Refused by its size first: read to the limit, a sparse file of 4
	// GiB, free on disk, took 2 GiB of memory and seconds to refuse. The
	// limit also holds for a file growing while it is read.
	if fi.Size() > MaxSize {
		return nil, tooLarge(path)
	}
	b, err := io.ReadAll(io.LimitReader(fd, MaxSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxSize {
		return nil, tooLarge(path)
	}
	return b, nil
}

// tooLarge is ReadFile's refusal of a file past MaxSize, naming it as
// os's errors do.
func tooLarge(path string) error {
	return &os.PathError{Op: "read", Path: path, Err: errorf(ErrCount, "file is larger than %d bytes", MaxSize)}
}

// Parse parses and validates the MMV file b. The File it returns does not
// refer to b.
func Parse(b []byte) (*File, error) {
	p := &parser{b: b, size: uint64(len(b)), f: &File{size: uint64(len(b))}}
	for _, step := range []func() error{p.header, p.toc, p.strings, p.indoms, p.instances, p.metrics, p.values, p.labels, p.unused} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	return p.f, nil
}

// note records a finding for Lint about the record at off.
func (p *parser) note(record string, off uint64, rule Rule, format string, args ...any) {
	p.f.notes = append(p.f.notes, note{record, off, rule, fmt.Sprintf(format, args...)})
}

// recordAt names the record at off, as errors and findings do: "value [2]
// at offset 408".
func (p *parser) recordAt(off uint64) string {
	for _, t := range []SectionType{Indoms, Instances, Metrics, Values, Strings, Labels} {
		if i, ok := p.index(t, off); ok {
			return recordNames[t] + " [" + itoa(int64(i)) + "] at offset " + itoa(int64(off))
		}
	}
	return "offset " + itoa(int64(off))
}

// recordNames name the records of each section in errors and findings.
var recordNames = [...]string{Indoms: "indom", Instances: "instance", Metrics: "metric", Values: "value", Strings: "string", Labels: "label"}

func (p *parser) u32(off uint64) uint32 { return ne.Uint32(p.b[off:]) }
func (p *parser) u64(off uint64) uint64 { return ne.Uint64(p.b[off:]) }
func (p *parser) i32(off uint64) int32  { return int32(p.u32(off)) }

// cstring returns the NUL-terminated string in the n bytes at off.
func (p *parser) cstring(off, n uint64) (string, bool) {
	field := p.b[off : off+n]
	i := bytes.IndexByte(field, 0)
	if i < 0 {
		return "", false
	}
	return string(field[:i]), true
}

func (p *parser) header() error {
	h := &p.f.Header
	if p.size < headerSize {
		return errorf(ErrTruncated, "header: file is %d bytes, a header is %d", p.size, headerSize)
	}
	if m := p.b[hdrMagic : hdrMagic+4]; string(m) != mmv.Magic {
		return errorf(ErrMagic, "header: magic %q, want %q", m, mmv.Magic)
	}
	h.Version = int(p.i32(hdrVersion))
	if h.Version < mmv.Version1 || h.Version > mmv.Version3 {
		return errorf(ErrVersion, "header: version %d", h.Version)
	}
	p.version = h.Version
	h.Gen1, h.Gen2 = p.u64(hdrGen1), p.u64(hdrGen2)
	if h.Gen1 == 0 {
		return errorf(ErrGeneration, "header: gen1 is 0")
	}
	if h.Gen1 != h.Gen2 {
		return errorf(ErrGeneration, "header: gen1 %d != gen2 %d", h.Gen1, h.Gen2)
	}
	h.TOCs = int(p.i32(hdrTOCs))
	if h.TOCs < minTOCs {
		return errorf(ErrCount, "header: %d TOC entries, want at least %d", h.TOCs, minTOCs)
	}
	h.Flags = mmv.Flags(p.u32(hdrFlags))
	h.PID = p.i32(hdrPID)
	h.Cluster = p.u32(hdrCluster)
	if h.Cluster > mmv.MaxCluster {
		return errorf(ErrField, "header: cluster %d is more than %d", h.Cluster, mmv.MaxCluster)
	}
	return nil
}

// sectionLimit is the most records PCP's reader takes in a section.
// It drops a larger section whole: a file's metrics or labels are then
// not read at all.
var sectionLimit = map[SectionType]int{Indoms: maxIndomSerial, Metrics: mmv.MaxMetrics, Labels: mmv.MaxLabels}

func (p *parser) toc() error {
	tocEnd := uint64(headerSize + tocSize*p.f.Header.TOCs)
	if p.size < tocEnd {
		return errorf(ErrTruncated, "TOC: file is %d bytes, its %d TOC entries end at %d", p.size, p.f.Header.TOCs, tocEnd)
	}
	p.f.TOC = make([]Section, 0, p.f.Header.TOCs) // p.sec points into it
	var extents []extent                          // of the non-empty sections
	for i := range p.f.Header.TOCs {
		at := uint64(headerSize + tocSize*i)
		s := Section{
			Type:      SectionType(p.i32(at + tocType)),
			Count:     int(p.i32(at + tocCount)),
			Offset:    p.u64(at + tocOffset),
			TOCOffset: at,
		}
		where := "TOC[" + itoa(int64(i)) + "] (" + s.Type.String() + ")"
		if !s.Type.known() || s.Count < 0 {
			// PCP's reader ignores the entry, also when it lists a type
			// again (Lint reports it).
			p.f.TOC = append(p.f.TOC, s)
			continue
		}
		if p.sec[s.Type] != nil {
			return errorf(ErrSection, "%s at offset %d: a second %s section", where, at, s.Type)
		}
		if limit, ok := sectionLimit[s.Type]; ok && s.Count > limit {
			return errorf(ErrCount, "%s at offset %d: %d records, PCP takes at most %d", where, at, s.Count, limit)
		}
		// At most 2^31 records of at most 256 bytes: no overflow.
		length := uint64(s.Count) * recordSize(s.Type, p.version)
		switch {
		case s.Count == 0:
			// PCP reads nothing, wherever it is; past the end of the
			// file, Lint reports it.
		case s.Offset > p.size:
			return errorf(ErrOffset, "%s: offset %d is beyond the end of the file (%d bytes)", where, s.Offset, p.size)
		case s.Offset%sectionLayout[s.Type].align != 0:
			return errorf(ErrOffset, "%s: offset %d is not %d-byte aligned", where, s.Offset, sectionLayout[s.Type].align)
		case s.Offset < tocEnd:
			return errorf(ErrOffset, "%s: offset %d overlaps the header and TOC, which end at %d", where, s.Offset, tocEnd)
		case length > p.size-s.Offset:
			return errorf(ErrTruncated, "%s: %d records from offset %d end at %d, beyond the end of the file (%d bytes)",
				where, s.Count, s.Offset, s.Offset+length, p.size)
		default:
			extents = append(extents, extent{s.Offset, s.Offset + length, where, at})
		}
		p.f.TOC = append(p.f.TOC, s)
		p.sec[s.Type] = &p.f.TOC[len(p.f.TOC)-1]
	}
	// Stable: of two sections at one offset, the later entry is named.
	slices.SortStableFunc(extents, func(a, b extent) int { return compare(a.start, b.start) })
	for i := 1; i < len(extents); i++ {
		if e, prev := extents[i], extents[i-1]; e.start < prev.end {
			return errorf(ErrOffset, "%s at offset %d: offset %d is within %s, which runs from %d to %d",
				e.entry, e.tocAt, e.start, prev.entry, prev.start, prev.end)
		}
	}
	return nil
}

// extent is where a section's records lie, from start to end, and its TOC
// entry, named as in errors ("TOC[2] (metrics)"), at tocAt.
type extent struct {
	start, end uint64
	entry      string
	tocAt      uint64
}

// allZero reports whether every byte of b is zero.
func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func compare(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// records returns the offsets of the records of section t, none when absent.
func (p *parser) records(t SectionType) []uint64 {
	s := p.sec[t]
	if s == nil {
		return nil
	}
	offs := make([]uint64, s.Count)
	for i := range offs {
		offs[i] = s.Offset + uint64(i)*recordSize(t, p.version)
	}
	return offs
}

// index returns the index of the record of section t at off, or false when
// off is not the start of one.
func (p *parser) index(t SectionType, off uint64) (int, bool) {
	s := p.sec[t]
	if s == nil || off < s.Offset {
		return 0, false
	}
	size := recordSize(t, p.version)
	d := off - s.Offset
	if d%size != 0 || d/size >= uint64(s.Count) {
		return 0, false
	}
	return int(d / size), true
}

// str returns the text of the string slot at off, and marks it used.
func (p *parser) str(off uint64) (string, bool) {
	i, ok := p.index(Strings, off)
	if !ok {
		return "", false
	}
	p.used[i] = true
	return p.f.Strings[i].Text, true
}

// unterminatedAt reports whether off is a string slot with no NUL.
func (p *parser) unterminatedAt(off uint64) bool {
	i, ok := p.index(Strings, off)
	return ok && p.unterminated[i]
}

// cut is what PCP shows of a string slot with no NUL in its 256 bytes:
// its first 255 bytes, as it copies a name, a help text or a string value.
const cut = stringSize - 1

// noteUnterminated notes a string slot with no NUL at off, which record
// uses as which, where PCP shows the slot's first 255 bytes.
func (p *parser) noteUnterminated(record string, off uint64, which string) {
	if p.unterminatedAt(off) {
		p.note(record, off, RuleString, "%s at offset %d is a string slot with no NUL in its %d bytes: PCP shows its first %d", which, off, stringSize, cut)
	}
}

// text reads the help text whose string offset is stored at field.
func (p *parser) text(field uint64, what, which string) (Text, error) {
	t := Text{Offset: p.u64(field)}
	if t.Offset == 0 {
		return t, nil
	}
	var ok bool
	if t.Text, ok = p.str(t.Offset); !ok {
		return t, errorf(ErrReference, "%s: %s offset %d is not a string slot", what, which, t.Offset)
	}
	p.noteUnterminated(what, t.Offset, which)
	return t, nil
}

// name reads the name stored at field: inline in v1, a string offset later.
func (p *parser) name(field uint64, what string, instance bool) (name string, off uint64, err error) {
	if p.version == mmv.Version1 {
		name, ok := p.cstring(field, nameSizeV1)
		if !ok {
			return "", 0, errorf(ErrField, "%s: name has no NUL in its %d bytes", what, nameSizeV1)
		}
		return name, 0, nil
	}
	off = p.u64(field)
	name, ok := p.str(off)
	if !ok {
		return "", off, errorf(ErrReference, "%s: name offset %d is not a string slot", what, off)
	}
	if instance && p.unterminatedAt(off) {
		// PCP reads an instance's name on, past the slot, to a NUL.
		return "", off, errorf(ErrField, "%s: name offset %d is a string slot with no NUL in its %d bytes, which PCP reads on past the slot", what, off, stringSize)
	}
	p.noteUnterminated(what, off, "name")
	return name, off, nil
}

func (p *parser) strings() error {
	offs := p.records(Strings)
	p.unterminated, p.used = make([]bool, len(offs)), make([]bool, len(offs))
	for i, off := range offs {
		text, ok := p.cstring(off, stringSize)
		if !ok {
			// PCP shows the first 255 bytes of a name, a help text or
			// a string value with no NUL, and reads an instance name on
			// past the slot (refused there: name).
			text, p.unterminated[i] = string(p.b[off:off+cut]), true
		}
		p.f.Strings = append(p.f.Strings, &String{Offset: off, Text: text})
	}
	return nil
}

// unused notes the string slots with no NUL that no record uses, which
// PCP never reads.
func (p *parser) unused() error {
	for i, s := range p.f.Strings {
		if p.unterminated[i] && !p.used[i] {
			p.note("string ["+itoa(int64(i))+"] at offset "+itoa(int64(s.Offset)), s.Offset, RuleString,
				"no NUL in its %d bytes, and no record uses the slot: PCP never reads it", stringSize)
		}
	}
	return nil
}

func (p *parser) indoms() error {
	p.f.bySerial = map[uint32]*Indom{}
	for i, off := range p.records(Indoms) {
		in := &Indom{Offset: off, Serial: p.u32(off + indomSerial), FirstInstance: p.u64(off + indomFirstInst)}
		what := "indom [" + itoa(int64(i)) + "] at offset " + itoa(int64(off))
		var err error
		if in.ShortHelp, err = p.text(off+indomShortHelp, what, "shorttext"); err != nil {
			return err
		}
		if in.LongHelp, err = p.text(off+indomLongHelp, what, "helptext"); err != nil {
			return err
		}
		p.f.Indoms = append(p.f.Indoms, in)
		if p.f.bySerial[in.Serial] == nil {
			p.f.bySerial[in.Serial] = in
		}
	}
	return nil
}

func (p *parser) instances() error {
	for i, off := range p.records(Instances) {
		what := "instance [" + itoa(int64(i)) + "] at offset " + itoa(int64(off))
		inst := &Instance{Offset: off, Pad: p.u32(off + instPad), ID: p.i32(off + instID)}
		if allZero(p.b[off : off+recordSize(Instances, p.version)]) {
			// A record never written: Hornet sizes the section by the
			// instances its caller declares, and its indoms count those
			// registered. No indom may list it (below), no value name it
			// (values); Lint reports it.
			p.f.Instances = append(p.f.Instances, inst)
			continue
		}
		indomOff := p.u64(off + instIndom)
		j, ok := p.index(Indoms, indomOff)
		if !ok {
			return errorf(ErrReference, "%s: indom offset %d is not an indom record", what, indomOff)
		}
		inst.Indom = p.f.Indoms[j]
		if inst.ID == nullInstance {
			// PCP's reader takes a value of any instance for the instance
			// it calls PM_IN_NULL, -1: it would show another's value.
			return errorf(ErrField, "%s: instance id -1, which PCP reads as no instance", what)
		}
		var err error
		if inst.Name, inst.NameOffset, err = p.name(off+instName, what, true); err != nil {
			return err
		}
		p.f.Instances = append(p.f.Instances, inst)
	}
	// Each indom lists its instances as a run of records, which must all
	// name it as their indom.
	for _, in := range p.f.Indoms {
		count := uint64(p.u32(in.Offset + indomCount))
		what := "indom " + itoa(int64(in.Serial)) + " at offset " + itoa(int64(in.Offset))
		if count == 0 {
			continue
		}
		first, ok := p.index(Instances, in.FirstInstance)
		if !ok {
			return errorf(ErrReference, "%s: first instance offset %d is not an instance record", what, in.FirstInstance)
		}
		if count > uint64(len(p.f.Instances)-first) {
			return errorf(ErrReference, "%s: %d instances from offset %d run past the instances section", what, count, in.FirstInstance)
		}
		ids := map[int32]bool{}
		for j := first; j < first+int(count); j++ {
			inst := p.f.Instances[j]
			if inst.Indom == nil {
				// PCP would list an instance 0 of no name.
				return errorf(ErrReference, "%s: lists the instance at offset %d, an empty record", what, inst.Offset)
			}
			if inst.Indom != in {
				return errorf(ErrReference, "%s: lists the instance at offset %d, which names the indom at offset %d", what, inst.Offset, inst.Indom.Offset)
			}
			if ids[inst.ID] {
				return errorf(ErrField, "%s: instance id %d listed twice", what, inst.ID)
			}
			ids[inst.ID] = true
			in.Instances = append(in.Instances, inst)
		}
	}
	// An instance its indom does not list PCP never shows: Lint's.
	return nil
}

// knownType reports whether values of type t can be decoded.
func knownType(t mmv.Type) bool {
	switch t {
	case mmv.Int32, mmv.Uint32, mmv.Int64, mmv.Uint64, mmv.Float, mmv.Double, mmv.String, mmv.Elapsed:
		return true
	}
	return false
}

func (p *parser) metrics() error {
	body := metricBody(p.version)
	for i, off := range p.records(Metrics) {
		what := "metric [" + itoa(int64(i)) + "] at offset " + itoa(int64(off))
		b := off + body
		m := &Metric{
			Offset:    off,
			Item:      p.u32(b + metricItem),
			Type:      mmv.Type(p.i32(b + metricType)),
			Semantics: mmv.Semantics(p.i32(b + metricSem)),
			Units:     mmv.Units(p.u32(b + metricUnits)),
			Indom:     p.u32(b + metricIndom),
			Pad:       p.u32(b + metricPad),
		}
		var err error
		if p.version == mmv.Version1 && bytes.IndexByte(p.b[off:off+nameSizeV1], 0) < 0 {
			// PCP skips the metric (Lint reports it).
			m.Name, m.unterminated = string(p.b[off:off+nameSizeV1]), true
		} else if m.Name, m.NameOffset, err = p.name(off, what, false); err != nil {
			return err
		}
		what += " (" + m.Name + ")"
		// Names, items, semantics, units and indoms PCP takes or skips
		// metric by metric: Lint reports them.
		if !knownType(m.Type) {
			return errorf(ErrField, "%s: unknown type %d", what, int32(m.Type))
		}
		if m.ShortHelp, err = p.text(b+metricShortHelp, what, "shorttext"); err != nil {
			return err
		}
		if m.LongHelp, err = p.text(b+metricLongHelp, what, "helptext"); err != nil {
			return err
		}
		p.f.Metrics = append(p.f.Metrics, m)
	}
	return nil
}

func (p *parser) values() error {
	items := p.f.itemOwners()
	for i, off := range p.records(Values) {
		what := "value [" + itoa(int64(i)) + "] at offset " + itoa(int64(off))
		v := &Value{Offset: off, Extra: int64(p.u64(off + valueExtra))}
		copy(v.Atom[:], p.b[off+valueAtom:])
		metricOff, instOff := p.u64(off+valueMetric), p.u64(off+valueInstance)
		if metricOff == 0 {
			// A dead record: PCP's reader skips a value of no metric,
			// whatever its instance offset (seen with 6.0.3); mmv writes
			// one, all zero, for a removed instance.
			if instOff != 0 {
				p.f.deadValues = append(p.f.deadValues, deadValue{i, off,
					"a value of no metric (metric offset 0) with instance offset " + itoa(int64(instOff))})
			}
			continue
		}
		j, ok := p.index(Metrics, metricOff)
		if !ok {
			return errorf(ErrReference, "%s: metric offset %d is not a metric record", what, metricOff)
		}
		v.Metric = p.f.Metrics[j]
		what += " (" + v.Metric.Name + ")"
		if why, kind := p.value(v, instOff); kind != nil {
			if m := v.Metric; m.Item > mmv.MaxItem || items[m.Item] != m {
				// PCP skips the metric for its item, and never reads
				// the value.
				p.f.deadValues = append(p.f.deadValues, deadValue{i, off,
					"a value of " + m.Name + ", a metric PCP skips for its item " + itoa(int64(m.Item)) + ", " + why})
				continue
			}
			return errorf(kind, "%s: %s", what, why)
		}
		p.f.Values = append(p.f.Values, v)
	}
	return nil
}

// value decodes the value record v of its metric, with the instance
// record at instOff, or says why it cannot, with the sentinel.
func (p *parser) value(v *Value, instOff uint64) (why string, kind error) {
	switch k, ok := p.index(Instances, instOff); {
	case v.Metric.Singular():
		if instOff != 0 {
			// PCP never reads the instance of a singular metric's value,
			// whatever the offset: it shows the value as the metric's.
			p.note(p.recordAt(v.Offset), v.Offset, RuleIgnoredField, "instance offset %d in a value of %s, a singular metric: PCP ignores it, and shows the value as the metric's",
				instOff, v.Metric.Name)
		}
	case !ok:
		return "instance offset " + itoa(int64(instOff)) + " is not an instance record", ErrReference
	case p.f.Instances[k].Indom == nil:
		return "instance offset " + itoa(int64(instOff)) + " is an empty instance record", ErrReference
	case p.f.Instances[k].Indom.Serial != v.Metric.Indom && p.f.Indom(v.Metric.Indom) != nil:
		// PCP would show it as the metric's instance of the same id.
		// (A metric whose indom is missing shows no values at all.)
		return fmt.Sprintf("instance at offset %d is in indom %d, the metric's indom is %d",
			instOff, p.f.Instances[k].Indom.Serial, v.Metric.Indom), ErrReference
	default:
		v.Instance = p.f.Instances[k]
	}
	a32, a64 := ne.Uint32(v.Atom[:]), ne.Uint64(v.Atom[:])
	switch v.Metric.Type {
	case mmv.Int32:
		v.Int = int64(int32(a32))
	case mmv.Uint32:
		v.Uint = uint64(a32)
	case mmv.Int64, mmv.Elapsed:
		v.Int = int64(a64)
	case mmv.Uint64:
		v.Uint = a64
	case mmv.Float:
		v.Float = float64(math.Float32frombits(a32))
	case mmv.Double:
		v.Float = math.Float64frombits(a64)
	case mmv.String:
		var ok bool
		if v.String, ok = p.str(uint64(v.Extra)); !ok {
			return fmt.Sprintf("string offset %d is not a string slot", uint64(v.Extra)), ErrReference
		}
		p.noteUnterminated(p.recordAt(v.Offset), uint64(v.Extra), "the string value")
	}
	return "", nil
}

func (p *parser) labels() error {
	for i, off := range p.records(Labels) {
		what := "label [" + itoa(int64(i)) + "] at offset " + itoa(int64(off))
		l := &Label{Offset: off, Flags: p.u32(off + labelFlags), Identity: p.u32(off + labelIdentity), Internal: p.i32(off + labelInternal)}
		payload, ok := p.cstring(off+labelPayload, labelPayloadSize)
		if !ok {
			return errorf(ErrField, "%s: payload has no NUL in %d bytes", what, labelPayloadSize)
		}
		// PCP drops a label it cannot use, and reads the rest: payloads,
		// flags and identities are Lint's.
		l.Payload = payload
		p.f.Labels = append(p.f.Labels, l)
	}
	return nil
}
