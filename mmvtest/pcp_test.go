package mmvtest_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/mmvtest"
)

// TestSnapshotIsWhatPCPReads: every value, instance and label a snapshot
// shows is what PCP's reader shows of the same file.
func TestSnapshotIsWhatPCPReads(t *testing.T) {
	pcptest.MustHavePCP(t)
	r := mmvtest.Started(t, nil)
	serveThree(newService(r))
	require.NoError(t, r.Flush())
	snap, err := r.Snapshot()
	require.NoError(t, err)
	dir := tmpDir(t, r)
	// Close refreshes the histograms into the file, which stays.
	require.NoError(t, r.Close())
	shown := pcptest.Info(t, dir)
	require.NotEmpty(t, shown)
	t.Logf("PCP shows %d metrics", len(shown))
	for _, m := range snap {
		pm := pcptest.Find(shown, "mmv."+r.Name()+"."+m.Name)
		require.NotNil(t, pm, "PCP shows no %s", m.Name)
		if m.Indom == 0 {
			assertSame(t, m.Name, m.Values[0].Value, pm.Value)
			continue
		}
		require.Len(t, pm.Instances, len(m.Values), m.Name)
		for _, iv := range m.Values {
			pi := pm.Instance(iv.Instance)
			require.NotNil(t, pi, "PCP shows no instance %q of %s", iv.Instance, m.Name)
			assert.Equal(t, int(iv.ID), pi.ID)
			assertSame(t, m.Name+" "+iv.Instance, iv.Value, pi.Value)
			for _, l := range iv.Labels {
				v, ok := (&pcptest.Metric{Labels: pi.Labels}).Label(l.Name)
				assert.True(t, ok, "PCP shows no label %s on %s %s", l.Name, m.Name, iv.Instance)
				assert.Equal(t, strconv.Quote(l.Value.(string)), v)
			}
		}
	}
}
