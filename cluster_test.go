package mmv_test

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
)

// The rule: no file a registry starts shares its cluster with another live
// file of its directory (one PCP's reader shows), whatever chose the
// cluster: derived from the name, Options.Cluster, an overflow part.

// TestExplicitClusterOnOverflowPart (issue 21, item 6): a registry given
// the cluster that another registry's overflow part holds is refused with
// ErrClusterInUse, naming the cluster, the file and its writer; it made
// PCP show 77 of 100 values under the other registry's names. On a free
// cluster both registries start, and PCP shows every value under its own
// name.
func TestExplicitClusterOnOverflowPart(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "mmv")
	const nb, na = mmv.MaxMetrics + 77, 100
	startReg(t, "ovb", dir, mmv.Options{Cluster: 10}, func(r *mmv.Registry) {
		for i := range nb {
			mmv.NewCounter(r, fmt.Sprintf("b%d", i), "", mmv.Count).Add(uint64(i))
		}
	})
	require.Equal(t, uint32(11), headerCluster(t, filepath.Join(dir, "ovb.2")), "the overflow part's cluster")

	a := newRegistry(t, "ova", dir, mmv.Options{Cluster: 11})
	for i := range na {
		mmv.NewCounter(a, fmt.Sprintf("a%d", i), "", mmv.Count).Add(uint64(100000 + i))
	}
	err := a.Start()
	require.ErrorIs(t, err, mmv.ErrClusterInUse, "a cluster the overflow part ovb.2 holds")
	for _, want := range []string{`"ova"`, "cluster 11", `"ovb.2"`, "pid " + strconv.Itoa(os.Getpid())} {
		assert.Contains(t, err.Error(), want)
	}
	t.Log(err)
	assert.NoFileExists(t, filepath.Join(dir, "ova"), "the refused registry's file")

	o := a.Options()
	o.Cluster = 12
	require.NoError(t, a.Configure("ova", o))
	require.NoError(t, a.Start(), "on a free cluster")
	assert.Equal(t, 3, len(liveClusters(t, dir)), "three files on three clusters")

	if !pcptest.WantPCP(t) {
		return
	}
	ms := pcptest.Info(t, tmp)
	wrong := 0
	for i := range na {
		if m := pcptest.Find(ms, fmt.Sprintf("mmv.ova.a%d", i)); m == nil || m.Value != strconv.Itoa(100000+i) {
			wrong++
		}
	}
	for i := range nb {
		if m := pcptest.Find(ms, fmt.Sprintf("mmv.ovb.b%d", i)); m == nil || m.Value != strconv.Itoa(i) {
			wrong++
		}
	}
	assert.Zero(t, wrong, "values PCP shows missing or under another metric's name")
}

// TestOverflowPartAfterStart: an overflow part made by a growth step after
// Start takes the first free cluster after its first file's, past one
// that another registry of the directory was given explicitly.
func TestOverflowPartAfterStart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mmv")
	startReg(t, "given", dir, mmv.Options{Cluster: 20}, func(r *mmv.Registry) { mmv.NewCounter(r, "c", "", mmv.Count) })
	r := startReg(t, "grows", dir, mmv.Options{Cluster: 19}, func(r *mmv.Registry) { mmv.NewCounter(r, "c", "", mmv.Count) })
	for i := range mmv.MaxMetrics {
		mmv.NewCounter(r, fmt.Sprintf("m%d", i), "", mmv.Count)
	}
	require.NoError(t, r.Flush())
	assert.Equal(t, map[uint32][]string{19: {"grows"}, 20: {"given"}, 21: {"grows.2"}}, liveClusters(t, dir))
}

// TestPartsOnClustersOfTheirOwn: the files one Start makes, and those one
// publication adds, each take a cluster no other file of the directory
// has: they are claimed under one scan of the directory, each part's
// cluster counted as its file is made. The files of another registry
// before them, on the clusters after "given"'s, push them further.
func TestPartsOnClustersOfTheirOwn(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mmv")
	startReg(t, "given", dir, mmv.Options{Cluster: 30}, func(r *mmv.Registry) { mmv.NewCounter(r, "c", "", mmv.Count) })
	startReg(t, "next", dir, mmv.Options{Cluster: 32}, func(r *mmv.Registry) { mmv.NewCounter(r, "c", "", mmv.Count) })
	opts := mmv.Options{Cluster: 29, MaxFileValues: 10}
	r := startReg(t, "many", dir, opts, func(r *mmv.Registry) {
		for i := range 4 {
			mmv.NewCounterVec(r, fmt.Sprintf("v%d", i), "", mmv.Count, "k") // a file each
		}
	})
	for i := range 3 { // one publication, three files more
		mmv.NewCounterVec(r, fmt.Sprintf("w%d", i), "", mmv.Count, "k")
	}
	require.NoError(t, r.Flush())
	assert.Equal(t, map[uint32][]string{
		29: {"many"}, 30: {"given"}, 31: {"many.2"}, 32: {"next"}, 33: {"many.3"}, 34: {"many.4"}, 35: {"many.5"},
		36: {"many.6"}, 37: {"many.7"},
	}, liveClusters(t, dir))
}

