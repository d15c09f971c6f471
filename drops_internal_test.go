package mmv

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDropReasons: every way a vector refuses label values is counted
// once, under its own reason and no other, before Start, after it and
// after Close (where the counts stay in memory).
func TestDropReasons(t *testing.T) {
	for _, c := range []struct {
		reason dropReason
		opts   Options
		refuse func(t *testing.T, r *Registry, v *Vec[Counter])
	}{
		{dropLimit, Options{}, func(t *testing.T, r *Registry, v *Vec[Counter]) {
			v.SetLimit(1)
			require.NotNil(t, v.With("a"))
			require.Nil(t, v.With("b"))
		}},
		{dropRefused, Options{}, func(t *testing.T, r *Registry, v *Vec[Counter]) {
			require.Nil(t, v.With("a", "b"))
		}},
		{dropCap, Options{MaxIndomInstances: 1}, func(t *testing.T, r *Registry, v *Vec[Counter]) {
			require.NotNil(t, v.With("a"))
			require.Nil(t, v.With("b"))
		}},
		{dropCap, Options{MaxInstances: 1}, func(t *testing.T, r *Registry, v *Vec[Counter]) {
			require.NotNil(t, v.With("a"))
			require.Nil(t, v.With("b"))
		}},
		{dropClosed, Options{}, func(t *testing.T, r *Registry, v *Vec[Counter]) {
			require.NoError(t, r.Close())
			require.Nil(t, v.With("a"))
		}},
	} {
		for _, started := range []bool{false, true} {
			name := dropNames[c.reason]
			if started {
				name += "/started"
			}
			t.Run(name, func(t *testing.T) {
				opts := c.opts
				opts.Dir = filepath.Join(t.TempDir(), "mmv")
				r := NewRegistry("drops", &opts)
				defer r.Close()
				v := NewCounterVec(r, "requests", "", Count, "route")
				if started {
					startOrSkip(t, r)
				}
				c.refuse(t, r, v)
				r.mu.Lock()
				defer r.mu.Unlock()
				require.NotNil(t, r.drops, "no drop counted")
				for reason := range numDrops {
					want := uint64(0)
					if reason == c.reason {
						want = 1
					}
					assert.Equal(t, want, r.drops[reason].total(), "drops counted as %q", dropNames[reason])
				}
			})
		}
	}
}
