package mmvfile

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gopcp/mmv"
)

// PCP names a release of PCP whose mmvdump Dump can print as. Their
// mmvdumps differ in a few places (docs/reader.md, "PCP's mmvdump, byte
// for byte"): which TOC counts are bad, a message of the string section,
// and the units text.
type PCP int

const (
	// PCP603 is PCP 6.0.3's mmvdump (Debian 12), the default.
	PCP603 PCP = iota
	// PCP72 is PCP 7.2's mmvdump (7.2.2, Debian unstable): an instances
	// or values section of count 0 or less is printed (empty), any other
	// of count 0 or less is "Bad TOC[n]: invalid entry count N"; a string
	// slot past the end of the file names the sizes compared; units show
	// 7.2's extra units and "count x 10^3" for a lone count scale.
	PCP72
)

// ParsePCP returns the PCP of a version such as "6.0.3" or "7.2": 6.0.x
// is PCP603, 7.2.x is PCP72. Other versions are refused: their mmvdumps
// are not proven.
func ParsePCP(version string) (PCP, error) {
	var major, minor int
	if _, err := fmt.Sscanf(version, "%d.%d", &major, &minor); err == nil {
		switch {
		case major == 6 && minor == 0:
			return PCP603, nil
		case major == 7 && minor == 2:
			return PCP72, nil
		}
	}
	return 0, fmt.Errorf("mmvfile: PCP %q: Dump prints as PCP 6.0 or 7.2", version)
}

// String returns the version, "6.0.3" or "7.2".
func (p PCP) String() string {
	switch p {
	case PCP603:
		return "6.0.3"
	case PCP72:
		return "7.2"
	}
	return "PCP(" + strconv.Itoa(int(p)) + ")"
}

// Dump prints the MMV file b, called name, as PCP 6.0.3's mmvdump prints
// it: DumpAs with PCP603.
func Dump(w io.Writer, name string, b []byte, now time.Time) (ok bool, err error) {
	return DumpAs(w, name, b, now, PCP603)
}

// DumpAs prints the MMV file b, called name, as the mmvdump of PCP pcp
// prints it, byte for byte, whatever the bytes: the header, then each TOC
// entry and its records, its warnings included. It reports whether that
// mmvdump would exit with status 0, as it does after a TOC entry it
// finds bad ("Bad TOC[n]: invalid entry count 0") or a string value past
// the end of the file; a bad header, record or offset stops that section
// and makes it exit 1.
//
// It keeps PCP's misprints, so that the two can be compared: instance
// records of version 2 and 3 files are shown 80 bytes apart (the size of
// a version 1 record) instead of 24; the records PCP's reader skips, such
// as a value of no metric, are printed from whatever the offsets lead to
// (the header, for offset 0). Where PCP's mmvdump would read outside the
// file (an offset wrapping around, a string running past the end) and
// crash or print what lies beyond, DumpAs prints the bytes up to the end
// of the file and stops, reporting false.
//
// now is the time open elapsed intervals are measured to. A pcp other
// than PCP603 and PCP72 prints as PCP603.
func DumpAs(w io.Writer, name string, b []byte, now time.Time, pcp PCP) (ok bool, err error) {
	bw := bufio.NewWriter(w)
	d := &dumper{w: bw, b: b, size: uint64(len(b)), now: now, pcp: pcp}
	ok = d.dump(name)
	return ok, bw.Flush()
}

// dumper walks a file as PCP's mmvdump does. Its reads are bounded by
// the file: in reports whether a range lies inside it, and a read outside
// stops the dump (PCP's would read beyond its mapping).
type dumper struct {
	w       *bufio.Writer
	b       []byte
	size    uint64
	now     time.Time
	pcp     PCP
	version int
	outside bool // a read fell outside the file: stop
}

func (d *dumper) printf(format string, args ...any) { fmt.Fprintf(d.w, format, args...) }

