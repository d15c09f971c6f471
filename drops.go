package mmv

// Nothing a vector refuses is silent: the registry counts every refused
// instance in a counter of its own, mmv.<file>.mmv.dropped, over the
// reasons below, declared at the first refusal (so that a file with none
// stays libpcp_mmv's), in a part of the namespace no program metric may
// take.

// dropReason is why a vector refused label values.
type dropReason int

const (
	dropLimit   dropReason = iota // the vector holds its limit
	dropRefused                   // values the vector cannot name
	dropCap                       // the registry's caps on instances
	dropClosed                    // the registry is closed
	numDrops
)

var dropNames = [numDrops]string{"limit", "refused", "cap", "closed"}

// dropLocked counts one refusal.
func (r *Registry) dropLocked(reason dropReason) {
	if r.drops == nil {
		r.declareDropsLocked()
	}
	r.drops[reason].add(1)
}

// declareDropsLocked declares mmv.dropped and binds its cells.
func (r *Registry) declareDropsLocked() {
	r.drops = r.declareOwnLocked("dropped", "Reasons a vector refused label values", "label values vectors refused, by reason",
		"limit: a vector at its limit (Vec.SetLimit); refused: values a vector cannot name; cap: the registry's caps on instances; closed: a closed registry.",
		dropNames[:])
}

// declareOwnLocked declares the registry's own counter mmv.<name>, over an
// indom of the instances names, and returns its cells, bound; on a
// registry that cannot take it (closed), the cells count in memory.
func (r *Registry) declareOwnLocked(name, indomHelp, short, long string, names []string) []cell {
	cells := make([]cell, len(names))
	for i := range cells {
		cells[i].init(Uint64)
	}
	var m *metric
	err := r.declareLocked(func() error {
		in, err := r.addAutoIndomLocked(ownPrefix+"."+name, indomHelp, names)
		if err != nil {
			return err
		}
		r.declaringOwn = true
		m, err = r.addMetricLocked(Metric{Name: ownPrefix + "." + name, Type: Uint64, Semantics: SemCounter, Units: Count, Indom: in.Serial,
			ShortHelp: short, LongHelp: long}, keepDeclared)
		r.declaringOwn = false
		return err
	})
	if err != nil {
		return cells
	}
	for i := range cells {
		r.bindCellLocked(m, i, &cells[i])
	}
	return cells
}
