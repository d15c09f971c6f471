package mmv

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync/atomic"
)

// What PCP's reader pays is bounded by two budgets on values (see
// docs/design.md, "What a registry costs PCP's reader"). To fetch a value
// the reader scans its file's values section from the start, so a file of
// V values costs about c·V² a fetch: a file holds at most MaxFileValues
// values, and a metric that would take its file past that goes to another
// file (an overflow part, parts.go) when it is declared, never later, so
// that identities never move. A registry holds at most MaxValues values (and its own few),
// and a whole fetch then costs at most about c·MaxValues·MaxFileValues.

// Default budgets on values (see Options.MaxFileValues): a file of 2,048
// values is the largest whose fetch stays in the reader's fast regime
// (about 1 µs a value through pmcd, where a file of 4,000 took 5 to 7);
// 65,536 values in such files cost a whole fetch through pmcd about
// a tenth of a second.
const (
	DefaultMaxFileValues = 2048
	DefaultMaxValues     = 65536
)

// fileBudget is the values budget of each file under o.
func fileBudget(o *Options) int { return capOf(o.MaxFileValues, DefaultMaxFileValues) }

// chargeOf is what a metric over in (nil when singular) with live values
// charges its file's budget: its values, or the room its indom reserves
// for a vector's instances (indom.reserved), within the budget itself.
func chargeOf(in *indom, live, budget int) int {
	if in == nil {
		return 1
	}
	return max(live, min(in.reserved(), budget))
}

// followLimit makes the room in reserves follow a vector's limit, of per
// values each instance, down (reserved): SetLimit stores the limit
// without the registry's lock, which a transaction may hold.
func (in *indom) followLimit(limit *atomic.Int64, per int) {
	in.limit, in.per = limit, per
}

// reserved is the room in reserves for a vector's instances: what it
// reserved when declared, or less once the vector's limit is lower, for
// good: room freed may be taken by the metrics declared after, so a
// higher limit later reserves no more. Called with the registry's lock
// held.
func (in *indom) reserved() int {
	if in.limit != nil {
		if l := in.limit.Load(); l < int64(in.reserve/in.per) {
			in.reserve = max(int(l), 0) * in.per
		}
	}
	return in.reserve
}

// hasRoomLocked reports whether the part's metrics, with need more, charge
// no more than budget, added and lowered being the registry's
// liveCounts.added and loweredLocked: from the bounds when they say so,
// else from the exact sum, which then becomes both.
func (p *part) hasRoomLocked(budget, need, added int, lowered uint64) bool {
	if b := p.charges; b.ok && b.budget == budget {
		if b.charge <= budget-need-(added-b.added) {
			return true
		}
		if b.lowered == lowered && b.least > budget-need {
			return false
		}
	}
	c := p.chargeLocked(budget, nil, 0)
	p.charges = chargeBound{charge: c, least: c, added: added, lowered: lowered, budget: budget, ok: true}
	return c+need <= budget
}

// loweredLocked counts what may have lowered a charge anywhere since the
// registry was made (chargeBound): instances removed, under the lock, and
// limits set (Vec.SetLimit), without it. A metric leaving a part lowers
// that part's alone, whose bound it drops (joinMetric).
func (r *Registry) loweredLocked() uint64 {
	return uint64(r.counts.lowered) + r.limitsSet.Load()
}

// chargeLocked is what the part's metrics charge its budget, with n more
// live instances in grown (nil for none).
func (p *part) chargeLocked(budget int, grown *indom, n int) int {
	c := p.singular
	for _, over := range p.byIndom {
		live := over.in.live
		if over.in == grown {
			live += n
		}
		c += len(over.metrics) * chargeOf(over.in, live, budget)
	}
	return c
}

// valueCount is the number of live values the registry holds, every file
// together.
func (r *Registry) valueCount() int { return len(r.metrics) + r.counts.values }

// budgetSubject names a file in an error.
func budgetSubject(p *part) string { return subject("file", p.name) }

// errFileBudget is the error for values that would take a file past the
// budget.
func errFileBudget(subject string, values, budget int) error {
	return errorf(ErrTooMany, subject, "%d values would pass the budget of %d values per file (Options.MaxFileValues): PCP's reader takes time quadratic in a file's values", values, budget)
}

