package mmv

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gopcp/mmv/internal/osfile"
	"github.com/gopcp/mmv/internal/pcpname"
)

// The rules below are those of PCP's MMV reader (pmdammv) and namespace:
// a registry that passes them yields a file the reader loads whole.

// reservedName is the part of PCP's mmv namespace that the reader's own
// metrics (mmv.control.*) occupy.
const reservedName = "control"

// maxFileName is the longest file name whose temporary name (osfile's
// ".<name>.<pid>.<random>") fits in the 255 bytes of a file name.
const maxFileName = 255 - osfile.TempLen

// checkFileName enforces what PCP needs of a file name: a letter first, then
// letters, digits, '_' and '.', because it becomes part of every metric
// name; nothing that could leave the directory or hide the file.
func checkFileName(name string, flags Flags) error {
	subject := subject("file", name)
	switch {
	case name == "":
		return errorf(ErrName, subject, "a file name cannot be empty")
	case len(name) > maxFileName:
		return errorf(ErrTooLong, subject, "a file name holds at most %d bytes, so that its temporary name fits the file system's 255", maxFileName)
	case name[0] == '.':
		return errorf(ErrName, subject, "a name starting with '.' is ignored by PCP")
	case strings.ContainsAny(name, "/\x00"):
		return errorf(ErrName, subject, "a file name cannot contain '/' or NUL")
	case !pcpname.IsLetter(name[0]):
		return errorf(ErrName, subject, "a file name must start with a letter, or PCP drops its metrics")
	case flags&NoPrefix == 0 && (name == reservedName || strings.HasPrefix(name, reservedName+".")):
		return errorf(ErrNamespace, subject, "mmv.%s is the MMV agent's own namespace", reservedName)
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !pcpname.IsLetter(c) && !pcpname.IsDigit(c) && c != '_' && c != '.' {
			return errorf(ErrName, subject, "%s is not a letter, digit, '_' or '.', so PCP drops its metrics", quoteCharAt(name, i))
		}
	}
	if strings.HasSuffix(name, ".") || strings.Contains(name, "..") {
		return errorf(ErrName, subject, "a file name cannot have an empty part between dots")
	}
	return nil
}

// checkRegistryName checks the name of a registry's first file, with its
// flags: a file name (checkFileName), and not one of an overflow file:
// <file>.N names the overflow files of the registry <file>, so no
// registry's name ends in '.' and digits. A registry named web.2 kept
// registry web from starting (ErrInUse) while it ran, and once closed
// without the Process flag had its file renamed over by web's second
// file, its metrics gone from PCP, no error on either side; a NoPrefix
// one, closed, was taken for web's leftover and buried (bury).
func checkRegistryName(name string, flags Flags) error {
	if err := checkFileName(name, flags); err != nil {
		return err
	}
	if i := strings.LastIndexByte(name, '.'); i > 0 && strings.Trim(name[i+1:], "0123456789") == "" {
		return errorf(ErrName, subject("file", name), "a registry's name cannot end in '.' and digits: <file>.N names the overflow files of the registry <file>")
	}
	return nil
}

// checkMetricName enforces PCP's metric name syntax: dot-separated parts,
// each a letter then letters, digits and '_'.
func checkMetricName(subject, name string, flags Flags) error {
	if name == "" {
		return errorf(ErrName, subject, "a metric name cannot be empty")
	}
	if len(name) > MaxStringLen {
		return errorf(ErrTooLong, subject, "a metric name holds at most %d bytes", MaxStringLen)
	}
	start := 0 // where the current part starts
	for i := 0; i <= len(name); i++ {
		if i == len(name) || name[i] == '.' {
			if i == start {
				return errorf(ErrName, subject, "empty part between dots")
			}
			start = i + 1
			continue
		}
		c := name[i]
		if i == start && !pcpname.IsLetter(c) {
			part, _, _ := strings.Cut(name[start:], ".")
			return errorf(ErrName, subject, "part %q must start with a letter", part)
		}
		if !pcpname.IsLetter(c) && !pcpname.IsDigit(c) && c != '_' {
			return errorf(ErrName, subject, "%s is not a letter, digit, '_' or '.'", quoteCharAt(name, i))
		}
	}
	if flags&NoPrefix != 0 && (name == reservedName || strings.HasPrefix(name, reservedName+".")) {
		return errorf(ErrNamespace, subject, "mmv.%s is the MMV agent's own namespace", reservedName)
	}
	return nil
}

