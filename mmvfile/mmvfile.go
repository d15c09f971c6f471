// Package mmvfile reads MMV files, the memory-mapped metric files of
// Performance Co-Pilot described in mmv(5), and reports their hazards.
//
// Its rules come in two layers, both taken from PCP's reader (pmdammv,
// PCP 6.0.3) and listed rule by rule in docs/reader.md:
//
//   - Parse refuses what makes PCP's reader skip the file, drop one of
//     its sections, or read outside the records the file declares: a bad
//     header (magic, version, generations, TOC count, cluster beyond
//     4095), a TOC or section past the end of the file, an offset that
//     does not lead to a record of the right kind, an instance name or
//     label with no NUL, an unknown value type, more than 1023 metrics
//     or 255 labels. Its
//     errors wrap one of the package's sentinel errors, so callers can
//     tell with errors.Is which rule a file breaks.
//   - File.Lint reports what PCP loads but skips, renumbers or merges
//     metric by metric: items beyond 1023 and items taken twice (Parfait
//     hashes its items and serials), names PCP refuses or takes twice,
//     indom serials beyond 2047 and clusters beyond 2047 with indoms,
//     whose indom ids meet other clusters', semantics 0 (PCP's Python
//     binding writes it; PCP exports a counter), unknown units, labels
//     of nothing in the file, and values that cost PCP's reader seconds.
//     LintDir adds the hazards of a directory such as $PCP_TMP_DIR/mmv:
//     two live files on one cluster, colliding PMIDs and indoms, a name
//     that is a prefix of another (which empties PCP's whole mmv
//     namespace), files of dead processes, leftover temporaries, files in
//     flux and files outside PCP's group.
//
// So a file Parse accepts is one PCP reads, and File.Lint says what of it
// PCP shows. Dump prints any bytes as PCP 6.0.3's own mmvdump does, byte
// for byte, its warnings and exit status included; DumpAs as 6.0.3's or
// 7.2's, which differ in a few messages and in units.
//
// Parse never panics, and never reads outside b, whatever the bytes.
package mmvfile

import (
	"time"

	"github.com/gopcp/mmv"
)

// MaxSize is the largest file Open reads.
const MaxSize = 1 << 30

// File is a parsed MMV file. Records are listed in file order, and each
// carries its Offset in the file.
type File struct {
	Header    Header
	TOC       []Section
	Indoms    []*Indom
	Instances []*Instance
	Metrics   []*Metric
	Values    []*Value // dead records (of no metric: metric offset 0), which PCP skips, left out
	Strings   []*String
	Labels    []*Label
	size      uint64 // of the file, in bytes
	// deadValues are the value records PCP skips that Lint reports: of
	// no metric but naming an instance, or of a metric PCP skips for its
	// item and naming no instance of its indom.
	deadValues []deadValue
	// notes are what Parse found that PCP reads its own way, for Lint.
	notes []note
	// bySerial is the first indom of each serial, for Indom: a walk of
	// every indom for each value took Parse 14 s (TestParseLinearInIndoms),
	// for each metric and label Lint seconds (TestLintLinearInIndoms). Nil
	// in a File not made by Parse.
	bySerial map[uint32]*Indom
}

// note is a finding of Parse's for Lint: the record, its offset, the rule
// and the message.
type note struct {
	record string
	offset uint64
	rule   Rule
	msg    string
}

// deadValue is a value record PCP skips: its index in the section,
// offset, and what it holds.
type deadValue struct {
	index  int
	offset uint64
	what   string
}

// Header is the file header.
type Header struct {
	Version int
	// Gen1 and Gen2 are the generation numbers; a writer sets Gen2 equal
	// to Gen1 once the file is complete.
	Gen1, Gen2 uint64
	TOCs       int // number of TOC entries
	Flags      mmv.Flags
	PID        int32 // the writer's process id
	Cluster    uint32
}

// SectionType is the type of a TOC entry, as mmv(5) numbers them.
type SectionType int32

// The section types.
const (
	Indoms    SectionType = 1
	Instances SectionType = 2
	Metrics   SectionType = 3
	Values    SectionType = 4
	Strings   SectionType = 5
	Labels    SectionType = 6
)

var sectionNames = [...]string{Indoms: "indoms", Instances: "instances", Metrics: "metrics",
	Values: "values", Strings: "strings", Labels: "labels"}

