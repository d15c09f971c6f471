package bridge

import (
	"strings"
	"unicode/utf8"

	"github.com/gopcp/mmv"
)

// Help returns the help text of a metric of the short help short (one
// line) and the long help long ("" for none), as mmv takes it whatever
// the source's text: a help text is only shown, and mmv's refusal of one
// refused the family or instrument and every value of it. Each part has
// its NUL bytes, which mmv refuses (PCP's strings end at one), made
// spaces, and is cut to the 255 bytes PCP keeps, on a UTF-8 boundary.
func Help(short, long string) string {
	if long == "" {
		return helpPart(short)
	}
	return helpPart(short) + "\n" + helpPart(long)
}

// helpPart is one part of Help.
func helpPart(s string) string {
	s = strings.ReplaceAll(s, "\x00", " ")
	if len(s) <= mmv.MaxStringLen {
		return s
	}
	n := mmv.MaxStringLen
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
