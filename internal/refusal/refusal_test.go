package refusal

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRecover(t *testing.T) {
	refused := errors.New("refused")
	declare := func(p any) (err error) {
		defer Recover(&err)
		if p != nil {
			panic(p)
		}
		return nil
	}
	assert.NoError(t, declare(nil))
	assert.ErrorIs(t, declare(refused), refused)
	require.PanicsWithValue(t, "not an error", func() { declare("not an error") })
	assert.Panics(t, func() {
		var err error
		func() {
			defer Recover(&err)
			var s []int
			_ = s[len(s)] // a runtime error goes on
		}()
	})
}
