package pcptest

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Metric is one metric as pminfo -dfmtTl shows it. Text fields hold what
// pminfo prints, unchanged.
type Metric struct {
	Name      string // full name, such as "mmv.web.requests"
	PMID      string // such as "70.42.1"
	Type      string // such as "64-bit unsigned int"
	Indom     string // such as "70.86017 0x11815001", or "PM_INDOM_NULL 0xffffffff"
	Semantics string // "counter", "instant" or "discrete"
	Units     string // such as "Kbyte / sec"; "none" when dimensionless
	// ShortHelp is the one-line help, "" when PCP has none.
	ShortHelp string
	// LongHelp is the help text, "" when PCP has none. PCP's reader falls
	// back to the short help when a metric has no long help.
	LongHelp string
	// Labels is the JSON object of the metric's labels, as pminfo prints
	// them: the file's, the metric's and its indom's, merged with PCP's own
	// (agent, hostname, ...).
	Labels string
	// Value is a singular metric's value as printed: numbers as PCP formats
	// them, strings in double quotes with nothing escaped.
	Value string
	// Instances are the values of a metric with an indom.
	Instances []Instance
	// NoValue is the line pminfo prints instead of values, such as
	// "No value(s) available!".
	NoValue string
}

// Instance is the value and labels of one instance of a metric.
type Instance struct {
	ID     int
	Name   string
	Value  string // as Metric.Value
	Labels string // the JSON object of the instance's labels
}

// Singular reports whether the metric has no instance domain.
func (m *Metric) Singular() bool { return strings.HasPrefix(m.Indom, "PM_INDOM_NULL") }

// Label returns the JSON text of one label of the metric, as PCP prints it.
func (m *Metric) Label(name string) (string, bool) { return label(m.Labels, name) }

// Label returns the JSON text of one label of the instance.
func (in *Instance) Label(name string) (string, bool) { return label(in.Labels, name) }

func label(obj, name string) (string, bool) {
	var labels map[string]json.RawMessage
	if json.Unmarshal([]byte(obj), &labels) != nil {
		return "", false
	}
	v, ok := labels[name]
	return string(v), ok
}

// Instance returns the instance of the given name, or nil.
func (m *Metric) Instance(name string) *Instance {
	for i := range m.Instances {
		if m.Instances[i].Name == name {
			return &m.Instances[i]
		}
	}
	return nil
}

// Valued reports whether every instance of ms has a value: a fetch racing
// a file's growth step can list an instance and miss its value, so tests
// read again until one shows them all.
func Valued(ms []Metric) bool {
	for _, m := range ms {
		for _, in := range m.Instances {
			if in.Value == "" {
				return false
			}
		}
	}
	return true
}

// Find returns the metric of the given full name, or nil.
func Find(ms []Metric, name string) *Metric {
	for i := range ms {
		if ms[i].Name == name {
			return &ms[i]
		}
	}
	return nil
}

var (
	headerRE = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9_.]*) PMID: (\d+\.\d+\.\d+)(?: \[(.*)\]| One-line Help: .*)?$`)
	descRE   = regexp.MustCompile(`^    Data Type: (.*)  InDom: (.*)$`)
	semRE    = regexp.MustCompile(`^    Semantics: (.*)  Units: (.*)$`)
	instRE   = regexp.MustCompile(`^    inst \[(-?\d+) or "(.*?)"\] (value|labels) (.*)$`)
)

// Parse parses the output of pminfo -dfmtTl (with or without -L -K). It
// relies on the layout pminfo 6.0.3 prints: per metric a "NAME PMID: ..."
// line with the one-line help, "Data Type", "Semantics" and "labels" lines,
// the help text after "Help:" (or a "Full Help: Error" line), then the
// values: "value X" for a singular metric, "inst [ID or "NAME"] value X"
// lines then "inst [...] labels {...}" lines otherwise, or one line such as
// "No value(s) available!".
//
// Help text may hold any line, even blank ones or ones that look like
// values: the values are told apart from the end of the block (one line for
// a singular metric, the run of "inst" lines otherwise).
func Parse(out string) ([]Metric, error) {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	var blocks [][]string
	for _, l := range lines {
		if headerRE.MatchString(l) {
			blocks = append(blocks, nil)
		}
		if len(blocks) == 0 {
			if strings.TrimSpace(l) != "" {
				return nil, fmt.Errorf("pminfo output: unexpected line before the first metric: %q", l)
			}
			continue
		}
		blocks[len(blocks)-1] = append(blocks[len(blocks)-1], l)
	}
	ms := make([]Metric, 0, len(blocks))
	for _, b := range blocks {
		m, err := parseBlock(b)
		if err != nil {
			return nil, fmt.Errorf("pminfo output for %s: %w", strings.Fields(b[0])[0], err)
		}
		ms = append(ms, m)
	}
	return ms, nil
}

func parseBlock(b []string) (Metric, error) {
	// The blank line separating blocks.
	for len(b) > 0 && b[len(b)-1] == "" {
		b = b[:len(b)-1]
	}
	var m Metric
	h := headerRE.FindStringSubmatch(b[0])
	m.Name, m.PMID, m.ShortHelp = h[1], h[2], h[3]
	if len(b) < 5 {
		return m, fmt.Errorf("%d lines, want at least 5", len(b))
	}
	d := descRE.FindStringSubmatch(b[1])
	s := semRE.FindStringSubmatch(b[2])
	lbl, ok := strings.CutPrefix(b[3], "    labels ")
	if d == nil || s == nil || !ok {
		return m, fmt.Errorf("unexpected descriptor or labels lines %q", b[1:4])
	}
	m.Type, m.Indom, m.Semantics, m.Units, m.Labels = d[1], d[2], s[1], s[2], lbl

	// The values, from the end of the block.
	end := len(b)
	if !m.Singular() {
		for end > 4 && strings.HasPrefix(b[end-1], "    inst [") {
			end--
		}
	}
	insts := b[end:]
	if len(insts) == 0 {
		// One line: a singular value, or what pminfo says instead.
		end--
		if v, ok := strings.CutPrefix(b[end], "    value "); ok && m.Singular() {
			m.Value = v
		} else {
			m.NoValue = b[end]
		}
	}
	if end < 5 {
		return m, fmt.Errorf("no help lines before the values")
	}
	byID := map[int]int{}
	for _, l := range insts {
		im := instRE.FindStringSubmatch(l)
		if im == nil {
			return m, fmt.Errorf("unexpected instance line %q", l)
		}
		id, err := strconv.Atoi(im[1])
		if err != nil {
			return m, fmt.Errorf("instance line %q: %v", l, err)
		}
		i, seen := byID[id]
		if !seen {
			i = len(m.Instances)
			byID[id] = i
			m.Instances = append(m.Instances, Instance{ID: id, Name: im[2]})
		}
		if im[3] == "value" {
			m.Instances[i].Value = im[4]
		} else {
			m.Instances[i].Labels = im[4]
		}
	}

	// The help, between the labels line and the values.
	switch help := b[4:end]; {
	case help[0] == "Help:":
		m.LongHelp = strings.Join(help[1:], "\n")
	case len(help) == 1 && strings.HasPrefix(help[0], "Full Help: "):
	default:
		return m, fmt.Errorf("unexpected help lines %q", help)
	}
	return m, nil
}
