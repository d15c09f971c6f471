package mmv_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
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
			t.Parallel() // a directory of its own
			tmp := t.TempDir()
			dir := filepath.Join(tmp, "mmv")
			r := mmv.NewRegistry("big", &mmv.Options{Dir: dir, Cluster: 2047, Flags: flags, MaxRegistryMetrics: -1})
			defer r.Close()
			name := func(i int) string { return fmt.Sprintf("g%d.m%d", i%10, i) }
			onIndom := func(i int) bool { return i%100 == 0 }
			declare := func(i int) {
				m := mmv.Metric{Name: name(i), Type: mmv.Uint64, Semantics: mmv.SemCounter, ShortHelp: "metric " + strconv.Itoa(i)}
				if onIndom(i) {
					m.Indom = 7
				}
				require.NoError(t, r.AddMetric(m))
			}
			require.NoError(t, r.AddIndom(mmv.Indom{Serial: 7, ShortHelp: "colours", Instances: []mmv.Instance{{ID: 1, Name: "red"}, {ID: 2, Name: "blue"}}}))
			require.NoError(t, r.AddLabel(mmv.Label{Name: "service", Value: "big"}))
			require.NoError(t, r.AddIndomLabel(7, mmv.Label{Name: "palette", Value: "rgb"}))
			const before, total = 1500, 2600
			for i := range before {
				declare(i)
			}
			require.NoError(t, r.AddMetricLabel(name(1200), mmv.Label{Name: "deep", Value: 1}))
			startOrSkip(t, r)
			for i := before; i < total; i++ {
				declare(i)
			}
			require.NoError(t, r.AddInstance(7, mmv.Instance{ID: 3, Name: "green"}))
			require.NoError(t, r.Flush())
			for i := range total {
				inst := ""
				if onIndom(i) {
					inst = "green"
				}
				v, err := r.Value(name(i), inst)
				require.NoError(t, err)
				v.Add(int64(i))
			}

			files, err := os.ReadDir(dir)
			require.NoError(t, err)
			count := 0
			for _, f := range files {
				mf, err := mmvfile.Open(filepath.Join(dir, f.Name()))
				require.NoError(t, err)
				count += len(mf.Metrics)
			}
			require.False(t, len(files) != 3 || count != total, "%d files hold %d metrics, want 3 files and %d", len(files), count, total)

			pcptest.MustHavePCP(t)
			ms := pcptest.Info(t, tmp)
			prefix := "mmv.big."
			if flags&mmv.NoPrefix != 0 {
				prefix = "mmv."
			}
			for i := range total {
				m := pcptest.Find(ms, prefix+name(i))
				require.NotNil(t, m, "PCP does not show metric %d, %s", i, prefix+name(i))
				got := m.Value
				if onIndom(i) {
					require.False(t, len(m.Instances) != 3 || m.Instance("green") == nil, "%s has instances %+v", m.Name, m.Instances)
					got = m.Instance("green").Value
					v, _ := m.Label("palette")
					assert.Equal(t, `"rgb"`, v, "%s labels %s", m.Name, m.Labels)
				}
				require.False(t, got != strconv.Itoa(i) || m.ShortHelp != "metric "+strconv.Itoa(i), "%s reads %q, help %q", m.Name, got, m.ShortHelp)
				v, _ := m.Label("service")
				require.Equal(t, `"big"`, v, "%s labels %s", m.Name, m.Labels)
			}
			v, _ := pcptest.Find(ms, prefix+name(1200)).Label("deep")
			assert.Equal(t, "1", v, "label of metric 1200")
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
		assert.ErrorIs(t, r.AddMetric(tc.m), tc.want, "%+v", tc.m)
	}
}

// TestVecLabelBudgetPerFile: every file of a registry holds the instance
// labels of its indoms, exactly those Snapshot shows, within its budget.
// The first file holds every indom (as libpcp_mmv's does), so its budget
// bounds every vector's: a vector whose metric is in a later file labels
// its instances in both files, or in neither.
func TestVecLabelBudgetPerFile(t *testing.T) {
	r := mmv.NewRegistry("labelparts", &mmv.Options{Dir: filepath.Join(t.TempDir(), "mmv")})
	defer r.Close()
	const n, reserve = 300, 32
	vs := make([]*mmv.Vec[mmv.Counter], n)
	for i := range vs {
		vs[i] = mmv.NewCounterVec(r, "v"+strconv.Itoa(i), "", mmv.Count, "k")
	}
	startOrSkip(t, r)
	for _, v := range vs {
		v.With("x").Inc()
	}
	require.NoError(t, r.Flush())
	snap := snapshotInstanceLabels(t, r)
	paths, err := filepath.Glob(r.Path() + "*")
	require.NoError(t, err)
	require.Greater(t, len(paths), 2, "the vectors' reservations spread them over files")
	for _, path := range paths {
		inFile, records := fileInstanceLabels(t, path)
		f, err := mmvfile.Open(path)
		require.NoError(t, err)
		want := map[instanceAt][]string{}
		for k, ls := range snap {
			if f.Indom(k.serial) != nil {
				want[k] = ls
			}
		}
		assert.Equal(t, want, inFile, path)
		assert.LessOrEqual(t, records, mmv.MaxLabels-reserve, path)
	}
	_, records := fileInstanceLabels(t, r.Path())
	assert.Equal(t, mmv.MaxLabels-reserve, records, "the first file's budget spent")
}
