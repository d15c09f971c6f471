//go:build linux

package mmv_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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

// launchedChildCmd runs test as role in a copy of the test binary, with
// env added, under the launcher given (such as unshare), which runs it.
func launchedChildCmd(t *testing.T, test, role string, launcher []string, env ...string) *exec.Cmd {
	t.Helper()
	bin, err := os.Executable()
	require.NoError(t, err)
	args := append(append([]string{}, launcher[1:]...), bin, "-test.run=^"+test+"$", "-test.count=1")
	cmd := exec.Command(launcher[0], args...)
	cmd.Env = append(os.Environ(), append(env, childEnv+"="+role, noRaceExitSleep())...)
	cmd.Stderr = os.Stderr
	return cmd
}

// needRootTools skips a test that needs root and the tools given.
func needRootTools(t *testing.T, tools ...string) {
	t.Helper()
	pcptest.MustHavePCP(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root for unshare")
	}
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skip("needs " + tool)
		}
	}
}

// startedSaying starts r after counting 42 on its counter served, and
// returns what Start and Err said, joined.
func startedSaying(r *mmv.Registry) string {
	c := mmv.NewCounter(r, "served", "", mmv.Count)
	var said []string
	if err := r.Start(); err != nil {
		said = append(said, err.Error())
	}
	c.Add(42)
	if err := r.Err(); err != nil {
		said = append(said, err.Error())
		if !errors.Is(err, mmv.ErrUnsupported) {
			said = append(said, "(not ErrUnsupported)")
		}
	}
	return strings.Join(said, "; ")
}

// readyChild starts the test's child in role under launcher, its
// MMV_TEST_DIR tmp, killed at the test's end, and returns it once it
// reports its first line, "ready ...".
func readyChild(t *testing.T, test, role string, launcher []string, tmp string) (*exec.Cmd, string) {
	cmd := launchedChildCmd(t, test, role, launcher, "MMV_TEST_DIR="+tmp)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	report, err := bufio.NewReader(out).ReadString('\n')
	require.True(t, strings.HasPrefix(report, "ready"), "the child: %q, %v", report, err)
	t.Log(strings.TrimSpace(report))
	return cmd, report
}

// TestProcessFlagInPIDNamespace: a service in a PID namespace of its own
// (a container's: Docker, Podman, systemd's PrivatePIDs) whose file, with
// the Process flag, is in the host's directory, read by the host's pmcd,
// which checks the header's pid in the host's namespace. Its own pid there
// is 1, which always exists on the host: written so, PCP showed its last
// values for good after it was SIGKILLed, and nothing said so.
//   - "host proc": the /proc it sees is the host's (unshare --pid without
//     --mount-proc), so NSpid gives its pid on the host, which the header
//     names: PCP drops the file once it dies, and nothing is to be said;
//   - "own proc": a container's /proc, its own namespace's: its pid on the
//     host is not knowable, so Start writes the files without the flag,
//     which PCP shows while it runs and after, and Err says why.
func TestProcessFlagInPIDNamespace(t *testing.T) {
	needFileLayer(t)
	if childRole() == "pidns" {
		r := mmv.NewRegistry("contained", &mmv.Options{Dir: filepath.Join(os.Getenv("MMV_TEST_DIR"), "mmv"), Flags: mmv.Process})
		said := startedSaying(r)
		fmt.Printf("ready pid=%d said=%q\n", os.Getpid(), said)
		time.Sleep(time.Hour) // until killed
		return
	}
	needRootTools(t, "unshare")
	for _, c := range []struct {
		name    string
		ownProc bool
	}{{"host proc", false}, {"own proc", true}} {
		t.Run(c.name, func(t *testing.T) {
			tmp := t.TempDir()
			launcher := []string{"unshare", "--pid", "--fork", "--kill-child"}
			if c.ownProc {
				launcher = append(launcher, "--mount-proc")
			}
			cmd, report := readyChild(t, "TestProcessFlagInPIDNamespace", "pidns", launcher, tmp)

			// The pid the header names, which PCP checks: with the host's
			// /proc, the service's there (its command line shows it).
			f, err := mmvfile.Open(filepath.Join(tmp, "mmv", "contained"))
			require.NoError(t, err)
			host := int(f.Header.PID)
			shown := func() string { return shownValue(t, tmp, "mmv.contained.served") }
			require.Equal(t, "42", shown(), "PCP shows the metric while the service runs")
			if c.ownProc {
				require.Contains(t, report, "PID namespace of its own", "Err says why the Process flag cannot hold")
				require.NotContains(t, report, "(not ErrUnsupported)")
				require.Zero(t, f.Header.Flags&mmv.Process, "the file is written without the flag")
			} else {
				require.Contains(t, report, `said=""`, "the host's /proc gives the service's pid on the host: nothing to say")
				require.NotZero(t, f.Header.Flags&mmv.Process)
				require.NotEqual(t, 1, host, "the header names the service's pid on the host, not its namespace's")
				comm, err := os.ReadFile("/proc/" + strconv.Itoa(host) + "/cmdline")
				require.NoError(t, err)
				require.Contains(t, string(comm), "TestProcessFlagInPIDNamespace", "the header's pid is the service's on the host")
			}

			// SIGKILL the namespace's init, unshare's child, which ends
			// the service: its Close never runs.
			require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
			cmd.Wait()
			if !c.ownProc {
				for deadline := time.Now().Add(5 * time.Second); syscall.Kill(host, 0) == nil; time.Sleep(10 * time.Millisecond) {
					require.True(t, time.Now().Before(deadline), "the service, host pid %d, did not die", host)
				}
				require.Equal(t, "(absent)", shown(), "PCP stops showing the metric of the dead service")
			} else {
				require.Equal(t, "42", shown(), "without the flag, the file stays with its last values, as Err said")
			}
		})
	}
}

