package mmv

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

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
