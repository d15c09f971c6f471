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
	"github.com/gopcp/mmv/internal/pcpname"
)

// DefaultGrace is how long a series absent from the gathered families
// stays in PCP unless Options.Grace says otherwise: long enough that a
// collector failing for a few refreshes does not reset its counters.
const DefaultGrace = time.Minute

// Options configures Register; the zero value of each field means its
// default.
type Options struct {
	// Prefix is put before every metric name, with a dot: "prom" gives
	// mmv.<file>.prom.http_requests. Default: none.
	Prefix string
	// Interval is how often the gatherer is read and copied into the file.
	// Default: mmv.DefaultInterval (1 s).
	Interval time.Duration
	// Grace is how long a series absent from the gathered families stays
	// in PCP before it is removed; negative keeps every series. Default:
	// DefaultGrace.
	Grace time.Duration
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
	Families      int    // families published
	Skipped       int    // families not published (see Bridge.Err for why)
	Series        int    // series published
	DroppedSeries uint64 // series mmv refused: a family's limit, the registry's caps
	Deleted       uint64 // series removed from PCP once absent for Grace
}

// Bridge copies the families of a gatherer into a registry.
type Bridge struct {
	r    *mmv.Registry
	g    prometheus.Gatherer
	opts Options

	mu       sync.Mutex
	families map[string]*family // by Prometheus name
	names    map[string]string  // PCP names taken, to the family taking them
	values   []string           // label values of the metric being copied
	stats    Stats
	err      error
	closed   bool
}

// Register publishes the families g gathers to r (mmv.Default when nil),
// with the options o (nil for the defaults): it copies them once at once,
// so that the families present are in the registry's first file, then
// every Options.Interval while r is started (r.Poll), until Close. It
// returns an error when g is nil or the prefix is invalid; what a refresh meets (a Gather error, a family or series refused) is
// never fatal: Err reports it and Stats counts it.
func Register(r *mmv.Registry, g prometheus.Gatherer, o *Options) (*Bridge, error) {
	if g == nil {
		return nil, errors.New("prombridge: Register: nil gatherer")
	}
	if r == nil {
		r = mmv.Default
	}
	b := &Bridge{r: r, g: g, families: map[string]*family{}, names: map[string]string{}}
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
	if b.opts.Grace == 0 {
		b.opts.Grace = DefaultGrace
	}
	if b.opts.Limit <= 0 {
		b.opts.Limit = mmv.DefaultVecLimit
	}
	if b.opts.Units == nil {
		b.opts.Units = Units
	}
	b.Refresh()
	r.Poll(b.opts.Interval, func() { b.Refresh() })
	return b, nil
}

// Refresh gathers the families and copies them into the registry now,
// and returns what Err then returns.
func (b *Bridge) Refresh() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.closed {
		b.refreshLocked(time.Now())
	}
	return b.err
}

// Close copies the families a last time and stops the refreshes; it
// returns what Err then returns. Close the registry after it, so that its
// file holds the last values.
func (b *Bridge) Close() error {
	err := b.Refresh()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	return err
}

// Err returns what the last refresh met, nil if nothing: the Gather
// error, the families not published and why, the series refused.
func (b *Bridge) Err() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// Stats returns the bridge's counts.
func (b *Bridge) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stats
}

// refreshLocked is one refresh at time now.
func (b *Bridge) refreshLocked(now time.Time) {
	var errs errorList
	b.stats.Refreshes++
	mfs, err := b.g.Gather()
	if err != nil {
		// Gather returns what it could gather with its error.
		b.stats.GatherErrors++
		errs.add(fmt.Errorf("prombridge: gather: %w", err))
	}
	for _, mf := range mfs {
		if len(mf.Metric) == 0 {
			continue
		}
		f := b.family(mf, mfs)
		if f.err != nil {
			errs.add(f.err)
			continue
		}
		if mf.GetType() != f.typ {
			errs.add(fmt.Errorf("prombridge: family %s: gathered as %s, published as %s: not copied", f.prom, mf.GetType(), f.typ))
			continue
		}
		for _, m := range mf.Metric {
			b.copyLocked(f, m, now, &errs)
		}
	}
	b.sweepLocked(now)
	b.err = errs.err()
}

// copyLocked copies one metric of f.
func (b *Bridge) copyLocked(f *family, m *dto.Metric, now time.Time, errs *errorList) {
	values, ok := f.labelValues(m, b.values[:0])
	b.values = values[:0]
	if !ok {
		errs.add(fmt.Errorf("prombridge: family %s: a metric's label names are not %q: not copied", f.prom, f.labels))
		return
	}
	s := f.series.find(values)
	isNew := s == nil
	if isNew {
		s = f.series.add(values)
	}
	s.seen = now
	if s.refused {
		return
	}
	if err := f.update(s, m); err != nil {
		s.refused = true
		b.stats.DroppedSeries++
		if !isNew {
			b.stats.Series--
		}
		errs.add(fmt.Errorf("prombridge: family %s: series %q refused: %w", f.prom, values, err))
		return
	}
	if isNew {
		b.stats.Series++
	}
}

// sweepLocked removes from PCP the series absent for longer than Grace.
func (b *Bridge) sweepLocked(now time.Time) {
	if b.opts.Grace < 0 {
		return
	}
	for _, f := range b.families {
		if f.series == nil {
			continue
		}
		for _, s := range f.series.drop(func(s *series) bool { return now.Sub(s.seen) > b.opts.Grace }) {
			if f.removeSeries(s) {
				b.stats.Deleted++
			}
			if !s.refused {
				b.stats.Series--
			}
		}
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
// sight.
func (b *Bridge) family(mf *dto.MetricFamily, mfs []*dto.MetricFamily) *family {
	if f := b.families[mf.GetName()]; f != nil {
		return f
	}
	t := mf.GetType()
	f := &family{prom: mf.GetName(), typ: t, name: b.pcpName(Name(mf.GetName(), t)), series: seriesTable{}}
	if full := b.pcpName(pcpname.Part(f.prom, "x")); f.name != full {
		// A counter keeps "_total" when dropping it would take the name
		// of a family gathered with it, such as the Go collector's
		// go_memstats_alloc_bytes beside go_memstats_alloc_bytes_total.
		_, taken := b.names[f.name]
		if taken || slices.ContainsFunc(mfs, func(o *dto.MetricFamily) bool { return o.GetName()+"_total" == f.prom }) {
			f.name = full
		}
	}
	b.families[f.prom] = f
	for _, l := range mf.Metric[0].Label {
		f.labels = append(f.labels, l.GetName())
	}
	if other, ok := b.names[f.name]; ok {
		f.err = fmt.Errorf("prombridge: family %s not published: its PCP name %s is family %s's", f.prom, f.name, other)
	} else if err := f.declare(b.r, mf.GetHelp(), b.opts.Units(f.prom), b.opts.Limit, mf.Metric[0]); err != nil {
		f.err = fmt.Errorf("prombridge: family %s not published as %s: %w", f.prom, f.name, err)
	}
	if f.err != nil {
		b.stats.Skipped++
		return f
	}
	b.names[f.name] = f.prom
	b.stats.Families++
	return f
}
