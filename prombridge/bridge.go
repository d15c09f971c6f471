package prombridge

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/bridge"
	"github.com/gopcp/mmv/internal/pcpname"
)

// DefaultGrace is how long a series absent from Gathers that reported an
// error stays in PCP unless Options.Grace says otherwise: long enough
// that a collector failing for a few refreshes does not reset its
// counters.
const DefaultGrace = time.Minute

// DefaultMaxSampleAge is how old a sample's own timestamp may be for the
// sample to be copied, unless Options.MaxSampleAge says otherwise:
// Prometheus's default lookback delta, past which a query no longer
// returns a sample stored at its own time.
const DefaultMaxSampleAge = 5 * time.Minute

// Options configures Register; the zero value of each field means its
// default.
type Options struct {
	// Prefix is put before every metric name, with a dot: "prom" gives
	// mmv.<file>.prom.http_requests. Default: none. Register refuses a
	// prefix under which every family would be refused (mmv, a metric of
	// the program); two open bridges on one registry need different
	// prefixes, each with its own prombridge.dropped (a closed bridge's
	// prefix is free: see Bridge.Close).
	Prefix string
	// Interval is how often the gatherer is read and copied into the file.
	// Default: mmv.DefaultInterval (1 s).
	Interval time.Duration
	// Grace is how long a series absent from Gathers that reported an
	// error (the collector that failed may have left it out) stays in PCP
	// before it is removed; negative keeps such series until an
	// error-free Gather lacks them. A series absent from an error-free
	// Gather leaves at once. Default: DefaultGrace.
	Grace time.Duration
	// MaxSampleAge is how old a sample's own timestamp (client_golang's
	// NewMetricWithTimestamp: a federated or pushed value a collector
	// relays) may be at a refresh for the sample to be copied. An older
	// one is absent from that refresh, as Prometheus, storing it at its
	// own time, stops returning it after its lookback delta: its series
	// leaves PCP at once, even after a Gather error (a singular family's
	// shows no value with the mmv.Sentinel flag, and Err names it
	// without), and the sample is counted as stale in prombridge.dropped
	// and named by Err. A sample without a timestamp, or one in the
	// future, is never too old; negative copies every sample whatever
	// its timestamp. Default: DefaultMaxSampleAge.
	MaxSampleAge time.Duration
	// Limit is the number of series one family may publish (a histogram's
	// buckets and a summary's quantiles count with their series). Default:
	// mmv.DefaultVecLimit. The registry's caps on instances hold too.
	Limit int
	// Units returns the units of a family from its Prometheus name.
	// Default: Units, by the OpenMetrics naming conventions.
	Units func(family string) mmv.Units
}

// Stats are the counts of a bridge, since Register.
type Stats struct {
	Refreshes     uint64 // refreshes done
	GatherErrors  uint64 // refreshes whose Gather returned an error
	Families      int    // families published; 0 after Close
	Skipped       int    // families not published (see Bridge.Err for why); 0 after Close
	Series        int    // series published; 0 after Close
	DroppedSeries uint64 // series mmv refused: a family's limit, the registry's caps
	Deleted       uint64 // series removed from PCP once absent (see Options.Grace), or by Close
}

// Bridge copies the families of a gatherer into a registry.
type Bridge struct {
	r    *mmv.Registry
	g    prometheus.Gatherer
	opts Options

	// refreshing is held by a refresh, from its Gather to its copy; mu
	// only while it copies, so that Err, Stats and Close never wait for a
	// Gather, which has no deadline.
	refreshing sync.Mutex

	mu        sync.Mutex
	gathering time.Time                 // when the Gather running began; zero when none
	families  map[familyKey]*family     // by Prometheus name and type
	current   map[string]*family        // by Prometheus name: the type last gathered
	names     map[string]*family        // PCP names taken, to the family taking them
	gathered  map[string]dto.MetricType // Prometheus names of the refresh running, and their first type
	values    []string                  // label values of the metric being copied
	// inherited are the families closed bridges of the registry and
	// prefix declared, by PCP name, that no family of this bridge has
	// adopted yet (see handover.go).
	inherited map[string]*family
	drops     drops
	stats     Stats
	err       error
	closed    bool
	left      *leftovers // what Close handed over
	// stopPoll stops the registry's poll of the bridge: the next bridge
	// of its prefix calls it as it takes the leftovers (takeOver).
	stopPoll func()
}

