package pcpname

import (
	"slices"
	"testing"

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
