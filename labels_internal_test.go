package mmv

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A string label value skips the shape check and compaction, which a
// JSON string needs neither, and a plain one the encoder (plainJSON): its
// payload is the one the checked path makes, and encoding/json's, for
// every byte it escapes or replaces and every printable one.
func TestLabelPayloadStringAsChecked(t *testing.T) {
	var printable []byte
	for c := byte(0x20); c <= 0x7e; c++ {
		printable = append(printable, c)
	}
	for _, s := range []string{"", "/api", `a "b" \c`, "tab\tnl\n\x00\x1f", "<&>", "é\u2028\u2029", "bad\xffutf8", "a b,c=d%", string(printable), "\x7f", "\b\f"} {
		got, err := labelPayload("vector", &label{Label: Label{Name: "route", Value: s}})
		require.NoError(t, err, "%q", s)
		text, err := labelPayload("vector", &label{Label: Label{Name: "route"}, text: s, isText: true})
		require.NoError(t, err, "%q", s)
		require.Equal(t, string(got), string(text), "a vector's label, its value kept as text: %q", s)
		value, err := checkLabelValue(func() string { return "vector" }, got[len(`{"route":`):len(got)-1])
		require.NoError(t, err, "%q", s)
		require.Equal(t, `{"route":`+string(value)+`}`, string(got), "%q", s)
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		require.NoError(t, enc.Encode(s))
		require.Equal(t, `{"route":`+strings.TrimSuffix(buf.String(), "\n")+`}`, string(got), "%q", s)
	}
}
