//go:build (linux || darwin || freebsd) && !mmv_noport

package osfile

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCreateSealsBeforeTheName: the file at the name is complete (sealed)
// from the moment it appears, and Close(true) removes it.
func TestCreateSealsBeforeTheName(t *testing.T) {
	dir := t.TempDir()
	f := create(t, openTestDir(t, dir), "app", 8192)
	b, err := os.ReadFile(filepath.Join(dir, "app"))
	require.NoError(t, err)
	require.Len(t, b, 8192)
	assert.Equal(t, "osft", string(b[:4]))
	assert.Equal(t, filepath.Join(dir, "app"), f.Path())
	require.NoError(t, f.Close(true))
	assert.NoFileExists(t, filepath.Join(dir, "app"))
}

// TestInUseNamesTheHolder: a second Create of a name held by a live file
// fails with an *InUseError naming the holder's pid, read through the
// format; the first file is untouched.
func TestInUseNamesTheHolder(t *testing.T) {
	dir := t.TempDir()
	first := create(t, openTestDir(t, dir), "app", 8192)
	defer first.Close(true)
	copy(first.Bytes()[4096:], "mine")

	_, err := Create(openTestDir(t, dir), "app", 8192, 4096, 4096, fillHead)
	var inUse *InUseError
	require.ErrorAs(t, err, &inUse)
	assert.Equal(t, InUseError{Path: filepath.Join(dir, "app"), Pid: os.Getpid()}, *inUse)
	assert.Contains(t, err.Error(), "holds it")
	b, err := os.ReadFile(filepath.Join(dir, "app"))
	require.NoError(t, err)
	assert.Equal(t, "mine", string(b[4096:4100]), "the holder's file")
}

// TestDirectoryLockWait: LockClaims fails with an *InUseError on the
// directory when another holds its lock past the wait, and succeeds once
// it is let go.
func TestDirectoryLockWait(t *testing.T) {
	dir := t.TempDir()
	unlock, err := openTestDir(t, dir).LockClaims(0)
	require.NoError(t, err)
	_, err = openTestDir(t, dir).LockClaims(0)
	var inUse *InUseError
	require.ErrorAs(t, err, &inUse)
	assert.True(t, inUse.Dir)
	assert.Equal(t, inUse.Path, dir)
	unlock()
	unlock, err = openTestDir(t, dir).LockClaims(0)
	require.NoError(t, err)
	unlock()
}

// TestTooLarge: a file past half the reserved range is refused with a
// *TooLargeError before anything is written, at Create and at Replace.
func TestTooLarge(t *testing.T) {
	dir := t.TempDir()
	d := openTestDir(t, dir)
	_, err := Create(d, "big", reserveHalf+1, 4096, 4096, fillHead)
	var tooLarge *TooLargeError
	require.ErrorAs(t, err, &tooLarge)
	assert.Equal(t, TooLargeError{Name: "big", Size: reserveHalf + 1, Limit: reserveHalf}, *tooLarge)
	assert.NoFileExists(t, filepath.Join(dir, "big"))

	f := create(t, d, "app", 8192)
	defer f.Close(true)
	err = f.Replace(8192, 8192, reserveHalf+4096, 0, fillHead, func(_, _ []byte) {}, nil)
	require.ErrorAs(t, err, &tooLarge)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "what a refused Replace left")
}

