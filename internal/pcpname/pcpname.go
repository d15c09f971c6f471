// Package pcpname makes strings into parts of the names PCP accepts for
// files, metrics and labels: a letter, then letters, digits and '_'. It is
// the one sanitizer of the module, shared by the registry's default file
// name and the runtime bridge's metric names; Unclash is the one rename of
// a label that clashes with a histogram's le.
package pcpname

// IsLetter reports whether c is an ASCII letter.
func IsLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// IsDigit reports whether c is an ASCII digit.
func IsDigit(c byte) bool { return '0' <= c && c <= '9' }

// Part returns s with every byte that is not a letter, digit or '_' turned
// into '_', and prefix put before it when it does not then start with a
// letter (prefix itself starts with one).
func Part(s, prefix string) string {
	b := []byte(s)
	for i, c := range b {
		if !IsLetter(c) && !IsDigit(c) && c != '_' {
			b[i] = '_'
		}
	}
	if len(b) == 0 || !IsLetter(b[0]) {
		b = append([]byte(prefix), b...)
	}
	return string(b)
}

// Exported is what Prometheus puts before a label name that clashes with
// one of its own, such as a histogram's le: exported_le.
const Exported = "exported_"

// Unclash returns name, with Exported put before it again while taken
// reports the name a label's already: Prometheus's rename of a label
// that clashes (exported_le, then exported_exported_le), shared by the
// scrape (package expose) and the OpenTelemetry bridge. Callers pass the
// first rename, Exported and the name, a constant: one that is free costs
// no allocation.
func Unclash(name string, taken func(string) bool) string {
	for taken(name) {
		name = Exported + name
	}
	return name
}
