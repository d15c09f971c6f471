package mmv

import (
	"bytes"
	"sync"
)

// A string record is 256 bytes: the NUL-terminated text, then zeros. Names
// (v2 and v3), help texts and string values each have one.
const stringSize = MaxStringLen + 1

// putString fills a string record with s, NUL-terminated and zero-padded.
func putString(rec []byte, s string) {
	n := copy(rec[:MaxStringLen], s)
	clear(rec[n:stringSize])
}

// inlineNameLen is the bytes of a name inline in a v1 record, a metric's
// or an instance's.
const inlineNameLen = 64

// nameAt reads the name of a record of the file b at offset at: inline in
// v1 (64 bytes, NUL-terminated), in v2 and v3 the offset of a string
// record. It reports false for bytes that hold no name.
func nameAt(b []byte, at uint64, version int) (string, bool) {
	var name []byte
	switch {
	case version == Version1 && at <= uint64(len(b)) && uint64(len(b))-at >= inlineNameLen:
		name = b[at:][:inlineNameLen]
	case version != Version1 && at <= uint64(len(b)) && uint64(len(b))-at >= 8:
		off := ne.Uint64(b[at:])
		if off > uint64(len(b)) || uint64(len(b))-off < stringSize {
			return "", false
		}
		name = b[off:][:stringSize]
	default:
		return "", false
	}
	return cString(name)
}

// putNameAt writes name as the name of a record of the file b at offset
// at, where nameAt reads it, and reports whether it fits there.
func putNameAt(b []byte, at uint64, version int, name string) bool {
	switch {
	case version == Version1 && len(name) < inlineNameLen:
		copy(b[at:][:inlineNameLen], name)
		clear(b[at+uint64(len(name)):][:inlineNameLen-len(name)])
	case version != Version1 && len(name) <= MaxStringLen:
		putString(b[ne.Uint64(b[at:]):], name)
	default:
		return false
	}
	return true
}

// cString returns the NUL-terminated text at the start of b, reporting
// false when b holds no NUL.
func cString(b []byte) (string, bool) {
	n := bytes.IndexByte(b, 0)
	if n < 0 {
		return "", false
	}
	return string(b[:n]), true
}

// stringLock serialises the writers of a registry's String values, which
// write a whole record, not one atomic word; closed drops their updates
// once the registry is closed.
type stringLock struct {
	mu     sync.Mutex
	closed bool // under mu
}

// stringRecords is where the string records of a file are, its strings
// section as the file was laid out, to tell a string offset that points at
// one from one that does not: 0, a String value's before a publication
// laid out its record, is the file's header.
type stringRecords struct{ off, end uint64 }

// at returns the string record at offset off of the file b whose records
// rs are, nil when off is not where one starts.
func (rs stringRecords) at(b []byte, off uint64) []byte {
	if off < rs.off || off >= rs.end || (off-rs.off)%stringSize != 0 || rs.end > uint64(len(b)) {
		return nil
	}
	return b[off:][:stringSize]
}
