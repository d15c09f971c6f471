// Package pcpname makes strings into parts of the names PCP accepts for
// files, metrics and labels: a letter, then letters, digits and '_'. It is
// the one sanitizer of the module, shared by the registry's default file
// name and the runtime bridge's metric names; Unclash is the one rename of
// a label that clashes with a histogram's le; Labels names a bridge's
// labels; Own lists the labels PCP puts on every metric itself; Help is
// the one cut of a help text, for the texts the registry makes up and the
// bridges' (the runtime's, client_golang's and OpenTelemetry's).
package pcpname

import (
	"slices"
	"strings"
	"unicode/utf8"
)

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

// own are the labels PCP puts on every metric itself, under a file's
// (pmLookupLabels' first levels): pmcd's context labels, of the host and
// of the client (container within one), and the agent's domain label,
// {"agent":"mmv"}. A label of a file of one of these names, at any level,
// replaces PCP's value on every metric or instance it reaches (pminfo -l,
// PCP 6.0.3): hostname="pod-7" for every metric of the file. Labels an
// administrator adds to pmcd's (PCP_SYSCONF_DIR/labels) are the host's
// own, unknown here.
var own = [...]string{"agent", "container", "domainname", "groupid", "hostname", "machineid", "userid"}

// Own returns the names of the labels PCP puts on every metric itself.
func Own() []string { return slices.Clone(own[:]) }

// IsOwn reports whether name is one of the labels PCP puts on every
// metric itself.
func IsOwn(name string) bool { return slices.Contains(own[:], name) }

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

// Labels returns the PCP label names of a bridge's label names (an
// OpenTelemetry instrument's attribute keys, a Prometheus family's
// labels): each made a part (Part, "x" before it), but one that reserved
// has (the registry's labels, a histogram's le) or another name makes
// (a.b and a_b; _a and x_a) made Exported+<label>, or the first rename of
// it free (Unclash). A vector given one label twice is refused, as is
// one given a label of its registry: every value of the instrument or
// family dropped, for good.
//
// The names spelt as their labels (a_b, le) are settled first, then the
// others, in the order given, each taking its label or the first rename
// of it free: so a name spelt as a label that reserved lacks keeps it,
// whatever the other names beside it, and its instances are named alike
// in a run whose first names lack them. Settled in order, a_b was
// exported_a_b beside a.b and a_b alone.
func Labels(names, reserved []string) []string {
	labels, order := make([]string, len(names)), make([]int, 0, len(names))
	for i, n := range names {
		if labels[i] = Part(n, "x"); labels[i] == n {
			order = append(order, i)
		}
	}
	for i, n := range names {
		if labels[i] != n {
			order = append(order, i)
		}
	}
	settled := make([]bool, len(names))
	taken := func(n string) bool {
		for j, l := range labels {
			if settled[j] && l == n {
				return true
			}
		}
		return slices.Contains(reserved, n)
	}
	for _, i := range order {
		if taken(labels[i]) {
			// Nor a label another name makes, settled or not: a.b renamed
			// would take exported_a_b from the name exported_a_b.
			labels[i] = Unclash(Exported+labels[i], func(n string) bool { return taken(n) || slices.Contains(labels, n) })
		}
		settled[i] = true
	}
	return labels
}

// MaxHelp is the most bytes of a help text PCP keeps (mmv.MaxStringLen).
const MaxHelp = 255

// Help returns s as a help text PCP keeps whatever s holds: its NUL bytes,
// at which PCP's strings end, made spaces, and when longer than MaxHelp,
// cut to fit with "..." after it, at a space among its last wordSlack
// bytes kept (a word left whole), else on a UTF-8 boundary (a name left
// cut, not a text cut back to its first words).
func Help(s string) string {
	s = strings.ReplaceAll(s, "\x00", " ")
	if len(s) <= MaxHelp {
		return s
	}
	n := MaxHelp - len("...")
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	if i := strings.LastIndexByte(s[:n], ' '); i > 0 && n-i <= wordSlack {
		n = i
	}
	return s[:n] + "..."
}

// wordSlack is how far back Help looks for a space to cut at.
const wordSlack = 32
