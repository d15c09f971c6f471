package pcpname

import (
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
