package mmv_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/mmvfile"
)

// TestMoreThanAFile declares more metrics than a file holds, some before
// Start and some after, and shows that the 1024th and later metrics work
// like the first: same names in PCP, updates, labels and indoms.
func TestMoreThanAFile(t *testing.T) {
	for _, flags := range []mmv.Flags{0, mmv.NoPrefix} {
		t.Run(flags.String(), func(t *testing.T) {
			tmp := t.TempDir()
			dir := filepath.Join(tmp, "mmv")
			r := mmv.NewRegistry("big", &mmv.Options{Dir: dir, Cluster: 2047, Flags: flags})
			defer r.Close()
			must := func(err error) {
				t.Helper()
				require.NoError(t, err)
			}
			name := func(i int) string { return fmt.Sprintf("g%d.m%d", i%10, i) }
			onIndom := func(i int) bool { return i%100 == 0 }
			declare := func(i int) {
				m := mmv.Metric{Name: name(i), Type: mmv.Uint64, Semantics: mmv.SemCounter, ShortHelp: "metric " + strconv.Itoa(i)}
				if onIndom(i) {
					m.Indom = 7
				}
				must(r.AddMetric(m))
			}
			must(r.AddIndom(mmv.Indom{Serial: 7, ShortHelp: "colours", Instances: []mmv.Instance{{ID: 1, Name: "red"}, {ID: 2, Name: "blue"}}}))
			must(r.AddLabel(mmv.Label{Name: "service", Value: "big"}))
			must(r.AddIndomLabel(7, mmv.Label{Name: "palette", Value: "rgb"}))
			const before, total = 1500, 2600
			for i := range before {
				declare(i)
			}
			must(r.AddMetricLabel(name(1200), mmv.Label{Name: "deep", Value: 1}))
			must(r.Start())
			for i := before; i < total; i++ {
				declare(i)
			}
			must(r.AddInstance(7, mmv.Instance{ID: 3, Name: "green"}))
			must(r.Flush())
			for i := range total {
				inst := ""
				if onIndom(i) {
					inst = "green"
				}
				v, err := r.Value(name(i), inst)
				must(err)
				v.Add(int64(i))
			}

			files, err := os.ReadDir(dir)
			must(err)
			count := 0
			for _, f := range files {
				mf, err := mmvfile.Open(filepath.Join(dir, f.Name()))
				must(err)
				count += len(mf.Metrics)
			}
			if len(files) != 3 || count != total {
				t.Fatalf("%d files hold %d metrics, want 3 files and %d", len(files), count, total)
			}

			pcptest.MustHavePCP(t)
			ms := pcptest.Info(t, tmp)
			prefix := "mmv.big."
			if flags&mmv.NoPrefix != 0 {
				prefix = "mmv."
			}
			for i := range total {
				m := pcptest.Find(ms, prefix+name(i))
				if m == nil {
					t.Fatalf("PCP does not show metric %d, %s", i, prefix+name(i))
				}
				got := m.Value
				if onIndom(i) {
					if len(m.Instances) != 3 || m.Instance("green") == nil {
						t.Fatalf("%s has instances %+v", m.Name, m.Instances)
					}
					got = m.Instance("green").Value
					if v, _ := m.Label("palette"); v != `"rgb"` {
						t.Errorf("%s labels %s", m.Name, m.Labels)
					}
				}
				if got != strconv.Itoa(i) || m.ShortHelp != "metric "+strconv.Itoa(i) {
					t.Fatalf("%s reads %q, help %q", m.Name, got, m.ShortHelp)
				}
				if v, _ := m.Label("service"); v != `"big"` {
					t.Fatalf("%s labels %s", m.Name, m.Labels)
				}
			}
			if v, _ := pcptest.Find(ms, prefix+name(1200)).Label("deep"); v != "1" {
				t.Errorf("label of metric 1200 reads %q", v)
			}
		})
	}
}

// TestOverflowRefusals: a metric bound for an overflow file is checked
// like any other (this one, on an undeclared indom, once crashed).
func TestOverflowRefusals(t *testing.T) {
	r := newRegistry(t, "full", t.TempDir(), mmv.Options{})
	for i := range mmv.MaxMetrics {
		require.NoError(t, r.AddMetric(mmv.Metric{Name: fmt.Sprintf("m%d", i), Type: mmv.Uint64, Semantics: mmv.SemCounter}))
	}
	for _, tc := range []struct {
		m    mmv.Metric
		want error
	}{
		{mmv.Metric{Name: "x", Type: mmv.Uint64, Semantics: mmv.SemCounter, Indom: 5}, mmv.ErrUnknown},
		{mmv.Metric{Name: "x", Type: 7, Semantics: mmv.SemCounter}, mmv.ErrRange},
		{mmv.Metric{Name: "m1.x", Type: mmv.Uint64, Semantics: mmv.SemCounter}, mmv.ErrNamespace},
		{mmv.Metric{Name: "m5", Type: mmv.Uint64, Semantics: mmv.SemCounter}, mmv.ErrDuplicate},
	} {
		if err := r.AddMetric(tc.m); !errors.Is(err, tc.want) {
			t.Errorf("%+v: got %v, want %v", tc.m, err, tc.want)
		}
	}
}
