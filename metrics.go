package mmv

import "strings"

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

// metricOf is the metric of an instrument, its help split into short and
// long (splitHelp).
func metricOf(name, help string, t Type, sem Semantics, units Units, indom uint32) Metric {
	short, long := splitHelp(help)
	return Metric{Name: name, Type: t, Semantics: sem, Units: units, Indom: indom, ShortHelp: short, LongHelp: long}
}

// Metric records: the name (inline in v1, the offset of a string record in
// v2 and v3), then item, type, semantics, units, indom and the offsets of
// the help texts, at these offsets from the end of the name.
const (
	metricSizeV1    = 104
	metricSizeV2    = 48
	metricNameV1Len = inlineNameLen
	metricNameV2Len = 8
	metricItemOff   = 0
	metricTypeOff   = 4
	metricSemOff    = 8
	metricUnitsOff  = 12
	metricIndomOff  = 16
	metricShortOff  = 24
	metricHelpOff   = 32
)

// metricNameLen returns the bytes of a metric record's name in a file of
// version: inline in version 1, a string's offset after.
func metricNameLen(version int) int {
	if version == Version1 {
		return metricNameV1Len
	}
	return metricNameV2Len
}

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
	body := b[metricNameV2Len:]
	if version == Version1 {
		copy(b[:metricNameV1Len], name)
		body = b[metricNameV1Len:]
	} else {
		ne.PutUint64(b, nameOff)
	}
	ne.PutUint32(body[metricItemOff:], m.item)
	ne.PutUint32(body[metricTypeOff:], uint32(m.typ))
	ne.PutUint32(body[metricSemOff:], uint32(m.sem))
	ne.PutUint32(body[metricUnitsOff:], uint32(m.units))
	ne.PutUint32(body[metricIndomOff:], m.indom)
	ne.PutUint64(body[metricShortOff:], m.shortText)
	ne.PutUint64(body[metricHelpOff:], m.helpText)
}

// ownPrefix is the first part of the names of the registry's own metrics
// (drops.go), which programs may not use.
const ownPrefix = "mmv"

// metricTable is the registry's metrics.
type metricTable struct {
	metrics  []*metric
	names    nameIndex      // positions in metrics
	prefixes map[string]int // how many metric names have each dot-prefix; nil until one has a dot
	spare    []metric       // allocated for the next declarations (newMetric)
}

func (t *metricTable) metricName(pos int) string { return t.metrics[pos].Name }

// named returns the metric of a name, nil when none is declared.
func (t *metricTable) named(name string) *metric {
	if i, ok := t.names.find(name, t.metricName); ok {
		return t.metrics[i]
	}
	return nil
}

// leafAbove returns the metric whose name is a prefix of name at a dot,
// nil when none is.
func (t *metricTable) leafAbove(name string) *metric {
	for i := strings.IndexByte(name, '.'); i >= 0 && i < len(name); i++ {
		if name[i] == '.' {
			if m := t.named(name[:i]); m != nil {
				return m
			}
		}
	}
	return nil
}

// newMetric returns a zeroed metric to declare, never one declared before
// (addMetricLocked sets only the fields it declares). Metrics are
// allocated in blocks, as many as are declared already (1 to 256), not
// one by one: that was 1,000 of the 1,060 allocations of declaring 1,000
// metrics; a first block of 8 left a registry of one metric 1 KB it never
// used. A block lives while one of its metrics is referenced.
func (t *metricTable) newMetric() *metric {
	if len(t.spare) == 0 {
		t.spare = make([]metric, min(max(len(t.metrics), 1), 256))
	}
	mt := &t.spare[0]
	t.spare = t.spare[1:]
	return mt
}

// metric is a declared metric and, once started, where its values are.
type metric struct {
	Metric
	part   *part
	indom  *indom          // nil when singular
	index  int32           // position in its part (at most MaxMetrics)
	item   uint32          // the item in the file; 0 until assigned
	slots  segList[int32]  // per instance, or one: the value's slot in its part, -1 for none
	values segList[*Value] // empty, or as slots: the handles, made at their first use (part.handleOf)
}

// auto reports whether the item is derived from the name: none was
// declared. (A field of its own, with an int index, made the record 232
// bytes, and a block of 256 of them a page larger than at 224.)
func (m *metric) auto() bool { return m.Metric.Item == 0 }

// valueCount is the number of values of a metric: one per instance, or one.
func (m *metric) valueCount() int {
	if m.indom == nil {
		return 1
	}
	return m.indom.count()
}

// forPrefixes calls f with every dot-prefix of a metric name.
func forPrefixes(name string, f func(prefix string)) {
	for i := range len(name) {
		if name[i] == '.' {
			f(name[:i])
		}
	}
}

// indexOf is the index of m's value for instance id: 0 when singular.
func indexOf(m *metric, id int32) int {
	j, _ := valueIndex(m, id)
	return j
}

// valueIndex is indexOf, and whether m has instance id (always when
// singular).
func valueIndex(m *metric, id int32) (int, bool) {
	if m.indom == nil {
		return 0, true
	}
	return m.indom.index(id)
}
