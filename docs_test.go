//go:build unix

package mmv_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/goruntime"
	"github.com/gopcp/mmv/internal/pcptest"
)

// docCommands says, for every command the pages show, what runs it: a
// test ("TestName", which must exist in the repository) or CI (".ci/run:
// TEXT", TEXT a line of .ci/run). A test or CI step may run it with
// another file name, interval or duration, as noted; the form is the
// page's. A command no test or CI can run says why ("not run: REASON"):
// TestDocCommands lists them.
var docCommands = map[string]string{
	// README.md
	"go get github.com/gopcp/mmv":                                      ".ci/run: go get github.com/gopcp/mmv@v0.0.0",                      // with a version: not on the proxy yet
	"go mod edit -replace github.com/gopcp/mmv=../mmv":                 ".ci/run: go mod edit -replace github.com/gopcp/mmv=$work/only-go", // the clone CI made
	"go get github.com/gopcp/mmv@v0.0.0":                               ".ci/run: go get github.com/gopcp/mmv@v0.0.0",
	"sudo apt-get install pcp":                                         ".ci/run: packages=(pcp libpcp-mmv1-dev libpcp3-dev gcc)",
	"sudo apt-get install libpcp-mmv1-dev libpcp3-dev gcc":             ".ci/run: packages=(pcp libpcp-mmv1-dev libpcp3-dev gcc)",
	"cd /var/lib/pcp/pmdas/mmv && sudo ./Install":                      `.ci/run: (cd "$PCP_PMDAS_DIR/mmv" && as_root ./Install </dev/null >"$work/mmv-install.log" 2>&1) || {`,
	"sudo usermod -a -G pcp myservice":                                 "not run: the tests run as root; no service user exists",
	"go run ./examples/quickstart -for 30s":                            ".ci/run: go run ./examples/quickstart -for 2s",
	"go test ./...":                                                    ".ci/run: go test ./...",
	"cd /var/lib/pcp/pmdas/mmv && ./Install":                           `.ci/run: (cd "$PCP_PMDAS_DIR/mmv" && as_root ./Install </dev/null >"$work/mmv-install.log" 2>&1) || {`,
	"go run ./examples/httpserver -for 1m":                             ".ci/run: for ex in quickstart httpserver runtime registry; do",
	"go run ./examples/runtime -for 1m":                                ".ci/run: for ex in quickstart httpserver runtime registry; do",
	"go run ./examples/registry -for 30s":                              ".ci/run: for ex in quickstart httpserver runtime registry; do",
	"cd otelexporter && go run ./example/shop -for 1m":                 `.ci/run: (cd otelexporter && PCP_TMP_DIR="$work/examples" go run ./example/shop -for 2s)`,
	"cd prombridge && go run ./example/web -for 1m":                    `.ci/run: (cd prombridge && PCP_TMP_DIR="$work/examples" go run ./example/web -for 2s)`,
	"MMV_REQUIRE_PCP=1 go test -race":                                  `.ci/run: (cd "$mod" && MMV_REQUIRE_PCP=1 go test -race -count=1 ./...)`,
	"go test -tags mmv_noport ./...":                                   `.ci/run: (cd "$mod" && MMV_REQUIRE_PCP=1 timeout 300 go test -tags mmv_noport -count=1 ./...)`,
	".ci/pcp7-chroot /var/cache/mmv-pcp7":                              `.ci/run: as_root "$PWD/.ci/pcp7-chroot" "$pcp7root"`,
	"MMV_REQUIRE_PCP=1 MMV_PCP_ROOT=/var/cache/mmv-pcp7 go test ./...": `.ci/run: (cd "$mod" && MMV_REQUIRE_PCP=1 MMV_PCP_ROOT="$pcp7root" go test -count=1 -run "$pattern" "$pkg")`, // the suites that take PCP as their oracle
	// docs/reader.md: PCP's reader loaded in pminfo, as pcptest.Info loads it.
	"pminfo -L -K add,70,.../pmda_mmv.so,mmv_init": "TestReadsWhatPCPReads",
	// Reading through PCP: README.md, docs/operating.md, docs/instruments.md.
	"pminfo -dfmtTl mmv.quickstart.http.requests":          "TestDocCommandsThroughPMCD",
	"pmval -t 1 mmv.quickstart.http.requests":              "TestDocCommandsThroughPMCD",
	"pmrep -t 1 mmv.quickstart.http.latency.p99":           "TestDocCommandsThroughPMCD",
	"go run ./cmd/mmvdump FILE":                            "TestDocCommandsThroughPMCD",
	"go run ./cmd/mmvdump /var/lib/pcp/tmp/mmv/quickstart": "TestDocCommandsThroughPMCD",
	"PCP_TMP_DIR=/var/lib/pcp/tmp pminfo -L -K clear -K add,70,/var/lib/pcp/pmdas/mmv/pmda_mmv.so,mmv_init -dfmtTl mmv":                            "TestDocCommandsThroughPMCD",
	`pmval -t 0.5 -i '"route=/hello,status=200"' mmv.httpserver.http.requests`:                                                                     "TestDocCommandsThroughPMCD",
	"pmval -t 0.5 mmv.httpserver.app.work_time":                                                                                                    "TestDocCommandsThroughPMCD",
	"pmrep -t 1 mmv.app.latency.p99":                                                                                                               "TestDocCommandsThroughPMCD",
	"pminfo -f mmv.goruntime.sched.goroutines_goroutines mmv.goruntime.cpu.classes.total_cpu_seconds mmv.goruntime.sched.latencies_seconds.bucket": "TestDocCommandsThroughPMCD",
	// docs/production.md: the daemon agent, checked as the page checks it.
	"pgrep -a pmdammv":                                    "TestDaemonAgentChecks",
	"pminfo -f mmv.control.files":                         "TestDaemonAgentChecks",
	"pminfo -f pmcd.agent.status":                         "TestDaemonAgentChecks",
	"systemctl restart pmcd":                              "not run: CI machines have no systemd; TestDaemonAgentChecks starts a pmcd of its own with the page's configuration line",
	"pmsignal -s HUP pmcd":                                "not run: it signals every pmcd of the machine, the host's among them, which other tests use",
	"MMV_PCP_BUG=1 go test -run TestProcessRestartPMCD":   "TestProcessRestartPMCD",   // run by hand: the test says why CI does not
	"MMV_PCP_BUG=1 go test -run TestLabelsAfterFetchPMCD": "TestLabelsAfterFetchPMCD", // as TestProcessRestartPMCD
	// docs/design.md
	"MMV_REQUIRE_PCP=1 go test -run TestReaderCost -v -timeout 30m -readercost": "TestReaderCost",                                                         // CI: -readercost.quick
	"MMV_REQUIRE_PCP=1 go test -race -count=1 -v .":                             `.ci/run: (cd "$mod" && MMV_REQUIRE_PCP=1 go test -race -count=1 ./...)`, // the tests' time: the root's suite, -v
	// docs/pcp-mmv-crash.md: the report's reproduction script, for PCP.
	scriptKey("docs/pcp-mmv-crash.md", "B=$(mktemp -d); mkdir -p $B/tmp/mmv $B/run $B/log"): "TestCrashReportScript", // MMV_PCP_BUG=1, as TestProcessRestartPMCD
	scriptKey("docs/pcp-labels-crash.md", "B=$(mktemp -d); mkdir -p $B/run $B/log"):         "TestCrashReportScript",
	// docs/fleet.md, whose every command also says on the page what runs it.
	"cd fleet && MMV_REQUIRE_PCP=1 go test -race ./...":                                                     `.ci/run: (cd "$mod" && MMV_REQUIRE_PCP=1 go test -race -count=1 ./...)`,
	"ls -ld /var/lib/pcp/tmp/mmv":                                                                           "not run: the directory's owner and mode are Debian's pcp package's (its postinst), not mmv's",
	"usermod -a -G pcp checkout":                                                                            "not run: the tests run as root; no service user exists",
	"pminfo -f mmv.checkout":                                                                                "TestDocCommandsThroughPMCD",
	"pmlogger -c checkout.conf -T 3sec /path/to/archive":                                                    "TestArchiveAcrossRestart",
	"pmdumplog -d /path/to/archive":                                                                         "TestArchiveAcrossRestart",
	"pmdumplog -i /path/to/archive":                                                                         "TestArchiveAcrossRestart",
	"pmval -a /path/to/archive -t 10sec mmv.checkout.requests":                                              "TestArchiveAcrossRestart",
	"pmrep -a /path/to/archive mmv.checkout.requests":                                                       "not run: docs/fleet.md says pmval shows the same rates",
	"systemctl enable --now pmcd pmlogger pmproxy":                                                          "not run: CI machines have no systemd; .ci/run starts pmcd and pmproxy with their rc scripts",
	"pmproxy -f -i 127.0.0.1 -p 44322 -c pmproxy.conf":                                                      "TestFleet",
	`pmseries --load '{source.path:"/var/log/pcp/pmlogger/web17/20261130.00.10"}'`:                          "TestFleet",
	`pmseries 'mmv.app.requests{service:"checkout"}'`:                                                       "TestFleet",
	`pmseries 'mmv.checkout.requests'`:                                                                      "TestFleet",
	`pmseries 'mmv.checkout.requests{service:"checkout"}'`:                                                  "TestFleet",
	`pmseries 'mmv.checkout.requests{hostname:"web17"}[count:1000]'`:                                        "TestFleet",
	`curl 'http://127.0.0.1:44322/series/query?expr=mmv.checkout.requests{service:"checkout"}'`:             "TestFleet",
	`curl 'http://127.0.0.1:44322/series/instances?series=<id>'`:                                            "TestFleet",
	`curl 'http://127.0.0.1:44322/metrics?names=mmv.checkout'`:                                              "TestFleet",
	"redis-server --cluster-enabled yes ...":                                                                "not run: a cluster needs several nodes; CI starts one standalone redis-server",
	"MMV_REQUIRE_PCP=1 go test -run 'TestFleetScale$' -v .":                                                 "TestFleetScale",
	"MMV_REQUIRE_PCP=1 go test -run 'TestFleetScale$' -fleet.variants=all -fleet.out=testdata/scale.json .": "TestFleetScale", // the committed runs: by hand, minutes each
	"MMV_REQUIRE_PCP=1 go test -run 'TestFleetScale$' -fleet.variants=all -fleet.records=360 -fleet.out=testdata/scale.json .": "TestFleetScale",
	"MMV_REQUIRE_PCP=1 go test -timeout 30m -run 'TestFleetScale$' -fleet.hosts=100 -fleet.out=testdata/scale.json .":          "TestFleetScale",
	"MMV_REQUIRE_PCP=1 go test -timeout 30m -run 'TestFleetScale$' -fleet.hosts=1000 -fleet.out=testdata/scale.json .":         "TestFleetScale",
	"go test -run TestScaleTable -fleet.update .": "TestScaleTable", // CI runs it without -fleet.update: it checks the table
}

