package mmvfile_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv/mmvfile"
)

// FuzzParse checks that Parse never panics or hangs, that every error
// wraps exactly one sentinel, and that what it accepts is consistent. The
// seed corpus in testdata/fuzz/FuzzParse holds valid files of each version
// from libpcp_mmv and from our writer, and corrupt ones.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := mmvfile.Parse(b)
		if err != nil {
			n := 0
			for _, s := range sentinels {
				if errors.Is(err, s) {
					n++
				}
			}
			require.EqualValues(t, 1, n, "%v wraps", err)
			return
		}
		for _, v := range file.Values {
			require.False(t, v.Metric == nil || v.Metric.Singular() != (v.Instance == nil), "value at %d: metric %v, instance %v", v.Offset, v.Metric, v.Instance)
			if v.Instance != nil {
				require.Equal(t, v.Metric.Indom, v.Instance.Indom.Serial, "value at %d: the instance's indom is not the metric's", v.Offset)
			}
		}
		for _, in := range file.Indoms {
			for _, inst := range in.Instances {
				require.Same(t, in, inst.Indom, "indom %d lists the instance at %d of another indom", in.Serial, inst.Offset)
			}
		}
	})
}
