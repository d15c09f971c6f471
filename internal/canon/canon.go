// Package canon names one set of label values as one PCP instance: the
// canonical form that vectors and the bridges share, so that the same
// labels make the same instance name whichever API made them.
//
// The form is name=value pairs, in the order of the label names, joined
// by ','. PCP tells instances apart by their name up to the first space,
// so a space in a value is written %20, and so are the bytes that would
// make the form ambiguous (',', '=', '%') or unreadable (control bytes and
// DEL), each as '%' and two upper-case hex digits. Other bytes, UTF-8
// included, stay as they are. Two different sets of values therefore
// never share a name, nor its part up to the first space, which it does
// not have.
package canon

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
	"unsafe"
)

// MaxLen is the longest instance name PCP keeps.
const MaxLen = 255

// Name returns the instance name of values under names, which have the
// same length; ok is false when the name would be longer than MaxLen.
func Name(names, values []string) (name string, ok bool) {
	n, escapes := 0, 0
	for i, v := range values {
		n += len(names[i]) + 2 + len(v) // the label, '=' and ',', the value
		for j := 0; j < len(v); j++ {
			if escaped(v[j]) {
				escapes++
			}
		}
	}
	if n += 2 * escapes; n-1 > MaxLen { // an escaped byte takes 3, and no ',' ends the last
		return "", false
	}
	b := make([]byte, 0, n-1)
	for i, v := range values {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, names[i]...)
		b = append(b, '=')
		if escapes == 0 { // the common case: the value as it is, in one copy
			b = append(b, v...)
			continue
		}
		for j := 0; j < len(v); j++ {
			if c := v[j]; escaped(c) {
				b = append(b, '%', hex[c>>4], hex[c&15])
			} else {
				b = append(b, c)
			}
		}
	}
	// The name is b's bytes, not a copy (as strings.Builder's String):
	// one allocation, b's, where string(b) made a second past 32 bytes.
	return unsafe.String(unsafe.SliceData(b), len(b)), true
}

const hex = "0123456789ABCDEF"

// Len returns the length of v as Name writes it: 3 bytes for each byte
// it escapes.
func Len(v string) int {
	n := len(v)
	for j := 0; j < len(v); j++ {
		if escaped(v[j]) {
			n += 2
		}
	}
	return n
}

// Values appends to dst the values that Name made name of under names, and
// reports whether name is such a name. A value with no escape is a
// substring of name: only escaped values allocate.
func Values(dst []string, name string, names []string) ([]string, bool) {
	n := len(dst)
	for i, label := range names {
		if i > 0 {
			if name == "" || name[0] != ',' {
				return dst[:n], false
			}
			name = name[1:]
		}
		if len(name) <= len(label) || name[:len(label)] != label || name[len(label)] != '=' {
			return dst[:n], false
		}
		name = name[len(label)+1:]
		end := 0
		for end < len(name) && name[end] != ',' {
			end++
		}
		v, ok := unescape(name[:end])
		if !ok {
			return dst[:n], false
		}
		dst, name = append(dst, v), name[end:]
	}
	if name != "" {
		return dst[:n], false
	}
	return dst, true
}

// unescape undoes Name's escapes in one value.
func unescape(v string) (string, bool) {
	pct := 0
	for i := 0; i < len(v); i++ {
		if v[i] == '%' {
			pct++
		}
	}
	if pct == 0 {
		return v, true
	}
	b := make([]byte, 0, len(v)-2*pct)
	for i := 0; i < len(v); i++ {
		if v[i] != '%' {
			b = append(b, v[i])
			continue
		}
		if i+2 >= len(v) {
			return "", false
		}
		hi, lo := unhex(v[i+1]), unhex(v[i+2])
		if hi < 0 || lo < 0 {
			return "", false
		}
		b = append(b, byte(hi<<4|lo))
		i += 2
	}
	return string(b), true
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

func escaped(c byte) bool {
	return c <= ' ' || c == 0x7f || c == ',' || c == '=' || c == '%'
}

// seed keys Hash, for this process, so that no list of values collides
// with another on every run.
var seed = rand.Uint64()

// Hash returns a hash of values, for lookups within this process that must
// not build the name: each value's bytes, 8 at a time, and its length,
// folded into the hash by a 64x64-bit multiplication (the low and high
// halves of the product xored), in order. Equal lists have equal hashes;
// unequal ones rarely do, and a lookup compares the values anyway. It is
// inlined arithmetic, no call: a value of up to 8 bytes costs one
// multiplication, where the runtime's string hash cost a call and its
// setup for each value, three times as much for three short values.
func Hash(values []string) uint64 {
	h := seed
	for _, v := range values {
		b := unsafe.Slice(unsafe.StringData(v), len(v))
		for len(b) > 8 {
			h = mix(h^binary.LittleEndian.Uint64(b), 0xe7037ed1a0b428db)
			b = b[8:]
		}
		var tail uint64
		switch n := len(b); {
		case n == 8:
			tail = binary.LittleEndian.Uint64(b)
		case n >= 4:
			tail = uint64(binary.LittleEndian.Uint32(b))<<32 | uint64(binary.LittleEndian.Uint32(b[n-4:]))
		case n > 0:
			tail = uint64(b[0])<<16 | uint64(b[n>>1])<<8 | uint64(b[n-1])
		}
		h = mix(h^tail, 0xa0761d6478bd642f+uint64(len(v)))
	}
	return h
}

// mix folds a into b: the halves of their 128-bit product, xored.
func mix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}
