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

import "hash/maphash"

// MaxLen is the longest instance name PCP keeps.
const MaxLen = 255

// Name returns the instance name of values under names, which have the
// same length; ok is false when the name would be longer than MaxLen.
func Name(names, values []string) (name string, ok bool) {
	n := 0
	for i, v := range values {
		n += len(names[i]) + 2 // '=' and ','
		for j := 0; j < len(v); j++ {
			n++
			if escaped(v[j]) {
				n += 2
			}
		}
	}
	if n-1 > MaxLen {
		return "", false
	}
	b := make([]byte, 0, n-1)
	for i, v := range values {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, names[i]...)
		b = append(b, '=')
		for j := 0; j < len(v); j++ {
			if c := v[j]; escaped(c) {
				b = append(b, '%', hex[c>>4], hex[c&15])
			} else {
				b = append(b, c)
			}
		}
	}
	return string(b), true
}

const hex = "0123456789ABCDEF"

func escaped(c byte) bool {
	return c <= ' ' || c == 0x7f || c == ',' || c == '=' || c == '%'
}

// seed keys Hash, for this process.
var seed = maphash.MakeSeed()

// Hash returns a hash of values, for lookups within this process that must
// not build the name: the runtime's string hash of each value, combined in
// order. Equal lists have equal hashes; unequal ones rarely do, and a
// lookup compares the values anyway.
func Hash(values []string) uint64 {
	var h uint64
	for _, v := range values {
		h = h*0x9e3779b97f4a7c15 ^ maphash.String(seed, v)
	}
	return h
}
