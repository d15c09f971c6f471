package mmv_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
)

// The reader-cost model of docs/design.md ("What a registry costs PCP's
// reader") comes from TestReaderCost, which loads PCP's reader and pmcd
// for minutes, so it only runs when asked:
//
//	MMV_REQUIRE_PCP=1 go test -run TestReaderCost -v -timeout 30m -readercost
//
// and TestPaddedReaderCost, what Options.PadValues adds, likewise. CI runs
// both with -readercost.quick instead: the smallest shape of each kind, in
// seconds, so that the measurements keep working (their numbers are not
// checked: timings are no test).
var (
	readerCost      = flag.Bool("readercost", false, "measure what files of several shapes cost PCP's reader (TestReaderCost)")
	readerCostQuick = flag.Bool("readercost.quick", false, "run TestReaderCost and TestPaddedReaderCost on the smallest shape of each kind only, in seconds (CI)")
)

// costSizes returns full under -readercost, else the first of full alone
// (-readercost.quick); it skips the test when neither flag is set.
func costSizes(t *testing.T, full ...int) []int {
	t.Helper()
	switch {
	case *readerCost:
		return full
	case *readerCostQuick:
		return full[:1]
	}
	t.Skip("measures for minutes; run with -readercost (or -readercost.quick)")
	return nil
}

// costShape is one registry measured: indoms of instances each, and
// metrics over every indom (metrics singular ones when indoms is 0), in
// files files.
type costShape struct {
	files, indoms, instances, metrics int
}

func (s costShape) String() string {
	return fmt.Sprintf("%d files x %d indoms x %d instances x %d metrics", s.files, s.indoms, s.instances, s.metrics)
}

// values is the number of values the shape puts in a directory.
func (s costShape) values() int {
	if s.indoms == 0 {
		return s.files * s.metrics
	}
	return s.files * s.indoms * s.instances * s.metrics
}

// writeShape writes the shape's files into dir under names prefix0,
// prefix1... with options opts, caps removed, and returns their registries.
// Each registry is one file unless opts.MaxFileValues sets a budget.
func writeShape(t testing.TB, dir, prefix string, s costShape, opts mmv.Options) []*mmv.Registry {
	t.Helper()
	opts.Dir, opts.MaxIndomInstances, opts.MaxInstances, opts.MaxValues = dir, -1, -1, -1
	if opts.MaxFileValues == 0 { // one file, as the cost model measures
		opts.MaxFileValues = -1
	}
	var rs []*mmv.Registry
	for f := range s.files {
		r := mmv.NewRegistry(fmt.Sprintf("%s%d", prefix, f), &opts)
		for d := range s.indoms {
			insts := make([]mmv.Instance, s.instances)
			for i := range insts {
				insts[i] = mmv.Instance{ID: int32(i), Name: fmt.Sprintf("i%d", i)}
			}
			require.NoError(t, r.AddIndom(mmv.Indom{Serial: uint32(d + 1), Instances: insts}))
		}
		for m := range s.metrics {
			for d := range max(1, s.indoms) {
				ind := uint32(0)
				if s.indoms > 0 {
					ind = uint32(d + 1)
				}
				require.NoError(t, r.AddMetric(mmv.Metric{Name: fmt.Sprintf("m%d.d%d", m, d), Type: mmv.Uint64, Semantics: mmv.SemCounter, Indom: ind}))
			}
		}
		startOrSkip(t, r)
		t.Cleanup(func() { // also after a failure, above all in the host pmcd's directory
			r.Close()
			os.Remove(r.Path())
			for i := 2; os.Remove(fmt.Sprintf("%s.%d", r.Path(), i)) == nil; i++ {
			}
		})
		rs = append(rs, r)
	}
	return rs
}

