// Package golden compares MMV files with reference files written by
// libpcp_mmv, ignoring only what two writers of the same declarations may
// write differently.
package golden

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
)

// Offsets of the header fields, and the label record's payload.
const (
	goldenHeaderSize   = 40
	goldenTocSize      = 16
	goldenLabelSize    = 256
	goldenLabelPayload = 12
)

var goldenHeaderFields = []struct {
	start, end int
	name       string
}{
	{0, 4, "magic"}, {4, 8, "version"}, {8, 16, "gen1"}, {16, 24, "gen2"},
	{24, 28, "tocs"}, {28, 32, "flags"}, {32, 36, "pid"}, {36, 40, "cluster"},
}

var goldenSectionNames = map[uint32]string{1: "indoms", 2: "instances", 3: "metrics", 4: "values", 5: "strings", 6: "labels"}

// goldenSection is a section of a file, as its TOC describes it.
type goldenSection struct {
	typ         uint32
	count       int
	offset, end int
}

// goldenSections reads the TOC of a file. Each section ends where the next
// one starts, or at the end of the file.
func goldenSections(b []byte) []goldenSection {
	if len(b) < goldenHeaderSize {
		return nil
	}
	ne := binary.NativeEndian
	var secs []goldenSection
	tocs := int(ne.Uint32(b[24:]))
	for i := 0; i < tocs && goldenHeaderSize+goldenTocSize*(i+1) <= len(b); i++ {
		e := b[goldenHeaderSize+goldenTocSize*i:]
		secs = append(secs, goldenSection{typ: ne.Uint32(e), count: int(ne.Uint32(e[4:])), offset: int(ne.Uint64(e[8:]))})
	}
	slices.SortStableFunc(secs, func(a, b goldenSection) int { return a.offset - b.offset })
	for i := range secs {
		secs[i].end = len(b)
		if i+1 < len(secs) {
			secs[i].end = secs[i+1].offset
		}
	}
	return secs
}

// goldenMask zeroes what may differ between two writers of the same
// declarations: gen1, gen2, pid, and in every label the payload bytes
// after the NUL that ends the payload in want. It masks copies.
func goldenMask(got, want []byte) ([]byte, []byte) {
	got, want = slices.Clone(got), slices.Clone(want)
	for _, b := range [][]byte{got, want} {
		for _, f := range goldenHeaderFields {
			if (f.name == "gen1" || f.name == "gen2" || f.name == "pid") && len(b) >= f.end {
				clear(b[f.start:f.end])
			}
		}
	}
	for _, s := range goldenSections(want) {
		if s.typ != 6 {
			continue
		}
		for i := range s.count {
			p := s.offset + goldenLabelSize*i + goldenLabelPayload
			end := s.offset + goldenLabelSize*(i+1)
			if end > len(want) {
				break
			}
			nul := bytes.IndexByte(want[p:end], 0)
			if nul < 0 {
				continue
			}
			clear(want[p+nul+1 : end])
			if end <= len(got) {
				clear(got[p+nul+1 : end])
			}
		}
	}
	return got, want
}

// Diff compares two files after masking and describes the first
// differing bytes, or returns "" when they match.
func Diff(got, want []byte) string {
	got, want = goldenMask(got, want)
	var sb strings.Builder
	if len(got) != len(want) {
		fmt.Fprintf(&sb, "  size: ours %d bytes, golden %d bytes\n", len(got), len(want))
	}
	const maxShown = 16
	shown, total := 0, 0
	for i := range min(len(got), len(want)) {
		if got[i] == want[i] {
			continue
		}
		total++
		if shown < maxShown {
			shown++
			fmt.Fprintf(&sb, "  offset %6d (0x%05x): ours 0x%02x, golden 0x%02x  in %s\n",
				i, i, got[i], want[i], goldenWhere(want, i))
		}
	}
	if total > shown {
		fmt.Fprintf(&sb, "  ... %d differing bytes in all\n", total)
	}
	return sb.String()
}

// goldenWhere names the part of the golden file b that holds offset off:
// a header field, a TOC entry, or a record of a section and the offset
// within it.
func goldenWhere(b []byte, off int) string {
	if off < goldenHeaderSize {
		for _, f := range goldenHeaderFields {
			if off < f.end {
				return fmt.Sprintf("header %s +%d", f.name, off-f.start)
			}
		}
	}
	secs := goldenSections(b)
	if off < goldenHeaderSize+goldenTocSize*len(secs) {
		i := (off - goldenHeaderSize) / goldenTocSize
		return fmt.Sprintf("toc[%d] +%d", i, (off-goldenHeaderSize)%goldenTocSize)
	}
	for _, s := range secs {
		if off < s.offset || off >= s.end {
			continue
		}
		name := goldenSectionNames[s.typ]
		if name == "" {
			name = fmt.Sprintf("section type %d", s.typ)
		}
		if s.count == 0 || (s.end-s.offset)%s.count != 0 {
			return fmt.Sprintf("%s +%d", name, off-s.offset)
		}
		size := (s.end - s.offset) / s.count
		return fmt.Sprintf("%s[%d] +%d (record of %d bytes at %d)", name, (off-s.offset)/size, (off-s.offset)%size, size, s.offset)
	}
	return "no section"
}
