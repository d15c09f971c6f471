package pcptest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// private is the state of a pmcd a test started for itself (StartPMCD).
type private struct {
	host string // localhost:PORT, for pminfo -h
	base string // its directory: tmp/mmv, run, log, pmcd.conf
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	exit error         // how it exited, once done is closed
}

// StartPMCD starts a pmcd of the test's own and returns the helper that
// reads through it: its own port, run directory and PCP_TMP_DIR, a
// configuration that loads only the MMV agent, so that nothing a test does
// to it can take down the host's pmcd, whose every client waits on it. The
// test writes its files in p.Dir; pmcd is stopped and the directory
// removed when the test ends. It needs PCP and root (pmcd runs as root,
// -U root), and skips or fails the test as MustHave otherwise.
func StartPMCD(t testing.TB) *PMCD {
	t.Helper()
	return startPMCD(t, false)
}

// StartDaemonPMCD is StartPMCD with PCP's MMV agent run as a daemon (pipe)
// agent, pmdammv under PCP's user, rather than a DSO inside pmcd, as
// docs/production.md configures a host: a crash of the agent takes only
// the agent down, and pmcd starts it again (at once the first time, then
// at most once a minute: PMCD_RESTART_AGENTS).
func StartDaemonPMCD(t testing.TB) *PMCD {
	t.Helper()
	return startPMCD(t, true)
}

