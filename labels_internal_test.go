package mmv

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A string label value skips the shape check and compaction, which a
// JSON string needs neither: its payload is the one the checked path
// makes, for every byte encoding/json escapes or replaces.
func TestLabelPayloadStringAsChecked(t *testing.T) {
	for _, s := range []string{"", "/api", `a "b" \c`, "tab\tnl\n\x00\x1f", "<&>", "é\u2028\u2029", "bad\xffutf8", "a b,c=d%"} {
		got, err := labelPayload("vector", Label{Name: "route", Value: s})
		require.NoError(t, err, "%q", s)
		value, err := checkLabelValue(func() string { return "vector" }, got[len(`{"route":`):len(got)-1])
		require.NoError(t, err, "%q", s)
		require.Equal(t, `{"route":`+string(value)+`}`, string(got), "%q", s)
	}
}
