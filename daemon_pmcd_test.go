package mmv_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
)

// PCP's MMV agent run as a daemon (pipe) agent, pmdammv, rather than a DSO
// inside pmcd, contains the pmcd crash of PCP 6.0.3 (docs/design.md, "A
// pmcd crash in PCP's reader"; docs/production.md): the crash
// reproduction of TestProcessRestartPMCD, a registry with the Process flag
// restarting under a back-to-back fetch loop, kills the agent, pmcd goes
// on answering, starts the agent again, and a registry's metrics are
// fetched again. In a pmcd of the test's own.
func TestDaemonAgentContainsCrash(t *testing.T) {
	t.Parallel() // a pmcd of its own
	p := pcptest.StartDaemonPMCD(t)
	agent := p.AgentPID()
	require.NotZero(t, agent, "pmdammv runs")
	stable := startReg(t, "stable", p.Dir, mmv.Options{}, func(r *mmv.Registry) {
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "count", Item: 1, Type: mmv.Uint64, Semantics: mmv.SemCounter}))
	})
	value(t, stable, "count", "").Set(42)
	requireStable(t, p, 10*time.Second)

	var stop atomic.Bool
	done := make(chan int, 1)
	go func() { done <- restartLoop(t, p.Dir, "restart", mmv.Process, &stop) }()
	go func() { // the writer stops at the agent's first death: pmcd starts it again at once only once a minute
		for !stop.Load() && p.AgentPID() == agent {
			time.Sleep(time.Millisecond)
		}
		stop.Store(true)
	}()
	start, fetches := time.Now(), 0
	for time.Since(start) < 30*time.Second && !stop.Load() {
		f, err := p.TryFetchLoop(t, "mmv.restart.count", 300*time.Millisecond)
		fetches += f.N
		require.NoError(t, p.Died(), "pmcd")
		if err != nil {
			// A loop started as the agent died looks the name up in
			// vain: pmcd knows none of its names until it is back.
			require.Eventually(t, func() bool { return strings.Contains(p.Log(), agentDied) },
				5*time.Second, 10*time.Millisecond, "the loop failed with the agent alive: %v", err)
			break
		}
		require.False(t, f.Lost, "pmcd stopped answering")
	}
	stop.Store(true)
	lives := <-done
	crashed := p.AgentPID() != agent
	t.Logf("%d lifetimes, %d fetches in %v; the agent crashed: %v", lives, fetches, time.Since(start).Round(time.Millisecond), crashed)
	require.True(t, crashed, "the crash reproduction did not crash pmdammv in 30 s: nothing was proven")
	// pmcd logs the agent's end: 'Cleanup "mmv" agent (dom 70): protocol
	// failure for fd=8, signal(11)', the segmentation fault that takes a
	// DSO's pmcd down.
	require.Contains(t, p.Log(), agentDied, "pmdammv died")
	require.Contains(t, p.Log(), "signal(11)", "pmdammv died of the segmentation fault")

	// pmcd answers while the agent is down or starting again.
	ctx, cancel := context.WithTimeout(context.Background(), pcptest.Timeout)
	defer cancel()
	_, err := p.Fetch(ctx, "pmcd.agent.status")
	require.NoError(t, err, "pmcd answers")
	// pmcd starts the agent again: at once after its first death, after
	// up to a minute when it died again meanwhile.
	back := requireStable(t, p, 75*time.Second)
	t.Logf("the agent is back (pid %d, was %d) and fetched again after %v", p.AgentPID(), agent, back.Round(time.Millisecond))
	require.NoError(t, p.Died(), "pmcd")
}

// TestDaemonAgentContainsLabelsCrash: the second pmcd crash of PCP 6.0.3
// and 7.2.2 (docs/pcp-labels-crash.md; docs/production.md), a client
// asking the labels of an indom's instances after another client fetched
// from the agent and ended, touches neither pmcd nor the agent when the
// agent is a daemon (PCP's DoLabel sends a daemon agent the asking
// client's profile first, a DSO none): every round, every instance's label
// set comes back, and pmdammv lives on. In a pmcd of the test's own.
func TestDaemonAgentContainsLabelsCrash(t *testing.T) {
	t.Parallel() // a pmcd of its own
	p := pcptest.StartDaemonPMCD(t)
	agent := p.AgentPID()
	require.NotZero(t, agent, "pmdammv runs")
	sets, err := labelsAfterFetch(t, p, 10)
	require.NoError(t, p.Died(), "pmcd")
	require.NoError(t, err, "instances' labels")
	require.Equal(t, slices.Repeat([]int{3}, 10), sets, "a label set for each instance, every round")
	require.Equal(t, agent, p.AgentPID(), "pmdammv lives on")
}