// errFirstFileOnly is the error for a metric whose name fits only the
// registry's first file (fitsOverflow) when that file has no room: full
// of metrics, or values that would pass its budget.
func errFirstFileOnly(metric, registry string, full bool, values, budget int) error {
	room := fmt.Sprintf("%d values would pass its budget of %d values (Options.MaxFileValues)", values, budget)
	if full {
		room = fmt.Sprintf("it holds %d metrics, as many as a file holds", MaxMetrics)
	}
	return errorf(ErrTooLong, subject("metric", metric), "a name of %d bytes fits only the registry's first file (in an overflow file it carries %q, and a name there holds at most %d bytes), and %s", len(metric), registry+".", MaxStringLen-len(registry)-1, room)
}

// checkValuesCap returns an error wrapping ErrTooMany when n more values
// would take a registry holding have past its cap under o.
func checkValuesCap(o *Options, subject string, have, n int) error {
	if c := capOf(o.MaxValues, DefaultMaxValues); have+n > c {
		return errorf(ErrTooMany, subject, "%d values in the registry would pass its cap of %d values (Options.MaxValues)", have+n, c)
	}
	return nil
}

// DefaultMaxRegistryMetrics caps a registry's metrics (see
// Options.MaxRegistryMetrics): PCP's agent rebuilds its namespace and
// tables, in time growing faster than a directory's metrics, at every
// request after the directory changed; at 2,048 metrics a rebuild costs
// about 16 ms, at 4,096 about 60, at 16,000 a second.
const DefaultMaxRegistryMetrics = 2048

// checkMetricsCap returns an error wrapping ErrTooMany when n more
// metrics would take a registry holding have past its cap under o.
func checkMetricsCap(o *Options, subject string, have, n int) error {
	if c := capOf(o.MaxRegistryMetrics, DefaultMaxRegistryMetrics); have+n > c {
		return errorf(ErrTooMany, subject, "%d metrics in the registry would pass its cap of %d metrics (Options.MaxRegistryMetrics): PCP's agent rebuilds its names and tables, in time growing faster than the metrics, at every request after any file of its directory changed", have+n, c)
	}
	return nil
}

// checkMetricBudgetLocked checks that the metric of that name over in
// (nil when singular) fits a file and the registry's cap.
func (r *Registry) checkMetricBudgetLocked(name string, in *indom) error {
	live, budget := 1, fileBudget(&r.opts)
	if in != nil {
		live = in.live
	}
	if c := chargeOf(in, live, budget); c > budget {
		return errFileBudget(subject("metric", name), c, budget)
	}
	if r.declaringOwn {
		return nil // mmv.dropped: a few values, which say what the cap refused
	}
	if checkMetricsCap(&r.opts, "", r.programMetrics(), 1) != nil { // named only when refused, as below
		return checkMetricsCap(&r.opts, subject("metric", name), r.programMetrics(), 1)
	}
	// Checked with no subject first: quoting the name costs more than
	// the rest of the check, so it is done only for the error.
	if checkValuesCap(&r.opts, "", r.programValues(), live) != nil {
		return checkValuesCap(&r.opts, subject("metric", name), r.programValues(), live)
	}
	return nil
}

// checkGrowthLocked checks that n more live instances of in keep the
// registry within its cap and every file holding metrics over in within
// its budget.
func (r *Registry) checkGrowthLocked(in *indom, n int) error {
	subject := func() string { return "indom " + strconv.FormatUint(uint64(in.Serial), 10) }
	if checkValuesCap(&r.opts, "", r.programValues(), n*in.users) != nil { // named only when refused: a new value formats nothing
		return checkValuesCap(&r.opts, subject(), r.programValues(), n*in.users)
	}
	budget := fileBudget(&r.opts)
	if in.live+n <= min(in.reserved(), budget) {
		return nil // within the room its indom reserves: no file's charge changes
	}
	for p := range partsHolding(r.parts, in) {
		if c := p.chargeLocked(budget, in, n); c > budget && c > p.chargeLocked(budget, nil, 0) {
			return errFileBudget(subject()+" in "+budgetSubject(p), c, budget)
		}
	}
	return nil
}