// familyKey is what tells families apart: a name gathered with another
// type is another family, as PCP cannot change a metric's type.
type familyKey struct {
	prom string
	typ  dto.MetricType
}

// Register publishes the families g gathers to r (mmv.Default when nil),
// with the options o (nil for the defaults), through r's Poll, without
// gathering itself: before Start, r's Gather and Snapshot copy them
// first; Start copies them before it makes its file, so that the
// families present are in the registry's first file (those of a Gather
// longer than the 1 s Start waits for it, when it returns), or, on r
// started already, the Poll goroutine at once; then every
// Options.Interval while r is started, until Close. It
// returns an error when g is nil, or the prefix is invalid or would have
// every family refused (mmv's own names, a metric the program declared,
// too long, an open bridge's prefix): Register declares the bridge's
// counter of drops, <prefix>.prombridge.dropped, which r refuses then, as
// it does on a registry with a label named reason (AddLabel), the
// counter's label.
// On a prefix of a bridge of r closed already, it takes that bridge's
// metrics over instead (see Bridge.Close). What a refresh meets
// (a Gather error, a family or series refused) is never fatal: Err
// reports it and Stats and prombridge.dropped count it.
func Register(r *mmv.Registry, g prometheus.Gatherer, o *Options) (*Bridge, error) {
	if g == nil {
		return nil, errors.New("prombridge: Register: nil gatherer")
	}
	if r == nil {
		r = mmv.Default
	}
	b := &Bridge{r: r, g: g, families: map[familyKey]*family{}, current: map[string]*family{}, names: map[string]*family{},
		gathered: map[string]dto.MetricType{}}
	if o != nil {
		b.opts = *o
	}
	if p := b.opts.Prefix; p != "" {
		for part := range strings.SplitSeq(p, ".") {
			if part == "" || pcpname.Part(part, "x") != part {
				return nil, fmt.Errorf("prombridge: Register: prefix %q: each part between dots is a letter, then letters, digits and '_'", p)
			}
		}
	}
	if left := takeOver(r, b.opts.Prefix); left != nil {
		// A closed bridge's metrics, which mmv cannot undeclare.
		b.drops.adopt(left.dropped)
		b.inherited = left.families
	} else if err := b.drops.declare(r, b.pcpName(droppedMetric)); err != nil {
		// Not "every family would be refused": a registry label reason is
		// refused for the counter's label alone, under any prefix
		// (TestRegistryLabelledReasonRefusedForIt); err says which.
		return nil, fmt.Errorf("prombridge: Register: prefix %q: the bridge's counter %s refused: %w", b.opts.Prefix, b.pcpName(droppedMetric), err)
	}
	if b.opts.Grace == 0 {
		b.opts.Grace = DefaultGrace
	}
	if b.opts.MaxSampleAge == 0 {
		b.opts.MaxSampleAge = DefaultMaxSampleAge
	}
	if b.opts.Limit <= 0 {
		b.opts.Limit = mmv.DefaultVecLimit
	}
	if b.opts.Units == nil {
		b.opts.Units = Units
	}
	// No refresh here: the registry's poll copies the families before
	// they are read (Gather and Snapshot before Start, Start before it
	// makes its file, at once on the poll's goroutine once started), and
	// a refresh of Register's own had no bound: a Gather that never
	// returns held Register for ever.
	b.stopPoll = r.Poll(b.opts.Interval, func() { b.Refresh() })
	return b, nil
}

// Refresh gathers the families and copies them into the registry now,
// after the refresh running if any, and returns what the last refresh
// met. After Close it does nothing, and returns what Close returned.
func (b *Bridge) Refresh() error {
	b.mu.Lock()
	if b.closed { // not behind a Gather stuck in the refresh running
		defer b.mu.Unlock()
		return b.err
	}
	b.mu.Unlock()
	b.refreshing.Lock()
	defer b.refreshing.Unlock()
	return b.refresh()
}

