package mmvfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/osfile"
	"github.com/gopcp/mmv/internal/pcpname"
)

// Rule names a hazard Lint reports. Parse accepts every file whose only
// faults are hazards: PCP's reader loads it, and what it makes of the
// hazard is in the rule's comment.
type Rule string

// The rules of one file.
const (
	// RuleRefused: Parse refuses the file, which PCP's reader skips or
	// misreads (the finding's message is Parse's error).
	RuleRefused Rule = "refused"
	// RuleSection: a TOC entry of a type mmv(5) does not define, or of a
	// negative count, which PCP ignores, or of no records at an offset
	// beyond the end of the file, where PCP reads nothing.
	RuleSection Rule = "section"
	// RuleInFlux: the generations are zero or unequal, as while a writer
	// creates the file; PCP skips it and rescans on every request until
	// it settles.
	RuleInFlux Rule = "in-flux"
	// RuleItem: an item beyond 1023; PCP skips the metric.
	RuleItem Rule = "item"
	// RuleDuplicateItem: a second metric with an item of the file; PCP
	// skips it.
	RuleDuplicateItem Rule = "duplicate-item"
	// RuleName: a full name (mmv.FILE.NAME, or mmv.NAME with NoPrefix)
	// that does not start with a letter and hold only letters, digits,
	// '_' and '.'; PCP skips the metric.
	RuleName Rule = "name"
	// RuleDuplicateName: a full name already taken, in this file or one
	// read before it; PCP skips the metric.
	RuleDuplicateName Rule = "duplicate-name"
	// RuleNamePrefix: a metric name that is also the prefix of another
	// (a.b and a.b.c); PCP's namespace build fails and every MMV metric
	// of the host disappears.
	RuleNamePrefix Rule = "name-prefix"
	// RuleSerial: an indom serial outside 1..2047. PCP numbers an indom
	// cluster<<11|serial in 22 bits, so a larger serial spills into the
	// cluster's bits, where another cluster's indoms are; beyond 22 bits
	// PCP skips the indom.
	RuleSerial Rule = "serial"
	// RuleDuplicateSerial: two indoms of a file with one serial; PCP
	// merges their instances.
	RuleDuplicateSerial Rule = "duplicate-serial"
	// RuleIndomCluster: a cluster beyond 2047 in a file with indoms; its
	// indom ids lose the cluster's top bit and meet another cluster's.
	RuleIndomCluster Rule = "indom-cluster"
	// RuleMissingIndom: a metric over an indom the file does not have;
	// PCP shows it with no values.
	RuleMissingIndom Rule = "missing-indom"
	// RuleUnlistedInstance: an instance record its indom does not list,
	// or an empty one (all zero) no indom lists; PCP never shows it or
	// its values.
	RuleUnlistedInstance Rule = "unlisted-instance"
	// RuleDeadValue: a value record of no metric (metric offset 0) that
	// names an instance, or of a metric PCP skips for its item that
	// names no instance of the metric's indom; PCP skips it (Parse
	// leaves it out of File.Values).
	RuleDeadValue Rule = "dead-value"
	// RuleIgnoredField: a field PCP's reader never reads, which says
	// something it does not do: an instance offset in a value of a
	// singular metric (PCP shows the value as the metric's).
	RuleIgnoredField Rule = "ignored-field"
	// RuleString: a string slot with no NUL in its 256 bytes; PCP shows
	// the first 255 bytes of a name, a help text or a string value, as
	// Parse reads them, and never reads a slot no record uses. (An
	// instance name with no NUL PCP reads past its slot: Parse refuses
	// it.)
	RuleString Rule = "string"
	// RuleDuplicateValue: a second value record for one metric and
	// instance; PCP reads the first.
	RuleDuplicateValue Rule = "duplicate-value"
	// RuleSemantics: semantics other than counter (1), instant (3) and
	// discrete (4); PCP exports 0 as a counter and others as they are.
	RuleSemantics Rule = "semantics"
	// RuleUnits: a units scale PCP has no name for.
	RuleUnits Rule = "units"
	// RuleClusterZero: cluster 0; PCP gives the file the next free
	// cluster, which changes with the files present, so clients holding
	// a PMID see another metric after a restart, and cluster labels never
	// match.
	RuleClusterZero Rule = "cluster-zero"
	// RuleCost: more values than PCP's reader reads quickly: a fetch
	// costs about c·V² for V values (c between 0.25 and 1 ns, see
	// docs/design.md), and pmcd gives the agent 5 s while every client of
	// the host waits.
	RuleCost Rule = "cost"
	// RuleDeadProcess: the Process flag set and the writer gone; PCP
	// skips the file, which nobody will remove.
	RuleDeadProcess Rule = "dead-process"
	// RuleLabel: a label of a cluster, item, indom or instance the file
	// does not have, or whose name, or a key of whose map value, is not a
	// letter then letters, digits and '_'; PCP never shows it.
	RuleLabel Rule = "label"
	// RulePCPLabel: a label named as one PCP puts on every metric itself
	// (hostname, machineid, agent...): PCP shows the file's value in
	// place of its own on every metric or instance the label reaches.
	RulePCPLabel Rule = "pcp-label"
	// RuleGroup: a file whose group is not PCP's (pcp), which pmdammv(1)
	// has applications, pmcd and the agent share; PCP reads it only when
	// others may read it.
	RuleGroup Rule = "group"
)