// TestPIDNamespaceSeesLiveHostFiles: a Process registry in a PID
// namespace of its own that sees the host's /proc (unshare --pid without
// --mount-proc), writing in a directory shared with a host registry's live
// Process file. Its Start judges the host file's writer as PCP does, by
// /proc/<pid>: kill(pid, 0) in its own namespace, where every host pid is
// ESRCH, took the live file for a dead writer's and its cluster for free,
// and PCP, reading two files on one cluster, showed the host's value under
// the contained registry's name. Each file keeps a cluster of its own, and
// PCP shows each registry's value under its name.
func TestPIDNamespaceSeesLiveHostFiles(t *testing.T) {
	needFileLayer(t)
	names := clashingNames(2)
	if childRole() == "pidns-shared" {
		r := mmv.NewRegistry(names[1], &mmv.Options{Dir: filepath.Join(os.Getenv("MMV_TEST_DIR"), "mmv"), Flags: mmv.Process})
		c := mmv.NewCounter(r, "c", "", mmv.Count)
		err := r.Start()
		c.Add(2)
		fmt.Printf("ready pid=%d start=%v err=%v\n", os.Getpid(), err, r.Err())
		time.Sleep(time.Hour) // until killed
		return
	}
	needRootTools(t, "unshare")
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "mmv")
	host := newRegistry(t, names[0], dir, mmv.Options{Flags: mmv.Process})
	hc := mmv.NewCounter(host, "c", "", mmv.Count)
	startOrSkip(t, host)
	hc.Add(1)

	_, report := readyChild(t, "TestPIDNamespaceSeesLiveHostFiles", "pidns-shared", []string{"unshare", "--pid", "--fork", "--kill-child"}, tmp)
	require.Contains(t, report, "start=<nil> err=<nil>")

	a, err := mmvfile.Open(filepath.Join(dir, names[0]))
	require.NoError(t, err)
	b, err := mmvfile.Open(filepath.Join(dir, names[1]))
	require.NoError(t, err)
	assert.NotEqual(t, a.Header.Cluster, b.Header.Cluster, "the contained registry takes a cluster of its own, not the live host registry's")
	assert.Equal(t, "1", shownValue(t, tmp, "mmv."+names[0]+".c"))
	assert.Equal(t, "2", shownValue(t, tmp, "mmv."+names[1]+".c"))
}

