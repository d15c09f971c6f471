package mmv

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"

	"github.com/gopcp/mmv/internal/pcpname"
)

// Label is a name and a typed value that PCP attaches to the registry's
// metrics, to one metric, to an indom or to one instance (file format v3).
type Label struct {
	// Name starts with a letter, then letters, digits and '_'.
	Name string
	// Value is any value encoding/json marshals: a string, a number, a
	// bool, nil, a slice or a map whose keys follow Name's rule.
	Value any
	// Optional marks the label as not part of the metric's identity: PCP
	// reports it but does not use it to tell series apart.
	Optional bool
}

// Label records: flags saying what the label is attached to, the identity
// of that (cluster, item, indom serial), the internal instance id or
// labelNoInstance, and the JSON payload.
const (
	labelSize        = 256
	labelFlagsOff    = 0
	labelIdentityOff = 4
	labelInstanceOff = 8
	labelPayloadOff  = 12
	labelPayloadSize = 244
	labelNoInstance  = -1
)

// labelKind is what a label is attached to, as its record's flags say.
type labelKind uint32

const (
	labelIndom     labelKind = 0x4
	labelCluster   labelKind = 0x8
	labelItem      labelKind = 0x10
	labelInstances labelKind = 0x20
	labelOptional  uint32    = 0x80
)

// checkPayload checks l's name and value, and makes l.payload, the JSON
// object {"name":value} that PCP reads, with no spaces, or returns an
// error naming the rule the label breaks. A label whose value is a plain
// string (plainJSON) keeps it in text and no payload: putLabel writes it
// into the file from the name and text, without an encoder, since a
// vector labels every new value up to the file's budget, and most are
// never encoded twice.
func checkPayload(subject string, l *label) error {
	what := func() string { return inside(subject, "label", l.Name) } // named only on failure: a vector labels its new values
	if !validLabelName(l.Name) {
		return errorf(ErrName, what(), "a label name starts with a letter, then letters, digits and '_'")
	}
	s, ok := l.text, l.isText
	if !ok {
		s, ok = l.Value.(string)
	}
	var n int
	if ok && plainJSON(s) {
		l.text, l.isText = s, true
		n = plainPayloadLen(l.Name, s)
	} else {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(l.value()); err != nil {
			return errorf(ErrLabel, what(), "value is not JSON: %v", err)
		}
		value := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		if !ok { // a string encodes as one JSON string, flat and compact
			var err error
			if value, err = checkLabelValue(what, value); err != nil {
				return err
			}
		}
		p := make([]byte, 0, len(l.Name)+len(value)+5)
		p = append(append(append(append(p, `{"`...), l.Name...), `":`...), value...)
		l.payload = append(p, '}')
		n = len(l.payload)
	}
	if n >= labelPayloadSize {
		return errorf(ErrTooLong, what(), "payload %s is %d bytes, more than %d", l.appendPayload(nil), n, labelPayloadSize-1)
	}
	return nil
}

// plainPayloadLen is the length of the payload of a label of that name
// and plain string value: {"name":"value"}.
func plainPayloadLen(name, value string) int { return len(name) + len(value) + 7 }

// appendPlainPayload appends the payload of a label of that name and plain
// string value to b.
func appendPlainPayload(b []byte, name, value string) []byte {
	b = append(append(append(append(b, `{"`...), name...), `":"`...), value...)
	return append(b, `"}`...)
}

// appendPayload appends l's payload to b.
func (l *label) appendPayload(b []byte) []byte {
	if l.payload == nil && l.isText {
		return appendPlainPayload(b, l.Name, l.text)
	}
	return append(b, l.payload...)
}

// plainJSON reports whether s is printable ASCII but '"' and '\\', which
// JSON writes as they are.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// checkLabelValue returns the JSON value of a label, compact, or an error
// when PCP would garble its shape.
func checkLabelValue(what func() string, value []byte) ([]byte, error) {
	var shape any
	if err := json.Unmarshal(value, &shape); err != nil || !flatLabel(shape, 0) {
		return nil, errorf(ErrLabel, what(), "PCP garbles %s: a value is a scalar, an array of scalars, or a map of those", value)
	}
	// PCP flattens a map into name.key labels, and silently drops the
	// whole label when a key is not a label name.
	if m, ok := shape.(map[string]any); ok {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if !validLabelName(k) {
				return nil, errorf(ErrLabel, what(), "map key %s: a key starts with a letter, then letters, digits and '_'", quote(k))
			}
		}
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, value); err != nil {
		return nil, errorf(ErrLabel, what(), "value is not JSON: %v", err)
	}
	return compact.Bytes(), nil
}

// flatLabel reports whether a decoded label value has a shape PCP's label
// code reads back right (seen with PCP 6.0.3): a scalar, an array of
// scalars, or, at the top, a map of those, which PCP flattens into
// name.key labels. Deeper nesting comes out garbled.
func flatLabel(v any, depth int) bool {
	switch v := v.(type) {
	case []any:
		for _, e := range v {
			if !scalar(e) {
				return false
			}
		}
	case map[string]any:
		if depth > 0 {
			return false
		}
		for _, e := range v {
			if !flatLabel(e, depth+1) {
				return false
			}
		}
	}
	return true
}