// The rules of a directory.
const (
	// RuleSharedCluster: two live files on one cluster. PCP looks a PMID
	// up in the first file of its cluster it read (it reads the directory
	// in no set order), so it shows one program's values under another's
	// names.
	RuleSharedCluster Rule = "shared-cluster"
	// RulePMID: two live files' metrics with one PMID (domain.cluster.item).
	RulePMID Rule = "pmid-collision"
	// RuleIndomCollision: two live files' indoms with one id; PCP merges
	// their instances.
	RuleIndomCollision Rule = "indom-collision"
	// RuleTemporary: a temporary left behind by a writer that is gone
	// (.NAME.PID.RANDOM, as package mmv names them, its lock free); PCP
	// ignores it.
	RuleTemporary Rule = "temporary"
)

// Finding is one hazard of a file.
type Finding struct {
	File   string `json:"file"`
	Record string `json:"record"` // such as "header" or "metric [3] at offset 312 (requests)"
	Offset uint64 `json:"offset"` // of the record
	Rule   Rule   `json:"rule"`
	Msg    string `json:"message"`
}

func (f Finding) String() string {
	return f.File + ": " + f.Record + ": " + string(f.Rule) + ": " + f.Msg
}

// PCP's limits, as its reader (pmdammv 6.0.3) applies them.
const (
	maxIndom       = 2047      // serials that stay within their cluster's indom ids
	maxIndomSerial = 1<<22 - 1 // PCP's indom serial field
	// PCP numbers an indom cluster<<11|serial in 22 bits, so the indoms
	// of a higher cluster collide with those of another.
	maxIndomCluster = 2047
	// Largest space and time scales PCP names (Ybyte, hour).
	maxScaleSpace = 8
	maxScaleTime  = 5
)

// Cost model (docs/design.md, "What a registry costs PCP's reader").
const (
	costNanosLow  = 0.25 // per value², values of many metrics
	costNanosHigh = 1    // per value², instances of one metric
	costWarn      = 0.1  // seconds of fetch at the high estimate
	agentTimeout  = 5.0  // pmcd's limit for an agent, in seconds
)

// FetchCost estimates the seconds PCP's reader takes to fetch every value
// of a file: between low and high.
func (f *File) FetchCost() (low, high float64) {
	v := float64(len(f.Values))
	return costNanosLow * v * v / 1e9, costNanosHigh * v * v / 1e9
}

// metricName is how PCP names a metric of a file called name.
func (f *File) metricName(name string, m *Metric) string {
	if f.Header.Flags&mmv.NoPrefix != 0 {
		return "mmv." + m.Name
	}
	return "mmv." + name + "." + m.Name
}

// agentNames are the MMV agent's own metrics, in the namespace before any
// file's; PCP 7 adds mmv.control.metrics (TestLintAgentNames).
var agentNames = []string{"mmv.control.reload", "mmv.control.debug", "mmv.control.files", "mmv.control.metrics"}

// agentOwner is the owner of one of the agent's names: of no file.
func agentOwner(name string) owner {
	if name == "mmv.control.metrics" {
		return owner{"", "the MMV agent's own metric in PCP 7, not in 6.0.3"}
	}
	return owner{"", "the MMV agent's own metric"}
}