// refresh is Refresh, with b.refreshing held.
func (b *Bridge) refresh() error {
	b.mu.Lock()
	if b.closed {
		defer b.mu.Unlock()
		return b.err
	}
	now, g := time.Now(), b.g // Close lets b.g go
	b.gathering = now
	b.mu.Unlock()
	mfs, err := g.Gather()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.gathering = time.Time{}
	if !b.closed { // closed meanwhile: the registry may be closed too
		b.refreshLocked(now, mfs, err)
	}
	return b.err
}

// Close takes the bridge out of its registry: every series it published
// leaves PCP (its vectors' instances are deleted, prombridge.dropped's
// too; its singular metrics show no value on a registry with the
// mmv.Sentinel flag, and keep their last values without it, which the
// error Close returns names), and its refreshes stop: the registry's
// Poll does nothing until the next Register of its prefix stops it. Close gathers
// nothing and waits for no Gather: a refresh whose Gather is running
// copies nothing once it returns. The metrics stay declared, mmv never
// undeclaring one: the next Register on the registry with the same
// prefix takes them over, and a family of it declared alike (the same
// family, label names and units) publishes through them again; one declared
// otherwise under a name they hold is refused (mmv.ErrDuplicate).
//
// On a registry closed already, Close only stops the bridge: the
// registry's files, without the mmv.Process flag, keep the values of its
// last refresh. So a program that ends closes the registry alone, or
// before the bridge, calling Refresh first for the latest values. Close
// returns what Err then returns; closing again does nothing.
func (b *Bridge) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return b.errLocked()
	}
	b.closed = true
	// The registry's Poll holds b until the next bridge of its prefix
	// takes its leftovers, for the registry's life if none does: a
	// service swapping its Gatherer kept every old one, with its
	// collectors and their series (TestClosedBridgeReleasesGatherer).
	b.g = nil
	if errors.Is(b.r.Err(), mmv.ErrClosed) {
		return b.errLocked()
	}
	for _, f := range b.families {
		b.removeLocked(f, func(*series) bool { return true })
	}
	left := &leftovers{dropped: b.drops.vec, families: b.inherited}
	if left.families == nil {
		left.families = map[string]*family{}
	}
	for name, f := range b.names {
		// Declared, and never written maybe (a first metric whose labels
		// were not its family's): withdrawn all the same.
		b.withdrawLocked(f)
		left.families[name] = f
	}
	b.drops.vec.Reset()
	b.inherited, b.families, b.current, b.names, b.gathered = nil, nil, nil, nil, nil
	for _, f := range left.families {
		if f.stale {
			b.drops.errs.Add(f.prom, "stale "+f.name, 0, staleError(f, "after Close"))
		}
	}
	b.err = b.drops.done()
	b.stats.Families, b.stats.Skipped = 0, 0
	b.left = left
	handOver(b)
	return b.err
}

// staleError names f's singular metric as keeping an old value, when.
// Its Err pair is the family and the metric's name ("stale "+f.name): a
// closed bridge's x and the new bridge's x_total may be one family's.
func staleError(f *family, when string) error {
	return fmt.Errorf("prombridge: family %s: its singular metric %s keeps an old value %s: "+
		"PCP cannot withdraw it from a registry without the mmv.Sentinel flag", f.prom, f.name, when)
}

// Err returns what the last refresh met, nil if nothing: the Gather
// error, and every refusal it counted (families not published, series
// refused, totals not copied, samples older than Options.MaxSampleAge,
// singular metrics left with an old value),
// once per family and reason with the number of samples, at most 32 of
// them, then how many more. It names a Gather running for longer than
// Options.Grace and Options.Interval (DefaultGrace when Grace is
// negative): PCP shows the values of the refresh before as current.
func (b *Bridge) Err() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.errLocked()
}