// in reports whether n bytes at off lie inside the file, noting a read
// outside. PCP's offsets wrap around as C's unsigned arithmetic does, so
// a check that passed in PCP can still lead outside.
func (d *dumper) in(off, n uint64) bool {
	if off > d.size || n > d.size-off {
		d.outside = true
		return false
	}
	return true
}

func (d *dumper) u32(off uint64) uint32 {
	if !d.in(off, 4) {
		return 0
	}
	return ne.Uint32(d.b[off:])
}

func (d *dumper) u64(off uint64) uint64 {
	if !d.in(off, 8) {
		return 0
	}
	return ne.Uint64(d.b[off:])
}

func (d *dumper) i32(off uint64) int32 { return int32(d.u32(off)) }
func (d *dumper) i64(off uint64) int64 { return int64(d.u64(off)) }

// cstr is the C string at off, as printf's %s reads it: up to a NUL, or
// up to the end of the file, past which PCP's would read its mapping's
// zero fill or fault.
func (d *dumper) cstr(off uint64) string {
	if !d.in(off, 0) {
		return ""
	}
	s := d.b[off:]
	if i := bytes.IndexByte(s, 0); i >= 0 {
		return string(s[:i])
	}
	d.outside = true
	return string(s)
}

// slot is a string slot's text as PCP's mmvdump copies it: at most 255
// bytes, for it writes a NUL into the last of 256.
func (d *dumper) slot(off uint64) string {
	if !d.in(off, stringSize) {
		return ""
	}
	s := d.b[off : off+stringSize-1]
	if i := bytes.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	return string(s)
}

// tooSmall is PCP's test that n bytes at off fit in the file, in 64-bit
// unsigned arithmetic: it passes an offset that wraps around.
func (d *dumper) tooSmall(off, n uint64) bool { return d.size < off+n }

func (d *dumper) dump(name string) bool {
	if d.size < headerSize {
		d.printf("Bad file size: too small for a header\n")
		return false
	}
	if !bytes.Equal(d.b[hdrMagic:hdrMagic+4], []byte(mmv.Magic)) {
		// %c of each of the first three bytes, NULs included.
		d.printf("Bad magic: %s\n", d.b[hdrMagic:hdrMagic+3])
		return false
	}
	version := d.i32(hdrVersion)
	if version < mmv.Version1 || version > mmv.Version3 {
		d.printf("Version %d not supported\n", version)
		return false
	}
	d.version = int(version)
	gen1, gen2 := d.u64(hdrGen1), d.u64(hdrGen2)
	d.printf("MMV file   = %s\nVersion    = %d\nGenerated  = %d\n", name, version, gen1)
	if gen1 != gen2 {
		d.printf("Generated2 = %d\nMismatched generation numbers (%d/%d)\n", gen2, gen1, gen2)
		return false
	}
	tocs := d.i32(hdrTOCs)
	d.printf("TOC count  = %d\n", uint32(tocs))
	if tocs < minTOCs {
		d.printf("Bad tocs: invalid table of contents count (%d)\n", tocs)
		return false
	}
	cluster := d.i32(hdrCluster)
	d.printf("Cluster    = %d\n", uint32(cluster))
	if cluster < 0 || cluster > mmv.MaxCluster {
		d.printf("Bad cluster: %d is not a valid cluster ID\n", cluster)
		return false
	}
	flags := d.u32(hdrFlags)
	d.printf("Process    = %d\nFlags      = 0x%x (%s)\n", d.i32(hdrPID), flags, flagText(flags))
	if d.tooSmall(headerSize, uint64(tocs)*tocSize) {
		d.printf("Bad file size: too small for %d TOC entries\n", tocs)
		return false
	}
	ok := true
	for i := range uint64(tocs) {
		at := headerSize + i*tocSize
		typ, count, off := SectionType(d.i32(at+tocType)), d.u32(at+tocCount), d.u64(at+tocOffset)
		n := int32(count) // PCP's record loops count with a signed int
		if d.badCount(typ, n) {
			d.printf("Bad TOC[%d]: invalid entry count %d\n", i, n)
			continue
		}
		switch typ {
		case Indoms:
			ok = d.indoms(i, at, off, n) && ok
		case Instances:
			ok = d.instances(i, at, off, n) && ok
		case Metrics:
			ok = d.metrics(i, at, off, n) && ok
		case Values:
			ok = d.values(i, at, off, n) && ok
		case Strings:
			ok = d.strings(i, at, off, n) && ok
		case Labels:
			ok = d.labels(i, at, off, n) && ok
		default:
			d.printf("Unrecognised TOC[%d] type: 0x%x\n", i, uint32(typ))
			ok = false
		}
		if d.outside {
			return false
		}
	}
	return ok
}

