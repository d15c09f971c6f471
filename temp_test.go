//go:build linux

package mmv_test

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
)

// TestStaleTemporariesReclaimed plants temporaries of "app" as a writer
// killed mid-growth leaves them, carrying the pid of a process that has
// exited, and one of a live process: Start of "app" removes the dead
// writer's, keeps the live one's, and leaves every other name alone
// (other files' temporaries, an overflow file's, names without a pid).
func TestStaleTemporariesReclaimed(t *testing.T) {
	if childRole() == "live" { // a live process, until the test kills it
		os.Stdout.WriteString("ready\n")
		io.Copy(io.Discard, os.Stdin)
		return
	}
	live, _ := startChild(t, "TestStaleTemporariesReclaimed", "live")
	dead, alive := strconv.Itoa(deadPid(t)), strconv.Itoa(live.Process.Pid)

	dir := t.TempDir()
	stale := []string{".app." + dead + ".0123abcd", ".app." + dead + ".89abcdef"}
	kept := []string{
		".app." + alive + ".0123abcd",
		".app.2." + dead + ".0123abcd",
		".other." + dead + ".0123abcd",
		".app.0123456789ab",
		"app." + dead + ".0123abcd",
		".app.x" + dead + ".0123abcd",
		".app." + dead + ".lock", // not a temporary: its random part is not hex
	}
	for _, name := range append(stale, kept...) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("left over"), 0o644))
	}
	r := appRegistry(t, dir, 0)
	startOrSkip(t, r)
	defer r.Close()
	for _, name := range stale {
		assert.NoFileExists(t, filepath.Join(dir, name), "a dead writer's temporary was kept")
	}
	for _, name := range kept {
		assert.FileExists(t, filepath.Join(dir, name), "a temporary that is not a dead writer's of app was removed")
	}
}

// TestKilledGrowersReclaimed kills writers with SIGKILL while they grow
// their file as fast as they can, so that some die with a temporary on
// disk: after the next Start of the name, only the file is left.
func TestKilledGrowersReclaimed(t *testing.T) {
	needFileLayer(t)
	if childRole() == "grower" {
		r := mmv.NewRegistry("app", &mmv.Options{Dir: os.Getenv("MMV_TEST_DIR")})
		require.NoError(t, r.AddIndom(mmv.Indom{Serial: 1}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "m", Type: mmv.Uint64, Semantics: mmv.SemCounter, Indom: 1}))
		startOrSkip(t, r)
		os.Stdout.WriteString("ready\n")
		for i := int32(0); ; i++ { // until killed
			require.NoError(t, r.AddInstance(1, mmv.Instance{ID: i, Name: "i" + strconv.Itoa(int(i))}))
			require.NoError(t, r.Flush())
		}
	}
	t.Parallel() // it waits on its children
	dir := t.TempDir()
	left := 0
	for range 10 {
		child, _ := startChild(t, "TestKilledGrowersReclaimed", "grower", "MMV_TEST_DIR="+dir)
		time.Sleep(20 * time.Millisecond) // let it grow: not an assertion
		require.NoError(t, child.Process.Signal(syscall.SIGKILL))
		child.Wait()
		for _, name := range entries(t, dir) {
			if strings.HasPrefix(name, ".app.") {
				left++
			}
		}
		r := mmv.NewRegistry("app", &mmv.Options{Dir: dir})
		startOrSkip(t, r)
		assert.Equal(t, []string{"app"}, entries(t, dir))
		require.NoError(t, r.Close())
	}
	t.Logf("%d temporaries left by 10 killed writers", left)
}
