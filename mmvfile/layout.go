package mmvfile

// The on-disk layout of mmv(5): record sizes and field offsets, in bytes.
// They are written out here from the format, not taken from the writer in
// package mmv, so that this package is an independent check on it.

const headerSize = 40

// Header fields.
const (
	hdrMagic   = 0 // "MMV\0"
	hdrVersion = 4 // i32
	hdrGen1    = 8 // u64
	hdrGen2    = 16
	hdrTOCs    = 24 // i32
	hdrFlags   = 28 // u32
	hdrPID     = 32 // i32
	hdrCluster = 36 // u32
)

// TOC entry: 16 bytes each, right after the header.
const (
	tocSize   = 16
	tocType   = 0 // i32
	tocCount  = 4 // i32
	tocOffset = 8 // u64
)

// Indom record.
const (
	indomSerial    = 0 // u32
	indomCount     = 4 // u32
	indomFirstInst = 8 // u64 offset of the first instance record
	indomShortHelp = 16
	indomLongHelp  = 24
)

// Instance record: v1 holds the name inline, v2 and v3 point at a string.
const (
	instIndom = 0  // u64 offset of the owning indom record
	instPad   = 8  // u32
	instID    = 12 // i32
	instName  = 16 // [64] in v1, u64 string offset in v2 and v3
)

// Metric record: v1 starts with the name inline, v2 and v3 with the offset
// of its string; the fields after it are the same from metricBody(version).
const (
	metricItem      = 0 // u32
	metricType      = 4 // i32
	metricSem       = 8 // i32
	metricUnits     = 12
	metricIndom     = 16 // u32 serial, or 0 or 0xFFFFFFFF when singular
	metricPad       = 20
	metricShortHelp = 24 // u64 string offsets
	metricLongHelp  = 32
)

// Value record.
const (
	valueAtom     = 0  // 8-byte pmAtomValue; 32-bit types use its first 4 bytes
	valueExtra    = 8  // i64
	valueMetric   = 16 // u64 offset of the metric record
	valueInstance = 24 // u64 offset of the instance record, 0 when singular
)

// Label record.
const (
	labelFlags    = 0 // u32
	labelIdentity = 4 // u32
	labelInternal = 8 // i32, -1 when not an instance label
	labelPayload  = 12
)

const (
	nameSizeV1       = 64  // inline names in v1 records
	stringSize       = 256 // a string slot
	labelPayloadSize = 244
)

// sectionLayout is the record size (v1, then v2 and v3) and the alignment
// of each section. Records holding 64-bit fields are 8-aligned, so PCP can
// read values atomically; strings need none.
var sectionLayout = [...]struct {
	size  [2]uint64
	align uint64
}{
	Indoms:    {[2]uint64{32, 32}, 8},
	Instances: {[2]uint64{80, 24}, 8},
	Metrics:   {[2]uint64{104, 48}, 8},
	Values:    {[2]uint64{32, 32}, 8},
	Strings:   {[2]uint64{stringSize, stringSize}, 1},
	Labels:    {[2]uint64{256, 256}, 4},
}

// recordSize is the size of one record of section t in a file version.
func recordSize(t SectionType, version int) uint64 {
	if version == 1 {
		return sectionLayout[t].size[0]
	}
	return sectionLayout[t].size[1]
}

// metricBody is where a metric record's fields after the name start.
func metricBody(version int) uint64 {
	if version == 1 {
		return nameSizeV1
	}
	return 8
}