// checkIndomBudget refuses an indom too large for a metric over it to fit
// a file: a refusal of the declaration alone, whatever else is declared
// (tooLargeError).
func checkIndomBudget(o *Options, subject string, instances int) error {
	if b := fileBudget(o); instances > b {
		return tooLargeError{errorf(ErrTooMany, subject, "a metric over its %d instances would pass the budget of %d values per file (Options.MaxFileValues)", instances, b)}
	}
	return nil
}

// tooLargeError is the budget's refusal of one declaration larger than a
// whole file's budget: the same at every run of the program, whatever it
// declared before, so a programming error, which must panics for after
// Start too, where the caps that the running program fills are its
// condition. It wraps the refusal (ErrTooMany).
type tooLargeError struct{ error }

func (e tooLargeError) Unwrap() error { return e.error }

// checkBudgetsLocked checks the declarations against the budgets of the
// registry's options, as Configure changes them.
func (r *Registry) checkBudgetsLocked() error {
	budget := fileBudget(&r.opts)
	for _, p := range r.parts {
		if c := p.chargeLocked(budget, nil, 0); c > budget {
			return errFileBudget(budgetSubject(p)+" as declared", c, budget)
		}
	}
	// Without the registry's own metrics (ownCounts): counted, a registry
	// at its cap refused every Configure after its first refusal.
	if err := checkMetricsCap(&r.opts, subject("file", r.name)+" as declared", r.programMetrics(), 0); err != nil {
		return err
	}
	return checkValuesCap(&r.opts, subject("file", r.name)+" as declared", r.programValues(), 0)
}

// programMetrics and programValues are the registry's metrics and values
// less its own (ownCounts), which the caps leave out.
func (r *Registry) programMetrics() int { return len(r.metrics) - r.own.metrics }

func (r *Registry) programValues() int { return r.valueCount() - r.own.values }

