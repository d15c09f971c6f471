package mmv

import "strconv"

// Type is the type of a metric's values, numbered as PCP numbers them.
type Type int32

// The value types an MMV file can hold.
const (
	Int32   Type = 0 // 32-bit signed integer
	Uint32  Type = 1 // 32-bit unsigned integer
	Int64   Type = 2 // 64-bit signed integer
	Uint64  Type = 3 // 64-bit unsigned integer
	Float   Type = 4 // 32-bit IEEE float
	Double  Type = 5 // 64-bit IEEE float
	String  Type = 6 // string of at most 255 bytes
	Elapsed Type = 9 // microseconds accumulated over intervals; PCP reads a 64-bit counter
)

var typeNames = map[Type]string{
	Int32: "32-bit int", Uint32: "32-bit unsigned int", Int64: "64-bit int", Uint64: "64-bit unsigned int",
	Float: "float", Double: "double", String: "string", Elapsed: "elapsed",
}

// String returns the type's name as PCP's mmvdump prints it.
func (t Type) String() string {
	if s, ok := typeNames[t]; ok {
		return s
	}
	return "Type(" + strconv.Itoa(int(t)) + ")"
}

// Semantics says how a reader should interpret successive values of a metric.
type Semantics int32

// The semantics an MMV file can declare.
const (
	SemCounter  Semantics = 1 // a total that only grows; readers graph its rate
	SemInstant  Semantics = 3 // a level sampled now, such as a queue length
	SemDiscrete Semantics = 4 // a value that rarely changes, such as a version
)

var semNames = map[Semantics]string{SemCounter: "counter", SemInstant: "instant", SemDiscrete: "discrete"}

// String returns the semantics' name as PCP prints it.
func (s Semantics) String() string {
	if n, ok := semNames[s]; ok {
		return n
	}
	return "Semantics(" + strconv.Itoa(int(s)) + ")"
}

// Metric declares a metric.
type Metric struct {
	// Name is the metric's name below mmv.<file>: letters, digits and '_'
	// in dot-separated parts that each start with a letter.
	Name string
	// Item identifies the metric within its file, 1..1023. Zero asks the
	// registry to assign one from the name, the same at every start.
	Item uint32
	// Type is the type of the values.
	Type Type
	// Semantics says how readers interpret the values.
	Semantics Semantics
	// Units is the dimension and scale of the values.
	Units Units
	// Indom is the serial of the instance domain giving the metric one
	// value per instance; zero declares a singular metric.
	Indom uint32
	// ShortHelp is a one-line description; LongHelp may span lines. Each
	// holds at most 255 bytes. An empty text is left out of the file.
	ShortHelp, LongHelp string
}

// Limits of one file, as PCP's reader enforces them.
const (
	MaxItem      = 1023 // largest item number
	MaxMetrics   = 1023 // metrics in one file
	MaxSerial    = 2047 // largest indom serial
	MaxCluster   = 4095 // largest cluster; 2047 in a file with indoms
	MaxLabels    = 255  // labels in one file
	MaxStringLen = 255  // bytes of a help text, string value or v2 name
	maxV1Name    = 63   // bytes of a name in a version 1 file

	// An indom's id is cluster<<11|serial in PCP's 22-bit indom serial, so
	// the cluster of a file with indoms must fit in 11 bits.
	indomIDBits     = 22
	maxIndomCluster = 1<<(indomIDBits-11) - 1
)

// Metric records: v1 holds the name inline, v2 and v3 point at a string.
const (
	metricSizeV1 = 104
	metricSizeV2 = 48
)

// metricRecord is the layout-independent part of a metric record.
type metricRecord struct {
	item      uint32
	typ       Type
	sem       Semantics
	units     Units
	indom     uint32
	shortText uint64
	helpText  uint64
}

// putMetric encodes a metric record; name is either the inline v1 name or,
// in v2 and v3, the offset of the name's string slot.
func putMetric(b []byte, version int, name string, nameOff uint64, m metricRecord) {
	body := b
	if version == Version1 {
		copy(b[:64], name)
		body = b[64:]
	} else {
		ne.PutUint64(b, nameOff)
		body = b[8:]
	}
	ne.PutUint32(body[0:], m.item)
	ne.PutUint32(body[4:], uint32(m.typ))
	ne.PutUint32(body[8:], uint32(m.sem))
	ne.PutUint32(body[12:], uint32(m.units))
	ne.PutUint32(body[16:], m.indom)
	ne.PutUint64(body[24:], m.shortText)
	ne.PutUint64(body[32:], m.helpText)
}