// docPageList returns the pages whose every command docCommands accounts
// for: the README and every page of docs/.
func docPageList(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob("docs/*.md")
	require.NoError(t, err)
	require.NotEmpty(t, pages)
	return append([]string{"README.md"}, pages...)
}

// A page shows a command in one of these forms:
//   - a line of a ```sh (bash, shell, console) block, a line ending in \
//     joined with the next; a block that starts with #! is a script, one
//     command named by its page and first line (see scriptKey);
//   - a line starting with "$ " in any other fenced block;
//   - a line of an indented code block (a tab or four spaces, after a
//     blank line) whose first word, past any VAR=value, names a program
//     (commandWordRE): such blocks also hold configuration files and
//     output, which are not commands;
//   - inline code that starts like a command (inlineCommandRE).
//
// A comment at the end of a line (" # ...") is not part of the command.
var (
	inlineRE        = regexp.MustCompile("`([^`]+)`")
	inlineCommandRE = regexp.MustCompile(`^([A-Z_]+=\S* )*(go (run|test|get) |cd |apt-get |pmsignal |pm[a-z]+ .*mmv\.)`)
	envRE           = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*=\S*\s+)*`)
	commandWordRE   = regexp.MustCompile(`^(go|cd|apt-get|sudo|systemctl|pgrep|curl|ls|usermod|useradd|redis-server|gcc|git|make|sh|bash|timeout|mmvdump|pm[a-z]+|\.{1,2}/\S+|\.ci/\S+)$`)
	commentRE       = regexp.MustCompile(`\s+#\s.*$`)
)