// badCount reports whether PCP's mmvdump skips a TOC entry of type typ
// and count n as bad: 6.0.3's one of count 0, whatever its type; 7.2's
// one of count 0 or less, but for instances and values, which it prints
// even then, with no records.
func (d *dumper) badCount(typ SectionType, n int32) bool {
	if d.pcp == PCP72 {
		return n <= 0 && typ != Instances && typ != Values
	}
	return n == 0
}

// flagText names the header flags as PCP's mmvdump does: "none", or the
// known flags joined by ", ", then any others as "unknown=HEX".
func flagText(flags uint32) string {
	if flags == 0 {
		return "none"
	}
	var names []string
	for _, f := range []struct {
		bit  mmv.Flags
		name string
	}{{mmv.NoPrefix, "noprefix"}, {mmv.Process, "process"}, {mmv.Sentinel, "sentinel"}} {
		if flags&uint32(f.bit) != 0 {
			names = append(names, f.name)
		}
	}
	rest := flags &^ uint32(mmv.NoPrefix|mmv.Process|mmv.Sentinel)
	if rest != 0 {
		// The known flags keep their trailing ", " before it.
		return strings.Join(append(names, ""), ", ") + "unknown=" + strconv.FormatUint(uint64(rest), 16)
	}
	return strings.Join(names, ", ")
}

// help prints a help text line, or reports the file too small for it.
func (d *dumper) help(field uint64, which, bad string, toc uint64, rec int32, kind string) bool {
	off := d.u64(field)
	if off == 0 {
		d.printf("       (no %s)\n", which)
		return true
	}
	if d.tooSmall(off, stringSize) {
		d.printf("Bad file size: too small for toc[%d] %s[%d] %s\n", toc, kind, rec, bad)
		return false
	}
	d.printf("       %s=%s\n", which, d.slot(off))
	return true
}

// each walks count records stride bytes apart from off, as PCP's mmvdump
// does: before each it checks that need bytes at it fit in the file, else
// prints small (a format of the TOC index, the record's and its offset,
// %[1]d, %[2]d and %[3]d) and stops;
// it stops too when visit reports false or a read fell outside the file.
func (d *dumper) each(toc, off uint64, count int32, stride, need uint64, small string, visit func(i int32, r uint64) bool) bool {
	for i := range count {
		r := off + uint64(i)*stride
		if d.tooSmall(r, need) {
			d.printf(small, toc, i, r)
			return false
		}
		if !visit(i, r) || d.outside {
			return false
		}
	}
	return true
}

func (d *dumper) indoms(toc, at, off uint64, count int32) bool {
	d.printf("\nTOC[%d]: offset %d, indoms offset %d (%d entries)\n", toc, at, off, count)
	size := recordSize(Indoms, d.version)
	return d.each(toc, off, count, size, size, "Bad file size: too small for toc[%[1]d] indom[%[2]d]\n", func(i int32, r uint64) bool {
		d.printf("  [%d/%d] %d instances, starting at offset %d\n",
			d.u32(r+indomSerial), int64(r), d.i32(r+indomCount), d.i64(r+indomFirstInst))
		return d.help(r+indomShortHelp, "shorttext", "oneline", toc, i, "indom") &&
			d.help(r+indomLongHelp, "helptext", "help", toc, i, "indom")
	})
}

