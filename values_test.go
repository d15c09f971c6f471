package mmv_test

import (
	"encoding/binary"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/mmvfile"
)

// TestSetString: a string value holds at most 255 bytes, NUL-terminated
// in its slot, with its length in the value itself as libpcp keeps it;
// longer strings and other types are refused.
func TestSetString(t *testing.T) {
	r := newRegistry(t, "strings", filepath.Join(t.TempDir(), "mmv"), mmv.Options{})
	if err := errors.Join(
		r.AddMetric(mmv.Metric{Name: "s", Type: mmv.String, Semantics: mmv.SemDiscrete}),
		r.AddMetric(mmv.Metric{Name: "n", Type: mmv.Uint64, Semantics: mmv.SemCounter}),
		r.Start(),
	); err != nil {
		t.Fatal(err)
	}
	s, _ := r.Value("s", "")
	n, _ := r.Value("n", "")
	for _, text := range []string{"a longer string first", "", "short", strings.Repeat("x", 255)} {
		require.NoError(t, s.SetString(text))
		f, err := mmvfile.Open(r.Path())
		require.NoError(t, err)
		v := f.Values[0]
		if v.String != text || s.String() != text {
			t.Errorf("file holds %q, handle reads %q, want %q", v.String, s.String(), text)
		}
		if got := binary.NativeEndian.Uint32(v.Atom[:]); got != uint32(len(text)) {
			t.Errorf("value holds length %d, want %d", got, len(text))
		}
	}
	if err := s.SetString(strings.Repeat("x", 256)); !errors.Is(err, mmv.ErrTooLong) {
		t.Errorf("256 bytes: %v", err)
	}
	if s.String() != strings.Repeat("x", 255) {
		t.Error("a refused string changed the value")
	}
	if err := n.SetString("x"); !errors.Is(err, mmv.ErrType) {
		t.Errorf("SetString on a number: %v", err)
	}
}