// scriptKey names the script a ```sh block starting with #! holds: the
// page and the block's first line after the #! line.
func scriptKey(page, first string) string { return page + " script: " + first }

func docPageCommands(t *testing.T, page string) []string {
	t.Helper()
	b, err := os.ReadFile(page)
	require.NoError(t, err)
	var cmds []string
	fence, script := "", false
	prevBlank, indented := true, false
	var cont string // a line of a sh block ending in \, to be joined
	var para string // the lines of a paragraph so far, joined
	for line := range strings.Lines(string(b)) {
		line = strings.TrimRight(line, "\n")
		trimmed := strings.TrimSpace(line)
		blank := trimmed == ""
		if strings.HasPrefix(trimmed, "```") {
			cmds = append(cmds, inlineCommands(para)...)
			para = ""
			if fence == "" {
				fence = strings.TrimPrefix(trimmed, "```")
				if fence == "" {
					fence = "text"
				}
				script = false
			} else {
				fence = ""
			}
			prevBlank, indented = false, false
			continue
		}
		switch {
		case fence == "sh" || fence == "bash" || fence == "shell" || fence == "console":
			if strings.HasPrefix(trimmed, "#!") {
				script = true
				continue
			}
			c := strings.TrimSpace(commentRE.ReplaceAllString(" "+trimmed, ""))
			if c == "" || strings.HasPrefix(c, "#") {
				continue
			}
			if script {
				if cont == "" && !slices.ContainsFunc(cmds, func(x string) bool { return strings.HasPrefix(x, page+" script: ") }) {
					cmds = append(cmds, scriptKey(page, c))
				}
				cont = "script"
				continue
			}
			if c, ok := strings.CutSuffix(c, "\\"); ok {
				cont += strings.TrimSpace(c) + " "
				continue
			}
			cmds = append(cmds, cont+c)
			cont = ""
		case fence != "":
			if c, ok := strings.CutPrefix(trimmed, "$ "); ok {
				cmds = append(cmds, c)
			}
		case !blank && (strings.HasPrefix(line, "\t") || strings.HasPrefix(line, "    ")) && (prevBlank || indented):
			indented = true
			cmds = append(cmds, inlineCommands(para)...)
			para = ""
			c := strings.TrimSpace(commentRE.ReplaceAllString(line, ""))
			if c, ok := strings.CutPrefix(c, "$ "); ok {
				cmds = append(cmds, c)
				break
			}
			if word, _, _ := strings.Cut(envRE.ReplaceAllString(c, ""), " "); commandWordRE.MatchString(word) {
				cmds = append(cmds, c)
			}
		case blank:
			cmds = append(cmds, inlineCommands(para)...)
			para = ""
		default:
			indented = false
			para += " " + trimmed
		}
		prevBlank = blank
	}
	return append(cmds, inlineCommands(para)...)
}