// TestReplaceKeepsTheValuesAddress: a grown file's values section takes the
// old one's address, updates made before the remap reach merge, and each
// Step is reached in order.
func TestReplaceKeepsTheValuesAddress(t *testing.T) {
	dir := t.TempDir()
	f := create(t, openTestDir(t, dir), "app", 8192)
	defer f.Close(true)
	values := f.Values()
	word := (*uint64)(values)
	atomic.StoreUint64(word, 7)
	var steps []Step
	err := f.Replace(3*8192, 8192+4096, 8192, 8, func(b []byte) {
		fillHead(b)
		copy(b[8192:], unsafe.Slice((*byte)(values), 8)) // the snapshot
	}, func(written, final []byte) {
		assert.Equal(t, byte(7), written[0], "the snapshot")
		copy(unsafe.Slice((*byte)(values), 8), final) // into the new mapping
	}, func(s Step) {
		steps = append(steps, s)
		if s == Written {
			atomic.StoreUint64(word, 8) // an update the snapshot missed
		}
	})
	require.NoError(t, err)
	assert.Equal(t, []Step{Written, Remapped}, steps)
	assert.Equal(t, values, f.Values(), "the values' address")
	assert.EqualValues(t, 8192, f.ValuesOffset())
	assert.Len(t, f.Bytes(), 3*8192)
	b, err := os.ReadFile(filepath.Join(dir, "app"))
	require.NoError(t, err)
	require.Len(t, b, 3*8192)
	assert.Equal(t, "osft", string(b[:4]))
	assert.EqualValues(t, 8, atomic.LoadUint64(word))
	assert.Equal(t, byte(8), b[8192], "the update merged into the new file")
}

// TestProcessGone: this process exists; a pid no process has does not.
func TestProcessGone(t *testing.T) {
	assert.False(t, ProcessGone(os.Getpid()))
	assert.True(t, ProcessGone(1<<22+12345))
}

// TestRewriteUnheldAsRenames: a removal by RewriteUnheldAs renames the
// file to as, over the file there; when that rename fails (a directory
// planted at as) the file is removed all the same, and the error names
// as.
func TestRewriteUnheldAsRenames(t *testing.T) {
	dir := t.TempDir()
	d := openTestDir(t, dir)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "app.2"), []byte("osft tomb"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ClosedName("app.2")), []byte("older"), 0o644))
	changed, err := d.RewriteUnheldAs("app.2", ClosedName("app.2"), 1<<20, func([]byte) []byte { return nil })
	require.NoError(t, err)
	assert.True(t, changed)
	assert.NoFileExists(t, filepath.Join(dir, "app.2"))
	b, err := os.ReadFile(filepath.Join(dir, ClosedName("app.2")))
	require.NoError(t, err)
	assert.Equal(t, "osft tomb", string(b), "the record, over the older one")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "app.3"), []byte("osft tomb"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(dir, ClosedName("app.3")), 0o755))
	changed, err = d.RewriteUnheldAs("app.3", ClosedName("app.3"), 1<<20, func([]byte) []byte { return nil })
	require.Error(t, err)
	assert.Contains(t, err.Error(), ClosedName("app.3"))
	assert.True(t, changed)
	assert.NoFileExists(t, filepath.Join(dir, "app.3"), "removed all the same")
}

// TestRewriteFromMakesFileFromRecord: RewriteFrom makes the file at name
// from the record's bytes, leaving the record, only where nothing is at
// name; nil makes none.
func TestRewriteFromMakesFileFromRecord(t *testing.T) {
	dir := t.TempDir()
	d := openTestDir(t, dir)
	rec := ClosedName("app.2")
	require.NoError(t, os.WriteFile(filepath.Join(dir, rec), []byte("osft record"), 0o644))
	made, err := d.RewriteFrom("app.2", rec, 1<<20, func([]byte) []byte { return nil })
	require.NoError(t, err)
	assert.False(t, made)
	assert.NoFileExists(t, filepath.Join(dir, "app.2"), "nil: none made")

	var read string
	made, err = d.RewriteFrom("app.2", rec, 1<<20, func(b []byte) []byte { read = string(b); return []byte("osft tomb") })
	require.NoError(t, err)
	assert.True(t, made)
	assert.Equal(t, "osft record", read)
	b, err := os.ReadFile(filepath.Join(dir, "app.2"))
	require.NoError(t, err)
	assert.Equal(t, "osft tomb", string(b))
	assert.FileExists(t, filepath.Join(dir, rec), "the record stays")

	made, err = d.RewriteFrom("app.2", rec, 1<<20, func([]byte) []byte { return []byte("osft again") })
	require.NoError(t, err)
	assert.False(t, made, "a file at the name")
	b, err = os.ReadFile(filepath.Join(dir, "app.2"))
	require.NoError(t, err)
	assert.Equal(t, "osft tomb", string(b), "the file at the name as it was")
}
