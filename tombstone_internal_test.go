package mmv

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNameDeclaredDuringPublicationLeavesTombstone: a name declared while
// a publication has let the registry's lock go (writing a part that has a
// file), placed in a part with no file yet, leaves the tombstone before
// that part's file is made in the same publication: the tombstones were
// tended once, before the loop over the parts, and two files of the
// directory showed the name (PCP shows one of the two, or drops its
// namespace over a prefix).
func TestNameDeclaredDuringPublicationLeavesTombstone(t *testing.T) {
	r, dir := overTombstone(t, "tr")
	for i := range 1500 { // past the first file: a second part, no file yet
		NewCounter(r, fmt.Sprintf("d%04d", i), "", Count).Inc()
	}
	declareAt(t, r, mappedTaken, "c2999") // the lock let go: placed in the part with no file
	b, err := os.ReadFile(filepath.Join(dir, "tr.3"))
	require.NoError(t, err)
	require.NotZero(t, Flags(ne.Uint32(b[hdrFlagsOff:]))&Sentinel, "tr.3 is the last run's tombstone")
	assert.Len(t, holdersOf(t, dir, "tr", "c2999"), 1)
}

// TestNameDeclaredWhileReservingLeavesTombstone: a name declared while
// reserveSnapshotUnlocking lets the lock go, in the part being published
// (its file has room), leaves the tombstone before it is published: the
// tombstones were tended before the reserve, and the name was published
// beside the tombstone still holding it, which nothing tended again.
func TestNameDeclaredWhileReservingLeavesTombstone(t *testing.T) {
	r, dir := overTombstone(t, "trr")
	NewCounter(r, "second", "", Count).Inc() // the first part dirty
	declareAt(t, r, reserving, "c2999")      // the lock let go after the tending
	assert.Len(t, holdersOf(t, dir, "trr", "c2999"), 1)
}

// TestClosingTombstonesWaitForStartingRun: a Process run's Close renames
// its tombstones to their closed records under the directory's claim
// lock, so that a run of its name starting in this process meanwhile
// (its Start listed the directory, the tombstones at their names, and has
// yet to bury them) buries each one, its PMIDs kept, and the closing run
// leaves them to it. Renamed without the lock between the listing and
// the burial, the tombstones went to records the new run never read:
// PCP no longer showed the names they kept, and an overflow file the run
// made at their names later derived its items afresh (carryLocked reads
// only a tombstone of its own), a name retyped under its old PMID.
func TestClosingTombstonesWaitForStartingRun(t *testing.T) {
	needFileLayer(t)
	dir := filepath.Join(t.TempDir(), "mmv")
	run := func(flags Flags, names ...string) *Registry {
		r := NewRegistry("tc", &Options{Dir: dir, Flags: flags, MaxFileValues: 2, PublishDelay: time.Hour})
		for _, n := range names {
			NewCounter(r, n, "", Count).Inc()
		}
		return r
	}
	last := run(0, "a", "b", "c", "d", "e", "f")
	startOrSkip(t, last)
	require.NoError(t, last.Close())
	closing := run(Process, "a", "b")
	startOrSkip(t, closing)
	require.FileExists(t, filepath.Join(dir, "tc.3"), "the closing run's tombstone")

	stopped, proceed := make(chan struct{}), make(chan struct{})
	listed, bury := make(chan struct{}), make(chan struct{})
	var once [2]sync.Once // the points of closing's Close and next's Start, not next's Close
	tombstoneHook = func(at tombstonePoint) {
		once[at].Do(func() {
			switch at {
			case closeStopped:
				close(stopped)
				<-proceed
			case buryListed:
				close(listed)
				<-bury
			}
		})
	}
	t.Cleanup(func() { tombstoneHook = nil })
	closed := make(chan error, 1)
	go func() { closed <- closing.Close() }()
	<-stopped // its first file let go: the next run may start
	next := run(Process, "a", "b")
	t.Cleanup(func() { next.Close() })
	started := make(chan error, 1)
	go func() { started <- next.Start() }()
	select {
	case <-listed:
	case err := <-started:
		require.FailNow(t, "Start ended before its burials", "%v", err)
	}
	close(proceed)
	select {
	case err := <-closed: // it took the tombstones while next's Start held the lock
		closed <- err
	case <-time.After(200 * time.Millisecond):
	}
	close(bury)
	require.NoError(t, <-started)
	require.NoError(t, <-closed)
	for _, name := range []string{"tc.2", "tc.3"} {
		assert.NoFileExists(t, filepath.Join(dir, "."+name+".closed"), "a record the next run did not read")
		if assert.FileExists(t, filepath.Join(dir, name), "the next run's tombstone") {
			assert.NotEmpty(t, fileNames(t, filepath.Join(dir, name), "tc."), "the names %s keeps", name)
		}
	}
}

// TestOverflowIndex: N of <registry>.N, written as strconv writes it (no
// sign, no leading zero, within an int), 1 up; and read without an
// allocation, since Start reads every name of the directory (an error of
// strconv's for each other name was a quarter of a Start's allocations in
// a directory of 16 registries' files).
func TestOverflowIndex(t *testing.T) {
	for _, c := range []struct {
		name string
		n    int
		ok   bool
	}{
		{"app.1", 1, true},
		{"app.42", 42, true},
		{"app.9223372036854775807", math.MaxInt, true},
		{"app.9223372036854775808", 0, false},
		{"app.0", 0, false},
		{"app.01", 0, false},
		{"app.+1", 0, false},
		{"app.-1", 0, false},
		{"app.1a", 0, false},
		{"app.", 0, false},
		{"app", 0, false},
		{"app1", 0, false},
		{"apx.1", 0, false},
		{"app.1.closed", 0, false},
		{"other.app.1", 0, false},
	} {
		n, ok := overflowIndex("app", c.name)
		assert.Equal(t, c.ok, ok, c.name)
		if c.ok {
			assert.Equal(t, c.n, n, c.name)
		}
	}
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		overflowIndex("declare3", "declare12")
		overflowIndex("declare3", "declare3.x")
		overflowIndex("declare3", "declare3.17")
	}))
}
