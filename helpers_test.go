package mmv_test

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/osfile"
	"github.com/gopcp/mmv/internal/pcpconf"
	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/mmvfile"
)

// Tests that need another process re-run the test binary on themselves:
// childEnv names the part to play, and the test function plays it when the
// variable is set, instead of testing.

const childEnv = "MMV_TEST_CHILD"

// childRole returns the part this process plays, "" in the test itself.
func childRole() string { return os.Getenv(childEnv) }

// childCmd returns a command running test in a copy of the test binary as
// role, with env added. With attr (another user's credential), the child
// runs as that user, from a copy of the binary it can read (the go tool's
// build directory is private).
func childCmd(t *testing.T, test, role string, attr *syscall.SysProcAttr, env ...string) *exec.Cmd {
	t.Helper()
	bin, err := os.Executable()
	require.NoError(t, err)
	if attr != nil {
		dir := t.TempDir()
		os.Chmod(filepath.Dir(dir), 0o755)
		os.Chmod(dir, 0o755)
		copyTo := filepath.Join(dir, "mmv.test")
		require.NoError(t, copyFile(bin, copyTo))
		bin = copyTo
		// A child forked meanwhile by a parallel test holds the copy open
		// for writing until it execs: the copy cannot run until then
		// (ETXTBSY, golang.org/issue/22315). Run it once for nothing.
		for i := 0; ; i++ {
			warm := exec.Command(bin, "-test.run=^$")
			warm.Env = append(os.Environ(), noRaceExitSleep())
			err := warm.Run()
			if !errors.Is(err, syscall.ETXTBSY) || i == 100 {
				require.NoError(t, err)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	cmd := exec.Command(bin, "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), append(env, childEnv+"="+role, noRaceExitSleep())...)
	cmd.SysProcAttr = attr
	return cmd
}

// noRaceExitSleep returns the GORACE setting that keeps a child built with
// -race from sleeping a second before it exits (the race detector's
// atexit_sleep_ms, 1000 by default), the caller's GORACE kept.
func noRaceExitSleep() string {
	return "GORACE=" + strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0")
}

// startChild runs test as role in a child process with env added, and
// waits until it prints a line "ready", or "ready X" to tell X, which it
// returns. The child is killed at the end of the test.
func startChild(t *testing.T, test, role string, env ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd, _, ready := launchChild(t, test, role, env...)
	select {
	case x, ok := <-ready:
		require.True(t, ok, "the child ended before it was ready")
		return cmd, x
	case <-time.After(time.Minute):
		t.Fatal("the child did not get ready")
	}
	return nil, ""
}

// launchChild runs test as role in a child process with env added, killed
// at the end of the test, and returns it with its standard input and the
// channel that gets what follows "ready" on each line where it prints it
// (a child may report in steps), closed when the child ends.
func launchChild(t *testing.T, test, role string, env ...string) (*exec.Cmd, io.WriteCloser, <-chan string) {
	t.Helper()
	cmd := childCmd(t, test, role, nil, env...)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	ready := make(chan string, 8)
	go func() {
		defer close(ready)
		s := bufio.NewScanner(out)
		for s.Scan() {
			if x, ok := strings.CutPrefix(s.Text(), "ready"); ok {
				select {
				case ready <- strings.TrimSpace(x):
				default: // a report nobody reads
				}
			}
		}
	}()
	return cmd, in, ready
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// pcpDir returns a fresh PCP_TMP_DIR for a test that reads with PCP, and
// the mmv directory in it where registries write; without PCP the test
// skips or fails as pcptest.MustHavePCP says.
func pcpDir(t *testing.T) (tmp, dir string) {
	t.Helper()
	pcptest.MustHavePCP(t)
	tmp = t.TempDir()
	return tmp, filepath.Join(tmp, "mmv")
}

// newRegistry makes a registry writing in dir, closed when the test ends.
func newRegistry(t testing.TB, name, dir string, opts mmv.Options) *mmv.Registry {
	t.Helper()
	opts.Dir = dir
	r := mmv.NewRegistry(name, &opts)
	t.Cleanup(func() { r.Close() })
	return r
}

// startReg makes a registry as newRegistry, declares with decl and starts.
func startReg(t *testing.T, name, dir string, opts mmv.Options, decl func(r *mmv.Registry)) *mmv.Registry {
	t.Helper()
	r := newRegistry(t, name, dir, opts)
	decl(r)
	startOrSkip(t, r)
	return r
}

// eachLayout runs test once for each layout of the values: packed, as
// libpcp_mmv lays them out, and padded (Options.PadValues).
func eachLayout(t *testing.T, test func(t *testing.T, pad bool)) {
	t.Helper()
	t.Run("packed", func(t *testing.T) { test(t, false) })
	t.Run("padded", func(t *testing.T) { test(t, true) })
}

// value returns the handle on a metric's instance.
func value(t *testing.T, r *mmv.Registry, metric, instance string) *mmv.Value {
	t.Helper()
	v, err := r.Value(metric, instance)
	require.NoError(t, err)
	return v
}

// under returns the metrics whose names start with prefix.
func under(ms []pcptest.Metric, prefix string) map[string]pcptest.Metric {
	out := map[string]pcptest.Metric{}
	for _, m := range ms {
		if strings.HasPrefix(m.Name, prefix) {
			out[m.Name] = m
		}
	}
	return out
}

// shownValue returns the value PCP shows of the metric name, with the
// files of tmpdir/mmv, or "(absent)" when it shows no such metric.
func shownValue(t *testing.T, tmpdir, name string) string {
	t.Helper()
	m := pcptest.Find(pcptest.Info(t, tmpdir), name)
	if m == nil {
		return "(absent)"
	}
	return m.Value
}

// get returns the metric of that name, failing the test when PCP does not
// show it.
func get(t *testing.T, ms []pcptest.Metric, name string) pcptest.Metric {
	t.Helper()
	m := pcptest.Find(ms, name)
	if m == nil {
		var names []string
		for _, m := range ms {
			names = append(names, m.Name)
		}
		require.Failf(t, "metric not shown", "PCP does not show %s; it shows %v", name, names)
	}
	return *m
}

// exampleRegistry stands for a registry writing in $PCP_TMP_DIR/mmv, as by
// default: the examples write in a temporary directory instead, so they
// run anywhere, which done removes after closing the registry.
func exampleRegistry(name string, opts *mmv.Options) (r *mmv.Registry, done func()) {
	dir, err := os.MkdirTemp("", "mmv-example")
	if err != nil {
		log.Fatal(err)
	}
	if opts == nil {
		opts = &mmv.Options{}
	}
	opts.Dir = filepath.Join(dir, "mmv")
	r = mmv.NewRegistry(name, opts)
	return r, func() { r.Close(); os.RemoveAll(dir) }
}

// entries returns the names in dir.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// shownFiles returns the names in dir that PCP's reader reads: those not
// starting with '.'.
func shownFiles(t *testing.T, dir string) []string {
	t.Helper()
	return slices.DeleteFunc(entries(t, dir), func(n string) bool { return strings.HasPrefix(n, ".") })
}

// removeParts removes the files a closed registry left: its first file
// and its overflow files, <name>.2 and up.
func removeParts(tb testing.TB, r *mmv.Registry) {
	tb.Helper()
	assert.NoError(tb, os.Remove(r.Path()))
	for i := 2; ; i++ {
		if err := os.Remove(fmt.Sprintf("%s.%d", r.Path(), i)); err != nil {
			assert.ErrorIs(tb, err, os.ErrNotExist)
			return
		}
	}
}

// liveClusters returns the files in dir that PCP's reader shows on a
// cluster of their own choosing, by cluster: every MMV file but those
// whose names start with '.', those on cluster 0 (the reader picks
// theirs), and Process files whose writer is gone. A directory not made
// yet has none.
func liveClusters(t *testing.T, dir string) map[uint32][]string {
	t.Helper()
	live := map[uint32][]string{}
	names, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return live
	}
	require.NoError(t, err)
	for _, e := range names {
		name := e.Name()
		f, err := mmvfile.Open(filepath.Join(dir, name))
		if strings.HasPrefix(name, ".") || err != nil || f.Header.Cluster == 0 {
			continue
		}
		if f.Header.Flags&mmv.Process != 0 && osfile.ProcessGone(int(f.Header.PID)) {
			continue
		}
		live[f.Header.Cluster] = append(live[f.Header.Cluster], name)
	}
	return live
}

// derivedCluster is the cluster a registry of that name derives when its
// directory has no other file: FNV-1a of the name, 1..2047.
func derivedCluster(name string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(name))
	return 1 + h.Sum32()%2047
}

// clashingNames returns n file names that derive the same cluster.
func clashingNames(n int) []string {
	names := []string{"clash0"}
	for i := 1; len(names) < n; i++ {
		if name := fmt.Sprint("clash", i); derivedCluster(name) == derivedCluster(names[0]) {
			names = append(names, name)
		}
	}
	return names
}

// putPid writes pid into the header of the MMV file b.
func putPid(b []byte, pid int) {
	binary.NativeEndian.PutUint32(b[32:], uint32(pid))
}

// deadPid returns the pid of a process that has exited: the test binary
// itself, run with no test, so that the tests need no program but Go's.
func deadPid(t *testing.T) int {
	t.Helper()
	bin, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = append(os.Environ(), noRaceExitSleep())
	require.NoError(t, cmd.Run())
	return cmd.Process.Pid
}

// livePid returns the pid of a process alive until the test ends, not
// this one: the parent (go test), as the pid of a file's last writer
// still draining after its Close, or reused by another process after
// that writer died (a reboot: the file stays, pids start again).
func livePid() int { return os.Getppid() }

// setFilePid writes pid into the header of the MMV file at path, in
// place: a file truncated and written again would be shorter than PCP's
// mapping of it for a moment (SIGBUS in pmcd).
func setFilePid(t *testing.T, path string, pid int) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	require.NoError(t, err)
	b := make([]byte, 40)
	putPid(b, pid)
	_, err = f.WriteAt(b[32:36], 32)
	require.NoError(t, errors.Join(err, f.Close()))
}

// idHome is the instance id a vector derives for an instance name, before
// any probing, among half ids (2^30 for counters, gauges and timers).
func idHome(name string, half int64) int64 {
	h := fnv.New32a()
	h.Write([]byte(name))
	return int64(h.Sum32()) % half
}

// serialHome is the indom serial an instrument named name derives.
func serialHome(name string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(name))
	return 1024 + h.Sum32()%1024
}

// instanceIDs returns the instances PCP's reader shows of a metric, by
// name, with their ids.
func instanceIDs(t *testing.T, ms []pcptest.Metric, name string) map[string]int {
	t.Helper()
	ids := map[string]int{}
	for _, in := range get(t, ms, name).Instances {
		ids[in.Name] = in.ID
	}
	return ids
}

// waitGone waits until v no longer holds the instance name, at most 10 s.
func waitGone[T any](t *testing.T, v *mmv.Vec[T], name string, busy func()) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); slices.Contains(v.Instances(), name); time.Sleep(5 * time.Millisecond) {
		require.True(t, time.Now().Before(deadline), "%s did not expire in 10 s", name)
		busy()
	}
}

