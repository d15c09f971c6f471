package mmvfile_test

import (
	"errors"
	"testing"

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
			if n != 1 {
				t.Fatalf("%v wraps %d sentinels, want 1", err, n)
			}
			return
		}
		for _, v := range file.Values {
			if v.Metric == nil || v.Metric.Singular() != (v.Instance == nil) {
				t.Fatalf("value at %d: metric %v, instance %v", v.Offset, v.Metric, v.Instance)
			}
			if v.Instance != nil && v.Instance.Indom.Serial != v.Metric.Indom {
				t.Fatalf("value at %d: instance of indom %d, metric of %d", v.Offset, v.Instance.Indom.Serial, v.Metric.Indom)
			}
		}
		for _, in := range file.Indoms {
			for _, inst := range in.Instances {
				if inst.Indom != in {
					t.Fatalf("indom %d lists the instance at %d of another indom", in.Serial, inst.Offset)
				}
			}
		}
	})
}
