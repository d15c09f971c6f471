//go:build unix

package mmv_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/goruntime"
	"github.com/gopcp/mmv/internal/pcptest"
)

// docPages are the pages whose every command docCommands accounts for.
// docs/fleet.md marks each of its commands run by CI or not where it shows
// it; docs/design.md is the design record.
var docPages = []string{"README.md", "docs/instruments.md", "docs/operating.md", "docs/registry.md", "docs/production.md", "docs/reader.md", "docs/testing.md"}

// docCommands says, for every command the pages show, what runs it: a
// test ("TestName", which must exist in the repository) or CI (".ci/run:
// TEXT", TEXT a line of .ci/run). A test or CI step may run it with
// another file name, interval or duration, as noted; the form is the
// page's.
var docCommands = map[string]string{
	// README.md
	"go get github.com/gopcp/mmv":                                      ".ci/run: go get github.com/gopcp/mmv@v0.0.0", // with a version: not on the proxy yet
	"apt-get install pcp libpcp-mmv1-dev":                              ".ci/run: packages=(pcp libpcp-mmv1-dev libpcp3-dev gcc)",
	"go run ./examples/quickstart -for 30s":                            ".ci/run: go run ./examples/quickstart -for 2s",
	"go test ./...":                                                    ".ci/run: go test ./...",
	"cd /var/lib/pcp/pmdas/mmv && ./Install":                           `.ci/run: (cd "$PCP_PMDAS_DIR/mmv" && as_root ./Install </dev/null >"$work/mmv-install.log" 2>&1) || {`,
	"go run ./examples/httpserver -for 1m":                             ".ci/run: for ex in quickstart httpserver runtime registry; do",
	"go run ./examples/runtime -for 1m":                                ".ci/run: for ex in quickstart httpserver runtime registry; do",
	"go run ./examples/registry -for 30s":                              ".ci/run: for ex in quickstart httpserver runtime registry; do",
	"cd otelexporter && go run ./example/shop -for 1m":                 `.ci/run: (cd otelexporter && PCP_TMP_DIR="$work/examples" go run ./example/shop -for 2s)`,
	"cd prombridge && go run ./example/web -for 1m":                    `.ci/run: (cd prombridge && PCP_TMP_DIR="$work/examples" go run ./example/web -for 2s)`,
	"MMV_REQUIRE_PCP=1 go test -race":                                  `.ci/run: (cd "$mod" && MMV_REQUIRE_PCP=1 go test -race -count=1 ./...)`,
	".ci/pcp7-chroot /var/cache/mmv-pcp7":                              `.ci/run: as_root "$PWD/.ci/pcp7-chroot" "$pcp7root"`,
	"MMV_REQUIRE_PCP=1 MMV_PCP_ROOT=/var/cache/mmv-pcp7 go test ./...": `.ci/run: (cd "$mod" && MMV_REQUIRE_PCP=1 MMV_PCP_ROOT="$pcp7root" go test -count=1 -run "$pattern" "$pkg")`, // the suites that take PCP as their oracle
	// docs/reader.md: PCP's reader loaded in pminfo, as pcptest.Info loads it.
	"pminfo -L -K add,70,.../pmda_mmv.so,mmv_init": "TestReadsWhatPCPReads",
	// Reading through PCP: README.md, docs/operating.md, docs/instruments.md.
	"pminfo -dfmtTl mmv.quickstart.http.requests":                    "TestDocCommandsThroughPMCD",
	"pmval -t 1 mmv.quickstart.http.requests":                        "TestDocCommandsThroughPMCD",
	"PATH=/usr/bin:$PATH pmrep -t 1 mmv.quickstart.http.latency.p99": "TestDocCommandsThroughPMCD",
	"go run ./cmd/mmvdump FILE":                                      "TestDocCommandsThroughPMCD",
	"go run ./cmd/mmvdump /var/lib/pcp/tmp/mmv/quickstart":           "TestDocCommandsThroughPMCD",
	"PCP_TMP_DIR=/var/lib/pcp/tmp pminfo -L -K clear -K add,70,/var/lib/pcp/pmdas/mmv/pmda_mmv.so,mmv_init -dfmtTl mmv":                            "TestDocCommandsThroughPMCD",
	`pmval -t 0.5 -i '"route=/hello,status=200"' mmv.httpserver.http.requests`:                                                                     "TestDocCommandsThroughPMCD",
	"pmval -t 0.5 mmv.httpserver.app.work_time":                                                                                                    "TestDocCommandsThroughPMCD",
	"PATH=/usr/bin:$PATH pmrep -t 1 mmv.app.latency.p99":                                                                                           "TestDocCommandsThroughPMCD",
	"pminfo -f mmv.goruntime.sched.goroutines_goroutines mmv.goruntime.cpu.classes.total_cpu_seconds mmv.goruntime.sched.latencies_seconds.bucket": "TestDocCommandsThroughPMCD",
}

