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

// declareDropsLocked declares mmv.dropped and binds its cells; on a
// registry that cannot take it (closed), the cells count in memory.
func (r *Registry) declareDropsLocked() {
	r.drops = make([]cell, numDrops)
	for i := range r.drops {
		r.drops[i].init(Uint64)
	}
	var m *metric
	err := r.declareLocked(func() error {
		in, err := r.addAutoIndomLocked(ownPrefix+".dropped", "Reasons a vector refused label values", dropNames[:])
		if err != nil {
			return err
		}
		r.declaringOwn = true
		m, err = r.addMetricLocked(Metric{Name: ownPrefix + ".dropped", Type: Uint64, Semantics: SemCounter, Units: Count, Indom: in.Serial,
			ShortHelp: "label values vectors refused, by reason",
			LongHelp:  "limit: a vector at its limit (Vec.SetLimit); refused: values a vector cannot name; cap: the registry's caps on instances; closed: a closed registry."}, keepDeclared)
		r.declaringOwn = false
		return err
	})
	if err != nil {
		return
	}
	for i := range r.drops {
		r.bindCellLocked(m, i, &r.drops[i])
	}
}