func (d *dumper) instances(toc, at, off uint64, count int32) bool {
	d.printf("\nTOC[%d]: offset %d, instances offset %d (%d entries)\n", toc, at, int64(off), count)
	size := recordSize(Instances, d.version)
	return d.each(toc, off, count, size, size, "\nBad file size: too small for toc[%[1]d] inst[%[2]d]\n", func(i int32, r uint64) bool {
		indom := d.u64(r + instIndom)
		if d.tooSmall(indom, recordSize(Indoms, d.version)) {
			if d.version == mmv.Version1 {
				d.printf("\nBad file size: too small for toc[%d] indom[%d]\n", toc, i)
			} else {
				d.printf("\nBad file size: too small for toc[%d] inst[%d] indom\n", toc, i)
			}
			return false
		}
		name, ok := d.name(r+instName, fmt.Sprintf("\nBad file size: too small for toc[%d] inst[%d] name\n", toc, i),
			fmt.Sprintf("\nBad file: invalid offset for toc[%d] inst[%d] name\n", toc, i))
		if !ok {
			return false
		}
		// PCP's steps by a version 1 record whatever the version.
		shown := int64(off + uint64(i)*recordSize(Instances, mmv.Version1))
		d.printf("  [%d/%d] instance = [%d or \"%s\"]\n", d.u32(indom+indomSerial), shown, d.i32(r+instID), name)
		return true
	})
}

// typeName and semName are how PCP's mmvdump names types and semantics.
func typeName(t int32) string {
	switch mmv.Type(t) {
	case mmv.Int32:
		return "32-bit int"
	case mmv.Uint32:
		return "32-bit unsigned int"
	case mmv.Int64:
		return "64-bit int"
	case mmv.Uint64:
		return "64-bit unsigned int"
	case mmv.Float:
		return "float"
	case mmv.Double:
		return "double"
	case mmv.String:
		return "string"
	case mmv.Elapsed:
		return "elapsed"
	}
	return "?"
}

func semName(s int32) string {
	switch mmv.Semantics(s) {
	case mmv.SemCounter:
		return "counter"
	case mmv.SemInstant:
		return "instant"
	case mmv.SemDiscrete:
		return "discrete"
	}
	return "?"
}

// name reads a name stored at field: inline in v1, a string slot's offset
// later. For a bad offset it prints PCP's message, small for one past the
// file or zero for 0 (each a complete line), and reports false.
func (d *dumper) name(field uint64, small, zero string) (string, bool) {
	if d.version == mmv.Version1 {
		return d.cstr(field), true
	}
	off := d.u64(field)
	switch {
	case d.tooSmall(off, stringSize):
		d.printf("%s", small)
		return "", false
	case off == 0:
		d.printf("%s", zero)
		return "", false
	}
	return d.slot(off), true
}

// units is a units word as PCP's pmUnitsStr prints it. 6.0.3's ignores
// the word's low byte, where 7.2 keeps an extra unit (mmv.Celsius ...):
// a signed 5-bit code (1 temperature, 2 voltage, 3 current, 4 power; a
// negative code divides; 5 and beyond are "extra-N") and a 3-bit scale,
// its text cut to the 19 bytes of 7.2's buffer ("temperature (scale-").
// The extra unit comes first among the dimensions it multiplies or
// divides, and 7.2 spells a count scale with no dimension "count x 10^3"
// where 6.0.3 spells it "x 10^3", but drops it beside an extra unit.
func (d *dumper) units(word uint32) string {
	u := mmv.Units(word &^ 0xff)
	s := u.String() // 6.0.3's text of the dimensions
	if d.pcp != PCP72 {
		return s
	}
	extra := int8(word) >> 3
	lone := u.DimSpace() == 0 && u.DimTime() == 0 && u.DimCount() == 0
	switch {
	case lone && extra != 0:
		s = ""
	case lone && s != "":
		s = "count " + s
	}
	if extra == 0 {
		return s
	}
	code, scale := int(extra), int(word&7)
	if code < 0 {
		code = -code
	}
	// mmv.Units spells the extra units 7.2 knows, at the scales it names.
	text := mmv.Units(code<<3 | scale).String()
	if name, _, ok := strings.Cut(mmv.Units(code<<3|1).String(), " ("); !ok {
		text = "extra-" + strconv.Itoa(code)
	} else if text == "" {
		text = name + " (scale-" + strconv.Itoa(scale) + ")"
	}
	text = text[:min(len(text), 19)]
	// 6.0.3's text is "MUL", "MUL / DIV" or "/ DIV": the extra unit goes
	// first in its part.
	mul, div, _ := strings.Cut(" "+s, " / ")
	mul = strings.TrimPrefix(mul, " ")
	if extra > 0 {
		mul = strings.TrimSpace(text + " " + mul)
	} else {
		div = strings.TrimSpace(text + " " + div)
	}
	if div == "" {
		return mul
	}
	return strings.TrimSpace(mul + " / " + div)
}