// commandRE finds the commands of a page: the lines of ```sh blocks, the
// "$ " lines of any block, and inline code that starts like a command.
var (
	inlineRE  = regexp.MustCompile("`([^`]+)`")
	commandRE = regexp.MustCompile(`^(go (run|test|get) |cd |apt-get |PATH=|PCP_TMP_DIR=|MMV_REQUIRE_PCP=1 |pm[a-z]+ .*mmv\.)`)
)

func docPageCommands(t *testing.T, page string) []string {
	t.Helper()
	b, err := os.ReadFile(page)
	require.NoError(t, err)
	var cmds []string
	fence := ""
	for line := range strings.Lines(string(b)) {
		line = strings.TrimRight(line, "\n")
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			if fence == "" {
				fence = strings.TrimPrefix(trimmed, "```")
				if fence == "" {
					fence = "text"
				}
			} else {
				fence = ""
			}
			continue
		}
		switch {
		case fence == "sh":
			if c, _, _ := strings.Cut(trimmed, " # "); strings.TrimSpace(c) != "" {
				cmds = append(cmds, strings.TrimSpace(c))
			}
		case fence != "":
			if c, ok := strings.CutPrefix(trimmed, "$ "); ok {
				cmds = append(cmds, c)
			}
		default:
			for _, m := range inlineRE.FindAllStringSubmatch(line, -1) {
				if commandRE.MatchString(m[1]) {
					cmds = append(cmds, m[1])
				}
			}
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
	for _, page := range docPages {
		for _, c := range docPageCommands(t, page) {
			shown[c] = true
			runner, ok := docCommands[c]
			if !assert.True(t, ok, "%s shows a command nothing runs: %q (add it to docCommands, with its test or CI step)", page, c) {
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
// histogram and the Go runtime bridge. Each file name gets the test's pid
// (mmv.quickstart is mmv.quickstart<pid>), and the paths are the test
// pmcd's. pmval and pmrep, which sample until stopped, are stopped after
// two seconds, once they have printed.
func TestDocCommandsThroughPMCD(t *testing.T) {
	p := pcptest.StartPMCD(t)
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
	for _, name := range []string{"quickstart", "httpserver", "app", "goruntime"} {
		require.Eventually(t, func() bool {
			ms, err := p.Fetch(context.Background(), "mmv."+name+pid)
			return err == nil && len(ms) > 0
		}, 30*time.Second, 50*time.Millisecond, "pmcd's agent shows mmv.%s%s", name, pid)
	}
	tmp := filepath.Dir(p.Dir)
	agent := filepath.Join(pcptest.Config("PCP_PMDAS_DIR"), "mmv", "pmda_mmv.so")
	local := strings.NewReplacer(
		"mmv.quickstart.", "mmv.quickstart"+pid+".", "mmv.httpserver.", "mmv.httpserver"+pid+".",
		"mmv.app.", "mmv.app"+pid+".", "mmv.goruntime.", "mmv.goruntime"+pid+".",
		"/var/lib/pcp/tmp/mmv/quickstart", quick.Path(), "FILE", quick.Path(),
		"/var/lib/pcp/pmdas/mmv/pmda_mmv.so", agent, "/var/lib/pcp/tmp", tmp)
	ran := 0
	for c, runner := range docCommands {
		if runner != "TestDocCommandsThroughPMCD" {
			continue
		}
		cmdline := local.Replace(c)
		t.Run(c, func(t *testing.T) {
			t.Parallel() // pmval and pmrep sample for two seconds each
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			if strings.HasPrefix(cmdline, "go ") {
				ctx, cancel = context.WithTimeout(context.Background(), 5*time.Minute) // a build
				defer cancel()
			}
			cmd := exec.CommandContext(ctx, "sh", "-c", cmdline)
			cmd.Env = append(os.Environ(), p.ClientEnv()...)
			// Stopping sh alone would leave pmval holding the output.
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
			cmd.WaitDelay = 5 * time.Second
			out, err := cmd.CombinedOutput()
			stopped := ctx.Err() != nil && !strings.HasPrefix(cmdline, "go ")
			if !stopped {
				require.NoError(t, err, "%s\n%s", cmdline, out)
			}
			// PCP's tools report on lines of their own.
			assert.NotRegexp(t, `(?m)^(Error|pm[a-z]+:|.*: Unknown )`, string(out), "%s", cmdline)
			for _, m := range regexp.MustCompile(`mmv\.[a-z]+`+pid+`[.a-z_0-9]*`).FindAllString(cmdline, -1) {
				if !strings.HasPrefix(cmdline, "pmval") && !strings.Contains(cmdline, "pmrep") {
					assert.Contains(t, string(out), m, "%s shows %s", cmdline, m)
				}
			}
			if stopped { // pmval, pmrep: at least one sample after the header
				assert.Regexp(t, `(?m)^\s*[0-9:. ]+\s+[0-9.e+-]+\s*$`, string(out), "%s printed no sample:\n%s", cmdline, out)
			}
		})
		ran++
	}
	require.Positive(t, ran)
}