// placeLocked lays the metrics declared before Start out over the parts
// again, so that which file holds a metric, and so its PMID's cluster,
// does not depend on the order the program declared them in: a metric of
// the last run's files in the part that held it (r.homes, read by Start)
// when it has room, the parts before it made, empty or not, when this run
// has fewer; then those it had no room for, and the others, in the order
// of their names, each in the first part with room (partWithRoomLocked's
// rule). Within a file the metrics
// stay in declaration order. Nothing is published yet, so nothing moves
// that a reader saw. A registry of one file that no metric of the last
// run's files leaves is left as it is, unless past its budget (lowered
// by Configure since its declarations).
func (r *Registry) placeLocked() error {
	budget, lowered := fileBudget(&r.opts), r.loweredLocked()
	// Names that fit only the first file go first (fitsOverflow); the
	// declarations put them there, so they have room.
	long := func(m *metric) bool { return !fitsOverflow(r.name, r.opts.Flags, m.Name) }
	home := func(m *metric) int {
		if k, ok := r.homes[m.Name]; ok && (k == 0 || !long(m)) {
			return k
		}
		return -1
	}
	if len(r.parts) == 1 && r.parts[0].chargeLocked(budget, nil, 0) <= budget && !slices.ContainsFunc(r.metrics, func(m *metric) bool { return home(m) > 0 }) {
		return nil
	}
	order := make(map[*metric]int, len(r.metrics))
	for i, m := range r.metrics {
		order[m] = i
	}
	sorted := slices.Clone(r.metrics)
	slices.SortStableFunc(sorted, func(a, b *metric) int {
		if la := long(a); la != long(b) {
			if la {
				return -1
			}
			return 1
		}
		if ha := home(a) >= 0; ha != (home(b) >= 0) { // those of a file first, before others take its room
			if ha {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.Name, b.Name)
	})
	// Laid out on new parts, the first one's metrics on a stand-in, so that
	// an error leaves the registry as it was.
	first := &part{indoms: r.parts[0].indoms}
	parts := []*part{first}
	grow := func() (*part, error) {
		p := newPart(len(parts), r.name, r.opts.Flags)
		if err := r.checkPartName(p); err != nil {
			return nil, err
		}
		parts = append(parts, p)
		return p, nil
	}
	need := func(m *metric) int {
		live := 1
		if m.indom != nil {
			live = m.indom.live
		}
		return chargeOf(m.indom, live, budget)
	}
	fits := func(m *metric, p *part) bool {
		return len(p.metrics) < MaxMetrics && (m.auto() || !p.used.has(m.item)) && p.hasRoomLocked(budget, need(m), r.counts.added, lowered)
	}
	put := func(m *metric, to *part) {
		to.metrics = append(to.metrics, m)
		to.joinMetric(m, 1)
		if !m.auto() {
			to.used.add(m.item)
		}
		if m.indom != nil && !to.hasIndom(m.indom) {
			to.indoms = append(to.indoms, m.indom)
		}
	}
	// The first part with room, or a new one.
	byRule := func(m *metric) error {
		for _, p := range parts {
			if fits(m, p) {
				put(m, p)
				return nil
			}
			if long(m) {
				return errFirstFileOnly(m.Name, r.name, len(p.metrics) >= MaxMetrics, p.chargeLocked(budget, nil, 0)+need(m), budget)
			}
		}
		p, err := grow()
		if err == nil {
			put(m, p)
		}
		return err
	}
	// The names that fit only the first file, then every name in its file
	// when it has room; the others, and those it had no room for, after:
	// placed as they came, one that had no room in its file took another's
	// room there, and pushed it out in turn (TestPlacementMovesFewest).
	var rest []*metric
	for _, m := range sorted {
		k := home(m)
		switch {
		case long(m):
			if err := byRule(m); err != nil {
				return err
			}
			continue
		case k < 0:
			rest = append(rest, m)
			continue
		}
		for len(parts) <= k {
			if _, err := grow(); err != nil {
				return err
			}
		}
		if fits(m, parts[k]) {
			put(m, parts[k])
		} else {
			rest = append(rest, m)
		}
	}
	for _, m := range rest {
		if err := byRule(m); err != nil {
			return err
		}
	}
	parts[0] = r.parts[0]
	parts[0].metrics, parts[0].used = first.metrics, first.used
	for _, p := range parts {
		slices.SortFunc(p.metrics, func(a, b *metric) int { return cmp.Compare(order[a], order[b]) })
		for i, m := range p.metrics {
			m.part, m.index = p, int32(i)
		}
		p.joinMetrics() // in the order of declaration again
	}
	r.parts = parts
	holdIndoms(r.indoms, parts)
	return nil
}

// vecReserveLimit is the number of instances a vector reserves room for
// in its file, of perInstance values each: its default limit, within the
// per-indom cap and the file budget.
func vecReserveLimit(o *Options, perInstance, limit int) int {
	c := min(capOf(o.MaxIndomInstances, DefaultMaxIndomInstances), fileBudget(o)) / perInstance
	return min(c, limit)
}

// Default caps on instances (see Options.MaxIndomInstances): a metric over
// an indom at its cap fills a file's values budget (DefaultMaxFileValues),
// and a registry at its cap, spread over indoms at theirs, costs PCP's
// reader a few hundredths of a second a fetch.
const (
	DefaultMaxIndomInstances = DefaultMaxFileValues
	DefaultMaxInstances      = 16384
)

// checkInstanceCaps returns an error wrapping ErrTooMany when adding n
// instances to the indom of serial (help: its short help, to name it),
// which holds inIndom, in a registry holding inRegistry, would pass a cap
// of o.
func checkInstanceCaps(o *Options, serial uint32, help string, inIndom, inRegistry, n int) error {
	// Named only on failure: on the path of every instance added.
	subject := func() string {
		s := "indom " + strconv.FormatUint(uint64(serial), 10)
		if help != "" {
			s += " (" + quote(help) + ")"
		}
		return s
	}
	if c := capOf(o.MaxIndomInstances, DefaultMaxIndomInstances); inIndom+n > c {
		return errorf(ErrTooMany, subject(), "%d instances would pass the cap of %d per indom (Options.MaxIndomInstances): PCP's reader takes time quadratic in an indom's instances", inIndom+n, c)
	}
	if c := capOf(o.MaxInstances, DefaultMaxInstances); inRegistry+n > c {
		return errorf(ErrTooMany, subject(), "%d instances in the registry would pass its cap of %d (Options.MaxInstances)", inRegistry+n, c)
	}
	return nil
}

// capOf is a cap as Options gives it: def when zero, none when negative.
func capOf(c, def int) int {
	switch {
	case c == 0:
		return def
	case c < 0:
		return math.MaxInt
	}
	return c
}

// partWithRoomLocked returns the part for the metric m over in (nil when
// singular): the part that held its name in the last run's files
// (r.homes), the parts before it made when this run has fewer, when it
// has room; else the first part with room: fewer than MaxMetrics
// metrics, an item, and values within its budget with the metric's; or
// a new overflow part when none has. A name that fits only the first
// file (fitsOverflow) has the first file or an error. A new part's name is
// checked here, when the metric that needs it is declared; added is the
// number of parts made, the last ones, which the caller drops if the
// declaration fails.
func (r *Registry) partWithRoomLocked(in *indom, m *Metric) (p *part, added int, err error) {
	budget, live := fileBudget(&r.opts), 1
	if in != nil {
		live = in.live
	}
	need, lowered := chargeOf(in, live, budget), r.loweredLocked()
	fits := func(p *part) bool {
		return len(p.metrics) < MaxMetrics && p.hasItemRoom(m) && p.hasRoomLocked(budget, need, r.counts.added, lowered)
	}
	if k, ok := r.homes[m.Name]; ok && (k == 0 || fitsOverflow(r.name, r.opts.Flags, m.Name)) {
		if k >= len(r.parts) {
			for added = 0; len(r.parts) <= k; added++ {
				if err := r.addPartLocked(); err != nil {
					r.parts = r.parts[:len(r.parts)-added]
					return nil, 0, err
				}
			}
			return r.parts[k], added, nil
		}
		if fits(r.parts[k]) {
			return r.parts[k], 0, nil
		}
		if r.state == started && in != nil && in.per > 0 && in.reserve > in.per {
			// A vector declared after Start is declared before its
			// limit is set (SetLimit comes after), so what it reserves
			// (its default limit) says nothing of what it needs: in
			// the last run's file that held it, it had the room of its
			// limit (placeLocked laid it out with it set). It goes back
			// there reserving the room of one instance; its others take
			// the room the file has left, as any instance past a
			// reservation does (checkGrowthLocked). Moved to another
			// file, its PMID vanished, and came back at a later run
			// that found that file with room first
			// (TestVecLimitAfterStartKeepsFile).
			was := in.reserve
			in.reserve = in.per
			need = chargeOf(in, live, budget)
			if fits(r.parts[k]) {
				r.counts.lowered++ // the charges of the parts holding in, lower now (chargeBound)
				return r.parts[k], 0, nil
			}
			in.reserve = was
			need = chargeOf(in, live, budget)
		}
	}
	for _, p := range r.parts {
		if fits(p) {
			return p, 0, nil
		}
		if !fitsOverflow(r.name, r.opts.Flags, m.Name) {
			return nil, 0, errFirstFileOnly(m.Name, r.name, len(p.metrics) >= MaxMetrics, p.chargeLocked(budget, nil, 0)+need, budget)
		}
	}
	if err := r.addPartLocked(); err != nil {
		return nil, 0, err
	}
	return r.parts[len(r.parts)-1], 1, nil
}

// addPartLocked adds an overflow part to the registry, its name checked.
func (r *Registry) addPartLocked() error {
	p := newPart(len(r.parts), r.name, r.fileFlagsLocked())
	if err := r.checkPartName(p); err != nil {
		return err
	}
	r.parts = append(r.parts, p)
	return nil
}

// checkPartName checks the name of the registry's overflow part p.
func (r *Registry) checkPartName(p *part) error {
	if err := checkFileName(p.name, NoPrefix); err != nil {
		return fmt.Errorf("mmv: file %q: more metrics than a file holds (%d, or %d values) need an overflow file: %w", r.name, MaxMetrics, fileBudget(&r.opts), err)
	}
	return nil
}
