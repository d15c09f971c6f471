package mmv

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestFlagsString: the names PCP's mmvdump prints, which cmd/mmvdump
// prints through this one formatter.
func TestFlagsString(t *testing.T) {
	for f, want := range map[Flags]string{
		0:                             "none",
		Process:                       "process",
		NoPrefix | Process | Sentinel: "noprefix,process,sentinel",
		Sentinel | 0x30:               "sentinel,unknown=30",
	} {
		assert.Equal(t, want, f.String(), "Flags(%#x)", uint32(f))
	}
}
