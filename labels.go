package mmv

import (
	"bytes"
	"encoding/json"
)

// Label is a name and a typed value that PCP attaches to the registry's
// metrics, to one metric, to an indom or to one instance (file format v3).
type Label struct {
	// Name starts with a letter, then letters, digits and '_'.
	Name string
	// Value is any value encoding/json marshals: a string, a number, a
	// bool, nil, a slice or a map.
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

// labelPayload returns the JSON object {"name":value} that PCP reads, with
// no spaces, or an error naming the rule the label breaks.
func labelPayload(subject string, l Label) ([]byte, error) {
	subject += " label " + quote(l.Name)
	if !validLabelName(l.Name) {
		return nil, errorf(ErrName, subject, "a label name starts with a letter, then letters, digits and '_'")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(l.Value); err != nil {
		return nil, errorf(ErrLabel, subject, "value is not JSON: %v", err)
	}
	value := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	var shape any
	if err := json.Unmarshal(value, &shape); err != nil || !flatLabel(shape, 0) {
		return nil, errorf(ErrLabel, subject, "PCP garbles %s: a value is a scalar, an array of scalars, or a map of those", value)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, value); err != nil {
		return nil, errorf(ErrLabel, subject, "value is not JSON: %v", err)
	}
	p := make([]byte, 0, len(l.Name)+compact.Len()+5)
	p = append(p, `{"`...)
	p = append(p, l.Name...)
	p = append(p, `":`...)
	p = append(p, compact.Bytes()...)
	p = append(p, '}')
	if len(p) >= labelPayloadSize {
		return nil, errorf(ErrTooLong, subject, "payload %s is %d bytes, more than %d", p, len(p), labelPayloadSize-1)
	}
	return p, nil
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

func scalar(v any) bool {
	switch v.(type) {
	case []any, map[string]any:
		return false
	}
	return true
}

func validLabelName(s string) bool {
	if s == "" || !isLetter(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !isLetter(c) && !isDigit(c) && c != '_' {
			return false
		}
	}
	return true
}

func putLabel(b []byte, kind labelKind, optional bool, identity uint32, instance int32, payload []byte) {
	flags := uint32(kind)
	if optional {
		flags |= labelOptional
	}
	ne.PutUint32(b[0:], flags)
	ne.PutUint32(b[4:], identity)
	ne.PutUint32(b[8:], uint32(instance))
	copy(b[12:12+labelPayloadSize-1], payload)
}
