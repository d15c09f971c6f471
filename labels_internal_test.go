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
		value, text := &label{Label: Label{Name: "route", Value: s}}, &label{Label: Label{Name: "route"}, text: s, isText: true}
		require.NoError(t, checkPayload("vector", value), "%q", s)
		require.NoError(t, checkPayload("vector", text), "%q", s)
		got := value.appendPayload(nil)
		require.Equal(t, string(got), string(text.appendPayload(nil)), "a vector's label, its value kept as text: %q", s)
		var rec [labelSize]byte
		putLabel(rec[:], 0, 0, text)
		require.Equal(t, string(got)+"\x00", string(rec[labelPayloadOff:labelPayloadOff+len(got)+1]), "the record of a vector's label: %q", s)
		checked, err := checkLabelValue(func() string { return "vector" }, got[len(`{"route":`):len(got)-1])
		require.NoError(t, err, "%q", s)
		require.Equal(t, `{"route":`+string(checked)+`}`, string(got), "%q", s)
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		require.NoError(t, enc.Encode(s))
		require.Equal(t, `{"route":`+strings.TrimSuffix(buf.String(), "\n")+`}`, string(got), "%q", s)
	}
}