// startOrSkip and needFileLayer skip what needs a file where there is no
// file layer (helpers_internal_test.go).
var (
	startOrSkip   = mmv.StartOrSkip
	needFileLayer = mmv.NeedFileLayer
)

// instanceAt is an instance of the indom serial, by id.
type instanceAt struct {
	serial uint32
	id     int32
}

// fileInstanceLabels returns the payloads of the instance labels in the
// file at path, by instance, and how many label records the file has.
func fileInstanceLabels(t *testing.T, path string) (map[instanceAt][]string, int) {
	t.Helper()
	f, err := mmvfile.Open(path)
	require.NoError(t, err)
	ls := map[instanceAt][]string{}
	for _, l := range f.Labels {
		if l.Flags&^mmvfile.LabelOptional == mmvfile.LabelInstances {
			k := instanceAt{l.Identity, l.Internal}
			ls[k] = append(ls[k], l.Payload)
		}
	}
	return ls, len(f.Labels)
}

// snapshotInstanceLabels returns the instance labels Snapshot shows, by
// instance, as the payloads of plain string values.
func snapshotInstanceLabels(t *testing.T, r *mmv.Registry) map[instanceAt][]string {
	t.Helper()
	snap, err := r.Snapshot()
	require.NoError(t, err)
	ls := map[instanceAt][]string{}
	for _, m := range snap {
		for _, v := range m.Values {
			var payloads []string
			for _, l := range v.Labels {
				payloads = append(payloads, fmt.Sprintf(`{"%s":"%s"}`, l.Name, l.Value))
			}
			if payloads != nil {
				ls[instanceAt{m.Indom, v.ID}] = payloads
			}
		}
	}
	return ls
}

