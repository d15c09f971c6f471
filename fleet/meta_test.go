package fleet

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// The label records of a PCP archive's metadata file (.meta, format
// version 2), rewritten so that a copy of an archive carries another
// host's label values. pmlogrewrite 6.0.3 writes a label whose value it
// changes as a label set of its own, and pmseries keeps one set per
// context, losing the others: the simulation re-encodes the set instead.
//
// A record is its length (big-endian uint32, the whole record), its type,
// its payload and its length again. A label record (type 3) holds a
// timestamp (seconds, microseconds), the label type (context 1, cluster
// 8...), its identifier, and sets: an instance, the JSON text of the
// labels, their count, and per label the offsets and lengths of its name
// and value in the JSON text (uint16 name, uint8 name length, uint8 flags,
// uint16 value, uint16 value length).
const (
	metaLabel     = 3
	labelContext  = 1
	labelCluster  = 8
	metaHeaderLen = 8 // length and type
)

// setLabels returns meta with, in every label set of the given label type,
// each label named in values given that value (a JSON string); labels
// absent from a set are not added.
func setLabels(meta []byte, labelType uint32, values map[string]string) ([]byte, error) {
	var out bytes.Buffer
	be := binary.BigEndian
	for off := 0; off < len(meta); {
		if len(meta)-off < metaHeaderLen+4 {
			return nil, fmt.Errorf(".meta: truncated record at %d", off)
		}
		n := int(be.Uint32(meta[off:]))
		if n < metaHeaderLen+4 || off+n > len(meta) || be.Uint32(meta[off+n-4:]) != uint32(n) {
			return nil, fmt.Errorf(".meta: bad record length %d at %d", n, off)
		}
		rec := meta[off : off+n]
		off += n
		if be.Uint32(rec[4:]) != metaLabel || be.Uint32(rec[16:]) != labelType {
			out.Write(rec)
			continue
		}
		body, err := relabelRecord(rec[metaHeaderLen:n-4], values)
		if err != nil {
			return nil, err
		}
		out.Write(be.AppendUint32(nil, uint32(len(body)+metaHeaderLen+4)))
		out.Write(rec[4:8])
		out.Write(body)
		out.Write(be.AppendUint32(nil, uint32(len(body)+metaHeaderLen+4)))
	}
	return out.Bytes(), nil
}

// relabelRecord re-encodes the payload of a label record with values.
func relabelRecord(p []byte, values map[string]string) ([]byte, error) {
	be := binary.BigEndian
	short := fmt.Errorf(".meta: truncated label record")
	if len(p) < 20 {
		return nil, short
	}
	out := append([]byte(nil), p[:20]...) // timestamp, type, ident, sets
	nsets := int(be.Uint32(p[16:]))
	p = p[20:]
	for range nsets {
		if len(p) < 8 {
			return nil, short
		}
		inst, jlen := p[:4], int(be.Uint32(p[4:]))
		if len(p) < 8+jlen+4 {
			return nil, short
		}
		json := p[8 : 8+jlen]
		nl := int(be.Uint32(p[8+jlen:]))
		labels := p[12+jlen:]
		if len(labels) < 8*nl {
			return nil, short
		}
		p = labels[8*nl:]
		if nl == 0 {
			out = append(out, inst...)
			out = be.AppendUint32(out, uint32(jlen))
			out = append(out, json...)
			out = be.AppendUint32(out, 0)
			continue
		}
		var text []byte
		var entries []byte
		text = append(text, '{')
		for i := range nl {
			l := labels[8*i : 8*i+8]
			no, nn, flags := int(be.Uint16(l)), int(l[2]), l[3]
			vo, vn := int(be.Uint16(l[4:])), int(be.Uint16(l[6:]))
			if no+nn > jlen || vo+vn > jlen {
				return nil, fmt.Errorf(".meta: label %d outside its set's JSON", i)
			}
			name, value := json[no:no+nn], json[vo:vo+vn]
			if v, ok := values[string(name)]; ok {
				value = fmt.Appendf(nil, "%q", v)
			}
			if i > 0 {
				text = append(text, ',')
			}
			text = append(text, '"')
			entries = be.AppendUint16(entries, uint16(len(text)))
			entries = append(entries, byte(len(name)), flags)
			text = append(text, name...)
			text = append(text, '"', ':')
			entries = be.AppendUint16(entries, uint16(len(text)))
			entries = be.AppendUint16(entries, uint16(len(value)))
			text = append(text, value...)
		}
		text = append(text, '}')
		out = append(out, inst...)
		out = be.AppendUint32(out, uint32(len(text)))
		out = append(out, text...)
		out = be.AppendUint32(out, uint32(nl))
		out = append(out, entries...)
	}
	if len(p) != 0 {
		return nil, fmt.Errorf(".meta: %d bytes past a label record's sets", len(p))
	}
	return out, nil
}