// errLocked is Err.
func (b *Bridge) errLocked() error {
	if b.gathering.IsZero() || b.closed { // closed: what it gathers is copied nowhere
		return b.err
	}
	grace := b.opts.Grace
	if grace < 0 {
		grace = DefaultGrace
	}
	if d := time.Since(b.gathering); d > max(grace, b.opts.Interval) {
		return errors.Join(fmt.Errorf("prombridge: gather: running for %v, still: PCP shows the values of the refresh before as current", d.Round(time.Millisecond)), b.err)
	}
	return b.err
}

// Stats returns the bridge's counts.
func (b *Bridge) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stats
}

// refreshLocked copies mfs, gathered at time now with the Gather error
// err.
func (b *Bridge) refreshLocked(now time.Time, mfs []*dto.MetricFamily, err error) {
	b.stats.Refreshes++
	if err != nil {
		// Gather returns what it could gather with its error.
		b.stats.GatherErrors++
		b.drops.errs.Add("gather", "gather", 0, fmt.Errorf("prombridge: gather: %w", err))
	}
	clear(b.gathered)
	for _, mf := range mfs {
		if len(mf.Metric) == 0 {
			continue
		}
		// A Gatherer's names are unique; one that gathers a name twice
		// (two registries' families appended) with two types has the
		// first copied: the second retired it at every refresh.
		if t, ok := b.gathered[mf.GetName()]; ok && t != mf.GetType() {
			b.drops.drop(mf.GetName(), dropName, samples(mf), fmt.Errorf("prombridge: family %s: gathered twice in one Gather, as a %s and as a %s: the second not copied",
				mf.GetName(), strings.ToLower(t.String()), strings.ToLower(mf.GetType().String())))
			continue
		}
		b.gathered[mf.GetName()] = mf.GetType()
		f := b.family(mf, mfs)
		if old := b.current[f.prom]; old != f {
			if old != nil {
				b.retireLocked(old)
			}
			b.current[f.prom] = f
		}
		if f.err != nil {
			b.drops.drop(f.prom, f.reason, samples(mf), f.err)
			continue
		}
		for _, m := range mf.Metric {
			b.copyLocked(f, m, now)
		}
	}
	b.sweepLocked(now, err != nil)
	b.err = b.drops.done()
}

// copyLocked copies one metric of f, gathered at the refresh of time now.
func (b *Bridge) copyLocked(f *family, m *dto.Metric, now time.Time) {
	values, ok := f.labelValues(m, b.values[:0])
	b.values = values[:0]
	if !ok {
		b.drops.drop(f.prom, dropLabels, samplesOf(f.typ, m), fmt.Errorf("prombridge: family %s: a metric's label names are not %q: not copied", f.prom, f.labels))
		return
	}
	s := f.series.find(values)
	if age, old := b.tooOld(m, now); old {
		b.drops.drop(f.prom, dropStale, samplesOf(f.typ, m), fmt.Errorf("prombridge: family %s: series %q not copied: its own timestamp is %v old, past Options.MaxSampleAge (%v): absent, as from Prometheus",
			f.prom, values, age.Round(time.Second), b.opts.MaxSampleAge))
		switch {
		case s == nil:
			// A singular family first gathered old: not its declaration's
			// zero, shown as a value.
			b.withdrawLocked(f)
		case !s.seen.Equal(now): // not copied already from this Gather
			s.seen = time.Time{} // absent: sweepLocked removes it
		}
		return
	}
	if s == nil {
		s = f.series.add(values)
	} else if s.seen.Equal(now) {
		// Gathered twice in one Gather (two registries' families
		// appended): one PCP instance cannot show both values, and the
		// second overwrote the first unnamed. The first stays, as for a
		// name gathered with two types.
		b.drops.drop(f.prom, dropName, samplesOf(f.typ, m), fmt.Errorf("prombridge: family %s: series %q gathered twice in one Gather: the second not copied", f.prom, values))
		return
	}
	s.seen = now
	if s.refused == nil {
		err := f.update(s, m)
		if err == nil {
			f.stale = false // a singular family's values are the gathered ones again
			if !s.shown {
				s.shown = true
				b.stats.Series++
			}
			return
		}
		// Nothing of a refused series stays in PCP: not a sum without its
		// buckets, nor old buckets after new ones were refused; nor an
		// old value beside a value not copied.
		b.unpublishLocked(f, s)
		// A value not copied, or not of the family's type, is the
		// metric's at this refresh: tried again at the next.
		why := dropValue
		if errors.Is(err, errType) {
			why = dropType
		}
		if why == dropType || errors.Is(err, errValue) {
			b.drops.drop(f.prom, why, samplesOf(f.typ, m), fmt.Errorf("prombridge: family %s: series %q not copied: %w", f.prom, values, err))
			return
		}
		s.refused = fmt.Errorf("prombridge: family %s: series %q refused: %w", f.prom, values, err)
		b.stats.DroppedSeries++
	}
	// Not retried while gathered; named and counted at every refresh.
	b.drops.drop(f.prom, dropSeries, samplesOf(f.typ, m), s.refused)
}