// firstInstanceID returns the id of metric's first live instance.
func firstInstanceID(t *testing.T, r *mmv.Registry, metric string) int32 {
	t.Helper()
	m := snapshotOf(t, r, metric)
	require.NotEmpty(t, m.Values, metric)
	return m.Values[0].ID
}

// indomOf returns the indom serial of metric.
func indomOf(t *testing.T, r *mmv.Registry, metric string) uint32 {
	t.Helper()
	m := snapshotOf(t, r, metric)
	require.NotZero(t, m.Indom, metric)
	return m.Indom
}

// snapshotOf returns metric as Snapshot shows it.
func snapshotOf(t *testing.T, r *mmv.Registry, metric string) mmv.MetricSnapshot {
	t.Helper()
	snap, err := r.Snapshot()
	require.NoError(t, err)
	for _, m := range snap {
		if m.Name == metric {
			return m
		}
	}
	t.Fatalf("no metric %s", metric)
	return mmv.MetricSnapshot{}
}

// filesValues returns the values of every file of r, by metric name (less
// the registry's name that overflow files' names carry) and instance name
// ("" for a singular metric), read with mmvfile.
func filesValues(t *testing.T, r *mmv.Registry) map[string]map[string]mmvfile.Value {
	t.Helper()
	paths, err := filepath.Glob(r.Path() + ".*") // overflow files
	require.NoError(t, err)
	paths = append(paths, r.Path())
	out := map[string]map[string]mmvfile.Value{}
	for _, path := range paths {
		f, err := mmvfile.Open(path)
		require.NoError(t, err)
		for _, v := range f.Values {
			if v.Metric == nil {
				continue
			}
			name := strings.TrimPrefix(v.Metric.Name, r.Name()+".")
			if out[name] == nil {
				out[name] = map[string]mmvfile.Value{}
			}
			inst := ""
			if v.Instance != nil {
				inst = v.Instance.Name
			}
			_, twice := out[name][inst]
			require.False(t, twice, "%s: %s[%s] twice", path, v.Metric.Name, inst)
			out[name][inst] = *v
		}
	}
	return out
}

