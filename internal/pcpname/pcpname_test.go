package pcpname

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestPart(t *testing.T) {
	for in, want := range map[string]string{
		"my-server": "my_server",
		"9lives":    "x9lives",
		"":          "x",
		"_hidden":   "x_hidden",
		"héllo":     "h__llo",
		"ok_1":      "ok_1",
	} {
		assert.Equal(t, want, Part(in, "x"), "Part(%q)", in)
	}
}

// TestUnclash: each name Unclash returns, once taken, makes it return
// the next; le, the name clashing, is no matter.
func TestUnclash(t *testing.T) {
	taken := []string{"le"}
	for _, want := range []string{"exported_le", "exported_exported_le", "exported_exported_exported_le"} {
		got := Unclash(Exported+"le", func(n string) bool { return slices.Contains(taken, n) })
		assert.Equal(t, want, got, "taken %q", taken)
		taken = append(taken, got)
	}
}

// TestLabels: whatever the names and the reserved labels, the labels are
// distinct and none is reserved; a name spelt as a label not reserved
// keeps it, whatever the names beside it.
func TestLabels(t *testing.T) {
	atoms := []string{"x", "exported_x", "exported_exported_x", "_x", "x_x", "a.b", "a_b", "exported_a_b", "exported.a_b", "le", "exported_le", "x.x"}
	for set := range 1 << len(atoms) {
		var names []string
		for i, a := range atoms {
			if set&(1<<i) != 0 {
				names = append(names, a)
			}
		}
		for _, reserved := range [][]string{nil, {"x"}, {"a_b", "le"}, {"x", "exported_x"}} {
			labels := Labels(names, reserved)
			for i, l := range labels {
				assert.False(t, slices.Contains(reserved, l) || slices.Contains(labels[:i], l), "names %q, reserved %q: labels %q", names, reserved, labels)
				if Part(names[i], "x") == names[i] && !slices.Contains(reserved, names[i]) {
					assert.Equal(t, names[i], l, "names %q, reserved %q: labels %q", names, reserved, labels)
				}
			}
		}
	}
}

func TestHelp(t *testing.T) {
	assert.Equal(t, "short", Help("short"))
	assert.Equal(t, "a b", Help("a\x00b"))
	exact := strings.Repeat("x", MaxHelp)
	assert.Equal(t, exact, Help(exact))
	// No space near the cut: on a character's boundary, a character cut
	// by the limit gone whole.
	assert.Equal(t, strings.Repeat("x", MaxHelp-3)+"...", Help(strings.Repeat("x", MaxHelp+1)))
	odd := Help("x" + strings.Repeat("é", MaxHelp))
	assert.True(t, utf8.ValidString(odd), "%q", odd)
	assert.Equal(t, "x"+strings.Repeat("é", (MaxHelp-4)/2)+"...", odd)
	// A space near the cut: at the word.
	words := Help(strings.Repeat("word ", 100))
	assert.Equal(t, strings.TrimSuffix(strings.Repeat("word ", 50), " ")+"...", words)
	assert.LessOrEqual(t, len(words), MaxHelp)
	// A space far back (a long name after a few words) is not cut at.
	named := Help("Instances of " + strings.Repeat("n", MaxHelp))
	assert.Len(t, named, MaxHelp)
	assert.True(t, strings.HasPrefix(named, "Instances of nnn"))
}