func (t SectionType) known() bool { return t >= Indoms && t <= Labels }

// String returns the section's name, such as "metrics".
func (t SectionType) String() string {
	if t.known() {
		return sectionNames[t]
	}
	return "section type " + itoa(int64(t))
}

// Section is a TOC entry.
type Section struct {
	Type      SectionType
	Count     int    // records in the section
	Offset    uint64 // of the first record
	TOCOffset uint64 // of the TOC entry itself
}

// Indom is an instance domain record.
type Indom struct {
	Offset    uint64
	Serial    uint32
	Instances []*Instance // the Count instance records from FirstInstance
	// FirstInstance is the offset of the first instance record; writers
	// set it even when the indom has no instances.
	FirstInstance uint64
	ShortHelp     Text
	LongHelp      Text
}

// Instance is an instance record.
type Instance struct {
	Offset uint64
	// Indom is the indom the record names, nil for an empty record (all
	// zero): one Hornet reserved and never wrote, which no indom lists
	// and no value names.
	Indom *Indom
	Pad   uint32
	ID    int32  // the internal instance identifier
	Name  string // the external name
	// NameOffset is the offset of the name's string slot (v2 and v3),
	// zero in v1 where the name is inline.
	NameOffset uint64
}

// Metric is a metric record.
type Metric struct {
	Offset     uint64
	Name       string
	NameOffset uint64 // as Instance.NameOffset
	Item       uint32
	Type       mmv.Type
	Semantics  mmv.Semantics
	Units      mmv.Units
	// Indom is the serial of the metric's instance domain as stored: 0 or
	// 0xFFFFFFFF (PCP's PM_INDOM_NULL) for a singular metric.
	Indom     uint32
	Pad       uint32
	ShortHelp Text
	LongHelp  Text
	// unterminated: a v1 name with no NUL in its 64 bytes, Name holds
	// them; PCP skips the metric.
	unterminated bool
}

// Singular reports whether the metric has a single value, no instance domain.
func (m *Metric) Singular() bool { return singular(m.Indom) }

func singular(indom uint32) bool { return indom == 0 || indom == 0xFFFFFFFF }

// Text is a help text: the offset of its string slot, zero when there is
// none, and the text.
type Text struct {
	Offset uint64
	Text   string
}

// Value is a value record, decoded by its metric's type.
type Value struct {
	Offset   uint64
	Metric   *Metric
	Instance *Instance // nil for a singular metric
	Atom     [8]byte   // the value slot as stored
	Extra    int64

	// The decoded value; the field used depends on Metric.Type.
	Int    int64   // Int32, Int64, and Elapsed (closed intervals only; see Elapsed)
	Uint   uint64  // Uint32, Uint64
	Float  float64 // Float, Double
	String string  // String: the text of the string slot at Extra
}

// Elapsed returns an Elapsed value as PCP reads it at now, in
// microseconds: the accumulated total, plus the time since the start of
// the interval that is open while Extra is negative (Extra is then minus
// the interval's start in microseconds since the Unix epoch).
func (v *Value) Elapsed(now time.Time) int64 {
	if v.Extra < 0 {
		return v.Int + now.UnixMicro() + v.Extra
	}
	return v.Int
}

// String is a string slot.
type String struct {
	Offset uint64
	Text   string
}

// Label flags: what a label is attached to, and whether it is optional.
const (
	LabelIndom     = 0x4
	LabelCluster   = 0x8
	LabelItem      = 0x10
	LabelInstances = 0x20
	LabelOptional  = 0x80
)

// Label is a label record (version 3).
type Label struct {
	Offset uint64
	Flags  uint32 // one of LabelIndom, LabelCluster, LabelItem or LabelInstances, maybe with LabelOptional
	// Identity is the cluster, item or indom serial the label is attached to.
	Identity uint32
	// Internal is the instance of an instance label, -1 otherwise.
	Internal int32
	Payload  string // the JSON object, up to its NUL
}

// Indom returns the (first) indom with the given serial, or nil.
func (f *File) Indom(serial uint32) *Indom {
	if f.bySerial != nil {
		return f.bySerial[serial]
	}
	for _, in := range f.Indoms {
		if in.Serial == serial {
			return in
		}
	}
	return nil
}