// declareSpilling makes a registry named name in dir with a counter
// "count" set to count and more metrics than a file holds, so that Start
// makes <name>.2 too ("count", last by name, goes there; "c0000" stays in
// the first file).
func declareSpilling(dir, name string, count uint64) *mmv.Registry {
	r := mmv.NewRegistry(name, &mmv.Options{Dir: dir})
	mmv.NewCounter(r, "count", "", mmv.Count).Add(count)
	for i := range mmv.MaxMetrics + 80 {
		mmv.NewCounter(r, fmt.Sprintf("c%04d", i), "", mmv.Count).Inc()
	}
	return r
}

// fileMetric returns the metric of f named name, nil when f has none.
func fileMetric(f *mmvfile.File, name string) *mmvfile.Metric {
	if i := slices.IndexFunc(f.Metrics, func(m *mmvfile.Metric) bool { return m.Name == name }); i >= 0 {
		return f.Metrics[i]
	}
	return nil
}

// closedRun starts a registry named name in dir of n counters, c0000 up,
// each 1, and closes it: the last run a test starts again over.
func closedRun(t *testing.T, dir, name string, n int) *mmv.Registry {
	t.Helper()
	r := mmv.NewRegistry(name, &mmv.Options{Dir: dir, MaxRegistryMetrics: -1})
	for i := range n {
		mmv.NewCounter(r, fmt.Sprintf("c%04d", i), "", mmv.Count).Inc()
	}
	startOrSkip(t, r)
	require.NoError(t, r.Close())
	return r
}

// hasPCPConf reports whether PCP's configuration names its directory (a
// pcp.conf, or PCP_TMP_DIR): where it does not, errors give no advice
// about PCP's group.
func hasPCPConf() bool { return pcpconf.Get(os.Getenv, "PCP_TMP_DIR", pcpconf.Files) != "" }

