package mmv

import "fmt"

// The registry's own metrics, in a part of the namespace no program
// metric may take, each declared at its first count (so that a file with
// none stays libpcp_mmv's). Nothing a vector refuses is silent: the
// registry counts every refused instance in mmv.<file>.mmv.dropped, over
// the reasons below; and the instances vectors expired in
// mmv.<file>.mmv.expired (see Vec.SetExpiry).

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

// expiredLocked counts instances expired, and expired ones updated late
// (see Vec.SetExpiry).
func (r *Registry) expiredLocked(expired, late int) {
	if r.expired == nil {
		r.expired = r.declareOwnLocked("expired", "Vectors' instances expired", "instances vectors expired, and expired ones updated late",
			"expired: instances unchanged for their vector's expiry (Vec.SetExpiry), deleted; late: of those, the ones updated within a sweep after their expiry, through an instrument kept from before, whose updates PCP does not show.",
			expiredNames)
	}
	r.expired[0].add(uint64(expired))
	r.expired[1].add(uint64(late))
}

var expiredNames = []string{"expired", "late"}

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
		r.declaringOwn = true
		defer func() { r.declaringOwn = false }()
		in, serial, err := r.addAutoIndomLocked(ownPrefix+"."+name, indomHelp, names, "metric", ownPrefix+"."+name)
		if err != nil {
			return err
		}
		in.own = true
		m, err = r.addMetricLocked(Metric{Name: ownPrefix + "." + name, Type: Uint64, Semantics: SemCounter, Units: Count, Indom: serial,
			ShortHelp: short, LongHelp: long}, keepDeclared)
		return err
	})
	if err != nil {
		// Only a file budget below the metric's few values refuses it
		// (it is declared beyond the caps), or a closed registry.
		r.ownErr = fmt.Errorf("mmv: file %q: metric %s.%s (%s) not declared: %w", r.name, ownPrefix, name, short, err)
		return cells
	}
	for i := range cells {
		r.bindCellLocked(m, m.indom.instanceID(i), &cells[i])
	}
	r.own.metrics++
	r.own.values += len(names) // one metric over an indom of its own
	r.own.instances += len(names)
	return cells
}