// TestExplicitClusterTaken: an explicit cluster is refused when any live
// file of the directory has it: a started registry's, given explicitly or
// derived, and the file a registry closed without the Process flag left,
// which PCP goes on reading. A Process file whose writer died is not
// live (PCP skips it), nor a file of another directory, and ReaderCluster
// is never refused. A derived cluster moves past live files only.
func TestExplicitClusterTaken(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mmv")
	one := func(r *mmv.Registry) { mmv.NewCounter(r, "c", "", mmv.Count) }
	refused := func(c uint32, holder string) {
		t.Helper()
		r := newRegistry(t, "late", dir, mmv.Options{Cluster: c})
		one(r)
		err := r.Start()
		require.ErrorIs(t, err, mmv.ErrClusterInUse, "cluster %d, held by %s", c, holder)
		assert.Contains(t, err.Error(), fmt.Sprintf("cluster %d", c))
		assert.Contains(t, err.Error(), strconv.Quote(holder))
		require.NoError(t, r.Close())
	}

	startReg(t, "explicit", dir, mmv.Options{Cluster: 7}, one)
	refused(7, "explicit")

	derived := startReg(t, "derived", dir, mmv.Options{}, one)
	refused(headerCluster(t, derived.Path()), "derived")

	left := startReg(t, "left", dir, mmv.Options{Cluster: 9}, one)
	require.NoError(t, left.Close())
	refused(9, "left")

	// A copy of a Process file whose writer is gone: PCP skips it.
	gone := startReg(t, "gone", dir, mmv.Options{Cluster: 13, Flags: mmv.Process}, one)
	b, err := os.ReadFile(gone.Path())
	require.NoError(t, err)
	require.NoError(t, gone.Close())
	putPid(b, deadPid(t))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "dead"), b, 0o644))
	startReg(t, "reuse", dir, mmv.Options{Cluster: 13}, one)

	startReg(t, "elsewhere", filepath.Join(t.TempDir(), "mmv"), mmv.Options{Cluster: 7}, one)
	startReg(t, "reader1", dir, mmv.Options{Cluster: mmv.ReaderCluster}, one)
	startReg(t, "reader2", dir, mmv.Options{Cluster: mmv.ReaderCluster}, one)
	live := liveClusters(t, dir)
	assert.Equal(t, map[uint32][]string{7: {"explicit"}, headerCluster(t, derived.Path()): {"derived"}, 9: {"left"}, 13: {"reuse"}},
		live, "the directory's live files by cluster")
}