// startOverLateOverflow starts a registry name in dir, with flags, over
// the files of a last run that made its overflow file name.2 after its
// Start, and closed without the Process flag: name.2 is now a tombstone.
func startOverLateOverflow(t *testing.T, dir, name string, flags mmv.Flags) *mmv.Registry {
	t.Helper()
	last := newRegistry(t, name, dir, mmv.Options{})
	mmv.NewCounter(last, "first", "", mmv.Count).Inc()
	startOrSkip(t, last)
	for i := range mmv.MaxMetrics + 10 { // declared after Start: name.2
		mmv.NewCounter(last, fmt.Sprintf("late%04d", i), "", mmv.Count).Inc()
	}
	require.NoError(t, last.Flush())
	require.NoError(t, last.Close())
	r := newRegistry(t, name, dir, mmv.Options{Flags: flags})
	mmv.NewCounter(r, "first", "", mmv.Count).Inc()
	require.NoError(t, r.Start())
	f, err := mmvfile.Open(filepath.Join(dir, name+".2"))
	require.NoError(t, err)
	require.NotZero(t, f.Header.Flags&mmv.Sentinel, "a tombstone")
	return r
}

// renamedTo moves the file of r, started, to name in its directory: as
// another writer's file (libpcp_mmv's, Speed's), named as mmv names no
// registry of its own, a NoPrefix one named as an overflow file; its lock
// goes with it while r is open.
func renamedTo(t *testing.T, r *mmv.Registry, name string) {
	t.Helper()
	require.NoError(t, os.Rename(r.Path(), filepath.Join(filepath.Dir(r.Path()), name)))
}

// startBesideClash starts svc in a directory where another live
// registry's file, svc.db, holds mmv.svc.db.x: svc declaring "db" after
// Start clashes with another program's file.
func startBesideClash(t *testing.T) (svc, other *mmv.Registry, dir string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "mmv")
	other = newRegistry(t, "svc.db", dir, mmv.Options{})
	mmv.NewCounter(other, "x", "", mmv.Count).Inc()
	startOrSkip(t, other)
	svc = newRegistry(t, "svc", dir, mmv.Options{})
	mmv.NewCounter(svc, "a", "", mmv.Count).Inc()
	require.NoError(t, svc.Start())
	time.Sleep(50 * time.Millisecond) // the directory's stamp settles
	return svc, other, dir
}

// pmidWatch follows the PMIDs of a directory's MMV files from one look
// to the next (observe): a PMID present, then absent, then present again
// is what crashes PCP 6.0.3's pmcd while a client fetches it
// (docs/design.md, "A pmcd crash in PCP's reader"), which a client's
// fetches find only when they fall in its window; the files show it
// whenever the looks fall between.
type pmidWatch struct {
	dir   string
	state map[string]bool   // by PMID: present at the last look, or seen and gone
	where map[string]string // the file and name a PMID was last seen under
	back  []string          // the PMIDs seen again after they were gone
}

func newPMIDWatch(dir string) *pmidWatch {
	return &pmidWatch{dir: dir, state: map[string]bool{}, where: map[string]string{}}
}

// observe looks at the directory's files, when says when.
func (w *pmidWatch) observe(when string) {
	now := map[string]string{}
	entries, _ := os.ReadDir(w.dir)
	for _, e := range entries {
		f, err := mmvfile.Open(filepath.Join(w.dir, e.Name()))
		if err != nil || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		for _, m := range f.Metrics {
			now[fmt.Sprintf("%d.%d", f.Header.Cluster, m.Item)] = e.Name() + ": " + m.Name
		}
	}
	for id, at := range now {
		if present, seen := w.state[id]; seen && !present {
			w.back = append(w.back, fmt.Sprintf("%s: PMID %s back as %s, was %s", when, id, at, w.where[id]))
		}
		w.state[id], w.where[id] = true, at
	}
	for id := range w.state {
		if _, ok := now[id]; !ok {
			w.state[id] = false
		}
	}
}

// fileShows reports whether r's first file shows instance inst of metric
// (less the registry's prefix).
func fileShows(r *mmv.Registry, metric, inst string) bool {
	f, err := mmvfile.Open(r.Path())
	if err != nil {
		return false
	}
	for _, v := range f.Values {
		if v.Metric != nil && v.Metric.Name == metric && v.Instance != nil && v.Instance.Name == inst {
			return true
		}
	}
	return false
}

