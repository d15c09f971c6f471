package mmv

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestPidMapping: the header names this process by its pid as PCP checks
// it, and reading it back gives os.Getpid's, other pids untouched.
func TestPidMapping(t *testing.T) {
	l := processLiveness()
	assert.Equal(t, int32(l.pid), pcpPid(int32(l.local)))
	assert.Equal(t, l.local, localPid(l.pid))
	assert.Equal(t, int32(12345678), pcpPid(12345678))
	assert.Equal(t, 0, localPid(0))
}
