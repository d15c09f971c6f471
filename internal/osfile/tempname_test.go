package osfile

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestParseTemp: ParseTemp reads back the file and the pid of every name
// tempName makes, an overflow file's included, and nothing else.
func TestParseTemp(t *testing.T) {
	for _, c := range []struct {
		name string
		pid  int
	}{{"app", 1}, {"app.2", 4194304}, {"a.b.c", 77}, {"web.12", 123}} {
		entry := tempName(c.name, c.pid, "0123abcd")
		assert.Equal(t, "."+c.name+"."+strconv.Itoa(c.pid)+".0123abcd", entry)
		name, pid, ok := ParseTemp(entry)
		assert.True(t, ok, entry)
		assert.Equal(t, c.name, name, entry)
		assert.Equal(t, c.pid, pid, entry)
	}
	assert.LessOrEqual(t, len(tempName("", 4194304, "0123abcd")), TempLen, "TempLen covers the longest pid")
	for _, entry := range []string{
		"app.123.0123abcd",                   // no leading dot: a file
		".app.123.0123abcde",                 // 9 random digits
		".app.123.0123abc",                   // 7
		".app.123.0123456789abcdef",          // 16
		".app.123.0123ABCD",                  // upper case
		".app.123.lock",                      // not hex
		ClosedName("app.123"),                // a closed record
		".app.0123abcd",                      // no pid
		".123.0123abcd",                      // no name
		"..123.0123abcd",                     // an empty name
		".app.0.0123abcd",                    // pid 0
		".app.0123.0123abcd",                 // not as the writer writes a pid
		".app.-5.0123abcd",                   // negative
		".app.x123.0123abcd",                 // not a number
		".app.99999999999999999999.0123abcd", // out of range
	} {
		_, _, ok := ParseTemp(entry)
		assert.False(t, ok, entry)
	}
}

// TestRegistryFile: a registry's files are its name and name.N.
func TestRegistryFile(t *testing.T) {
	for _, file := range []string{"web", "web.2", "web.10"} {
		assert.True(t, registryFile(file, "web"), file)
	}
	for _, file := range []string{"webx", "web.", "web.2x", "web.a", "web.2.3", "we", "other.2"} {
		assert.False(t, registryFile(file, "web"), file)
	}
}

// TestClosedOf: ClosedOf undoes ClosedName, and takes no other entry for
// a closed record.
func TestClosedOf(t *testing.T) {
	for _, name := range []string{"app", "app.2", "a"} {
		got, ok := ClosedOf(ClosedName(name))
		assert.True(t, ok, name)
		assert.Equal(t, name, got)
	}
	for _, entry := range []string{"app.closed", ".closed", "..closed", ".app.closedx", ".app.123.0123abcd"} {
		_, ok := ClosedOf(entry)
		assert.False(t, ok, entry)
	}
}