// TestLabelsAfterFetchPMCD is the reproduction of the second crash against
// a pmcd whose MMV agent is a DSO, the default: the sequence of
// TestDaemonAgentContainsLabelsCrash. pmcd dies of a segmentation fault at
// a labels request (in __pmInProfile, under pmdaLabel), in every run here:
// at the seventh round on PCP 6.0.3, after wrong answers at the third to
// fifth, and at the first on 7.2.2 (MMV_PCP_ROOT). So, as TestProcessRestartPMCD, it runs
// only with MMV_PCP_BUG=1, only against a pmcd of its own, for checking a
// newer PCP by hand.
func TestLabelsAfterFetchPMCD(t *testing.T) {
	if os.Getenv("MMV_PCP_BUG") != "1" {
		t.Skip("reproduces a pmcd crash of PCP 6.0.3 (docs/pcp-labels-crash.md): set MMV_PCP_BUG=1 to run it against a pmcd of its own")
	}
	p := pcptest.StartPMCD(t)
	sets, err := labelsAfterFetch(t, p, 10)
	t.Logf("label sets by round: %v", sets)
	if err != nil { // pmcd lost, maybe not yet reaped: wait to say how it ended
		for start := time.Now(); p.Died() == nil && time.Since(start) < 2*time.Second; {
			time.Sleep(10 * time.Millisecond)
		}
		t.Logf("pmcd's log (its traceback, if it died):\n%s", p.Log())
	}
	require.NoError(t, p.Died(), "pmcd")
	require.NoError(t, err, "instances' labels")
	require.Equal(t, slices.Repeat([]int{3}, 10), sets, "a label set for each instance, every round")
}

// labelsAfterFetch declares a counter over three instances in p's
// directory, then, rounds times, has a client connected to p ask their
// labels after another client fetched from the agent and ended: pmval
// with an instance profile (-i) and pminfo -f in turn, as the doc commands
// of TestDocCommandsThroughPMCD do when they run at once. It returns the
// label sets of each round, up to the first that failed, and its error.
func labelsAfterFetch(t *testing.T, p *pcptest.PMCD, rounds int) ([]int, error) {
	t.Helper()
	const name = "mmv.routes.requests"
	r := startReg(t, "routes", p.Dir, mmv.Options{}, func(r *mmv.Registry) {
		require.NoError(t, r.AddIndom(mmv.Indom{Serial: 1, Instances: []mmv.Instance{{ID: 0, Name: "a"}, {ID: 1, Name: "b"}, {ID: 2, Name: "c"}}}))
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "requests", Item: 1, Type: mmv.Uint64, Semantics: mmv.SemCounter, Indom: 1}))
	})
	value(t, r, "requests", "a").Set(1)
	require.Eventually(t, func() bool { // the agent sees the file
		ms, err := p.Fetch(context.Background(), name)
		return err == nil && len(ms) == 1
	}, 10*time.Second, 50*time.Millisecond, "%s fetched", name)
	clients := [][]string{{"pmval", "-h", p.Host(), "-s", "1", "-i", "a", name}, {"pminfo", "-h", p.Host(), "-f", name}}
	var sets []int
	for i := range rounds {
		n, err := p.InstanceLabels(t, name, func() {
			c := clients[i%len(clients)]
			out, err := exec.Command(c[0], c[1:]...).CombinedOutput()
			require.NoError(t, err, "%s:\n%s", c[0], out)
		})
		if err != nil {
			return sets, fmt.Errorf("round %d: %w", i+1, err)
		}
		sets = append(sets, n)
	}
	return sets, nil
}

// agentDied is what pmcd logs when the MMV agent's pipe closes.
const agentDied = `"mmv" agent (dom 70): protocol failure`

// requireStable waits, at most d, for the stable registry's counter to be
// fetched through p with its value, 42, and returns how long it took.
func requireStable(t *testing.T, p *pcptest.PMCD, d time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	var last string
	for time.Since(start) < d {
		ctx, cancel := context.WithTimeout(context.Background(), pcptest.Timeout)
		ms, err := p.Fetch(ctx, "mmv.stable.count")
		cancel()
		if err == nil && len(ms) == 1 && ms[0].Value == "42" {
			return time.Since(start)
		}
		last = fmt.Sprintf("%v %+v", err, ms)
		require.NoError(t, p.Died(), "pmcd")
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("mmv.stable.count not fetched with its value in %v: %s", d, last)
	return 0
}

// BenchmarkAgentFetch compares what a fetch costs through a pmcd whose MMV
// agent is a DSO (the default) and one whose agent is a daemon
// (docs/production.md), each a pmcd of its own: a fetch of one counter, as
// a client polling a service does, and a whole fetch of the largest
// registry default options accept.
func BenchmarkAgentFetch(b *testing.B) {
	for _, daemon := range []bool{false, true} {
		kind := "dso"
		start := pcptest.StartPMCD
		if daemon {
			kind, start = "daemon", pcptest.StartDaemonPMCD
		}
		b.Run(kind, func(b *testing.B) {
			p := start(b)
			one := mmv.NewRegistry("one", &mmv.Options{Dir: p.Dir})
			require.NoError(b, one.AddMetric(mmv.Metric{Name: "count", Type: mmv.Uint64, Semantics: mmv.SemCounter}))
			startOrSkip(b, one)
			defer one.Close()
			worst := writeDefault(b, p.Dir, "worst", worstDefaultShape())
			defer worst.Close()
			// The first fetches load the files; a daemon agent may not
			// know the names at once.
			for _, name := range []string{"mmv.one", "mmv.worst"} {
				for start := time.Now(); ; time.Sleep(10 * time.Millisecond) {
					_, err := p.TryFetchAll(name, 1)
					if err == nil {
						break
					}
					require.Less(b, time.Since(start), 10*time.Second, "%s: %v", name, err)
				}
			}
			b.Run("one", func(b *testing.B) {
				var w pcptest.Whole
				for b.Loop() {
					w = p.FetchAll(b, "mmv.one", 200)
				}
				reportWhole(b, w)
			})
			b.Run("worst", func(b *testing.B) {
				var w pcptest.Whole
				for b.Loop() {
					w = p.FetchAll(b, "mmv.worst", 5)
				}
				reportWhole(b, w)
			})
		})
	}
}