// inlineCommands returns the inline code of a paragraph, its lines joined,
// that starts like a command.
func inlineCommands(para string) []string {
	var cmds []string
	for _, m := range inlineRE.FindAllStringSubmatch(para, -1) {
		if inlineCommandRE.MatchString(m[1]) {
			cmds = append(cmds, m[1])
		}
	}
	return cmds
}

// TestDocCommands: every command the pages show is run by a test or by
// CI, and every runner docCommands names exists.
func TestDocCommands(t *testing.T) {
	ci, err := os.ReadFile(".ci/run")
	require.NoError(t, err)
	tests := testFuncs(t)
	shown := map[string]bool{}
	for _, page := range docPageList(t) {
		for _, c := range docPageCommands(t, page) {
			shown[c] = true
			runner, ok := docCommands[c]
			if !assert.True(t, ok, "%s shows a command nothing runs: %q (add it to docCommands, with its test or CI step)", page, c) {
				continue
			}
			if why, ok := strings.CutPrefix(runner, "not run: "); ok {
				t.Logf("%s: not run: %q: %s", page, c, why)
				continue
			}
			if line, ok := strings.CutPrefix(runner, ".ci/run: "); ok {
				assert.True(t, slices.Contains(strings.Split(string(ci), "\n"), line) || strings.Contains(string(ci), line),
					"%q: .ci/run has no %q", c, line)
			} else {
				assert.True(t, tests[runner], "%q: no test %s in the repository", c, runner)
			}
		}
	}
	for c := range docCommands {
		assert.True(t, shown[c], "docCommands lists %q, which no page shows", c)
	}
}