// tooOld returns the age of m's own timestamp at the refresh of time now,
// and whether it is past Options.MaxSampleAge: a sample without a
// timestamp, or in the future, is never too old.
func (b *Bridge) tooOld(m *dto.Metric, now time.Time) (time.Duration, bool) {
	if m.TimestampMs == nil || b.opts.MaxSampleAge < 0 {
		return 0, false
	}
	age := now.Sub(time.UnixMilli(m.GetTimestampMs()))
	return age, age > b.opts.MaxSampleAge
}

// unpublishLocked takes the values of s, a series gathered, out of PCP.
func (b *Bridge) unpublishLocked(f *family, s *series) {
	b.hideLocked(s)
	f.removeSeries(s)
	s.bounds, s.buckets, s.quantiles, s.counter, s.gauge, s.count = nil, nil, nil, nil, nil, nil
	b.withdrawLocked(f)
}

// withdrawLocked takes the values of f's singular metrics out of PCP,
// which cannot remove them: they show no value on a registry with the
// Sentinel flag (bridge.Withdraws, the flag as the registry has it now),
// and keep their last values otherwise, named by Err at every refresh
// until the family is copied again.
func (b *Bridge) withdrawLocked(f *family) {
	switch {
	case len(f.labels) > 0:
	case bridge.Withdraws(b.r):
		f.withdraw()
	default:
		f.stale = true
	}
}

// sweepLocked removes from PCP the series absent from the refresh of
// time now, whose Gather reported an error when failed, and names the
// singular metrics left with a value no longer gathered. An error-free
// Gather is the whole truth: what it lacks leaves at once. One that
// reported an error may lack the series of the collector that failed:
// they stay until absent for longer than Grace. A series gathered too old
// (seen zero) leaves at once either way: no failure hid it.
func (b *Bridge) sweepLocked(now time.Time, failed bool) {
	for _, f := range b.families {
		switch {
		case !failed:
			b.removeLocked(f, func(s *series) bool { return !s.seen.Equal(now) })
		case b.opts.Grace >= 0:
			b.removeLocked(f, func(s *series) bool { return s.seen.IsZero() || now.Sub(s.seen) > b.opts.Grace })
		default:
			b.removeLocked(f, func(s *series) bool { return s.seen.IsZero() })
		}
		if f.stale {
			b.drops.errs.Add(f.prom, "stale "+f.name, 0, staleError(f, "no longer gathered"))
		}
	}
	for _, f := range b.inherited {
		if f.stale {
			b.drops.errs.Add(f.prom, "stale "+f.name, 0, staleError(f, "since a bridge closed"))
		}
	}
}

// retireLocked removes from PCP every series of f, a family whose name is
// now gathered with another type.
func (b *Bridge) retireLocked(f *family) {
	b.removeLocked(f, func(*series) bool { return true })
}

// removeLocked removes from PCP the series of f for which gone is true
// (see withdrawLocked for a singular family's).
func (b *Bridge) removeLocked(f *family, gone func(*series) bool) {
	if f.series == nil {
		return
	}
	for _, s := range f.series.drop(gone) {
		if f.removeSeries(s) {
			b.stats.Deleted++
		}
		if s.refused != nil {
			continue
		}
		b.hideLocked(s)
		b.withdrawLocked(f)
	}
}

