package mmv_test

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/mmvfile"
)

// TestProcessDeath kills a writer with SIGKILL, so that it never closes
// its registry, and reads its directory with PCP's reader:
//   - with the Process flag, PCP drops the file's metrics as soon as the
//     writer's pid is gone, though the file stays; a later Start of the same
//     name replaces the stale file, and PCP shows the new values;
//   - without it, PCP goes on showing the file's last values, for good.
func TestProcessDeath(t *testing.T) {
	needFileLayer(t)
	if childRole() == "death" {
		var flags mmv.Flags
		if os.Getenv("MMV_TEST_FLAGS") == "process" {
			flags = mmv.Process
		}
		r := mmv.NewRegistry("dying", &mmv.Options{Dir: filepath.Join(os.Getenv("MMV_TEST_DIR"), "mmv"), Flags: flags})
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "m", Type: mmv.Uint64, Semantics: mmv.SemCounter}))
		startOrSkip(t, r)
		v, err := r.Value("m", "")
		require.NoError(t, err)
		v.Set(42)
		fmt.Printf("ready %d\n", os.Getpid())
		time.Sleep(time.Hour) // until killed
		return
	}
	pcptest.MustHavePCP(t)
	for _, c := range []struct {
		name  string
		flags string
	}{{"process flag", "process"}, {"no flag", ""}} {
		t.Run(c.name, func(t *testing.T) {
			tmp := t.TempDir()
			path := filepath.Join(tmp, "mmv", "dying")
			cmd, pid := startChild(t, "TestProcessDeath", "death", "MMV_TEST_DIR="+tmp, "MMV_TEST_FLAGS="+c.flags)
			t.Log("ready", pid)
			value := func() string { return shownValue(t, tmp, "mmv.dying.m") }
			require.Equal(t, "42", value(), "while the writer runs, PCP shows mmv.dying.m")

			require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
			cmd.Wait()
			f, err := mmvfile.Open(path)
			require.NoError(t, err)
			assert.False(t, f.Header.PID != int32(cmd.Process.Pid) || f.Values[0].Uint != 42, "the dead writer's file: pid %d, value %d; want %d, 42", f.Header.PID, f.Values[0].Uint, cmd.Process.Pid)
			want := "42"
			if c.flags == "process" {
				want = "(absent)"
			}
			assert.Equal(t, want, value(), "after SIGKILL, PCP shows mmv.dying.m")

			// A later start of the same name replaces the stale file.
			var flags mmv.Flags
			if c.flags == "process" {
				flags = mmv.Process
			}
			r := mmv.NewRegistry("dying", &mmv.Options{Dir: filepath.Join(tmp, "mmv"), Flags: flags})
			require.NoError(t, r.AddMetric(mmv.Metric{Name: "m", Type: mmv.Uint64, Semantics: mmv.SemCounter}))
			startOrSkip(t, r)
			v, err := r.Value("m", "")
			require.NoError(t, err)
			v.Set(7)
			assert.Equal(t, "7", value(), "after a new start, PCP shows mmv.dying.m")
			es, _ := os.ReadDir(filepath.Join(tmp, "mmv"))
			assert.False(t, len(es) != 1 || es[0].Name() != "dying", "the directory holds %v, want only the new file", es)
			f, err = mmvfile.Open(path)
			require.NoError(t, err)
			assert.Equal(t, int32(os.Getpid()), f.Header.PID, "the file's pid")
			require.NoError(t, r.Close())
		})
	}
}

// TestDefaultDeath: Default, with no option set, has the Process flag and
// a cluster of its own: a program using it shows its metrics with its
// cluster label while it runs, and PCP stops showing them once SIGKILL
// ends it.
func TestDefaultDeath(t *testing.T) {
	needFileLayer(t)
	if childRole() == "default" {
		served := mmv.NewCounter(nil, "served", "Requests served", mmv.Count)
		require.NoError(t, mmv.Default.AddLabel(mmv.Label{Name: "service", Value: "shop"}))
		startOrSkip(t, mmv.Default)
		served.Add(42)
		fmt.Printf("ready %s\n", mmv.Default.Path())
		time.Sleep(time.Hour) // until killed
		return
	}
	tmp, _ := pcpDir(t)
	cmd, path := startChild(t, "TestDefaultDeath", "default", "PCP_TMP_DIR="+tmp)
	name := "mmv." + filepath.Base(path) + ".served"
	m := get(t, pcptest.Info(t, tmp), name)
	assert.Equal(t, "42", m.Value)
	l, _ := m.Label("service")
	assert.Equal(t, `"shop"`, l, "Default's cluster label")
	f, err := mmvfile.Open(path)
	require.NoError(t, err)
	assert.Equal(t, mmv.Process, f.Header.Flags&mmv.Process, "Default's flags")
	assert.NotZero(t, f.Header.Cluster, "Default's cluster")

	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	cmd.Wait()
	assert.FileExists(t, path, "the dead writer's file")
	assert.Nil(t, pcptest.Find(pcptest.Info(t, tmp), name), "PCP shows %s after SIGKILL", name)
}