// togglesSurvive runs lives of registry name (options o), each setting
// or clearing the NoPrefix flag, declaring counters before before Start
// and late after it, in a pmcd of the test's own while a client fetches
// late (livesSurvive).
func togglesSurvive(t *testing.T, name string, o mmv.Options, before ...string) {
	p := pcptest.StartPMCD(t)
	life := func(lives int) bool {
		o := o
		o.Dir, o.Flags = p.Dir, 0
		if lives%2 == 1 {
			o.Flags = mmv.NoPrefix
		}
		r := mmv.NewRegistry(name, &o)
		for _, n := range before {
			mmv.NewCounter(r, n, "", mmv.Count).Add(uint64(lives))
		}
		if err := r.Start(); err != nil {
			t.Error(err)
			return false
		}
		mmv.NewCounter(r, "late", "", mmv.Count).Add(uint64(lives))
		assert.NoError(t, r.Flush())
		time.Sleep(time.Millisecond)
		return assert.NoError(t, r.Close())
	}
	f, lives := livesSurvive(t, p, "mmv."+name+".late", life)
	t.Logf("%d lifetimes, fetches %+v", lives, f)
	assert.Positive(t, f.Values)
}

// startChurners starts a registry in each of dirs, named name and its
// index, with a counter vector for churnFiles.
func startChurners(t *testing.T, name string, dirs ...string) ([]*mmv.Registry, []*mmv.Vec[mmv.Counter]) {
	t.Helper()
	var rs []*mmv.Registry
	var vs []*mmv.Vec[mmv.Counter]
	for i, dir := range dirs {
		r := newRegistry(t, fmt.Sprint(name, i), dir, mmv.Options{})
		rs, vs = append(rs, r), append(vs, mmv.NewCounterVec(r, "requests", "", mmv.Count, "id"))
		startOrSkip(t, r)
	}
	return rs, vs
}

// churnFiles churns the label values of vs, vector k of started
// registry rs[k], for d (a value added and one deleted every millisecond,
// ten live), checks the live values, and returns how many first files
// of rs their publications replaced meanwhile.
func churnFiles(t *testing.T, d time.Duration, rs []*mmv.Registry, vs []*mmv.Vec[mmv.Counter]) int64 {
	t.Helper()
	var files atomic.Int64
	done := make(chan struct{})
	paths := make([]string, len(rs))
	for k, r := range rs {
		paths[k] = r.Path()
	}
	last := make([]os.FileInfo, len(paths)) // the files Start made, not counted
	for k, path := range paths {
		last[k], _ = os.Stat(path)
	}
	go func() {
		defer close(done)
		for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(time.Millisecond) {
			for k, path := range paths {
				if now, err := os.Stat(path); err == nil && (last[k] == nil || !os.SameFile(last[k], now)) {
					files.Add(1)
					last[k] = now
				}
			}
		}
	}()
	for i := 0; ; i++ {
		select {
		case <-done:
		case <-time.After(time.Millisecond):
			for _, v := range vs {
				v.With(strconv.Itoa(i)).Add(uint64(i))
				v.Delete(strconv.Itoa(i - 10))
			}
			continue
		}
		for _, v := range vs {
			for j := i - 10; j < i; j++ { // the live ones
				require.Equal(t, uint64(j), v.With(strconv.Itoa(j)).Get(), "value %d", j)
			}
		}
		return files.Load()
	}
}

// killed leaves the files of the started registry r as SIGKILL leaves
// them: at their names, with their last values and a dead writer's pid.
// r is closed (its Close would take the files of a Process registry from
// PCP, renamed to their closed records: they are put back, the records
// removed). Its first file and its overflow files, name.N.
func killed(t *testing.T, r *mmv.Registry) {
	t.Helper()
	files := map[string][]byte{}
	paths, err := filepath.Glob(r.Path() + ".*")
	require.NoError(t, err)
	for _, p := range append(paths, r.Path()) {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		files[p] = b
	}
	require.NoError(t, r.Close())
	for p := range files {
		if err := os.Remove(filepath.Join(filepath.Dir(p), osfile.ClosedName(filepath.Base(p)))); !errors.Is(err, os.ErrNotExist) {
			require.NoError(t, err)
		}
	}
	pid := deadPid(t)
	for p, b := range files {
		putPid(b, pid)
		require.NoError(t, os.WriteFile(p, b, 0o644))
	}
}

