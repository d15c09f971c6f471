package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv/internal/pcptest"
)

// cmdTimeout bounds every PCP command a test runs (not the daemons, which
// the test stops itself).
const cmdTimeout = 30 * time.Second

// tools are the programs the fleet tests run, beyond what pcptest checks.
type tools struct {
	redis, pmproxy, pmlogger, pmseries, pmloglabel, pmdumplog, pmval, pmlogrewrite, pmlogextract string
}

// findTools reports what is missing for the fleet tests: PCP's daemons and
// archive tools, and redis-server (Debian: apt-get install redis-server).
func findTools() (tools, error) {
	var tl tools
	var missing []string
	look := func(p *string, name string) {
		var err error
		if *p, err = exec.LookPath(name); err != nil {
			missing = append(missing, name)
		}
	}
	look(&tl.redis, "redis-server")
	look(&tl.pmlogger, "pmlogger")
	look(&tl.pmseries, "pmseries")
	look(&tl.pmloglabel, "pmloglabel")
	look(&tl.pmdumplog, "pmdumplog")
	look(&tl.pmval, "pmval")
	look(&tl.pmlogextract, "pmlogextract")
	// pmproxy and pmlogrewrite live in PCP_BINADM_DIR, not on PATH.
	adm := func(p *string, name string) {
		*p = filepath.Join(pcptest.Config("PCP_BINADM_DIR"), name)
		if _, err := os.Stat(*p); err != nil {
			missing = append(missing, name+" ($PCP_BINADM_DIR/"+name+")")
		}
	}
	adm(&tl.pmproxy, "pmproxy")
	adm(&tl.pmlogrewrite, "pmlogrewrite")
	if len(missing) > 0 {
		return tl, fmt.Errorf("not installed: %s (Debian: apt-get install pcp redis-server)", strings.Join(missing, ", "))
	}
	return tl, nil
}

// mustHaveFleet returns the tools and pmcd once both are there, or skips
// or fails the test as pcptest.MustHave does; it skips where mmv writes no
// files (every fleet test runs services that publish).
func mustHaveFleet(t *testing.T) (tools, *pcptest.PMCD) {
	t.Helper()
	pcptest.NeedFileLayer(t)
	p := pcptest.MustHavePMCD(t)
	tl, err := findTools()
	pcptest.MustHave(t, err)
	return tl, p
}

// freePort returns a TCP port free on 127.0.0.1 now. A daemon started on it
// may lose a race with another program; the daemon then fails to start and
// says so in its log.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err, "finding a free loopback port")
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// daemon is a program a test started in the foreground and stops at the
// end of the test.
type daemon struct {
	name string
	cmd  *exec.Cmd
	log  string // its standard output and error
	done chan struct{}
}

// startDaemon starts a program from dir with its output in dir/name.out,
// and stops it when the test ends (SIGTERM, then SIGKILL after 5s), failed
// or not. A test that failed gets the last lines of its output.
func startDaemon(t *testing.T, dir, name string, env []string, path string, args ...string) *daemon {
	t.Helper()
	d := &daemon{name: name, log: filepath.Join(dir, name+".out"), done: make(chan struct{})}
	out, err := os.Create(d.log)
	require.NoError(t, err, "%s: creating its log", name)
	d.cmd = exec.Command(path, args...)
	d.cmd.Dir = dir
	d.cmd.Env = append(os.Environ(), env...)
	d.cmd.Stdout, d.cmd.Stderr = out, out
	ownGroup(d.cmd)
	require.NoError(t, d.cmd.Start(), "starting %s", name)
	go func() {
		d.cmd.Wait()
		out.Close()
		close(d.done)
	}()
	t.Cleanup(func() {
		d.stop(t)
		if t.Failed() {
			t.Logf("%s's output (%s):\n%s", name, strings.Join(d.cmd.Args, " "), tail(d.log, 30))
		}
	})
	return d
}

// stop stops the daemon (SIGTERM, then SIGKILL after 5s) and waits for
// it to exit; it may be called more than once.
func (d *daemon) stop(t *testing.T) {
	if !d.running() {
		return
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(5 * time.Second):
		t.Logf("%s did not stop on SIGTERM in 5s: killed", d.name)
		d.cmd.Process.Kill()
		<-d.done
	}
}

// running reports whether the daemon has not exited.
func (d *daemon) running() bool {
	select {
	case <-d.done:
		return false
	default:
		return true
	}
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// waitFor polls cond every 100ms until it holds or d passes, and says
// whether it held.
func waitFor(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); ; time.Sleep(100 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(end) {
			return false
		}
	}
}