func (d *dumper) metrics(toc, at, off uint64, count int32) bool {
	d.printf("\nTOC[%d]: toc offset %d, metrics offset %d (%d entries)\n", toc, at, int64(off), count)
	size, body := recordSize(Metrics, d.version), metricBody(d.version)
	return d.each(toc, off, count, size, size, "Bad file size: too small for toc[%[1]d] metric[%[2]d]\n", func(i int32, r uint64) bool {
		name, ok := d.name(r, fmt.Sprintf("Bad file size: too small for toc[%d] metric[%d] name\n", toc, i),
			fmt.Sprintf("Bad file: invalid offset for toc[%d] metric[%d] name\n", toc, i))
		if !ok {
			return false
		}
		typ, sem := d.i32(r+body+metricType), d.i32(r+body+metricSem)
		d.printf("  [%d/%d] %s\n", d.u32(r+body+metricItem), int64(r), name)
		d.printf("       type=%s (0x%x), sem=%s (0x%x), pad=0x%x\n", typeName(typ), uint32(typ),
			semName(sem), uint32(sem), d.u32(r+body+metricPad))
		d.printf("       units=%s\n", d.units(d.u32(r+body+metricUnits)))
		if indom := d.u32(r + body + metricIndom); singular(indom) {
			d.printf("       (no indom)\n")
		} else {
			d.printf("       indom=%d\n", int32(indom))
		}
		return d.help(r+body+metricShortHelp, "shorttext", "oneline", toc, i, "metric") &&
			d.help(r+body+metricLongHelp, "helptext", "help", toc, i, "metric")
	})
}

func (d *dumper) values(toc, at, off uint64, count int32) bool {
	d.printf("\nTOC[%d]: offset %d, values offset %d (%d entries)\n", toc, at, off, count)
	size, msize, body := recordSize(Values, d.version), recordSize(Metrics, d.version), metricBody(d.version)
	return d.each(toc, off, count, size, size, "Bad file size: too small for toc[%[1]d] value[%[2]d]\n", func(i int32, r uint64) bool {
		m := d.u64(r + valueMetric)
		if d.tooSmall(m, msize) {
			d.printf("Bad file size: toc[%d] value[%d] metric offset\n", toc, i)
			return false
		}
		name, ok := d.name(m, fmt.Sprintf("Bad file size: too small for toc[%d] value[%d] mname\n", toc, i),
			fmt.Sprintf("Bad file: invalid offset for toc[%d] value[%d] mname\n", toc, i))
		if !ok {
			return false
		}
		d.printf("  [%d/%d] %s", d.u32(m+body+metricItem), r, name)
		if indom := d.u32(m + body + metricIndom); !singular(indom) {
			inst := d.u64(r + valueInstance)
			if d.tooSmall(inst, recordSize(Instances, d.version)) {
				d.printf("\nBad file size: toc[%d] value[%d] inst offset\n", toc, i)
				return false
			}
			// PCP's second message says metric, not value.
			iname, ok := d.name(inst+instName, fmt.Sprintf("Bad file size: too small for toc[%d] value[%d] iname\n", toc, i),
				fmt.Sprintf("Bad file: invalid offset for toc[%d] metric[%d] iname\n", toc, i))
			if !ok {
				return false
			}
			d.printf("[%d or \"%s\"]", d.i32(inst+instID), iname)
		}
		d.value(r, toc, i, mmv.Type(d.i32(m+body+metricType)))
		return true
	})
}

