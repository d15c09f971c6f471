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

// Hash returns a hash of values that tells apart lists that differ in any
// value or in where one value ends, for lookups that must not build the
// name. Equal lists have equal hashes; unequal ones rarely do.
func Hash(values []string) uint64 {
	h := uint64(14695981039346656037)
	for _, v := range values {
		for j := 0; j < len(v); j++ {
			h ^= uint64(v[j])
			h *= 1099511628211
		}
		h ^= 0xff // a byte no value's end is confused with
		h *= 1099511628211
	}
	return h
}