// bucketLabel is the label a histogram vector's buckets add to its
// instances' names, their upper bound, as Prometheus's le: a label of
// the vector's own cannot have its name (checkVecLabels), nor one added
// by hand that PCP would show on buckets (checkLabelFreeLocked).
const bucketLabel = "le"

// PCPLabelNames returns the names of the labels PCP puts on every metric
// itself: the host's (hostname, machineid...), the client's (userid,
// groupid) and the agent's (agent). A label of one of them is refused
// (ErrDuplicate), a vector's as one named as the registry's is, and one
// added by hand (AddLabel, AddMetricLabel, AddIndomLabel,
// AddInstanceLabel) at every level: PCP shows it in place of its own on
// every metric or instance it reaches, a registry's hostname on every
// metric of the file, which pmseries then takes for another host's. The
// bridges rename such a label (exported_hostname), as a Prometheus scrape
// renames a series' label that a target label has.
func PCPLabelNames() []string { return pcpname.Own() }

func scalar(v any) bool {
	switch v.(type) {
	case []any, map[string]any:
		return false
	}
	return true
}

func validLabelName(s string) bool {
	if s == "" || !pcpname.IsLetter(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !pcpname.IsLetter(c) && !pcpname.IsDigit(c) && c != '_' {
			return false
		}
	}
	return true
}

// putLabel fills the record of label l, attached to identity and
// instance. Its payload is appended in place, in the record's room, which
// checkPayload made sure it fits.
func putLabel(b []byte, identity uint32, instance int32, l *label) {
	flags := uint32(l.kind)
	if l.Optional {
		flags |= labelOptional
	}
	ne.PutUint32(b[labelFlagsOff:], flags)
	ne.PutUint32(b[labelIdentityOff:], identity)
	ne.PutUint32(b[labelInstanceOff:], uint32(instance))
	l.appendPayload(b[labelPayloadOff : labelPayloadOff : labelPayloadOff+labelPayloadSize-1])
}

// labelTable is the registry's labels: those declared, one record each,
// and the vectors' instance labels, derived from their instances (vecLabels).
type labelTable struct {
	labels     []*label
	vecLabels  []*vecLabels // in order of their first instance labelled
	vecRecords int          // the label records of vecLabels
}

// vecLabels is a vector's instance labels: each of its first instances,
// while the file's label budget allowed, carries its values as PCP
// instance labels, one record per label name. They are derived from the
// vector's instances when a file is laid out or a snapshot taken, not kept
// as records: a first use then makes no record of its own (a fifth of the
// cost of a vector's first ten values, and of their memory, did).
type vecLabels struct {
	of labelledVec
	in *indom // the vector's, which counts its records (indom.labels)
}

// labelledVec is a vector whose instances carry labels.
type labelledVec interface {
	// labelNames returns the vector's indom and label names.
	labelNames() (serial uint32, names []string)
	// eachLabelledLocked calls f with the id and values of each live
	// instance labelled, in order of first use.
	eachLabelledLocked(f func(id int32, values []string))
}

// eachLocked calls f with each label of vl's instances, made anew, but
// those too long for a record (labelFits).
func (vl *vecLabels) eachLocked(f func(l label)) {
	serial, names := vl.of.labelNames()
	vl.of.eachLabelledLocked(func(id int32, values []string) {
		for i, name := range names {
			l := label{Label: Label{Name: name}, text: values[i], isText: true, kind: labelInstances, serial: serial, instance: id}
			if checkPayload("", &l) == nil { // which makes the payload of a value not plain JSON
				f(l)
			}
		}
	})
}

// labelFits reports whether the label name=value, a valid name and a
// string value, fits a label record: checkPayload's answer, without a
// label made for a plain value, as a vector asks at each first use.
func labelFits(name, value string) bool {
	if plainJSON(value) {
		return plainPayloadLen(name, value) < labelPayloadSize
	}
	return checkPayload("", &label{Label: Label{Name: name}, text: value, isText: true}) == nil
}

// label is a declared label and what it is attached to.
type label struct {
	Label
	kind     labelKind
	metric   *metric // for labelItem
	serial   uint32  // for labelIndom and labelInstances
	instance int32   // for labelInstances
	payload  []byte
	// A label whose value is a string keeps it in text (a vector's, not
	// boxed in Value until read, value: it labels every new value up to
	// the file's budget), and a plain one no payload (checkPayload).
	text   string
	isText bool
}

// value is l's Value.
func (l *label) value() any {
	if l.isText {
		return l.text
	}
	return l.Value
}

// public is l as Gather and Snapshot show it: the declared Label whole,
// its value unboxed (a Label made field by field lost Optional).
func (l *label) public() Label {
	pl := l.Label
	pl.Value = l.value()
	return pl
}

// checkClusterLabel refuses a cluster label in a file on cluster c when
// PCP would never match it.
func checkClusterLabel(subject string, c uint32) error {
	if c == ReaderCluster {
		return errorf(ErrLabel, subject, "a cluster label needs a cluster of the file's own: PCP never matches it on the cluster its reader picks (ReaderCluster)")
	}
	return nil
}