// loggerPMCD starts a pmcd of the test's own for a test that runs
// pmlogger through it, skipping or failing the test without pmlogger. Its
// MMV agent runs as a daemon: a Process restart under fetches may crash
// PCP's reader (docs/design.md), which then only restarts the agent.
func loggerPMCD(t *testing.T) *pcptest.PMCD {
	t.Helper()
	_, err := exec.LookPath("pmlogger")
	pcptest.MustHave(t, err)
	return pcptest.StartDaemonPMCD(t)
}

// pmlogger is a pmlogger a test runs, logging into arch.
type pmlogger struct {
	cmd  *exec.Cmd
	arch string
	done chan error // its exit, once it ends
}

// startPmlogger runs pmlogger through p on the configuration conf,
// logging into arch (its log arch.log), for 30 s at most; it is killed
// at the end of the test.
func startPmlogger(t *testing.T, p *pcptest.PMCD, arch, conf string) *pmlogger {
	t.Helper()
	require.NoError(t, os.WriteFile(arch+".cfg", []byte(conf), 0o644))
	c := exec.Command("pmlogger", "-h", p.Host(), "-c", arch+".cfg", "-T", "30sec", "-l", arch+".log", arch)
	c.Env = append(os.Environ(), p.ClientEnv()...)
	require.NoError(t, c.Start())
	t.Cleanup(func() { c.Process.Kill() })
	l := &pmlogger{c, arch, make(chan error, 1)}
	go func() { l.done <- c.Wait() }()
	return l
}

// dump stops l and returns what pmdumplog prints of its archive, with
// args (options before the archive, metrics after).
func (l *pmlogger) dump(t *testing.T, opts []string, metrics ...string) string {
	t.Helper()
	l.cmd.Process.Signal(os.Interrupt)
	<-l.done
	out, err := exec.Command("pmdumplog", append(append(opts, l.arch), metrics...)...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	return string(out)
}

// restartedRunKeepsIdentities runs a registry of the Process flag named
// name, which end ends (Close, a SIGKILL), then a new version of it in
// the same directory: a name it declares with another descriptor (cpu, n)
// takes another PMID, one declared as before keeps its own, and one no
// longer declared is kept with no value, its PMID its own, for this run
// (carry.go), as a restart without the flag keeps it; no name takes one
// of the last run's other names' PMIDs.
func restartedRunKeepsIdentities(t *testing.T, name string, end func(r *mmv.Registry, tmp, dir string)) {
	t.Helper()
	tmp, dir := pcpDir(t)
	gone := collider("keep") // sorts first: the last run gave it keep's derived item
	r := newRegistry(t, name, dir, mmv.Options{Flags: mmv.Process})
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "cpu", Type: mmv.Double, Semantics: mmv.SemCounter, Units: mmv.Second}))
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "n", Type: mmv.Uint64, Semantics: mmv.SemInstant}))
	mmv.NewCounter(r, "same", "", mmv.Count).Inc()
	mmv.NewCounter(r, gone, "", mmv.Count).Inc()
	mmv.NewCounter(r, "keep", "", mmv.Count).Inc()
	startOrSkip(t, r)
	require.NoError(t, r.Flush())
	before := under(pcptest.Info(t, tmp), "mmv."+name+".")
	end(r, tmp, dir)

	r = newRegistry(t, name, dir, mmv.Options{Flags: mmv.Process})
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "cpu", Type: mmv.Uint64, Semantics: mmv.SemCounter, Units: mmv.Nanosecond}))
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "n", Type: mmv.Int64, Semantics: mmv.SemInstant}))
	mmv.NewCounter(r, "same", "", mmv.Count).Inc()
	mmv.NewCounter(r, "keep", "", mmv.Count).Inc()
	startOrSkip(t, r)
	keptIdentities(t, "mmv."+name+".", before, under(pcptest.Info(t, tmp), "mmv."+name+"."), []string{"cpu", "n"}, []string{"same", "keep"}, gone)
	require.NoError(t, r.Close())
	assert.Empty(t, shownFiles(t, dir), "files PCP reads after Close")
}