// timeCmd runs a command (with env changes as pcptest's: "NAME=" unsets)
// n times and returns the median of the wall times.
func timeCmd(t testing.TB, n int, env []string, name string, args ...string) time.Duration {
	t.Helper()
	var ds []time.Duration
	for range n {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Env = append(os.Environ(), env...)
		start := time.Now()
		out, err := cmd.CombinedOutput()
		ds = append(ds, time.Since(start))
		cancel()
		require.NoError(t, err, "%s %v: %.2000s", name, args, out)
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// agentFetch is the time pminfo takes to fetch everything under mmv with
// the MMV agent in-process, over the files in tmp/mmv: the agent's cost
// alone, without pmcd.
func agentFetch(t testing.TB, tmp string) time.Duration {
	args := append(pcptest.InfoArgs(filepath.Join(pcptest.Config("PCP_PMDAS_DIR"), "mmv", "pmda_mmv.so"))[:5], "-f", "mmv")
	return timeCmd(t, 3, []string{"PCP_TMP_DIR=" + tmp}, "pminfo", args...)
}

// pmcdFetch is the time pminfo -f takes through pmcd p.
func pmcdFetch(t testing.TB, p *pcptest.PMCD, n int, names ...string) time.Duration {
	return timeCmd(t, n, []string{"PCP_TMP_DIR="}, "pminfo", append([]string{"-h", p.Host(), "-f"}, names...)...)
}

// costPMCD returns the pmcd the measurements read through: the host's,
// as users' are, under -readercost; under -readercost.quick, one of the
// test's own, so that CI's run cannot take the host's down.
func costPMCD(t *testing.T) *pcptest.PMCD {
	if *readerCost {
		return pcptest.MustHavePMCD(t)
	}
	return pcptest.StartPMCD(t)
}

func TestReaderCost(t *testing.T) {
	costSizes(t, 0)
	p := costPMCD(t)
	pcptest.MustHaveLibPCPMMV(t)
	measure := func(s costShape, viaPMCD bool) {
		tmp := t.TempDir()
		dir := filepath.Join(tmp, "mmv")
		rs := writeShape(t, dir, "cost", s, mmv.Options{})
		agent := agentFetch(t, tmp)
		for _, r := range rs {
			require.NoError(t, r.Close())
		}
		line := fmt.Sprintf("%-48v values %7d  agent %8.3fs", s, s.values(), agent.Seconds())
		if viaPMCD {
			prefix := fmt.Sprintf("cost%d_", os.Getpid())
			rs := writeShape(t, p.Dir, prefix, s, mmv.Options{})
			first := pmcdFetch(t, p, 1, "mmv."+prefix+"0")
			again := pmcdFetch(t, p, 3, "mmv."+prefix+"0")
			for _, r := range rs {
				require.NoError(t, r.Close())
				require.NoError(t, os.Remove(r.Path()))
			}
			line += fmt.Sprintf("  pmcd first %8.3fs  pmcd %8.3fs", first.Seconds(), again.Seconds())
		}
		t.Log(line)
	}
	t.Log("instances in one indom, one metric:")
	for _, n := range costSizes(t, 500, 1000, 2000, 4000, 8000, 16000) {
		measure(costShape{1, 1, n, 1}, n <= 8000)
	}
	t.Log("16000 instances over several indoms, one metric over each:")
	for _, d := range costSizes(t, 2, 4, 16) {
		measure(costShape{1, d, 16000 / d, 1}, true)
	}
	t.Log("values per file: metrics over one indom of 100 instances:")
	for _, m := range costSizes(t, 1, 10, 100, 1000) {
		measure(costShape{1, 1, 100, m}, false)
	}
	t.Log("files per directory, 10 singular metrics each:")
	for _, f := range costSizes(t, 1, 10, 100) {
		measure(costShape{f, 0, 0, 10}, false)
	}
	t.Log("libpcp_mmv's file against ours, one indom, one metric:")
	for _, n := range costSizes(t, 4000, 8000) {
		tmp := t.TempDir()
		require.NoError(t, os.Mkdir(filepath.Join(tmp, "mmv"), 0o755))
		writeLibpcpShape(t, tmp, n, 1)
		c := agentFetch(t, tmp)
		ours := t.TempDir()
		for _, r := range writeShape(t, filepath.Join(ours, "mmv"), "cost", costShape{1, 1, n, 1}, mmv.Options{}) {
			require.NoError(t, r.Close())
		}
		goTime := agentFetch(t, ours)
		t.Logf("%d instances: libpcp_mmv %.3fs, ours %.3fs, ratio %.2f", n, c.Seconds(), goTime.Seconds(), goTime.Seconds()/c.Seconds())
	}
	_, err := p.Fetch(context.Background(), "mmv.control.files")
	require.NoError(t, err, "pmcd no longer answers")
}

// TestPaddedReaderCost measures what Options.PadValues costs PCP's reader:
// the same shapes packed and padded, in the same run (also with
// -readercost, or -readercost.quick).
func TestPaddedReaderCost(t *testing.T) {
	shapes := []costShape{{1, 1, 1000, 1}, {1, 1, 4000, 1}, {1, 1, 8000, 1}, {1, 1, 16000, 1}, {1, 1, 100, 100}}
	shapes = shapes[:len(costSizes(t, make([]int, len(shapes))...))]
	p := costPMCD(t)
	t.Log("padded values (Options.PadValues) against packed:")
	for _, s := range shapes {
		var agent, viaPMCD [2]time.Duration
		for i, pad := range []bool{false, true} {
			tmp := t.TempDir()
			for _, r := range writeShape(t, filepath.Join(tmp, "mmv"), "cost", s, mmv.Options{PadValues: pad}) {
				require.NoError(t, r.Close())
			}
			agent[i] = agentFetch(t, tmp)
			prefix := fmt.Sprintf("cost%d_%v_", os.Getpid(), pad)
			rs := writeShape(t, p.Dir, prefix, s, mmv.Options{PadValues: pad})
			pmcdFetch(t, p, 1, "mmv."+prefix+"0") // the file loaded
			viaPMCD[i] = pmcdFetch(t, p, 3, "mmv."+prefix+"0")
			for _, r := range rs {
				require.NoError(t, r.Close())
				require.NoError(t, os.Remove(r.Path()))
			}
		}
		t.Logf("%v: agent packed %.3fs, padded %.3fs, ratio %.2f; pmcd packed %.3fs, padded %.3fs, ratio %.2f", s,
			agent[0].Seconds(), agent[1].Seconds(), agent[1].Seconds()/agent[0].Seconds(),
			viaPMCD[0].Seconds(), viaPMCD[1].Seconds(), viaPMCD[1].Seconds()/viaPMCD[0].Seconds())
	}
	_, err := p.Fetch(context.Background(), "mmv.control.files")
	require.NoError(t, err, "pmcd no longer answers")
}

// writeLibpcpShape writes, with libpcp_mmv, in tmp/mmv, the file
// writeShape writes for one indom of instances and metrics over it, named
// cost0.
func writeLibpcpShape(t testing.TB, tmp string, instances, metrics int) {
	t.Helper()
	pcptest.MustHaveLibPCPMMV(t)
	build := t.TempDir()
	cfile := filepath.Join(build, "c.c")
	require.NoError(t, os.WriteFile(cfile, []byte(costC), 0o644))
	bin := filepath.Join(build, "c")
	out, err := exec.Command("gcc", "-o", bin, cfile, "-lpcp_mmv", "-lpcp").CombinedOutput()
	require.NoError(t, err, "gcc: %s", out)
	cmd := exec.Command(bin, fmt.Sprint(instances), fmt.Sprint(metrics))
	cmd.Env = append(os.Environ(), "PCP_TMP_DIR="+tmp)
	out, err = cmd.CombinedOutput()
	require.NoError(t, err, "libpcp_mmv writer: %s", out)
}

// costC writes, with libpcp_mmv, the file writeShape writes for one indom
// of argv[1] instances and argv[2] counters over it.
const costC = `#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pcp/pmapi.h>
#include <pcp/mmv_stats.h>
int main(int argc, char **argv) {
	int n = atoi(argv[1]), metrics = atoi(argv[2]), i;
	char name[32];
	mmv_registry_t *r = mmv_stats_registry("cost0", 0, 0);
	pmUnits none = MMV_UNITS(0, 0, 0, 0, 0, 0);
	if (r == NULL || mmv_stats_add_indom(r, 1, NULL, NULL) != 0) return 1;
	for (i = 0; i < n; i++) {
		snprintf(name, sizeof name, "i%d", i);
		/* 6.0.3 returns -1 on success; it keeps names' pointers */
		mmv_stats_add_instance(r, 1, i, strdup(name));
	}
	for (i = 0; i < metrics; i++) {
		snprintf(name, sizeof name, "m%d.d0", i);
		if (mmv_stats_add_metric(r, strdup(name), i + 1, MMV_TYPE_U64, MMV_SEM_COUNTER, none, 1, NULL, NULL) != 0) return 1;
	}
	if (mmv_stats_start(r) == NULL) return 1;
	return 0; /* no PROCESS flag: the file stays */
}
`