// hideLocked counts s out of Stats.Series, if it was in.
func (b *Bridge) hideLocked(s *series) {
	if s.shown {
		s.shown = false
		b.stats.Series--
	}
}

// pcpName returns name below Options.Prefix.
func (b *Bridge) pcpName(name string) string {
	if b.opts.Prefix == "" {
		return name
	}
	return b.opts.Prefix + "." + name
}

// family returns the family of mf, one of mfs, declaring it on first
// sight, and again at the first sight of a refresh while a refusal that
// may pass refuses it.
func (b *Bridge) family(mf *dto.MetricFamily, mfs []*dto.MetricFamily) *family {
	t := mf.GetType()
	key := familyKey{mf.GetName(), t}
	if f := b.families[key]; f != nil {
		if f.retry && f.tried != b.stats.Refreshes {
			b.declareLocked(f, mf)
		}
		return f
	}
	base, full := Name(key.prom, t), pcpname.Part(key.prom, "x")
	f := &family{prom: key.prom, typ: t, name: b.pcpName(base), series: seriesTable{}}
	for _, l := range mf.Metric[0].Label {
		f.labels = append(f.labels, l.GetName())
	}
	if base != full {
		// A counter keeps "_total" when dropping it would make the PCP
		// name of another family gathered with it (the Go collector has
		// go_memstats_alloc_bytes beside go_memstats_alloc_bytes_total;
		// a:b_total beside a_b), or one taken already: by a family of
		// this bridge, or a closed bridge's metric that does not fit.
		_, taken := b.names[f.name]
		if old, ok := b.inherited[f.name]; ok && f.fits(old, b.opts.Units(f.prom)) != nil {
			taken = true
		}
		if taken || slices.ContainsFunc(mfs, func(o *dto.MetricFamily) bool {
			return o != mf && keepsName(o) && Name(o.GetName(), o.GetType()) == base
		}) {
			f.name = b.pcpName(full)
		}
	}
	b.families[key] = f
	b.stats.Skipped++ // until declared
	b.declareLocked(f, mf)
	return f
}

// declareLocked declares f, refused or not seen before, as gathered in
// mf, and counts it published or, when refused, sets why.
func (b *Bridge) declareLocked(f *family, mf *dto.MetricFamily) {
	f.tried, f.retry = b.stats.Refreshes, false
	if !bridged(f.typ) {
		f.err, f.reason = fmt.Errorf("prombridge: family %s not published: type %s is not bridged", f.prom, f.typ), dropType
		return
	}
	if other, ok := b.names[f.name]; ok {
		// Names are never given back: the holder keeps it.
		f.err, f.reason = fmt.Errorf("prombridge: family %s not published: its PCP name %s is family %s's (%s)", f.prom, f.name, other.prom, other.typ), dropName
		return
	}
	if old, ok := b.inherited[f.name]; ok {
		// A closed bridge's metrics: taken over, or refused for good.
		if err := f.fits(old, b.opts.Units(f.prom)); err != nil {
			f.err, f.reason = fmt.Errorf("prombridge: family %s not published as %s: %w", f.prom, f.name, err), dropDeclaration
			return
		}
		f.adopt(old, b.opts.Limit, mf.Metric[0])
		delete(b.inherited, f.name)
	} else if err := f.declare(b.r, mf.GetHelp(), b.opts.Units(f.prom), b.opts.Limit, mf.Metric[0]); err != nil {
		f.err, f.reason = fmt.Errorf("prombridge: family %s not published as %s: %w", f.prom, f.name, err), dropDeclaration
		f.retry = bridge.MayPass(err)
		return
	}
	f.err = nil
	b.names[f.name] = f
	b.stats.Skipped--
	b.stats.Families++
}

// keepsName reports whether family mf's PCP name is its own name made a
// PCP name part, with nothing dropped: all but a counter named *_total.
func keepsName(mf *dto.MetricFamily) bool {
	return mf.GetType() != dto.MetricType_COUNTER || !strings.HasSuffix(mf.GetName(), "_total")
}