func startPMCD(t testing.TB, daemon bool) *PMCD {
	t.Helper()
	tl := need(t)
	pmcd := filepath.Join(Config("PCP_BINADM_DIR"), "pmcd")
	if _, err := os.Stat(hostPath(pmcd)); err != nil {
		MustHave(t, fmt.Errorf("pmcd is not in $PCP_BINADM_DIR: %v", err))
	}
	if os.Geteuid() != 0 {
		MustHave(t, errors.New("a private pmcd needs root"))
	}
	pmstore, err := lookPath("pmstore")
	if err != nil {
		MustHave(t, fmt.Errorf("no pmstore: %v", err))
	}
	// Not t.TempDir: pmcd's socket path must fit in 108 bytes.
	base, err := os.MkdirTemp("", "pmcd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	for _, d := range []string{"tmp/mmv", "run", "log/pmcd"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	agent := fmt.Sprintf("mmv\t%d\tdso\tmmv_init\t%s\n", Domain, tl.agent)
	if daemon {
		// pmdammv runs as PCP's user, who must reach the directory.
		if err := os.Chmod(base, 0o755); err != nil {
			t.Fatal(err)
		}
		// pmcd's own agent too, so that pmcd answers (pmcd.agent.status)
		// while the MMV agent is down.
		agent = DaemonAgentLine(filepath.Dir(tl.agent)) + fmt.Sprintf("pmcd\t2\tdso\tpmcd_init\t%s\n",
			filepath.Join(filepath.Dir(filepath.Dir(tl.agent)), "pmcd", "pmda_pmcd.so"))
	}
	conf := filepath.Join(base, "pmcd.conf")
	if err := os.WriteFile(conf, []byte(agent+"\n[access]\nallow \"local:*\" : all;\nallow localhost : all;\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	var p *PMCD
	for attempt := 0; ; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		pr := &private{host: "localhost:" + strconv.Itoa(port), base: base, done: make(chan struct{})}
		pr.cmd = Command(context.Background(), pmcd, "-f", "-A", "-p", strconv.Itoa(port), "-c", conf,
			"-s", filepath.Join(base, "run", "pmcd.socket"), "-l", filepath.Join(base, "log", "pmcd.log"), "-U", "root")
		// PMCD_ROOT_AGENT=0: pmcd starts a daemon agent itself. Else it
		// asks the host's pmdaroot, which starts it with the host's
		// environment, reading the host's directory.
		pr.cmd.Env = environ(os.Environ(), []string{"PCP_TMP_DIR=" + filepath.Join(base, "tmp"),
			"PCP_RUN_DIR=" + filepath.Join(base, "run"), "PCP_LOG_DIR=" + filepath.Join(base, "log"), "PMCD_ROOT_AGENT=0"})
		pr.cmd.Dir = base
		if err := pr.cmd.Start(); err != nil {
			t.Fatalf("pmcd: %v", err)
		}
		go func() { pr.exit = pr.cmd.Wait(); close(pr.done) }()
		p = &PMCD{Dir: filepath.Join(base, "tmp", "mmv"), pminfo: tl.pminfo, pmstore: pmstore, private: pr}
		if err = p.waitUp(10 * time.Second); err == nil {
			break
		}
		pr.stop()
		if attempt == 2 {
			log, _ := os.ReadFile(filepath.Join(base, "log", "pmcd.log"))
			t.Fatalf("private pmcd does not answer: %v\n%s", err, log)
		}
	}
	t.Cleanup(p.private.stop)
	return p
}

// DaemonAgentLine is the pmcd.conf(5) line that runs PCP's MMV agent as a
// daemon (pipe) agent, pmdammv from the agent's directory dir
// ($PCP_PMDAS_DIR/mmv), on its domain.
func DaemonAgentLine(dir string) string {
	return fmt.Sprintf("mmv\t%d\tpipe\tbinary\t\t%s -d %d\n", Domain, filepath.Join(dir, "pmdammv"), Domain)
}

// AgentPID returns the process id of the daemon MMV agent of a pmcd
// StartDaemonPMCD started, 0 while it has none (the agent died and pmcd
// has not started it again) or for a DSO agent.
func (p *PMCD) AgentPID() int {
	if p.private == nil {
		return 0
	}
	pid := p.private.cmd.Process.Pid
	children, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	for _, c := range strings.Fields(string(children)) {
		comm, _ := os.ReadFile("/proc/" + c + "/comm")
		if strings.TrimSpace(string(comm)) == "pmdammv" {
			n, _ := strconv.Atoi(c)
			return n
		}
	}
	return 0
}

// CPU returns the processor time a pmcd StartPMCD started has used, with
// its DSO agents (user and system, in the kernel's ticks), 0 for the
// host's: what a fetch costs PCP, unlike its wall time, which the client
// and other work on the machine add to.
func (p *PMCD) CPU() time.Duration {
	if p.private == nil {
		return 0
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.private.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// Fields 14 and 15, utime and stime, counted after the command's ")".
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / clockTicks
}

// clockTicks is the kernel's USER_HZ, the unit of /proc's times: 100 on
// every Linux architecture Go runs on.
const clockTicks = 100

// freePort returns a TCP port nothing listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "localhost:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitUp waits for pmcd to answer for mmv.control.files.
func (p *PMCD) waitUp(d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		_, err := p.Fetch(context.Background(), "mmv.control.files")
		if err == nil {
			return nil
		}
		if err := p.Died(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop ends the process, if it still runs.
func (pr *private) stop() {
	select {
	case <-pr.done:
		return
	default:
	}
	pr.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-pr.done:
	case <-time.After(5 * time.Second):
		pr.cmd.Process.Kill()
		<-pr.done
	}
}

// Died returns nil while a pmcd StartPMCD started runs, and how it ended
// once it has (such as "signal: segmentation fault"), with the end of its
// log. For the host's pmcd it always returns nil.
func (p *PMCD) Died() error {
	if p.private == nil {
		return nil
	}
	select {
	case <-p.private.done:
	default:
		return nil
	}
	log, _ := os.ReadFile(filepath.Join(p.private.base, "log", "pmcd.log"))
	lines := strings.Split(strings.TrimSpace(string(log)), "\n")
	return fmt.Errorf("pmcd exited: %v; its log ends:\n%s", p.private.exit, strings.Join(lines[max(0, len(lines)-5):], "\n"))
}

// Host returns the host specification that reaches this pmcd, for a PCP
// client's -h: "local:" for the host's, localhost:PORT for one StartPMCD
// started.
func (p *PMCD) Host() string {
	if p.private == nil {
		return "local:"
	}
	return p.private.host
}

// ClientEnv returns the environment that makes a PCP client reach this
// pmcd by default, without -h, as it reaches the host's: the unix socket
// (PMCD_SOCKET, for "local:") and port (PMCD_PORT) of one StartPMCD
// started, nothing for the host's.
func (p *PMCD) ClientEnv() []string {
	if p.private == nil {
		return nil
	}
	_, port, _ := strings.Cut(p.private.host, ":")
	return []string{"PMCD_SOCKET=" + filepath.Join(p.private.base, "run", "pmcd.socket"), "PMCD_PORT=" + port}
}

// hostArgs returns the pminfo and pmstore arguments that reach this pmcd.
func (p *PMCD) hostArgs() []string {
	if p.private == nil {
		return nil
	}
	return []string{"-h", p.private.host}
}

//go:embed testdata/fetchloop.c
var fetchLoopSource []byte

//go:embed testdata/fetchall.c
var fetchAllSource []byte

//go:embed testdata/instlabels.c
var instLabelsSource []byte

// fetchLoop, fetchAll and instLabels build the C clients once each.
var (
	fetchLoop  = sync.OnceValues(func() (string, error) { return buildClient("fetchloop", fetchLoopSource) })
	fetchAll   = sync.OnceValues(func() (string, error) { return buildClient("fetchall", fetchAllSource) })
	instLabels = sync.OnceValues(func() (string, error) { return buildClient("instlabels", instLabelsSource) })
)

// buildClient builds a C client of libpcp into the user's cache
// directory, under its name and the source's hash, so that test runs
// share one binary instead of leaving one each behind. It is built and
// run on the host, also under MMV_PCP_ROOT: a client, it speaks the same
// protocol to either PCP's pmcd.
func buildClient(name string, source []byte) (string, error) {
	if err := HasLibPCPMMV(); err != nil {
		return "", err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(source)
	dir := filepath.Join(cache, "mmv-pcptest")
	bin := filepath.Join(dir, name+"-"+hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(dir, "build")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	src, out := filepath.Join(tmp, name+".c"), filepath.Join(tmp, name)
	if err := os.WriteFile(src, source, 0o644); err != nil {
		return "", err
	}
	if msg, err := exec.Command("gcc", "-O2", "-o", out, src, "-lpcp").CombinedOutput(); err != nil {
		return "", fmt.Errorf("gcc %s.c: %v\n%s", name, err, msg)
	}
	return bin, os.Rename(out, bin)
}

// Fetches is what FetchLoop saw.
type Fetches struct {
	N      int  // fetches made
	Values int  // fetches that returned a value
	Lost   bool // pmcd stopped answering
}

// FetchLoop looks name up through pmcd once it exists (for at most d),
// then fetches its PMID back to back, as fast as a client can, for d:
// as a monitoring client does, which looks a name up once and then
// fetches by PMID, only thousands of times a second. It needs gcc and
// libpcp, and skips or fails the test as MustHave otherwise.
func (p *PMCD) FetchLoop(t testing.TB, name string, d time.Duration) Fetches {
	t.Helper()
	f, err := p.TryFetchLoop(t, name, d)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TryFetchLoop is FetchLoop returning, not failing the test for, a name
// not found within d or a loop that did not run: while an agent is down,
// pmcd knows none of its names.
func (p *PMCD) TryFetchLoop(t testing.TB, name string, d time.Duration) (Fetches, error) {
	t.Helper()
	bin, err := fetchLoop()
	MustHave(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), d+Timeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, p.Host(), strconv.Itoa(int(d.Milliseconds())), name).Output()
	var f Fetches
	if _, serr := fmt.Sscanf(string(out), "fetches %d values %d lost %t", &f.N, &f.Values, &f.Lost); serr != nil {
		var stderr string
		if e := (*exec.ExitError)(nil); errors.As(err, &e) {
			stderr = string(e.Stderr)
		}
		return f, fmt.Errorf("fetchloop %s: %v %v: %s%s", name, err, serr, out, stderr)
	}
	return f, nil
}

// Whole is what FetchAll saw: the metrics and values of one whole fetch,
// and the wall time of each fetch.
type Whole struct {
	Metrics, Values int
	Times           []time.Duration
}

// Median is the median of the fetch times.
func (w Whole) Median() time.Duration {
	ts := slices.Clone(w.Times)
	slices.Sort(ts)
	return ts[len(ts)/2]
}

// FetchAll fetches every metric below prefix through pmcd in one pmFetch,
// n times, as a client fetching a whole registry does: no process started
// per fetch, so the times are pmcd's and its agent's. It needs gcc and
// libpcp, and skips or fails the test as MustHave otherwise; a failed
// fetch (the agent or pmcd lost) fails the test.
func (p *PMCD) FetchAll(t testing.TB, prefix string, n int) Whole {
	t.Helper()
	w, err := p.TryFetchAll(prefix, n)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TryFetchAll is FetchAll returning its failure, for a caller that expects
// one or runs it from another goroutine; a missing compiler is a failure
// too.
func (p *PMCD) TryFetchAll(prefix string, n int) (Whole, error) {
	bin, err := fetchAll()
	if err != nil {
		return Whole{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	// A whole fetch of a file libpcp_mmv wrote may take longer than
	// libpcp's default 10 s wait for pmcd: Timeout bounds it instead.
	// On the host, as fetchLoop, also under MMV_PCP_ROOT.
	cmd := exec.CommandContext(ctx, bin, p.Host(), strconv.Itoa(n), prefix)
	cmd.Env = environ(os.Environ(), []string{"PCP_TMP_DIR=", "PMCD_REQUEST_TIMEOUT=" + strconv.Itoa(int(Timeout.Seconds()))})
	var stderr strings.Builder
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	out := string(b)
	if err != nil {
		return Whole{}, fmt.Errorf("fetchall %s: %v: %s", prefix, err, stderr.String())
	}
	var w Whole
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if _, err := fmt.Sscanf(lines[0], "metrics %d values %d", &w.Metrics, &w.Values); err != nil {
		return Whole{}, fmt.Errorf("fetchall %s: %v: %s", prefix, err, out)
	}
	for _, l := range lines[1:] {
		s, err := strconv.ParseFloat(l, 64)
		if err != nil {
			return Whole{}, fmt.Errorf("fetchall %s: %v: %s", prefix, err, out)
		}
		w.Times = append(w.Times, time.Duration(s*float64(time.Second)))
	}
	return w, nil
}

// InstanceLabels connects a client to pmcd that looks name up, runs
// between while that client stays connected, having fetched nothing, then
// has it ask the labels of name's instances, as pminfo -l does. It returns
// how many label sets pmcd answered (one an instance), or the error pmcd
// or the client gave (PCP's "IPC protocol failure": pmcd lost). It needs
// gcc and libpcp, and skips or fails the test as MustHave otherwise.
func (p *PMCD) InstanceLabels(t testing.TB, name string, between func()) (int, error) {
	t.Helper()
	bin, err := instLabels()
	MustHave(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, p.Host(), name)
	in, err := cmd.StdinPipe()
	if err != nil {
		return 0, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer cmd.Wait()
	defer in.Close()
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != "ready" {
		return 0, fmt.Errorf("instlabels %s: not ready: %q %s", name, lines.Text(), stderr.String())
	}
	between()
	if _, err := io.WriteString(in, "go\n"); err != nil {
		return 0, err
	}
	if !lines.Scan() {
		return 0, fmt.Errorf("instlabels %s: no answer: %s", name, stderr.String())
	}
	if msg, ok := strings.CutPrefix(lines.Text(), "error "); ok {
		return 0, errors.New(msg)
	}
	var n int
	if _, err := fmt.Sscanf(lines.Text(), "sets %d", &n); err != nil {
		return 0, fmt.Errorf("instlabels %s: %v: %q", name, err, lines.Text())
	}
	return n, nil
}

// Log returns the log of a pmcd StartPMCD or StartDaemonPMCD started, ""
// for the host's.
func (p *PMCD) Log() string {
	if p.private == nil {
		return ""
	}
	log, _ := os.ReadFile(filepath.Join(p.private.base, "log", "pmcd.log"))
	return string(log)
}

// RSS returns the resident memory of a pmcd StartPMCD started, with its
// DSO agents, and its peak (VmRSS and VmHWM, in bytes), 0 for the host's
// or a pmcd that exited: what the files its agent maps and the tables
// it builds cost the host.
func (p *PMCD) RSS() (rss, peak int64) {
	if p.private == nil {
		return 0, 0
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.private.cmd.Process.Pid))
	if err != nil {
		return 0, 0
	}
	for _, l := range strings.Split(string(status), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb << 10
		case "VmHWM:":
			peak = kb << 10
		}
	}
	return rss, peak
}
