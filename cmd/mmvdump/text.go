package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/mmvfile"
)

// dump prints f in the text layout of PCP's mmvdump.
func dump(out io.Writer, path string, f *mmvfile.File, now time.Time) error {
	w := bufio.NewWriter(out)
	h := f.Header
	fmt.Fprintf(w, "MMV file   = %s\n", path)
	fmt.Fprintf(w, "Version    = %d\n", h.Version)
	fmt.Fprintf(w, "Generated  = %d\n", h.Gen1)
	fmt.Fprintf(w, "TOC count  = %d\n", h.TOCs)
	fmt.Fprintf(w, "Cluster    = %d\n", h.Cluster)
	fmt.Fprintf(w, "Process    = %d\n", h.PID)
	fmt.Fprintf(w, "Flags      = %#x (%s)\n", uint32(h.Flags), strings.ReplaceAll(h.Flags.String(), ",", ", "))
	for i, s := range f.TOC {
		// PCP's mmvdump words the metrics line differently.
		lead := "offset"
		if s.Type == mmvfile.Metrics {
			lead = "toc offset"
		}
		fmt.Fprintf(w, "\nTOC[%d]: %s %d, %s offset %d (%d entries)\n", i, lead, s.TOCOffset, tocName(s.Type), s.Offset, s.Count)
		switch s.Type {
		case mmvfile.Indoms:
			for _, in := range f.Indoms {
				fmt.Fprintf(w, "  [%d/%d] %d instances, starting at offset %d\n", in.Serial, in.Offset, len(in.Instances), in.FirstInstance)
				help(w, "shorttext", in.ShortHelp)
				help(w, "helptext", in.LongHelp)
			}
		case mmvfile.Instances:
			for _, inst := range f.Instances {
				fmt.Fprintf(w, "  [%d/%d] instance = [%d or \"%s\"]\n", inst.Indom.Serial, inst.Offset, inst.ID, inst.Name)
			}
		case mmvfile.Metrics:
			for _, m := range f.Metrics {
				fmt.Fprintf(w, "  [%d/%d] %s\n", m.Item, m.Offset, m.Name)
				fmt.Fprintf(w, "       type=%s (%#x), sem=%s (%#x), pad=%#x\n", m.Type, int32(m.Type), m.Semantics, int32(m.Semantics), m.Pad)
				fmt.Fprintf(w, "       units=%s\n", m.Units)
				if m.Singular() {
					fmt.Fprintf(w, "       (no indom)\n")
				} else {
					fmt.Fprintf(w, "       indom=%d\n", m.Indom)
				}
				help(w, "shorttext", m.ShortHelp)
				help(w, "helptext", m.LongHelp)
			}
		case mmvfile.Values:
			for _, v := range f.Values {
				inst := ""
				if v.Instance != nil {
					inst = fmt.Sprintf("[%d or \"%s\"]", v.Instance.ID, v.Instance.Name)
				}
				fmt.Fprintf(w, "  [%d/%d] %s%s = %s\n", v.Metric.Item, v.Offset, v.Metric.Name, inst, valueText(v, now))
			}
		case mmvfile.Strings:
			for j, str := range f.Strings {
				fmt.Fprintf(w, "  [%d/%d] %s\n", j+1, str.Offset, str.Text)
			}
		case mmvfile.Labels:
			for j, l := range f.Labels {
				fmt.Fprintf(w, "  [%d/%d] %s\n", j+1, l.Offset, l.Payload)
				fmt.Fprintf(w, "        flags=%#x, identity=%#x\n", l.Flags, l.Identity)
				fmt.Fprintf(w, "        internal=%#x\n", uint32(l.Internal))
			}
		}
	}
	return w.Flush()
}

// tocName is how PCP's mmvdump names a section in its TOC line.
func tocName(t mmvfile.SectionType) string {
	if t == mmvfile.Strings {
		return "string"
	}
	return t.String()
}

func help(w io.Writer, name string, t mmvfile.Text) {
	if t.Offset == 0 {
		fmt.Fprintf(w, "       (no %s)\n", name)
	} else {
		fmt.Fprintf(w, "       %s=%s\n", name, t.Text)
	}
}

// valueText formats a value as PCP's mmvdump does: integers in decimal,
// floats as C's %f, strings quoted as they are, elapsed time with its
// stored value and extra word.
func valueText(v *mmvfile.Value, now time.Time) string {
	switch v.Metric.Type {
	case mmv.Int32, mmv.Int64:
		return strconv.FormatInt(v.Int, 10)
	case mmv.Uint32, mmv.Uint64:
		return strconv.FormatUint(v.Uint, 10)
	case mmv.Float, mmv.Double:
		return cFloat(v.Float)
	case mmv.String:
		return `"` + v.String + `"`
	case mmv.Elapsed:
		return fmt.Sprintf("%d (value=%d/extra=%d)", v.Elapsed(now), v.Int, v.Extra)
	}
	return ""
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
