package mmv

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
	dir := filepath.Join(t.TempDir(), "mmv")
	last := NewRegistry("tr", &Options{Dir: dir})
	for i := range 3000 {
		NewCounter(last, fmt.Sprintf("c%04d", i), "", Count).Inc()
	}
	startOrSkip(t, last)
	require.NoError(t, last.Close())
	require.Contains(t, fileNames(t, filepath.Join(dir, "tr.3"), "tr."), "c2999", "the last run's third file")

	r := NewRegistry("tr", &Options{Dir: dir})
	t.Cleanup(func() { r.Close() })
	NewCounter(r, "first", "", Count).Inc()
	startOrSkip(t, r)
	require.FileExists(t, filepath.Join(dir, "tr.3"), "a tombstone")
	for i := range 1500 { // past the first file: a second part, no file yet
		NewCounter(r, fmt.Sprintf("d%04d", i), "", Count).Inc()
	}
	declared := false
	growthHook = func(gp growthPoint) {
		if gp == mappedTaken && !declared {
			declared = true
			NewCounter(r, "c2999", "", Count).Inc() // the lock let go: placed in the part with no file
		}
	}
	defer func() { growthHook = nil }()
	require.NoError(t, r.Flush())
	require.True(t, declared, "the publication wrote the first file without the lock")
	var holders []string
	for _, name := range []string{"tr", "tr.2", "tr.3"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil && slices.Contains(fileNames(t, filepath.Join(dir, name), map[bool]string{true: "", false: "tr."}[name == "tr"]), "c2999") {
			holders = append(holders, name)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "tr.3"))
	require.NoError(t, err)
	require.NotZero(t, Flags(ne.Uint32(b[hdrFlagsOff:]))&Sentinel, "tr.3 is the last run's tombstone")
	assert.Len(t, holders, 1, "files showing c2999: %v", holders)
}

// TestNameDeclaredWhileReservingLeavesTombstone: a name declared while
// reserveSnapshotUnlocking lets the lock go, in the part being published
// (its file has room), leaves the tombstone before it is published: the
// tombstones were tended before the reserve, and the name was published
// beside the tombstone still holding it, which nothing tended again.
func TestNameDeclaredWhileReservingLeavesTombstone(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mmv")
	last := NewRegistry("trr", &Options{Dir: dir})
	for i := range 3000 {
		NewCounter(last, fmt.Sprintf("c%04d", i), "", Count).Inc()
	}
	startOrSkip(t, last)
	require.NoError(t, last.Close())
	require.Contains(t, fileNames(t, filepath.Join(dir, "trr.3"), "trr."), "c2999", "the last run's third file")

	r := NewRegistry("trr", &Options{Dir: dir})
	t.Cleanup(func() { r.Close() })
	NewCounter(r, "first", "", Count).Inc()
	startOrSkip(t, r)
	require.FileExists(t, filepath.Join(dir, "trr.3"), "a tombstone")
	NewCounter(r, "second", "", Count).Inc() // the first part dirty
	declared := false
	growthHook = func(gp growthPoint) {
		if gp == reserving && !declared {
			declared = true
			NewCounter(r, "c2999", "", Count).Inc() // the lock let go after the tending
		}
	}
	defer func() { growthHook = nil }()
	require.NoError(t, r.Flush())
	require.True(t, declared, "the publication reserved its snapshot without the lock")
	var holders []string
	for _, name := range []string{"trr", "trr.2", "trr.3"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil && slices.Contains(fileNames(t, filepath.Join(dir, name), map[bool]string{true: "", false: "trr."}[name == "trr"]), "c2999") {
			holders = append(holders, name)
		}
	}
	assert.Len(t, holders, 1, "files showing c2999: %v", holders)
}
