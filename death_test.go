package mmv_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
	if childRole() == "death" {
		var flags mmv.Flags
		if os.Getenv("MMV_TEST_FLAGS") == "process" {
			flags = mmv.Process
		}
		r := mmv.NewRegistry("dying", &mmv.Options{Dir: filepath.Join(os.Getenv("MMV_TEST_DIR"), "mmv"), Flags: flags})
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "m", Type: mmv.Uint64, Semantics: mmv.SemCounter}))
		require.NoError(t, r.Start())
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
			cmd := childCmd(t, "TestProcessDeath", "death", nil, "MMV_TEST_DIR="+tmp, "MMV_TEST_FLAGS="+c.flags)
			out, err := cmd.StdoutPipe()
			require.NoError(t, err)
			cmd.Stderr = os.Stderr
			require.NoError(t, cmd.Start())
			defer cmd.Process.Kill()
			ready := make(chan string, 1)
			go func() {
				s := bufio.NewScanner(out)
				for s.Scan() {
					if strings.HasPrefix(s.Text(), "ready ") {
						ready <- s.Text()
						break
					}
				}
				close(ready)
			}()
			select {
			case l, ok := <-ready:
				require.True(t, ok, "the child ended before starting its registry")
				t.Log(l)
			case <-time.After(30 * time.Second):
				require.FailNow(t, "the child did not start its registry")
			}
			value := func() string {
				m := pcptest.Find(pcptest.Info(t, tmp), "mmv.dying.m")
				if m == nil {
					return "(absent)"
				}
				return m.Value
			}
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
			require.NoError(t, r.Start())
			v, err := r.Value("m", "")
			require.NoError(t, err)
			v.Set(7)
			assert.Equal(t, "7", value(), "after a new start, PCP shows mmv.dying.m")
			es, _ := os.ReadDir(filepath.Join(tmp, "mmv"))
			assert.False(t, len(es) != 2 || es[0].Name() != ".dying.lock" || es[1].Name() != "dying",
				"the directory holds %v, want only the new file and its lock", es)
			f, err = mmvfile.Open(path)
			require.NoError(t, err)
			assert.Equal(t, int32(os.Getpid()), f.Header.PID, "the file's pid")
			require.NoError(t, r.Close())
		})
	}
}