// TestClustersAcrossProcesses (issue 21, items 1 and 6): processes
// starting registries on one directory at the same moment, with derived
// clusters that collide (names that hash alike) and explicit clusters on
// the one they hash to, on the one after it, and one before it whose
// overflow part wants it: no two live files ever share a cluster, every
// derived one starts, every explicit one either gets its cluster or is
// refused with ErrClusterInUse, and PCP shows each registry's values under
// its own names. Three rounds, each in a fresh directory.
func TestClustersAcrossProcesses(t *testing.T) {
	needFileLayer(t)
	if childRole() == "cluster" {
		playClusterChild(t)
		return
	}
	t.Parallel() // it waits on its children
	tmp := t.TempDir()
	names := clashingNames(4)
	c := derivedCluster(names[0])
	type spec struct {
		name    string
		cluster uint32
		metrics int
	}
	specs := []spec{{name: "exp0", cluster: c}, {name: "exp1", cluster: c}, {name: "exp2", cluster: c},
		{name: "next", cluster: c%2047 + 1}, {name: "over", cluster: (c+2045)%2047 + 1, metrics: mmv.MaxMetrics + 10}}
	for _, n := range names {
		specs = append(specs, spec{name: n})
	}
	for round := range 3 {
		sub := fmt.Sprintf("round%d", round)
		dir := filepath.Join(tmp, sub, "mmv")
		type child struct {
			cmd   *exec.Cmd
			start io.WriteCloser
			ready <-chan string
		}
		children := make([]child, len(specs))
		for i, s := range specs {
			cmd, in, ready := launchChild(t, "TestClustersAcrossProcesses", "cluster",
				"MMV_TEST_DIR="+dir, "MMV_TEST_SPEC="+fmt.Sprintf("%s,%d,%d,%d", s.name, s.cluster, s.metrics, 1000*(i+1)))
			children[i] = child{cmd, in, ready}
		}
		// Every child declares, says it is armed, and waits for the time
		// to call Start, the same for all: they contend at once however
		// long the launches took.
		for i, ch := range children {
			select {
			case x, ok := <-ch.ready:
				require.True(t, ok && x == "armed", "%s: child %s ended before it was armed", sub, specs[i].name)
			case <-time.After(time.Minute):
				t.Fatalf("%s: child %s was not armed in a minute", sub, specs[i].name)
			}
		}
		at := time.Now().Add(50 * time.Millisecond)
		for _, ch := range children {
			fmt.Fprintln(ch.start, at.UnixNano())
		}
		// Until every child has reported, the directory is looked at
		// again and again: no two live files may share a cluster at any
		// moment, not only at the end.
		reports := make([]string, len(children))
		for i, reported := 0, 0; reported < len(children); {
			for cl, files := range liveClusters(t, dir) {
				require.Len(t, files, 1, "%s: files sharing cluster %d while the registries start", sub, cl)
			}
			select {
			case x, ok := <-children[i].ready:
				require.True(t, ok, "%s: child %s ended without a report", sub, specs[i].name)
				reports[i] = x
				reported, i = reported+1, i+1
			case <-time.After(time.Millisecond):
			}
			require.True(t, time.Now().Before(at.Add(time.Minute)), "%s: the children did not report", sub)
		}
		started := map[string]int{} // registry name → its value of id
		for i, x := range reports {
			switch {
			case x == "ok":
				started[specs[i].name] = 1000 * (i + 1)
			case specs[i].cluster != 0 && strings.Contains(x, mmv.ErrClusterInUse.Error()):
				t.Logf("%s: %s refused: %s", sub, specs[i].name, x)
			default:
				t.Errorf("%s: %s (cluster %d): %q", sub, specs[i].name, specs[i].cluster, x)
			}
		}
		live := liveClusters(t, dir)
		for cl, files := range live {
			assert.Len(t, files, 1, "%s: files sharing cluster %d", sub, cl)
		}
		assert.Len(t, live[c], 1, "%s: cluster %d, which every contender wanted, has one file", sub, c)
		for _, n := range names {
			assert.Contains(t, started, n, "%s: a derived cluster is never refused", sub)
		}
		if pcptest.WantPCP(t) {
			ms := pcptest.Info(t, filepath.Join(tmp, sub))
			for name, id := range started {
				if m := pcptest.Find(ms, "mmv."+name+".id"); assert.NotNil(t, m, "%s: mmv.%s.id", sub, name) {
					assert.Equal(t, strconv.Itoa(id), m.Value, "%s: mmv.%s.id", sub, name)
				}
			}
			if id, ok := started["over"]; ok {
				for i := range mmv.MaxMetrics + 10 {
					m := pcptest.Find(ms, fmt.Sprintf("mmv.over.m%d", i))
					require.NotNil(t, m, "%s: mmv.over.m%d", sub, i)
					require.Equal(t, strconv.Itoa(id+i), m.Value, "%s: mmv.over.m%d", sub, i)
				}
			}
		}
		for _, ch := range children {
			ch.cmd.Process.Kill()
			ch.cmd.Wait()
		}
	}
}

// playClusterChild declares the registry MMV_TEST_SPEC describes (name,
// cluster, extra metrics, id) in MMV_TEST_DIR, prints "ready armed",
// starts it at the time (Unix nanoseconds) its standard input gives,
// prints "ready ok" or "ready " and the error, and holds its file until
// killed.
func playClusterChild(t *testing.T) {
	f := strings.Split(os.Getenv("MMV_TEST_SPEC"), ",")
	cluster, _ := strconv.Atoi(f[1])
	metrics, _ := strconv.Atoi(f[2])
	id, _ := strconv.Atoi(f[3])
	r := mmv.NewRegistry(f[0], &mmv.Options{Dir: os.Getenv("MMV_TEST_DIR"), Cluster: uint32(cluster), Flags: mmv.Process})
	mmv.NewCounter(r, "id", "", mmv.Count).Add(uint64(id))
	for i := range metrics {
		mmv.NewCounter(r, fmt.Sprintf("m%d", i), "", mmv.Count).Add(uint64(id + i))
	}
	fmt.Println("ready armed")
	var at int64
	if _, err := fmt.Scan(&at); err != nil {
		fmt.Println("ready no start time:", err)
		return
	}
	time.Sleep(time.Until(time.Unix(0, at)))
	if err := r.Start(); err != nil {
		fmt.Println("ready", strings.ReplaceAll(err.Error(), "\n", " "))
		return
	}
	fmt.Println("ready ok")
	time.Sleep(time.Hour) // until killed
}