// value prints " = VALUE" and the end of the line; a bad string offset
// ends the line with PCP's message instead, and the dump goes on.
func (d *dumper) value(r, toc uint64, i int32, typ mmv.Type) {
	switch typ {
	case mmv.Int32:
		d.printf(" = %d", d.i32(r+valueAtom))
	case mmv.Uint32:
		d.printf(" = %d", d.u32(r+valueAtom))
	case mmv.Int64:
		d.printf(" = %d", d.i64(r+valueAtom))
	case mmv.Uint64:
		d.printf(" = %d", d.u64(r+valueAtom))
	case mmv.Float:
		d.printf(" = %s", cFloat(float64(math.Float32frombits(d.u32(r+valueAtom)))))
	case mmv.Double:
		d.printf(" = %s", cFloat(math.Float64frombits(d.u64(r+valueAtom))))
	case mmv.String:
		extra := d.u64(r + valueExtra)
		if d.tooSmall(extra, stringSize) {
			d.printf(" = ?\nBad file size: toc[%d] str value[%d] extra\n", toc, i)
			return
		}
		d.printf(" = \"%s\"", d.cstr(extra))
	case mmv.Elapsed:
		v, extra := d.i64(r+valueAtom), d.i64(r+valueExtra)
		t := v
		if extra < 0 {
			// PCP adds the time as a double.
			t = int64(float64(v) + (float64(d.now.Unix())*1e6 + float64(d.now.Nanosecond()/1000) + float64(extra)))
		}
		d.printf(" = %d (value=%d/extra=%d)", t, v, extra)
		if extra > 0 {
			d.printf("\nBad (positive) ELAPSED 'extra' value found!")
		}
	default:
		d.printf("Unknown type %d", int32(typ))
	}
	d.printf("\n")
}

// cFloat formats f as C's printf("%f") does, NaN and infinities included.
func cFloat(f float64) string {
	sign := ""
	if math.Signbit(f) {
		sign = "-"
	}
	switch {
	case math.IsNaN(f):
		return sign + "nan"
	case math.IsInf(f, 0):
		return sign + "inf"
	}
	return strconv.FormatFloat(f, 'f', 6, 64)
}

func (d *dumper) strings(toc, at, off uint64, count int32) bool {
	d.printf("\nTOC[%d]: offset %d, string offset %d (%d entries)\n", toc, at, off, count)
	// PCP's checks each slot at a value record's stride, and prints it at
	// a string slot's.
	small := "Bad file size: toc[%[1]d] string[%[2]d]\n"
	if d.pcp == PCP72 {
		// 7.2's names the sizes it compared: the file's, and the offset
		// checked.
		small = "Bad file size: toc[%[1]d] string[%[2]d]" + fmt.Sprintf(" size %d < off %%[3]d + %d\n", d.size, stringSize)
	}
	return d.each(toc, off, count, recordSize(Values, d.version), stringSize, small, func(i int32, _ uint64) bool {
		r := off + uint64(i)*stringSize
		d.printf("  [%d/%d] %s\n", i+1, r, d.cstr(r))
		return true
	})
}

func (d *dumper) labels(toc, at, off uint64, count int32) bool {
	d.printf("\nTOC[%d]: offset %d, labels offset %d (%d entries)\n", toc, at, int64(off), count)
	size := recordSize(Labels, d.version)
	// PCP's message says metric.
	return d.each(toc, off, count, size, size, "Bad file size: too small for toc[%[1]d] metric[%[2]d]\n", func(i int32, r uint64) bool {
		d.printf("  [%d/%d] %s\n", i+1, r, d.cstr(r+labelPayload))
		d.printf("        flags=0x%x, identity=0x%x\n        internal=0x%x\n", d.u32(r+labelFlags), d.u32(r+labelIdentity), d.u32(r+labelInternal))
		return true
	})
}
