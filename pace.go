package mmv

import (
	"sync"
	"time"

	"github.com/gopcp/mmv/internal/osfile"
)

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
// most, one more every publishEvery. One is shared by the registries of
// the process that publish into one directory (paceOf): PCP's agent
// rebuilds the whole directory for a file any of them replaces, and three
// registries churning label values, each paced alone, replaced files
// three times as often as one (TestRegistriesShareThePace).
type pace struct {
	mu     sync.Mutex
	credit float64   // at at; below 0 while timers wait for the turns they booked (book)
	at     time.Time // zero: full
	dir    paceKey   // its key in paces
	users  int       // the started registries publishing into dir
}

// paceKey is a directory's key in paces: its identity, whatever the path
// that names it (a symlink, a trailing slash, a relative one), or its
// path when that cannot be read. Keyed by the cleaned path, registries
// naming one directory by two paths each paced alone
// (TestPaceOfTheDirectoryByAnyPath).
type paceKey struct {
	id   osfile.DirID
	path string
}

// paces are the directories' paces while a registry started there is not
// closed.
var paces struct {
	sync.Mutex
	of map[paceKey]*pace
}

// paceOf returns the pace of the directory d, counting one more registry
// publishing there; release counts it gone.
func paceOf(d *osfile.Dir) *pace {
	key := paceKey{path: d.Path()}
	if id, ok := d.ID(); ok {
		key = paceKey{id: id}
	}
	paces.Lock()
	defer paces.Unlock()
	p := paces.of[key]
	if p == nil {
		if paces.of == nil {
			paces.of = map[paceKey]*pace{}
		}
		p = &pace{dir: key}
		paces.of[key] = p
	}
	p.users++
	return p
}

// release counts one registry publishing into p's directory less: the
// last forgets p.
func (p *pace) release() {
	paces.Lock()
	defer paces.Unlock()
	if p.users--; p.users == 0 {
		delete(paces.of, p.dir)
	}
}

// creditAtLocked returns the publications p allows at now.
func (p *pace) creditAtLocked(now time.Time) float64 {
	if p.at.IsZero() {
		return publishBurst
	}
	return min(publishBurst, p.credit+float64(now.Sub(p.at))/float64(publishEvery))
}

// book spends a publication of a timer's at now, and returns when the
// timer may publish: now when p allows one, else once the credit has come
// back for it, after the turns booked before it, which it owes meanwhile
// (p's credit below 0). Taken before it runs, so that the timers of
// registries sharing p, due at one instant, do not all publish on one
// credit; booked, so that they take turns: a timer that published only
// when it found a credit left at its due time found none for as long as
// another registry's Flushes spent each as it came
// (TestFlushesElsewhereDoNotStarveTimer). refund gives back one
// that replaced no file, or whose turn went unused.
func (p *pace) book(now time.Time) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.creditAtLocked(now)
	p.credit, p.at = c-1, now
	if c >= 1 {
		return now
	}
	return now.Add(time.Duration((1 - c) * float64(publishEvery)))
}

func (p *pace) refund() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.credit = min(publishBurst, p.credit+1)
}

// spend records a publication asked for that replaced files at now. The
// budget runs out, but owes nothing: the publications asked for (Flush, a
// declaration whose values need storage at once, Registry.Value, a first
// use making room) do not wait for it, and spent past it, each left a
// debt of publishEvery that the timer's next publication waited out
// whole: 33 s after 40 Flushes in a row
// (TestFlushesDoNotStarveTimer). So the timer's wait is
// publishEvery at most after any publication. Nor does it take the
// credit timers booked (below 0): their turns stay.
func (p *pace) spend(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.creditAtLocked(now)
	p.credit, p.at = min(c, max(c-1, 0)), now
}