// validPCPName is the test PCP's reader applies to a full metric name.
var validPCPName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.]*$`)

func metricRecord(i int, m *Metric) string {
	return "metric [" + itoa(int64(i)) + "] at offset " + itoa(int64(m.Offset)) + " (" + m.Name + ")"
}

// Lint returns the hazards of the file, which is called name in its
// directory (PCP names its metrics after it): what PCP's reader skips,
// renumbers or merges, and what costs it. Hazards that need the other
// files of the directory, or the process and owner of the file, are
// LintDir's.
func (f *File) Lint(name string) []Finding {
	var out []Finding
	add := func(record string, off uint64, rule Rule, format string, args ...any) {
		out = append(out, Finding{File: name, Record: record, Offset: off, Rule: rule, Msg: fmt.Sprintf(format, args...)})
	}
	h := f.Header
	if h.Cluster == 0 {
		add("header", 0, RuleClusterZero, "cluster 0: PCP picks the next free cluster, which moves with the files present")
	}
	if len(f.Indoms) > 0 && h.Cluster > maxIndomCluster {
		add("header", 0, RuleIndomCluster, "cluster %d is more than %d: the file's indom ids (cluster<<11|serial, 22 bits) lose the cluster's top bit and meet cluster %d's",
			h.Cluster, maxIndomCluster, h.Cluster&maxIndomCluster)
	}
	for i, s := range f.TOC {
		if !s.Type.known() {
			add("TOC["+itoa(int64(i))+"] at offset "+itoa(int64(s.TOCOffset)), s.TOCOffset, RuleSection,
				"section type %d is not one of mmv(5)'s: PCP ignores the entry", int32(s.Type))
		} else if s.Count < 0 {
			add("TOC["+itoa(int64(i))+"] at offset "+itoa(int64(s.TOCOffset)), s.TOCOffset, RuleSection,
				"%s section of negative count %d: PCP ignores the entry", s.Type, s.Count)
		} else if s.Count == 0 && s.Offset > f.size {
			add("TOC["+itoa(int64(i))+"] at offset "+itoa(int64(s.TOCOffset)), s.TOCOffset, RuleSection,
				"%s section of no records at offset %d, beyond the end of the file (%d bytes): PCP reads nothing there", s.Type, s.Offset, f.size)
		}
	}
	serials := map[uint32]*Indom{}
	for i, in := range f.Indoms {
		record := "indom [" + itoa(int64(i)) + "] at offset " + itoa(int64(in.Offset))
		switch {
		case in.Serial > maxIndomSerial:
			add(record, in.Offset, RuleSerial, "serial %d is more than %d: PCP skips the indom", in.Serial, maxIndomSerial)
		case in.Serial == 0 || in.Serial > maxIndom:
			add(record, in.Offset, RuleSerial, "serial %d is outside 1..%d: its indom id %d is cluster %d's indom %d",
				in.Serial, maxIndom, indomID(h.Cluster, in.Serial), indomID(h.Cluster, in.Serial)>>11, in.Serial&maxIndom)
		}
		if first := serials[in.Serial]; first != nil {
			add(record, in.Offset, RuleDuplicateSerial, "serial %d is also the indom's at offset %d: PCP merges their instances", in.Serial, first.Offset)
		} else {
			serials[in.Serial] = in
		}
	}
	listed := make(map[*Instance]bool, len(f.Instances)) // a lookup each: slices.Contains took 9 s for one indom of 250,000
	for _, in := range f.Indoms {
		for _, inst := range in.Instances {
			listed[inst] = true
		}
	}
	for i, inst := range f.Instances {
		if inst.Indom == nil {
			add("instance ["+itoa(int64(i))+"] at offset "+itoa(int64(inst.Offset)), inst.Offset, RuleUnlistedInstance,
				"an empty record (all zero: Hornet leaves those its caller declared and never registered): no indom lists it, PCP never shows it")
			continue
		}
		if !listed[inst] {
			add("instance ["+itoa(int64(i))+"] at offset "+itoa(int64(inst.Offset)), inst.Offset, RuleUnlistedInstance,
				"instance %d (%q) of indom %d is not among the instances the indom lists: PCP never shows it or its values", inst.ID, inst.Name, inst.Indom.Serial)
		}
	}
	items := f.itemOwners()
	names := map[string]*Metric{}
	for i, m := range f.Metrics {
		record := metricRecord(i, m)
		full := f.metricName(name, m)
		switch u := m.Units; {
		case m.unterminated:
			add(record, m.Offset, RuleName, "PCP skips the metric: its name has no NUL in its %d bytes", nameSizeV1)
		case !validPCPName.MatchString(full): // an empty name is loaded, as mmv.<file>. (below)
			add(record, m.Offset, RuleName, "PCP skips the metric: its name %q does not start with a letter or holds more than letters, digits, '_' and '.'", full)
		case slices.Contains(agentNames, full):
			add(record, m.Offset, RuleDuplicateName, "PCP skips the metric: %s is %s", full, agentOwner(full).record)
		case names[full] != nil:
			add(record, m.Offset, RuleDuplicateName, "PCP skips the metric: %s is also the metric's at offset %d", full, names[full].Offset)
		case m.Item > mmv.MaxItem:
			add(record, m.Offset, RuleItem, "PCP skips the metric: item %d is more than %d", m.Item, mmv.MaxItem)
		case items[m.Item] != m:
			add(record, m.Offset, RuleDuplicateItem, "PCP skips the metric: item %d is also the metric's at offset %d", m.Item, items[m.Item].Offset)
		default:
			names[full] = m
			if strings.HasSuffix(full, ".") || strings.Contains(full, "..") {
				add(record, m.Offset, RuleName, "PCP loads the metric as %q, a name with an empty part", full)
			}
			// An Elapsed metric is exported as a counter in microseconds,
			// whatever its semantics and units say.
			if m.Type != mmv.Elapsed && m.Semantics != mmv.SemCounter && m.Semantics != mmv.SemInstant && m.Semantics != mmv.SemDiscrete {
				what := "PCP exports it as it is"
				if m.Semantics == 0 {
					what = "PCP exports a counter"
				}
				add(record, m.Offset, RuleSemantics, "semantics %d: %s", int32(m.Semantics), what)
			}
			if m.Type != mmv.Elapsed && (u.DimSpace() != 0 && u.ScaleSpace() > maxScaleSpace || u.DimTime() != 0 && u.ScaleTime() > maxScaleTime) {
				add(record, m.Offset, RuleUnits, "units %#x have a scale PCP has no name for", uint32(u))
			}
			if !m.Singular() && f.Indom(m.Indom) == nil {
				add(record, m.Offset, RuleMissingIndom, "indom %d is not in the file: PCP shows the metric with no values", m.Indom)
			}
		}
	}
	for _, d := range f.deadValues {
		add("value ["+itoa(int64(d.index))+"] at offset "+itoa(int64(d.offset)), d.offset, RuleDeadValue,
			"%s: PCP skips the record", d.what)
	}
	for _, n := range f.notes {
		add(n.record, n.offset, n.rule, "%s", n.msg)
	}
	first := map[[2]uint64]*Value{}
	for i, v := range f.Values {
		k := [2]uint64{v.Metric.Offset, 0}
		if v.Instance != nil {
			k[1] = v.Instance.Offset
		}
		if w := first[k]; w != nil {
			add("value ["+itoa(int64(i))+"] at offset "+itoa(int64(v.Offset)), v.Offset, RuleDuplicateValue,
				"a second value of %s%s: PCP reads the one at offset %d", v.Metric.Name, instanceText(v.Instance), w.Offset)
		} else {
			first[k] = v
		}
	}
	for i, l := range f.Labels {
		record := "label [" + itoa(int64(i)) + "] at offset " + itoa(int64(l.Offset))
		problems := f.labelProblems(l)
		for _, problem := range problems {
			add(record, l.Offset, RuleLabel, "%s: %s", l.Payload, problem)
		}
		if name, ok := pcpOwnLabel(l.Payload); ok && len(problems) == 0 { // else PCP never shows it
			add(record, l.Offset, RulePCPLabel, "%s: PCP labels every metric with %s itself, and shows this one in its place", l.Payload, name)
		}
	}
	var named []nameAt
	for full, m := range names {
		i := slices.Index(f.Metrics, m)
		named = append(named, nameAt{full, owner{name, metricRecord(i, m)}, m.Offset, i})
	}
	for i, n := range agentNames {
		named = append(named, nameAt{n, agentOwner(n), 0, i - len(agentNames)})
	}
	out = append(out, prefixes(named, false)...)
	if low, high := f.FetchCost(); high >= costWarn {
		what := "every client of pmcd waits while it reads"
		if high >= agentTimeout {
			what = "past pmcd's 5 s limit for an agent"
		}
		add("values", 0, RuleCost, "%d values: a fetch of the file takes an estimated %.2g to %.2g s (%s); spread them over files", len(f.Values), low, high, what)
	}
	return out
}

func instanceText(inst *Instance) string {
	if inst == nil {
		return ""
	}
	return fmt.Sprintf("[%d or %q]", inst.ID, inst.Name)
}

// labelProblems says why PCP drops or bends the label, if it does.
func (f *File) labelProblems(l *Label) []string {
	var out []string
	kind := l.Flags &^ LabelOptional
	switch kind {
	case LabelCluster:
		if f.Header.Cluster == 0 {
			// PCP picks the file's cluster, from 1 up (cluster-zero).
			pcp := ", never 0: PCP never shows the label"
			if l.Identity != 0 {
				pcp = fmt.Sprintf(": PCP shows the label while it picks cluster %d", l.Identity)
			}
			out = append(out, fmt.Sprintf("flags %#x, identity %d: the file's cluster is 0, for which PCP picks one of its own%s", l.Flags, l.Identity, pcp))
			break
		}
		fallthrough
	case LabelItem, LabelIndom, LabelInstances:
		if !f.labelled(l) {
			out = append(out, fmt.Sprintf("flags %#x, identity %d, instance %d: nothing in the file has that identity, PCP never shows the label",
				l.Flags, l.Identity, l.Internal))
		}
	case 0, LabelOptional:
		out = append(out, fmt.Sprintf("flags %#x name no kind of label: PCP drops it", l.Flags))
	default:
		out = append(out, fmt.Sprintf("flags %#x name more than one kind of label: PCP takes it for one of them", l.Flags))
	}
	if kind != LabelInstances && l.Internal != -1 {
		out = append(out, fmt.Sprintf("instance %d on a label that is not an instance label: PCP ignores it", l.Internal))
	}
	// JSON's whitespace may come first: PCP keeps the label.
	if !json.Valid([]byte(l.Payload)) || !strings.HasPrefix(strings.TrimLeft(l.Payload, " \t\n\r"), "{") {
		out = append(out, "not a JSON object: PCP drops the label")
	} else if f, bad := badLabelName(l.Payload); bad && f.dup {
		out = append(out, fmt.Sprintf("the name %q is in the label twice: PCP drops the label", f.name))
	} else if bad {
		what, pcp := "name", "PCP drops the label"
		if f.key {
			what = "key"
		}
		switch {
		case validLabelName72.MatchString(f.name):
			pcp = "PCP 6.0.3 drops the label (7.2 keeps it)"
		case f.key:
			pcp = "PCP 6.0.3 drops the label (7.2 drops the key)"
		}
		out = append(out, fmt.Sprintf("the %s %q is not a letter then letters, digits and '_': %s", what, f.name, pcp))
	}
	return out
}

// itemOwners returns, by item, the first metric record of the file that
// has it, of items up to MaxItem: PCP's reader skips a later record of the
// item whether or not it loaded the first, which its name or a duplicate
// name may have kept out ("duplicate item 875 - [1] and [2] ..., second
// will be ignored" of a record [1] skipped for its name).
func (f *File) itemOwners() map[uint32]*Metric {
	items := make(map[uint32]*Metric, len(f.Metrics))
	for _, m := range f.Metrics {
		if _, ok := items[m.Item]; !ok && m.Item <= mmv.MaxItem {
			items[m.Item] = m
		}
	}
	return items
}

// labelled reports whether the file has what the label is attached to.
func (f *File) labelled(l *Label) bool {
	switch l.Flags &^ LabelOptional {
	case LabelCluster:
		return l.Identity == f.Header.Cluster
	case LabelItem:
		return slices.ContainsFunc(f.Metrics, func(m *Metric) bool { return m.Item == l.Identity })
	case LabelIndom:
		return f.Indom(l.Identity) != nil
	case LabelInstances:
		if in := f.Indom(l.Identity); in != nil {
			return slices.ContainsFunc(in.Instances, func(inst *Instance) bool { return inst.ID == l.Internal })
		}
	}
	return false
}

// validLabelName is PCP 6.0.3's rule for label names and the keys of map
// values; validLabelName72 is 7.2's, which also takes a digit or '_'
// first (TestReadsWhatPCPReads).
var (
	validLabelName   = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)
	validLabelName72 = regexp.MustCompile(`^[A-Za-z0-9_]+$`)
)

// labelFault is a name of a label's JSON object that makes PCP drop or
// bend the label: one PCP 6.0.3 refuses (a key when it is within a map),
// or, dup, one taken twice.
type labelFault struct {
	name     string
	key, dup bool
}

// badLabelName returns the first name of the label's JSON object, or key
// of a map within it, that PCP 6.0.3 refuses, or a name PCP takes twice.
// PCP names a label's values flattened, "a.b" for the key b of the map
// a: two maps of one name have their keys merged, and the label is
// dropped when a flattened name comes twice (TestLintLabelsAsPCPParsesThem).
// The maps within an array have their keys checked, not merged.
func badLabelName(payload string) (labelFault, bool) {
	root, ok := labelObject(payload)
	if !ok {
		return labelFault{}, false // Lint reports it as no JSON object
	}
	return root.fault(false, "", map[string]bool{})
}

// labelObject decodes payload, a label's, when it is a JSON object.
func labelObject(payload string) (*jsonValue, bool) {
	d := json.NewDecoder(strings.NewReader(payload))
	d.UseNumber()
	root, err := decodeJSON(d)
	return root, err == nil && root.object
}

// pcpOwnLabel returns the first name of payload's that is a label PCP
// puts on every metric itself (pcpname.Own).
func pcpOwnLabel(payload string) (string, bool) {
	root, ok := labelObject(payload)
	if !ok {
		return "", false
	}
	i := slices.IndexFunc(root.names, pcpname.IsOwn)
	if i < 0 {
		return "", false
	}
	return root.names[i], true
}

// jsonValue is a decoded JSON value that keeps an object's names in
// order, those taken twice included, which encoding/json's maps lose.
type jsonValue struct {
	object, array bool
	names         []string // of an object, with vals
	vals          []*jsonValue
	elems         []*jsonValue // of an array
}

func decodeJSON(d *json.Decoder) (*jsonValue, error) {
	tok, err := d.Token()
	if err != nil {
		return nil, err
	}
	v := &jsonValue{object: tok == json.Delim('{'), array: tok == json.Delim('[')}
	if !v.object && !v.array {
		return v, nil
	}
	for d.More() {
		if v.object {
			name, err := d.Token()
			if err != nil {
				return nil, err
			}
			s, _ := name.(string)
			v.names = append(v.names, s)
		}
		e, err := decodeJSON(d)
		if err != nil {
			return nil, err
		}
		if v.object {
			v.vals = append(v.vals, e)
		} else {
			v.elems = append(v.elems, e)
		}
	}
	_, err = d.Token() // the closing delimiter
	return v, err
}

// fault walks the object v, whose names are keys when key, at the
// flattened path; leaves collects the flattened names taken, nil within
// an array, whose maps PCP does not merge.
func (v *jsonValue) fault(key bool, path string, leaves map[string]bool) (labelFault, bool) {
	for i, name := range v.names {
		if !validLabelName.MatchString(name) {
			return labelFault{name: name, key: key}, true
		}
		full := name
		if path != "" {
			full = path + "." + name
		}
		switch e := v.vals[i]; {
		case e.object:
			if f, bad := e.fault(true, full, leaves); bad {
				return f, true
			}
			continue // its keys are the names it adds
		case e.array:
			if f, bad := e.arrayFault(); bad {
				return f, true
			}
		}
		if leaves != nil {
			if leaves[full] {
				return labelFault{name: full, dup: true}, true
			}
			leaves[full] = true
		}
	}
	return labelFault{}, false
}

// arrayFault walks the maps within the array v.
func (v *jsonValue) arrayFault() (labelFault, bool) {
	for _, e := range v.elems {
		switch {
		case e.object:
			if f, bad := e.fault(true, "", nil); bad {
				return f, true
			}
		case e.array:
			if f, bad := e.arrayFault(); bad {
				return f, true
			}
		}
	}
	return labelFault{}, false
}

func indomID(cluster, serial uint32) uint32 { return (cluster<<11 | serial) & maxIndomSerial }

// LintDir returns the hazards of the MMV files at paths: each a file, or
// a directory (such as $PCP_TMP_DIR/mmv) whose files are read in name
// order (PCP's reader reads them in the directory's order, unsorted, so a
// finding between two files says either may win). Besides each file's own (see
// File.Lint), it reports files PCP refuses, files in flux, files of dead
// processes, leftover temporaries, files outside PCP's group, and the
// hazards between the live files: shared clusters, colliding PMIDs and
// indoms, names taken twice or that are prefixes of others. It fails only
// when a path cannot be read, or is neither a regular file nor a
// directory (a FIFO, a device): in a directory, such an entry is skipped,
// as PCP's reader skips it.
func LintDir(paths ...string) ([]Finding, error) {
	var files []string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if fi.Mode().IsRegular() {
			files = append(files, p)
			continue
		}
		if !fi.IsDir() {
			return nil, &os.PathError{Op: "lint", Path: p, Err: errors.New("not a regular file nor a directory")}
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			files = append(files, filepath.Join(p, e.Name()))
		}
	}
	pcpGID := -1
	if g, err := user.LookupGroup("pcp"); err == nil {
		pcpGID, _ = strconv.Atoi(g.Gid)
	}
	l := &dirLint{names: map[string]owner{}, pmids: map[[2]uint32]owner{}, indoms: map[uint32]owner{}, clusters: map[uint32]string{}}
	for _, path := range files {
		base := filepath.Base(path)
		fi, err := os.Stat(path) // a symlink followed, as PCP's reader follows it
		if err != nil {
			if lfi, lerr := os.Lstat(path); errors.Is(err, fs.ErrNotExist) || lerr == nil && lfi.Mode()&fs.ModeSymlink != 0 {
				continue // removed while we read, or a link PCP's reader cannot follow either (a loop, no right)
			}
			return nil, err
		}
		if !fi.Mode().IsRegular() {
			continue
		}
		if strings.HasPrefix(base, ".") {
			// Package mmv's temporaries, named and locked as its file
			// layer does (osfile.ParseTemp, osfile.TempAbandoned).
			if name, pid, ok := osfile.ParseTemp(base); ok && osfile.TempAbandoned(path) {
				l.add(path, "file", 0, RuleTemporary, "a temporary of %s left by process %d, its writer: no process holds its lock", name, pid)
			}
			continue // PCP ignores dot files
		}
		if gid, ok := groupOf(fi); ok && pcpGID >= 0 && gid != pcpGID {
			what := "others may read it, so PCP does"
			if fi.Mode().Perm()&0o004 == 0 {
				what = "others may not read it: PCP's agent, running as pcp, cannot"
			}
			l.add(path, "file", 0, RuleGroup, "group id %d is not PCP's (%d); %s", gid, pcpGID, what)
		}
		f, err := Open(path)
		switch {
		case errors.Is(err, ErrGeneration):
			l.add(path, "header", 0, RuleInFlux, "%v: PCP skips the file and rescans on every request until it settles", err)
			continue
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			l.add(path, "file", 0, RuleRefused, "%v", err)
			continue
		}
		if pid := f.Header.PID; f.Header.Flags&mmv.Process != 0 && pid != 0 {
			// PCP looks for the process of any id but 0: of a negative
			// one it finds none ("owning process PID -5 vanished").
			switch {
			case pid < 0:
				l.add(path, "header", 0, RuleDeadProcess, "the Process flag is set and process id %d is no process: PCP skips the file, which nobody will remove", pid)
				continue
			case osfile.ProcessGone(int(pid)):
				l.add(path, "header", 0, RuleDeadProcess, "the Process flag is set and process %d is gone: PCP skips the file, which nobody will remove", pid)
				continue
			}
		}
		for _, fd := range f.Lint(base) {
			fd.File = path
			l.out = append(l.out, fd)
		}
		l.file(path, base, f)
	}
	l.out = append(l.out, prefixes(l.named, true)...)
	return l.out, nil
}

// owner is the file and record that first took an identity.
type owner struct{ file, record string }

// agent reports whether the owner is the MMV agent (agentOwner), of no file.
func (o owner) agent() bool { return o.file == "" }

// dirLint gathers the identities of the live files of a directory.
type dirLint struct {
	out      []Finding
	names    map[string]owner    // full metric names
	pmids    map[[2]uint32]owner // cluster, item
	indoms   map[uint32]owner    // indom ids
	clusters map[uint32]string   // the first file of each cluster
	named    []nameAt            // every name PCP takes, for prefixes
}

type nameAt struct {
	name string
	at   owner
	off  uint64
	seq  int // the order PCP takes the names of a file in; the agent's first
}

func (l *dirLint) add(file, record string, off uint64, rule Rule, format string, args ...any) {
	l.out = append(l.out, Finding{File: file, Record: record, Offset: off, Rule: rule, Msg: fmt.Sprintf(format, args...)})
}

// file records the identities of a live file, reporting those another
// file took first.
func (l *dirLint) file(path, base string, f *File) {
	c := f.Header.Cluster
	if c != 0 {
		if first, ok := l.clusters[c]; ok {
			l.add(path, "header", 0, RuleSharedCluster, "cluster %d is also %s's: PCP shows the values of the file it reads first (the directory in no set order) under the other's names", c, first)
		} else {
			l.clusters[c] = path
		}
	}
	if c != 0 {
		seen := map[uint32]bool{}
		for i, in := range f.Indoms {
			id := indomID(c, in.Serial)
			record := "indom [" + itoa(int64(i)) + "] at offset " + itoa(int64(in.Offset))
			if first, ok := l.indoms[id]; ok && first.file != path {
				l.add(path, record, in.Offset, RuleIndomCollision, "indom id %d (cluster %d, serial %d) is also %s's %s: PCP merges their instances",
					id, c, in.Serial, first.file, first.record)
			} else if !seen[id] {
				l.indoms[id] = owner{path, record}
			}
			seen[id] = true
		}
	}
	items := f.itemOwners()
	for i, m := range f.Metrics {
		full := f.metricName(base, m)
		if m.Item > mmv.MaxItem || items[m.Item] != m || !validPCPName.MatchString(full) || slices.Contains(agentNames, full) {
			continue // skipped by PCP, reported by Lint
		}
		record := metricRecord(i, m)
		if first, ok := l.names[full]; ok {
			if first.file != path {
				l.add(path, record, m.Offset, RuleDuplicateName, "%s is also %s's %s: PCP skips the one it reads second (the directory in no set order)", full, first.file, first.record)
			}
			continue
		}
		l.names[full] = owner{path, record}
		l.named = append(l.named, nameAt{full, owner{path, record}, m.Offset, i})
		if c == 0 {
			continue
		}
		key := [2]uint32{c, m.Item}
		if first, ok := l.pmids[key]; ok && first.file != path {
			l.add(path, record, m.Offset, RulePMID, "PMID %d.%d.%d is also %s's %s: PCP shows the value of the file it reads first under both names",
				70, c, m.Item, first.file, first.record)
		} else if !ok {
			l.pmids[key] = owner{path, record}
		}
	}
}

// prefixes reports each name that is the prefix, at a dot, of others
// (a leaf with names under it). PCP takes a file's names in order: when
// the leaf came first, taking a name under it breaks its namespace build;
// when a name under it came first, PCP skips the leaf. Across files
// (across), the order is the directory's, which PCP does not sort: either
// may happen.
func prefixes(named []nameAt, across bool) []Finding {
	var out []Finding
	slices.SortFunc(named, func(a, b nameAt) int { return strings.Compare(a.name, b.name) })
	for i, n := range named {
		// Names that start with n.name+"." sort right after it: every
		// byte PCP allows in a name sorts after '.'.
		var under []nameAt
		for _, m := range named[i+1:] {
			if !strings.HasPrefix(m.name, n.name+".") {
				break
			}
			// Across files, the agent's names are each file's Lint's.
			if !across || m.at.file != n.at.file && !n.at.agent() && !m.at.agent() {
				under = append(under, m)
			}
		}
		if len(under) == 0 {
			continue
		}
		first := slices.MinFunc(under, func(a, b nameAt) int { return a.seq - b.seq })
		whose := func(x nameAt) string {
			if x.at.agent() {
				return x.at.record
			}
			return x.at.file + " " + x.at.record
		}
		f := Finding{File: first.at.file, Record: first.at.record, Offset: first.off, Rule: RuleNamePrefix}
		switch {
		case across:
			f.Msg = fmt.Sprintf("%s (%s) is a leaf and a prefix of %s: as PCP reads the directory, in no set order, it skips the leaf, or its namespace build fails and every MMV metric of the host disappears",
				n.name, whose(n), first.name)
		case n.seq < first.seq:
			f.Msg = fmt.Sprintf("%s is a leaf and a prefix of %s (%s), which PCP takes first: its namespace build fails and every MMV metric of the host disappears",
				n.name, first.name, whose(n))
		default:
			f.File, f.Record, f.Offset = n.at.file, n.at.record, n.off
			f.Msg = fmt.Sprintf("PCP skips the metric: %s is a prefix of %s (%s), which PCP takes first", n.name, first.name, whose(first))
		}
		out = append(out, f)
	}
	return out
}
