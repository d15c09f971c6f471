package otelexporter

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync/atomic"
	"time"
)

// The SDK's periodic reader exports nothing when its collect fails (one
// observable callback returning an error fails it, reported to otel's
// error handler only), nor while its goroutine is stuck, and nothing of
// it reaches the exporter: PCP, whose values carry no time, shows the last
// export's values as current, a counter frozen at 1 while the program
// counted 101. Err names such a gap: the exporter learns the export
// interval from the spacing of the collections it gets, and Err, when it
// is called, compares the time since the last collection began with it.
//
// The values are not withdrawn at a gap. The exporter runs only within
// the SDK's calls and has no timer of its own to withdraw them at; the
// values were true at the last export (a counter's rate reads zero
// during the gap and high after it, its average over both right), where
// withdrawn they would make a hole in every metric of the service for as
// long as a callback fails, often one collection. PCP shows them, Err
// says how old they are.

// Cadence: how many collections' spacings the interval is learned from,
// how many intervals without a collection make a gap, and the least gap
// named (exports are not to the millisecond; tools sampling PCP seldom
// sample more often than once a second).
const (
	cadenceWindow = 8
	gapIntervals  = 3
	minGap        = time.Second
)

// epoch is the origin of the monotonic times the cadence keeps: a clock
// stepped does not make a gap.
var epoch = time.Now()

// monotonic returns the time since epoch, monotonic.
func monotonic() time.Duration { return time.Since(epoch) }

// cadence learns the export interval from the beginnings of collections.
type cadence struct {
	// spacings are those between the beginnings of the last collections,
	// a ring of n written; under Exporter.mu. Err reads n for its
	// message, without the lock (a plain int was a data race).
	spacings [cadenceWindow]time.Duration
	n        atomic.Int64
	// last is when the running collection began (since epoch), 0 before
	// the first and after Shutdown; interval the median of spacings, 0
	// before two collections. Read by Err without Exporter.mu.
	last, interval atomic.Int64
	// made is when the exporter was made (New), which a periodic reader
	// is given as it starts: its first collection comes an interval
	// later, or sooner at a ForceFlush.
	made time.Duration
}

// begin records that a collection began at at.
func (c *cadence) begin(at time.Duration) {
	if last := time.Duration(c.last.Load()); last != 0 {
		n := c.n.Add(1)
		c.spacings[(n-1)%cadenceWindow] = at - last
		var sorted [cadenceWindow]time.Duration
		s := sorted[:min(n, cadenceWindow)]
		copy(s, c.spacings[:len(s)])
		slices.Sort(s)
		// The median: a gap's spacing (or a ForceFlush's) among the
		// reader's own moves it little.
		c.interval.Store(int64(s[len(s)/2]))
	}
	c.last.Store(int64(at))
}

// stop forgets the cadence: after Shutdown no export is due.
func (c *cadence) stop() { c.last.Store(0) }

// gap names, at now, a time since the last collection began of more than
// gapIntervals intervals and minGap; nil if none. Before a second
// collection tells an interval, the interval is the SDK's periodic
// reader's when the program gives it none (sdkInterval), or the time
// from New to the first collection when longer: a reader that stopped
// after its first export was never named, and one given a longer
// interval (sdkmetric.WithInterval) was named a gap before its second
// (TestLongIntervalNoGapAfterFirstExport).
func (c *cadence) gap(now time.Duration) error {
	last, interval := time.Duration(c.last.Load()), time.Duration(c.interval.Load())
	if last == 0 {
		return nil
	}
	from := "" // what told the interval, when not the spacings
	if interval == 0 {
		interval, from = sdkInterval()
		if first := last - c.made; first > interval {
			interval, from = first, "the time from the exporter's making to the first"
		}
	}
	since := now - last
	if since <= max(gapIntervals*interval, minGap) {
		return nil
	}
	learned := from + ": one collection came"
	if from == "" {
		learned = fmt.Sprintf("the median of the last %d", min(c.n.Load(), cadenceWindow))
	}
	return fmt.Errorf("otelexporter: no export for %v, where collections come every %v (%s): the SDK skipped them (its collect failed, such as on an observable callback's error, which it reports to otel's error handler) or its reader stopped; PCP shows the values of the last export as current",
		since.Round(time.Millisecond), interval.Round(time.Millisecond), learned)
}

// sdkInterval returns the interval of the SDK's periodic reader given
// none by the program, and what set it: OTEL_METRIC_EXPORT_INTERVAL, in
// milliseconds, when positive, else the SDK's default of a minute.
func sdkInterval() (time.Duration, string) {
	if ms, err := strconv.ParseInt(os.Getenv("OTEL_METRIC_EXPORT_INTERVAL"), 10, 64); err == nil && ms > 0 {
		return time.Duration(ms) * time.Millisecond, "OTEL_METRIC_EXPORT_INTERVAL"
	}
	return time.Minute, "the SDK's default"
}