// testFuncs returns the names of the Test functions of every module of the
// repository.
func testFuncs(t *testing.T) map[string]bool {
	t.Helper()
	re := regexp.MustCompile(`(?m)^func (Test\w+)\(`)
	names := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return err
		}
		b, err := os.ReadFile(path)
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			names[m[1]] = true
		}
		return err
	})
	require.NoError(t, err)
	return names
}

// TestDocCommandsThroughPMCD runs the commands of the pages that read
// through PCP, as the pages write them, through a pmcd of the test's own
// (reached as the host's is, without -h: pcptest.PMCD.ClientEnv), on
// registries that declare what the commands name: the quick start's
// instruments, an HTTP server's counter vector and timer, a latency
// histogram, the Go runtime bridge and docs/fleet.md's service. Each
// file name gets the test's pid (mmv.quickstart is mmv.quickstart<pid>),
// and the paths are the test pmcd's. pmval and pmrep, which sample until
// stopped, are stopped once they have printed a sample (runDocCommand).
//
// Its MMV agent runs as a daemon (StartDaemonPMCD), not a DSO inside
// pmcd: with the commands run at once (-parallel 16, another core busy),
// PCP 6.0.3's pmcd died of SIGSEGV in 6 of 11 runs of -count=15, and
// every command after it said "Connection refused"; with the daemon
// agent, none in 8. pminfo -l asked instances' labels after pmval or
// pminfo -f had come and gone: PCP's bug of docs/pcp-labels-crash.md
// (TestDaemonAgentContainsLabelsCrash).
func TestDocCommandsThroughPMCD(t *testing.T) {
	t.Parallel() // a pmcd of its own; pmval and pmrep wait on their samples
	p := pcptest.StartDaemonPMCD(t)
	pid := strconv.Itoa(os.Getpid())
	opts := mmv.Options{Flags: mmv.Process}
	quick := startReg(t, "quickstart"+pid, p.Dir, opts, func(r *mmv.Registry) {
		requests := mmv.NewCounterVec(r, "http.requests", "Requests served", mmv.Count, "route", "status")
		inFlight := mmv.NewIntGauge(r, "http.in_flight", "Requests being served", mmv.Count)
		latency := mmv.NewHistogramVec(r, "http.latency", "Request latency", mmv.Second, nil, "route")
		inFlight.Inc()
		requests.With("/api", "200").Inc()
		latency.With("/api").Observe(0.012)
	})
	startReg(t, "httpserver"+pid, p.Dir, opts, func(r *mmv.Registry) {
		mmv.NewCounterVec(r, "http.requests", "Requests", mmv.Count, "route", "status").With("/hello", "200").Add(10)
		mmv.NewTimer(r, "app.work_time", "Time spent working").Observe(time.Second)
	})
	startReg(t, "app"+pid, p.Dir, opts, func(r *mmv.Registry) {
		mmv.NewHistogram(r, "latency", "Latency", mmv.Second, nil).Observe(0.25)
	})
	startReg(t, "goruntime"+pid, p.Dir, opts, func(r *mmv.Registry) {
		require.NoError(t, goruntime.Register(r, nil))
	})
	startReg(t, "checkout"+pid, p.Dir, opts, func(r *mmv.Registry) { // docs/fleet.md's service
		mmv.NewCounter(r, "requests", "Requests", mmv.Count).Add(3)
	})
	for _, name := range []string{"quickstart", "httpserver", "app", "goruntime", "checkout"} {
		require.Eventually(t, func() bool {
			ms, err := p.Fetch(context.Background(), "mmv."+name+pid)
			return err == nil && len(ms) > 0
		}, 30*time.Second, 50*time.Millisecond, "pmcd's agent shows mmv.%s%s", name, pid)
	}
	tmp := filepath.Dir(p.Dir)
	agent := filepath.Join(pcptest.Config("PCP_PMDAS_DIR"), "mmv", "pmda_mmv.so")
	local := strings.NewReplacer(
		"mmv.quickstart.", "mmv.quickstart"+pid+".", "mmv.httpserver.", "mmv.httpserver"+pid+".",
		"mmv.app.", "mmv.app"+pid+".", "mmv.goruntime.", "mmv.goruntime"+pid+".", "mmv.checkout", "mmv.checkout"+pid,
		"/var/lib/pcp/tmp/mmv/quickstart", quick.Path(), "FILE", quick.Path(),
		"/var/lib/pcp/pmdas/mmv/pmda_mmv.so", agent, "/var/lib/pcp/tmp", tmp)
	ran := 0
	for c, runner := range docCommands {
		if runner != "TestDocCommandsThroughPMCD" {
			continue
		}
		cmdline := local.Replace(c)
		t.Run(c, func(t *testing.T) {
			t.Parallel() // pmval and pmrep sample for a second or two
			runDocCommand(t, p, cmdline, pid)
		})
		ran++
	}
	require.Positive(t, ran)
}

