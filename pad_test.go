package mmv_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/mmvfile"
)

// TestPadValuesThroughPCP: the same declarations and updates, in a packed
// and a padded registry, in each file version, read the same through PCP's
// reader, in the first file (a gap before the values, to align them) and
// after a growth step and an instance removed; the padded files' values
// are each alone on 128 bytes, aligned, fillers between.
func TestPadValuesThroughPCP(t *testing.T) {
	for _, version := range []string{"v1", "v2", "v3"} {
		t.Run(version, func(t *testing.T) {
			tmp, dir := pcpDir(t)
			var regs [2]*mmv.Registry
			var vecs [2]*mmv.Vec[mmv.Counter]
			for i, name := range []string{"packed", "padded"} {
				r := newRegistry(t, name, dir, mmv.Options{PadValues: i == 1})
				route := "route"
				if version == "v2" {
					route = strings.Repeat("r", 64) // a name v1 cannot hold
				}
				hits := mmv.NewCounterVec(r, "hits", "Hits", mmv.Count, route)
				level := mmv.NewGauge(r, "level", "Level", mmv.Count)
				busy := mmv.NewTimer(r, "busy", "Busy")
				if version == "v3" {
					require.NoError(t, r.AddLabel(mmv.Label{Name: "app", Value: "pad"}))
				}
				require.NoError(t, r.AddMetric(mmv.Metric{Name: "note", Type: mmv.String, Semantics: mmv.SemDiscrete}))
				for _, k := range []string{"a", "b", "c"} {
					hits.With(k).Add(uint64(len(k) + 10))
				}
				startOrSkip(t, r)
				require.NoError(t, value(t, r, "note", "").SetString("noted"))
				level.Set(2.5)
				busy.Observe(3 * time.Millisecond)
				regs[i], vecs[i] = r, hits
			}
			first := checkPadded(t, regs[1].Path())
			assert.Greater(t, first.values.Offset, first.metricsEnd, "a gap before the values")
			samePadded(t, tmp)

			for _, hits := range vecs {
				hits.With("d").Add(4) // a growth step
				require.True(t, hits.Delete("b"))
				hits.With("a").Inc()
			}
			for _, r := range regs {
				require.NoError(t, r.Flush())
			}
			grown := checkPadded(t, regs[1].Path())
			assert.Greater(t, grown.values.Count, 4*grown.live, "a removed instance's slot stays, dead")
			ms := samePadded(t, tmp)
			assert.Len(t, get(t, ms, "mmv.padded.hits").Instances, 3, "hits without b")
		})
	}
}

// paddedFile is what checkPadded found in a padded file.
type paddedFile struct {
	values     mmvfile.Section
	metricsEnd uint64 // past the last metric record
	live       int    // live values
}

// checkPadded checks that the file at path, written with PadValues, has its
// values section on a multiple of 128 bytes and each live value at a
// multiple of 128 bytes from it, four records a slot.
func checkPadded(t *testing.T, path string) paddedFile {
	t.Helper()
	f, err := mmvfile.Open(path)
	require.NoError(t, err)
	var pf paddedFile
	for _, s := range f.TOC {
		switch s.Type {
		case mmvfile.Values:
			pf.values = s
		case mmvfile.Metrics:
			size := uint64(48)
			if f.Header.Version == mmv.Version1 {
				size = 104
			}
			pf.metricsEnd = s.Offset + uint64(s.Count)*size
		}
	}
	assert.Zero(t, pf.values.Offset%128, "the values section's offset")
	assert.Zero(t, pf.values.Count%4, "value records, fillers included")
	for _, v := range f.Values {
		assert.Zero(t, (v.Offset-pf.values.Offset)%128, "%s's record at %d", v.Metric.Name, v.Offset)
	}
	pf.live = len(f.Values)
	return pf
}

// samePadded checks that PCP's reader shows the same metrics, instances
// and values in files packed and padded of tmp, and returns what it shows.
func samePadded(t *testing.T, tmp string) []pcptest.Metric {
	t.Helper()
	ms := pcptest.Info(t, tmp)
	want, got := under(ms, "mmv.packed."), under(ms, "mmv.padded.")
	require.NotEmpty(t, want)
	require.Len(t, got, len(want))
	for name, w := range want {
		g := got["mmv.padded."+strings.TrimPrefix(name, "mmv.packed.")]
		assert.Equal(t, w.Value, g.Value, "%s", name)
		assert.Equal(t, w.Instances, g.Instances, "%s", name)
	}
	return ms
}