// startRedis starts a redis-server of the test's own on a free loopback
// port, keeping nothing on disk, and returns the port.
func startRedis(t *testing.T, tl tools) int {
	t.Helper()
	port, _ := startRedisDaemon(t, tl)
	return port
}

// startRedisDaemon is startRedis, returning the daemon too, for a test
// that stops it before its end.
func startRedisDaemon(t *testing.T, tl tools) (int, *daemon) {
	t.Helper()
	dir := t.TempDir()
	port := freePort(t)
	d := startDaemon(t, dir, "redis-server", nil, tl.redis,
		"--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--dir", dir,
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--protected-mode", "yes")
	ok := waitFor(10*time.Second, func() bool {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err != nil {
			return false
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(time.Second))
		fmt.Fprint(c, "PING\r\n")
		b := make([]byte, 7)
		_, err = io.ReadFull(c, b)
		return err == nil && string(b) == "+PONG\r\n"
	})
	require.True(t, ok && d.running(), "redis-server on 127.0.0.1:%d does not answer PING:\n%s", port, tail(d.log, 20))
	return port, d
}

// pmproxy is a pmproxy of the test's own, not the system one: its own
// configuration, port, log, pid file and socket, all in a temporary
// directory.
type pmproxy struct {
	port    int
	archive string // the directory whose archives it discovers and loads
	*daemon
}

// startPMProxy starts a pmproxy on a free loopback port with redisPort's
// redis-server as its key server, discovering the archives written under
// its archive directory (PCP_ARCHIVE_DIR, which PCP's configuration lets
// the environment override) and log-tailing them into redis.
func startPMProxy(t *testing.T, tl tools, redisPort int) *pmproxy {
	t.Helper()
	dir := t.TempDir()
	p := &pmproxy{port: freePort(t), archive: filepath.Join(dir, "archives")}
	require.NoError(t, os.Mkdir(p.archive, 0o755))
	// PCP 6.0.3 names the key server section [redis]; [keys] is what later
	// versions call it (Valkey).
	conf := fmt.Sprintf(`[pmproxy]
pcp.enabled = true
http.enabled = true
redis.enabled = true
secure.enabled = false
[redis]
enabled = true
servers = 127.0.0.1:%d
[discover]
enabled = true
[pmseries]
enabled = true
`, redisPort)
	confPath := filepath.Join(dir, "pmproxy.conf")
	require.NoError(t, os.WriteFile(confPath, []byte(conf), 0o644))
	u, err := user.Current()
	require.NoError(t, err)
	p.daemon = startDaemon(t, dir, "pmproxy",
		// PCP_RUN_DIR keeps its pid file away from the system pmproxy's.
		[]string{"PCP_ARCHIVE_DIR=" + p.archive, "PCP_RUN_DIR=" + dir},
		tl.pmproxy, "-f", "-U", u.Username, "-i", "127.0.0.1", "-p", strconv.Itoa(p.port),
		"-s", filepath.Join(dir, "pmproxy.socket"), "-c", confPath, "-l", filepath.Join(dir, "pmproxy.log"))
	ok := waitFor(15*time.Second, func() bool {
		_, err := p.get("/pmapi/context")
		return err == nil
	})
	require.True(t, ok && p.running(), "pmproxy on 127.0.0.1:%d does not answer:\n%s\n%s",
		p.port, tail(p.log, 20), tail(filepath.Join(dir, "pmproxy.log"), 20))
	return p
}

// get fetches a path from the pmproxy's REST API and returns the body of a
// 200 answer.
func (p *pmproxy) get(path string) (string, error) {
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d%s", p.port, path))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s: %s", path, resp.Status, b)
	}
	return string(b), err
}

// command runs a PCP command under cmdTimeout and returns its standard
// output; the test fails, naming the command, when it fails.
func command(t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	out, err := commandErr(env, name, args...)
	require.NoError(t, err)
	return out
}

func commandErr(env []string, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = time.Second
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if ctx.Err() != nil {
		err = errors.Join(err, ctx.Err())
	}
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, stderr.String(), out)
	}
	return string(out), nil
}

// record runs pmlogger against the local pmcd for d, logging the given
// metrics (names or subtrees) every interval into the archive base, and
// waits for it to end.
func record(t *testing.T, tl tools, base string, d time.Duration, metrics ...string) {
	t.Helper()
	startRecording(t, tl, base, d, metrics...)()
}