// runDocCommand runs cmdline, a command of a page made local (paths and
// file names), with sh, through p (reached as the host's is, without -h),
// and checks it: it succeeds, PCP's tools print no error, and it shows the
// metrics it names (mmv.NAME<pid>...). pmval and pmrep, which sample until
// stopped, are stopped once they have printed a sample (their output line
// by line: stdbuf for pmval's stdio, PYTHONUNBUFFERED for pmrep, run
// with /usr/bin first in PATH for the system's python), and must print
// one within 10 s. It returns what the command printed.
func runDocCommand(t *testing.T, p *pcptest.PMCD, cmdline, pid string) string {
	t.Helper()
	samples := strings.HasPrefix(cmdline, "pmval") || strings.Contains(cmdline, "pmrep")
	wait := pcptest.Timeout
	switch {
	case samples:
		wait = 10 * time.Second
	case strings.HasPrefix(cmdline, "go "):
		wait = 5 * time.Minute // a build
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", cmdline)
	cmd.Env = append(os.Environ(), p.ClientEnv()...)
	out := &sampleWriter{}
	if samples {
		cmd = exec.CommandContext(ctx, "stdbuf", "-oL", "sh", "-c", cmdline)
		// The system's python first, for pmrep, as the README's footnote
		// says: another python may shadow it on PATH.
		cmd.Env = append(os.Environ(), append(p.ClientEnv(), "PYTHONUNBUFFERED=1", "PATH=/usr/bin:"+os.Getenv("PATH"))...)
		out.sampled = cancel
	}
	cmd.Stdout, cmd.Stderr = out, out
	// Stopping sh alone would leave pmval holding the output.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	printed := out.String()
	// A client that finds pmcd gone says only "Connection refused".
	assert.NoError(t, p.Died(), "%s: the test's pmcd", cmdline)
	if samples {
		assert.True(t, out.sample, "%s printed no sample in %v:\n%s", cmdline, wait, printed)
	} else {
		require.NoError(t, err, "%s\n%s", cmdline, printed)
	}
	// PCP's tools report on lines of their own.
	assert.NotRegexp(t, `(?m)^(Error|pm[a-z]+:|.*: Unknown )`, printed, "%s", cmdline)
	if !samples {
		for _, m := range regexp.MustCompile(`mmv\.[a-z]+`+pid+`[.a-z_0-9]*`).FindAllString(cmdline, -1) {
			assert.Contains(t, printed, m, "%s shows %s", cmdline, m)
		}
	}
	return printed
}

// sampleRE is a sample line of pmval or pmrep: a time, then a number.
var sampleRE = regexp.MustCompile(`(?m)^\s*[0-9:. ]+\s+[0-9.e+-]+\s*$`)

// sampleWriter keeps a command's output and, once it holds a sample line,
// calls sampled (when set) to stop the command.
type sampleWriter struct {
	mu      sync.Mutex
	b       strings.Builder
	sample  bool
	sampled func()
}

func (w *sampleWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	if !w.sample && w.sampled != nil && sampleRE.MatchString(w.b.String()) {
		w.sample = true
		w.sampled()
	}
	return len(p), nil
}

func (w *sampleWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestDaemonAgentChecks: the configuration line docs/production.md gives
// for the MMV agent as a daemon is the one pcptest.StartDaemonPMCD
// configures (with Debian's paths), and the commands the page gives to
// check it, run as it writes them through such a pmcd of the test's own
// (reached as the host's is, without -h), show what the page says: the
// agent a process of its own, the services' files, and 0 for the mmv
// agent's status.
func TestDaemonAgentChecks(t *testing.T) {
	t.Parallel() // a pmcd of its own
	page, err := os.ReadFile("docs/production.md")
	require.NoError(t, err)
	line := "\t" + strings.TrimSuffix(pcptest.DaemonAgentLine("/var/lib/pcp/pmdas/mmv"), "\n") + "\n"
	assert.Contains(t, string(page), line, "docs/production.md's pmcd.conf line for the daemon agent")

	p := pcptest.StartDaemonPMCD(t)
	agent := p.AgentPID()
	require.NotZero(t, agent, "pmdammv runs")
	pid := strconv.Itoa(os.Getpid())
	startReg(t, "checks"+pid, p.Dir, mmv.Options{Flags: mmv.Process}, func(r *mmv.Registry) {
		mmv.NewCounter(r, "count", "", mmv.Count).Inc()
	})
	require.Eventually(t, func() bool {
		ms, err := p.Fetch(context.Background(), "mmv.checks"+pid)
		return err == nil && len(ms) > 0
	}, 30*time.Second, 50*time.Millisecond, "pmcd's agent shows mmv.checks%s", pid)
	out := map[string]string{}
	for c, runner := range docCommands {
		if runner == "TestDaemonAgentChecks" {
			out[c] = runDocCommand(t, p, c, pid)
		}
	}
	require.Len(t, out, 3)
	assert.Regexp(t, fmt.Sprintf(`(?m)^%d .*pmdammv -d 70$`, agent), out["pgrep -a pmdammv"], "the agent, a process of its own")
	assert.Regexp(t, `(?m)^\s+value [1-9]`, out["pminfo -f mmv.control.files"], "the agent reads the file")
	assert.Regexp(t, `(?m)^\s+inst \[70 or "mmv"\] value 0$`, out["pminfo -f pmcd.agent.status"], "0 for an active agent")
}

// TestCrashReportScript runs the reproductions of docs/pcp-mmv-crash.md
// and docs/pcp-labels-crash.md as the pages write them: each C source and
// repro.sh, each the code block after the line naming it, in a directory
// of their own, then sh repro.sh, which starts a pmcd of its own (on port
// 44399, 44398). On PCP 6.0.3 that pmcd dies of the crash: the script
// prints how pmcd's client saw it and "pmcd exit status 11". It runs only
// with MMV_PCP_BUG=1, as TestProcessRestartPMCD (which says why CI does
// not), against the host's PCP (the scripts' paths are Debian's), as root
// with gcc, libpcp and libpcp_mmv.
func TestCrashReportScript(t *testing.T) {
	if os.Getenv("MMV_PCP_BUG") != "1" {
		t.Skip("reproduces pmcd crashes of PCP 6.0.3 (docs/pcp-mmv-crash.md, docs/pcp-labels-crash.md): set MMV_PCP_BUG=1 to run them against a pmcd of their own")
	}
	pcptest.MustHaveLibPCPMMV(t)
	if os.Geteuid() != 0 {
		pcptest.MustHave(t, errors.New("the scripts' pmcd runs as root"))
	}
	for _, c := range []struct {
		page   string
		files  []string
		client string // what the script prints when its client loses pmcd
	}{
		{"docs/pcp-mmv-crash.md", []string{"writer.c", "fetch.c", "repro.sh"}, `pmcd lost after [0-9]+ fetches`},
		{"docs/pcp-labels-crash.md", []string{"labels.c", "repro.sh"}, `labels: IPC protocol failure`},
	} {
		t.Run(filepath.Base(c.page), func(t *testing.T) {
			page, err := os.ReadFile(c.page)
			require.NoError(t, err)
			dir := t.TempDir()
			for _, name := range c.files {
				// "`NAME`:", a blank line, then the fenced block.
				re := regexp.MustCompile("(?s)\n`" + regexp.QuoteMeta(name) + "`:\n\n```[a-z]*\n(.*?)\n```\n")
				m := re.FindSubmatch(page)
				require.NotNil(t, m, "%s shows no %s", c.page, name)
				require.NoError(t, os.WriteFile(filepath.Join(dir, name), append(m[1], '\n'), 0o644))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "sh", "repro.sh")
			cmd.Dir = dir
			// The script's pmcd and clients are its children: stopped with it.
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
			cmd.WaitDelay = 5 * time.Second
			out, err := cmd.CombinedOutput()
			t.Logf("sh repro.sh:\n%s", out)
			require.NoError(t, err)
			assert.Regexp(t, `(?m)^`+c.client+`$`, string(out))
			assert.Regexp(t, `(?m)^pmcd exit status 11$`, string(out))
		})
	}
}
