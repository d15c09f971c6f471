//go:build (linux || darwin || freebsd) && !mmv_noport

package osfile

import (
	"encoding/binary"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// testFormat is the format of the files these tests write: "osf", a byte
// Seal sets to 't', then the writer's pid (4 bytes, little-endian).
var testFormat = Format{
	HeadSize: 8,
	Owner: func(h []byte) int {
		if string(h[:3]) != "osf" {
			return 0
		}
		return int(binary.LittleEndian.Uint32(h[4:]))
	},
	Seal: func(b []byte) { b[3] = 't' },
}

// fillHead writes the head of testFormat but the sealed byte, naming this
// process.
func fillHead(b []byte) {
	copy(b, "osf")
	binary.LittleEndian.PutUint32(b[4:], uint32(os.Getpid()))
}

// openTestDir opens dir for testFormat files, closed when the test ends.
func openTestDir(t *testing.T, dir string) *Dir {
	t.Helper()
	d, err := OpenDir(dir, testFormat)
	require.NoError(t, err)
	t.Cleanup(d.Close)
	return d
}

// create makes a file of size bytes at name in d whose values section is
// at 4096, or fails the test.
func create(t *testing.T, d *Dir, name string, size int64) *File {
	t.Helper()
	f, err := Create(d, name, size, 4096, 4096, fillHead)
	require.NoError(t, err)
	return f
}

// tempOf is the temporary name of name this process writes with the
// random suffix given.
func tempOf(name, suffix string) string {
	return tempName(name, os.Getpid(), suffix)
}

// plantSuffixes makes createTemp try the given random suffixes in order.
func plantSuffixes(t *testing.T, suffixes ...string) {
	old := tempSuffix
	t.Cleanup(func() { tempSuffix = old })
	i := 0
	tempSuffix = func() string {
		s := suffixes[i%len(suffixes)]
		i++
		return s
	}
}

// openDescriptors returns the number of the process's open descriptors
// (Linux: /proc/self/fd).
func openDescriptors(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(fds)
}
