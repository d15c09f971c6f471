package mmv

// model is what a registry declares, whichever file each declaration
// lands in: a table per concept, each in the concept's file.
type model struct {
	indomTable
	metricTable
	labelTable
}

// labelIn reports whether a label goes in the file of part p: cluster
// labels go in every file, others in the file of what they label.
func (m *model) labelIn(l *label, p *part) bool {
	switch l.kind {
	case labelItem:
		return l.metric.part == p
	case labelIndom, labelInstances:
		return p.hasIndom(m.serials[l.serial])
	}
	return true
}

// labelsOf appends to ls the labels of part p's file: those declared, in
// declaration order, then the vectors' instance labels. Copies, in an
// array the next publication reuses (labelArray): a vector's are derived
// from its instances, and were an object each at every publication.
func (m *model) labelsOf(p *part, ls []label) []label {
	for _, l := range m.labels {
		if m.labelIn(l, p) {
			ls = append(ls, *l)
		}
	}
	for _, vl := range m.vecLabels {
		if vl.in.labels > 0 && p.hasIndom(vl.in) {
			vl.eachLocked(func(l label) { ls = append(ls, l) })
		}
	}
	return ls
}