// quoteCharAt quotes the character of s starting at byte i as the program
// wrote it: the whole UTF-8 rune ('é', where the byte alone read 'Ã'), or
// the byte escaped ('\xff') when it starts no valid rune.
func quoteCharAt(s string, i int) string {
	if r, size := utf8.DecodeRuneInString(s[i:]); r != utf8.RuneError || size > 1 {
		return strconv.QuoteRune(r)
	}
	return fmt.Sprintf(`'\x%02x'`, s[i])
}

// checkInstanceName keeps instance names readable by PCP's tools. Their
// spaces are C's isspace, ASCII: a tool's instance list (pmval -i, a
// metric spec's [...]) drops white space around a name, and the name up
// to its first space is its short name. A Unicode space (U+00A0, U+3000)
// is bytes to PCP, as any UTF-8, and a name may end in it. A name must be
// UTF-8, as a vector's values must: PCP shows its bytes, but the scrape
// (package expose) writes what is not UTF-8 as U+FFFD, which made
// "caf\xe9" and "caf\xe8" two instances in PCP and one series twice.
func checkInstanceName(subject, name string) error {
	switch {
	case name == "":
		return errorf(ErrName, subject, "an instance name cannot be empty")
	case len(name) > MaxStringLen:
		return errorf(ErrTooLong, subject, "an instance name holds at most %d bytes", MaxStringLen)
	case strings.IndexByte(name, 0) >= 0:
		return errorf(ErrName, subject, "an instance name cannot contain NUL")
	case isASCIISpace(name[0]) || isASCIISpace(name[len(name)-1]):
		return errorf(ErrName, subject, "an instance name cannot start or end with ASCII white space")
	case !utf8.ValidString(name):
		return errorf(ErrName, subject, "an instance name must be valid UTF-8")
	}
	return nil
}

// instanceNameKey returns the nameKey of name, and whether checkInstanceName
// accepts it, without making an error: the three scans adding an instance
// needs, where the check, its subject and the key took six.
func instanceNameKey(name string) (key string, ok bool) {
	n := len(name)
	if n == 0 || n > MaxStringLen {
		return "", false
	}
	ascii, nul := scanBytes(name)
	if nul || isASCIISpace(name[0]) || isASCIISpace(name[n-1]) || !ascii && !utf8.ValidString(name) {
		return "", false
	}
	if i := strings.IndexByte(name, ' '); i >= 0 {
		return name[:i], true
	}
	return name, true
}

// scanBytes reports whether s is ASCII alone and whether it holds a NUL,
// eight bytes at a time, in one pass: a name of 10,000 instances (AddIndom)
// scanned for its NUL (strings.IndexByte) and again for UTF-8
// (utf8.ValidString) took 1.3 times as long to declare as without the
// second scan (BenchmarkBuildStart/instances/declare, four alternating
// rounds); a name past ASCII is then checked by utf8.ValidString.
func scanBytes(s string) (ascii, nul bool) {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	var or, zero uint64
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		or |= w
		zero |= (w - lo) &^ w & hi // a byte of w is 0 (exact for whether one is)
	}
	for ; i < len(s); i++ {
		or |= uint64(s[i])
		if s[i] == 0 {
			zero = hi
		}
	}
	return or&hi == 0, zero != 0
}

// isASCIISpace reports whether c is white space to C's isspace: the ends
// of an instance name cannot be (checkInstanceName).
func isASCIISpace(c byte) bool { return c < utf8.RuneSelf && asciiSpace[c] }

// asciiSpace holds the bytes C's isspace accepts in the C locale.
var asciiSpace = [utf8.RuneSelf]bool{'\t': true, '\n': true, '\v': true, '\f': true, '\r': true, ' ': true}

// checkHelp checks the short and long help of subject: each fits a
// string slot, and holds no NUL byte, at which PCP's strings end (ErrName,
// as for a string value, the message saying it is the help text).
func checkHelp(subject, short, long string) error {
	for _, t := range [...]struct{ part, text string }{{"short", short}, {"long", long}} {
		if len(t.text) > MaxStringLen {
			return errorf(ErrTooLong, subject, "help text of %d bytes; at most %d fit", len(t.text), MaxStringLen)
		}
		if strings.IndexByte(t.text, 0) >= 0 {
			return &declError{kind: ErrName, msg: fmt.Sprintf("mmv: %s: invalid help text: a NUL byte in its %s help (PCP's strings end at one)", subject, t.part)}
		}
	}
	return nil
}

// splitHelp makes a help text the short help (first line) and long help.
func splitHelp(help string) (short, long string) {
	short, long, _ = strings.Cut(help, "\n")
	return short, strings.TrimSpace(long)
}