// TestOptionsKeepProcessWithheld: Start withholds the Process flag from
// the files of a registry in a PID namespace with its own /proc (Err says
// why), and Options still returns the options as given to NewRegistry,
// the flag with them: a program that copies them for another registry
// loses nothing.
func TestOptionsKeepProcessWithheld(t *testing.T) {
	needFileLayer(t)
	if childRole() == "ownproc-options" {
		r := mmv.NewRegistry("withheld", &mmv.Options{Dir: filepath.Join(os.Getenv("MMV_TEST_DIR"), "mmv"), Flags: mmv.Process})
		mmv.NewCounter(r, "c", "", mmv.Count)
		err := r.Start()
		f, ferr := mmvfile.Open(filepath.Join(os.Getenv("MMV_TEST_DIR"), "mmv", "withheld"))
		fileProcess := ferr == nil && f.Header.Flags&mmv.Process != 0
		fmt.Printf("ready start=%v process=%v file=%v err=%v\n", err, r.Options().Flags&mmv.Process != 0, fileProcess, r.Err() != nil)
		r.Close()
		_, gone := os.Stat(filepath.Join(os.Getenv("MMV_TEST_DIR"), "mmv", "withheld"))
		fmt.Printf("closed removed=%v\n", errors.Is(gone, os.ErrNotExist))
		return
	}
	needRootTools(t, "unshare")
	tmp := t.TempDir()
	cmd := launchedChildCmd(t, "TestOptionsKeepProcessWithheld", "ownproc-options", []string{"unshare", "--pid", "--fork", "--kill-child", "--mount-proc"}, "MMV_TEST_DIR="+tmp)
	out, err := cmd.Output()
	require.NoError(t, err)
	report := string(out)
	t.Log(strings.TrimSpace(report))
	require.Contains(t, report, "start=<nil>")
	require.Contains(t, report, "file=false", "Start withholds the flag from the file")
	require.Contains(t, report, "err=true", "and Err says so")
	assert.Contains(t, report, "process=true", "Options returns the options as given to NewRegistry")
	assert.Contains(t, report, "removed=true", "Close removes the files of a registry given the flag")
}

// TestProcessFlagUnderHidepid: PCP's reader decides that a Process file's
// writer lives by /proc/<pid>, in pmcd, which runs as user pcp. On a host
// whose /proc is mounted with hidepid=2 (invisible), user pcp sees no
// process of another user's: a Process registry of a service running as
// root was dropped by PCP while it ran, and nothing said so. Start now
// writes its files without the flag, which PCP shows, and Err says why;
// with gid= a group of pcp's, which sees every process, the flag stays.
// Either way, Close removes the files.
// The writer runs as root and the reader (pmda_mmv.so loaded into pminfo)
// as pcp, in a mount namespace whose /proc has the options.
func TestProcessFlagUnderHidepid(t *testing.T) {
	needFileLayer(t)
	if childRole() == "hidepid" {
		tmp := os.Getenv("MMV_TEST_DIR")
		r := mmv.NewRegistry("hidden", &mmv.Options{Dir: filepath.Join(tmp, "mmv"), Flags: mmv.Process})
		said := startedSaying(r)
		f, err := mmvfile.Open(filepath.Join(tmp, "mmv", "hidden"))
		process := err == nil && f.Header.Flags&mmv.Process != 0
		pminfo := exec.Command("setpriv", append([]string{"--reuid=pcp", "--regid=pcp", "--init-groups", "pminfo"},
			append(pcptest.InfoArgs("/var/lib/pcp/pmdas/mmv/pmda_mmv.so"), "-f", "mmv.hidden.served")...)...)
		pminfo.Env = append(os.Environ(), "PCP_TMP_DIR="+tmp)
		out, _ := pminfo.CombinedOutput()
		shown := strings.Contains(string(out), "value 42")
		r.Close()
		_, err = os.Stat(filepath.Join(tmp, "mmv", "hidden"))
		fmt.Printf("shown=%v process=%v removed=%v said=%q\n", shown, process, os.IsNotExist(err), said)
		return
	}
	needRootTools(t, "unshare", "setpriv")
	gid, err := exec.Command("id", "-g", "pcp").Output()
	if err != nil {
		t.Skip("needs PCP's user, pcp")
	}
	for _, c := range []struct{ name, opts, want, said string }{
		{"hidepid=2", "hidepid=2", "shown=true process=false removed=true", "/proc is mounted with hidepid=invisible, which hides this process"},
		{"hidepid=2 gid=pcp", "hidepid=2,gid=" + strings.TrimSpace(string(gid)), `shown=true process=true removed=true said=""`, ""},
		{"hidepid=1", "hidepid=1", "shown=true process=false removed=true", "/proc is mounted with hidepid=noaccess, which hides this process"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tmp, err := os.MkdirTemp("", "mmv-hidepid")
			require.NoError(t, err)
			t.Cleanup(func() { os.RemoveAll(tmp) })
			require.NoError(t, os.Chmod(tmp, 0o755))
			bin, err := os.Executable()
			require.NoError(t, err)
			cmd := exec.Command("unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
				`mount -t proc -o `+c.opts+` proc /proc && exec "$0" "$@"`, bin, "-test.run=^TestProcessFlagUnderHidepid$", "-test.count=1")
			cmd.Env = append(os.Environ(), childEnv+"=hidepid", "MMV_TEST_DIR="+tmp, noRaceExitSleep())
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", out)
			t.Log(string(out))
			require.Contains(t, string(out), c.want)
			require.Contains(t, string(out), c.said)
			require.NotContains(t, string(out), "(not ErrUnsupported)")
		})
	}
}