// overflowedRunKeepsIdentities is restartedRunKeepsIdentities for the
// names of a Process registry's overflow files: the last run's grew past
// its first file after Start (c and d in name.2, gone and keep in
// name.3); the new version declares c with another descriptor before
// Start (name.2 made at Start, over the last run's), d with another after
// it, keep as before after it (name.3 made then), and no longer gone.
// start starts the new run (nil: startOrSkip).
func overflowedRunKeepsIdentities(t *testing.T, name string, end func(r *mmv.Registry, tmp, dir string), start func(r *mmv.Registry, dir string)) {
	t.Helper()
	tmp, dir := pcpDir(t)
	gone := collider("keep") // the last run gave it keep's derived item
	opts := mmv.Options{Flags: mmv.Process, MaxFileValues: 2, PublishDelay: time.Hour}
	r := newRegistry(t, name, dir, opts)
	mmv.NewCounter(r, "a", "", mmv.Count).Inc()
	mmv.NewCounter(r, "b", "", mmv.Count).Inc()
	startOrSkip(t, r)
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "c", Type: mmv.Double, Semantics: mmv.SemCounter, Units: mmv.Second}))
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "d", Type: mmv.Uint64, Semantics: mmv.SemInstant}))
	mmv.NewCounter(r, gone, "", mmv.Count).Inc()
	mmv.NewCounter(r, "keep", "", mmv.Count).Inc()
	require.NoError(t, r.Flush())
	require.FileExists(t, r.Path()+".3", "the last run's second overflow file")
	before := under(pcptest.Info(t, tmp), "mmv."+name+".")
	end(r, tmp, dir)

	r = newRegistry(t, name, dir, opts)
	mmv.NewCounter(r, "a", "", mmv.Count).Inc()
	mmv.NewCounter(r, "b", "", mmv.Count).Inc()
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "c", Type: mmv.Uint64, Semantics: mmv.SemCounter, Units: mmv.Nanosecond}))
	if start == nil {
		startOrSkip(t, r)
	} else {
		start(r, dir)
	}
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "d", Type: mmv.Int64, Semantics: mmv.SemInstant}))
	mmv.NewCounter(r, "keep", "", mmv.Count).Inc()
	require.NoError(t, r.Flush())
	keptIdentities(t, "mmv."+name+".", before, under(pcptest.Info(t, tmp), "mmv."+name+"."), []string{"c", "d"}, []string{"a", "b", "keep"}, gone)
	require.NoError(t, r.Close())
	assert.Empty(t, shownFiles(t, dir), "files PCP reads after Close")
}

// closedProcessRun closes r, a started Process registry, and checks that
// PCP no longer shows its metrics under name, nor reads any file in dir,
// and that lint finds nothing in its closed records.
func closedProcessRun(t *testing.T, name string) func(r *mmv.Registry, tmp, dir string) {
	return func(r *mmv.Registry, tmp, dir string) {
		t.Helper()
		require.NoError(t, r.Close())
		assert.Empty(t, under(pcptest.Info(t, tmp), "mmv."+name+"."), "PCP shows the closed run's metrics")
		assert.Empty(t, shownFiles(t, dir), "files PCP reads after Close")
		findings, err := mmvfile.LintDir(dir)
		require.NoError(t, err)
		assert.Empty(t, findings, "lint of a directory holding closed records")
	}
}

// keptIdentities checks the metrics PCP shows under prefix after a
// restart against those before it: each name of retyped takes another
// PMID, each of same keeps its own, gone keeps its own with no value, and
// no name takes another's.
func keptIdentities(t *testing.T, prefix string, before, after map[string]pcptest.Metric, retyped, same []string, gone string) {
	t.Helper()
	assert.Len(t, after, len(retyped)+len(same)+1, "the metrics PCP shows")
	assert.Equal(t, before[prefix+gone].PMID, after[prefix+gone].PMID, "%s's PMID", gone)
	assert.Empty(t, after[prefix+gone].Value, "%s, no longer declared", gone)
	for _, n := range retyped {
		b, a := before[prefix+n], after[prefix+n]
		assert.NotEqual(t, b.PMID, a.PMID, "%s: %s %s, then %s %s, under one PMID", n, b.Type, b.Units, a.Type, a.Units)
	}
	for _, n := range same {
		assert.Equal(t, before[prefix+n].PMID, after[prefix+n].PMID, "%s's PMID", n)
	}
	for _, a := range after {
		for _, b := range before {
			assert.False(t, a.PMID == b.PMID && a.Name != b.Name, "%s takes %s's PMID %s", a.Name, b.Name, a.PMID)
		}
	}
}

// median is the median of xs (of the middle two when they are even), xs
// left as they are.
func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}
