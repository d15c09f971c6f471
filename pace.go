package mmv

import "time"

// Every publication that replaces a file makes PCP's agent rebuild its
// namespace and tables for the whole directory at its next request, in
// time growing faster than the directory's metrics, inside pmcd, where
// every client of the host waits (docs/design.md, "The caps"). A vector
// whose label values churn (a value per request or client) had the timer
// publish every PublishDelay, 20 times a second: beside it, a client of a
// registry at the metrics cap was answered at 42-49% of its rate without
// it (TestManyMetricsThroughPMCD, 91-101% paced). So the timer's
// publications are paced: after a burst of publishBurst, at most one every
// publishEvery on average (pace); the values wait in their instruments'
// memory, exact, as they do for PublishDelay. Flush, and a declaration
// whose values need storage at once, publish when asked, and count, but
// leave no debt (spend). A publication that replaced no file (it failed,
// or waited for the directory's lock) counts not (Registry.pacedLocked).
const (
	publishBurst = 8
	publishEvery = time.Second
)

// pace is a budget of publications that replace files: publishBurst at
// most, one more every publishEvery.
type pace struct {
	credit float64   // at at
	at     time.Time // zero: full
}

// creditAt returns the publications p allows at now.
func (p *pace) creditAt(now time.Time) float64 {
	if p.at.IsZero() {
		return publishBurst
	}
	return min(publishBurst, p.credit+float64(now.Sub(p.at))/float64(publishEvery))
}

// wait returns how long from now until p allows a publication.
func (p *pace) wait(now time.Time) time.Duration {
	if c := p.creditAt(now); c < 1 {
		return time.Duration((1 - c) * float64(publishEvery))
	}
	return 0
}

// spend records a publication that replaced files at now. The budget
// runs out, but owes nothing: the publications asked for (Flush, a
// declaration whose values need storage at once, Registry.Value, a first
// use making room) do not wait for it, and spent past it, each left a
// debt of publishEvery that the timer's next publication waited out
// whole: 33 s after 40 Flushes in a row
// (TestFlushesDoNotStarveTimer). So the timer's wait is
// publishEvery at most after any publication.
func (p *pace) spend(now time.Time) { p.credit, p.at = max(p.creditAt(now)-1, 0), now }
