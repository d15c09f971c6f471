package mmv

import (
	"bytes"
	"encoding/json"
	"fmt"
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

// labelCount is what each file's labels are (labelsOf), with the vectors'
// records summed over each file's own indoms: vectors in several files,
// labels of every kind, instances labelled and deleted, before and after
// Start.
func TestLabelCountIsLabelsOf(t *testing.T) {
	r := NewRegistry("counted", &Options{Dir: t.TempDir(), MaxFileValues: 64})
	t.Cleanup(func() { r.Close() })
	check := func(after string) {
		t.Helper()
		r.mu.Lock()
		defer r.mu.Unlock()
		require.Greater(t, len(r.parts), 2, "files")
		for _, p := range r.parts {
			require.Equal(t, len(r.labelsOf(p)), r.labelCount(p), "file %d after %s", p.index, after)
		}
	}
	vs := make([]*Vec[Counter], 6)
	for i := range vs {
		vs[i] = NewCounterVec(r, fmt.Sprintf("v%d", i), "", Count, "k", "j")
		vs[i].SetLimit(40) // a file each
	}
	require.NoError(t, r.AddLabel(Label{Name: "cluster", Value: `"c"`}))
	require.NoError(t, r.AddMetricLabel("v4", Label{Name: "metric", Value: `"m"`}))
	require.NoError(t, r.AddIndomLabel(vs[5].Indom(), Label{Name: "indom", Value: `"i"`}))
	for i, v := range vs {
		for j := range 3 + i {
			v.With(fmt.Sprint(j), "x")
		}
	}
	check("declaring")
	vs[4].Delete("0", "x")
	check("a deletion")
	startOrSkip(t, r)
	for i, v := range vs {
		for j := range 10 {
			v.With(fmt.Sprint(j+i), "y")
		}
		v.Delete("1", "x")
	}
	check("Start")
	require.NoError(t, r.Flush())
	check("a publication")
}
