//go:build linux

package mmv_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/osfile"
	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/mmvfile"
)

// appRegistry returns a registry "app" in dir with one counter.
func appRegistry(t *testing.T, dir string, flags mmv.Flags) *mmv.Registry {
	t.Helper()
	r := mmv.NewRegistry("app", &mmv.Options{Dir: dir, Flags: flags})
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "m", Type: mmv.Uint64, Semantics: mmv.SemCounter}))
	return r
}

// TestInUseInProcess: a second registry of the same name and directory
// fails to Start with ErrInUse naming the file and our pid, and its Close
// (Process flag) leaves the first one's file alone. Once the first is
// closed the name is free, and Close leaves nothing behind.
func TestInUseInProcess(t *testing.T) {
	dir := t.TempDir()
	first := appRegistry(t, dir, mmv.Process)
	startOrSkip(t, first)
	second := appRegistry(t, dir, mmv.Process)
	err := second.Start()
	require.ErrorIs(t, err, mmv.ErrInUse)
	t.Log(err)
	assert.Contains(t, err.Error(), filepath.Join(dir, "app"))
	assert.Contains(t, err.Error(), "pid "+strconv.Itoa(os.Getpid()))
	require.NoError(t, second.Close())
	f, err := mmvfile.Open(filepath.Join(dir, "app"))
	require.NoError(t, err, "the refused registry's Close removed the owner's file")
	assert.Equal(t, int32(os.Getpid()), f.Header.PID)

	require.NoError(t, first.Close())
	third := appRegistry(t, dir, 0)
	startOrSkip(t, third)
	require.NoError(t, third.Close())
	assert.Equal(t, []string{"app"}, entries(t, dir), "Close left more than the file")
}

// TestInUseOtherProcess: a name held by another live process fails to
// Start with ErrInUse naming that process's pid; once that process is
// killed with SIGKILL, never closing its registry, the name is free.
func TestInUseOtherProcess(t *testing.T) {
	needFileLayer(t)
	if childRole() == "holder" {
		r := appRegistry(t, os.Getenv("MMV_TEST_DIR"), mmv.Process)
		startOrSkip(t, r)
		os.Stdout.WriteString("ready\n")
		time.Sleep(time.Hour) // until killed
		return
	}
	dir := t.TempDir()
	child, _ := startChild(t, "TestInUseOtherProcess", "holder", "MMV_TEST_DIR="+dir)
	r := appRegistry(t, dir, mmv.Process)
	err := r.Start()
	require.ErrorIs(t, err, mmv.ErrInUse)
	t.Log(err)
	assert.Contains(t, err.Error(), filepath.Join(dir, "app"))
	assert.Contains(t, err.Error(), "pid "+strconv.Itoa(child.Process.Pid))

	require.NoError(t, child.Process.Signal(syscall.SIGKILL))
	child.Wait()
	startOrSkip(t, r)
	f, err := mmvfile.Open(filepath.Join(dir, "app"))
	require.NoError(t, err)
	assert.Equal(t, int32(os.Getpid()), f.Header.PID)
	require.NoError(t, r.Close())
	assert.Equal(t, []string{".app.closed"}, entries(t, dir), "Close with the Process flag left files but its closed record")
}

// TestInUseReleasedOnFailedStart: a Start that fails (a directory planted
// at the file's name) releases the name and leaves no lock behind.
func TestInUseReleasedOnFailedStart(t *testing.T) {
	needFileLayer(t)
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "app"), 0o755))
	r := appRegistry(t, dir, 0)
	require.Error(t, r.Start())
	assert.Equal(t, []string{"app"}, entries(t, dir))
	require.NoError(t, os.Remove(filepath.Join(dir, "app")))
	other := appRegistry(t, dir, mmv.Process)
	require.NoError(t, other.Start(), "a failed Start kept the name")
	require.NoError(t, other.Close())
}

// TestInUseAfterGrowth: the lock goes with the file at the name, so a
// file grown (a new file renamed over the first) is held as the first was.
func TestInUseAfterGrowth(t *testing.T) {
	dir := t.TempDir()
	r := mmv.NewRegistry("app", &mmv.Options{Dir: dir})
	require.NoError(t, r.AddIndom(mmv.Indom{Serial: 1}))
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "m", Type: mmv.Uint64, Semantics: mmv.SemCounter, Indom: 1}))
	startOrSkip(t, r)
	defer r.Close()
	// 20 growth steps, each a new file renamed over the name, one of
	// them past the first file's spare room. After each, the file at the
	// name is locked (a lock tried as another registry tries it); a
	// registry's Start, which waits out the retries for a held lock
	// (100 ms) before its ErrInUse, is tried after the first and the last.
	const steps = 20
	for i := range steps {
		require.NoError(t, r.AddInstance(1, mmv.Instance{ID: int32(i), Name: "i" + strconv.Itoa(i)}))
		require.NoError(t, r.Flush())
		assert.True(t, lockHeld(t, filepath.Join(dir, "app")), "after growth step %d, the file at the name is not locked", i)
		if i == 0 || i == steps-1 {
			other := appRegistry(t, dir, 0)
			err := other.Start()
			require.ErrorIs(t, err, mmv.ErrInUse, "after growth step %d", i)
			assert.Contains(t, err.Error(), "pid "+strconv.Itoa(os.Getpid()))
		}
	}
	assert.Equal(t, []string{"app"}, entries(t, dir))
}

// lockHeld reports whether another open file holds the flock of the file
// at path, as a registry finds it before it gives up with ErrInUse.
func lockHeld(t *testing.T, path string) bool {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if err == nil {
		return false
	}
	require.ErrorIs(t, err, syscall.EWOULDBLOCK)
	return true
}

// TestOneOwnerUnderContention starts registries of one name at once, over
// and over, with no file at the name and with a file left by a closed
// one: exactly one starts each round, the others fail with ErrInUse, and
// the file at the name is the winner's. The rounds run at once, each in a
// directory of its own: every loser waits out the retries (100 ms), which
// rounds one after another would add up.
func TestOneOwnerUnderContention(t *testing.T) {
	needFileLayer(t)
	const rounds, n = 20, 4
	var all sync.WaitGroup
	for round := range rounds {
		dir := t.TempDir()
		var flags mmv.Flags
		if round%2 == 0 {
			flags = mmv.Process // a closed one's Close removed the file: none at the name
		} else { // a file left at the name by a closed registry
			left := appRegistry(t, dir, 0)
			require.NoError(t, left.Start())
			require.NoError(t, left.Close())
			require.Equal(t, []string{"app"}, entries(t, dir))
		}
		all.Go(func() {
			rs := make([]*mmv.Registry, n)
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i := range rs {
				rs[i] = appRegistry(t, dir, flags)
				wg.Go(func() { errs[i] = rs[i].Start() })
			}
			wg.Wait()
			winners := 0
			for i, err := range errs {
				if err == nil {
					winners++
					v, err := rs[i].Value("m", "")
					if !assert.NoError(t, err) {
						continue
					}
					v.Set(int64(round))
					f, err := mmvfile.Open(filepath.Join(dir, "app"))
					if assert.NoError(t, err) {
						assert.Equal(t, uint64(round), f.Values[0].Uint, "round %d: the file at the name is not the winner's", round)
					}
					continue
				}
				assert.ErrorIs(t, err, mmv.ErrInUse, "round %d", round)
			}
			assert.Equal(t, 1, winners, "round %d: registries started", round)
			for _, r := range rs {
				assert.NoError(t, r.Close())
			}
		})
	}
	all.Wait()
}

// TestCloseLetsGoOfTheLockAChildHolds: a child the owner forked holds a
// copy of its descriptor of the file, and with it the file's lock, until
// it execs or exits; Close lets go of the lock all the same, so a
// registry started on the name at once finds it free. Close only closed
// its descriptor, and the next Start met the lock held by no registry:
// it waited for the child, and failed with ErrInUse under load past
// lockAttempts (CI's soak and restart tests, beside pminfo's fork and
// exec).
func TestCloseLetsGoOfTheLockAChildHolds(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mmv")
	r := appRegistry(t, dir, 0)
	startOrSkip(t, r)
	// The registry's descriptor of its file, found as a child would
	// inherit it: the child below shares its open file, and so its lock.
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	fd := -1
	for _, e := range ents {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && target == r.Path() {
			fd, err = strconv.Atoi(e.Name())
			require.NoError(t, err)
			break
		}
	}
	require.NotEqual(t, -1, fd, "the registry's descriptor of %s", r.Path())
	// A duplicate, sharing the open file and its lock: an *os.File of the
	// registry's own descriptor would close it when collected, whatever
	// has that number by then.
	dup, err := syscall.Dup(fd)
	require.NoError(t, err)
	child := childHolding(t, os.NewFile(uintptr(dup), r.Path()))
	require.NoError(t, r.Close())

	found := 0
	mmv.SetLockHeldHook(t, func() { found++ })
	again := appRegistry(t, dir, 0)
	defer again.Close()
	require.NoError(t, again.Start())
	assert.Zero(t, found, "times the lock was found held")
	child()
}

// TestRestartWhileAChildHoldsTheLock: a child of an owner that died
// without its Close (killed) holds the file's lock until it execs or
// exits; a registry started on the name meanwhile waits for it instead
// of failing with ErrInUse.
func TestRestartWhileAChildHoldsTheLock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mmv")
	r := appRegistry(t, dir, 0)
	startOrSkip(t, r)
	require.NoError(t, r.Close())
	end := childHolding(t, lockedFile(t, r.Path(), nil)) // the killed owner's lock, its child's now

	// The first time the new registry finds the lock held, the child ends,
	// and its lock with it: Start must have waited for it, every run.
	found := 0
	mmv.SetLockHeldHook(t, func() {
		if found++; found == 1 {
			end()
		}
	})
	again := appRegistry(t, dir, 0)
	defer again.Close()
	require.NoError(t, again.Start(), "a lock held by a child of a dead owner")
	assert.Equal(t, 1, found, "times the lock was found held")
}

// childHolding starts a child that holds held, a descriptor of a locked
// file, which this process then closes: the lock is the child's until end
// is called (the test's end calls it too).
func childHolding(t *testing.T, held *os.File) (end func()) {
	t.Helper()
	child := exec.Command("sh", "-c", "read _ || :")
	child.ExtraFiles = []*os.File{held}
	stdin, err := child.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, child.Start())
	require.NoError(t, held.Close())
	end = sync.OnceFunc(func() {
		stdin.Close()
		assert.NoError(t, child.Wait())
	})
	t.Cleanup(end)
	return end
}

// lockedFile opens path (creating it with the bytes b when b is not nil)
// and takes the exclusive flock a registry holds on its file, as a live
// registry of another process would; the lock goes when the test ends.
func lockedFile(t *testing.T, path string, b []byte) *os.File {
	t.Helper()
	if b != nil {
		require.NoError(t, os.WriteFile(path, b, 0o644))
	}
	f, err := os.Open(path)
	require.NoError(t, err)
	require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB))
	t.Cleanup(func() { f.Close() })
	return f
}

// failingSecondCommit prepares, in dir, a last run of the registry name
// (3,100 counters c0000 up, each 1: files name, name.2, name.3, name.4),
// closed without the Process flag, then starts a new run of the registry
// (declareSpilling: name and name.2) whose Start fails at its SECOND
// commit, after its first file was renamed over the last run's: name.4
// is held (a live registry's lock, which makes buryLeftoversLocked's
// RewriteUnheld wait, and calls osfile.LockHeldHook), and at that moment
// a file held by another owner is renamed over name.2, between
// startPartLocked's Prepare of name.2 and its commitPartLocked. It returns
// the bytes of the last run's files before the Start, and its error.
func failingSecondCommit(t *testing.T, dir, name string) (map[string][]byte, error) {
	t.Helper()
	closedRun(t, dir, name, 3100)
	before := map[string][]byte{}
	for _, f := range []string{name, name + ".2", name + ".3", name + ".4"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		require.NoError(t, err, "the last run's files")
		before[f] = b
	}
	lockedFile(t, filepath.Join(dir, name+".4"), nil)
	var fired atomic.Bool
	osfile.LockHeldHook = func() {
		if fired.Swap(true) {
			return
		}
		// Another owner's file (the last run's bytes of name.2), held, put at name.2.
		other := filepath.Join(dir, "other.tmp")
		lockedFile(t, other, before[name+".2"])
		require.NoError(t, os.Rename(other, filepath.Join(dir, name+".2")))
	}
	t.Cleanup(func() { osfile.LockHeldHook = nil })
	r := declareSpilling(dir, name, 2)
	t.Cleanup(func() { r.Close() })
	err := r.Start()
	osfile.LockHeldHook = nil
	require.True(t, fired.Load(), "the hook ran inside Start")
	return before, err
}

// TestFailedCommitKeepsFirstFile: a Start that meets another owner's
// file at its second file's name, put there after its Prepare, fails
// before it renames its first file into place: every name is checked
// first (osfile.File.Hold). It renamed the first over the last run's,
// then removed it, and PCP, which showed the last run's
// mmv.<name>.c0000 = 1, showed no such metric.
func TestFailedCommitKeepsFirstFile(t *testing.T) {
	tmp, dir := pcpDir(t)
	const name = "fcommit"
	before, err := failingSecondCommit(t, dir, name)
	require.Error(t, err, "Start fails at name.2's commit")
	assert.ErrorIs(t, err, mmv.ErrInUse)
	now, rerr := os.ReadFile(filepath.Join(dir, name))
	assert.NoError(t, rerr, "the last run's first file is at its name after a Start that failed")
	assert.True(t, bytes.Equal(before[name], now), "the last run's first file as it was")
	ms := pcptest.Info(t, tmp)
	m := pcptest.Find(ms, "mmv."+name+".c0000")
	if assert.NotNil(t, m, "PCP shows the last run's mmv.%s.c0000 after the failed Start", name) {
		assert.Equal(t, "1", m.Value)
	}
}

// TestFailedCommitKeepsPMCD: a program retrying a Start that meets
// another owner's file at its second file's name (failingSecondCommit's
// order of events, at every attempt), while a client of a pmcd of the
// test's own fetches mmv.<name>.c0000 of the last run's first file: pmcd
// stays up and every fetch finds a value. Each attempt renamed its first
// file into place, then removed it, and pmcd died (status 11) after 15
// attempts, or half the fetches found no value.
func TestFailedCommitKeepsPMCD(t *testing.T) {
	needFileLayer(t)
	p := pcptest.StartPMCD(t)
	const name = "fcpmcd"
	dir := p.Dir
	closedRun(t, dir, name, 3100)
	lockedFile(t, filepath.Join(dir, name+".4"), nil)
	two, err := os.ReadFile(filepath.Join(dir, name+".2"))
	require.NoError(t, err)
	var held atomic.Pointer[os.File] // our lock on name.2, let go before each attempt
	var armed atomic.Bool
	osfile.LockHeldHook = func() {
		if !armed.Swap(false) {
			return
		}
		other := filepath.Join(dir, "other.tmp")
		os.WriteFile(other, two, 0o644)
		f, err := os.Open(other)
		if err != nil {
			return
		}
		syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		os.Rename(other, filepath.Join(dir, name+".2"))
		if old := held.Swap(f); old != nil {
			old.Close()
		}
	}
	t.Cleanup(func() { osfile.LockHeldHook = nil })
	var stop atomic.Bool
	done := make(chan int, 1)
	go func() {
		n := 0
		for !stop.Load() {
			n++
			if f := held.Swap(nil); f != nil {
				f.Close() // name.2 free again for this attempt's Prepare
			}
			armed.Store(true)
			r := declareSpilling(dir, name, uint64(n))
			if err := r.Start(); err == nil {
				t.Errorf("attempt %d: Start succeeded", n)
			}
			r.Close()
		}
		done <- n
	}()
	f, ferr := p.TryFetchLoop(t, "mmv."+name+".c0000", 8*time.Second)
	stop.Store(true)
	n := <-done
	time.Sleep(200 * time.Millisecond)
	t.Logf("%d attempts, fetches %+v", n, f)
	require.NoError(t, ferr)
	require.NoError(t, p.Died(), "pmcd crashed after %d fetches, %d attempts", f.N, n)
	require.False(t, f.Lost, "pmcd stopped answering")
	assert.Equal(t, f.N, f.Values, "every fetch finds the last run's value")
}

// TestRetriedStartReadsItsTombstonesInItsPrefix: a Start that
// fails after burying the last run's overflow files (here tg.4 is held,
// after tg.3 was buried) leaves them in its own prefix (bury), which a
// NoPrefix flag other than the last run's makes another; its retry read
// them with the last run's prefix (lastOverflowPrefix).
func TestRetriedStartReadsItsTombstonesInItsPrefix(t *testing.T) {
	needFileLayer(t)
	_, dir := pcpDir(t)
	last := newRegistry(t, "tg", dir, mmv.Options{Flags: mmv.NoPrefix, MaxFileValues: 2})
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} { // c, d in tg.2; e, f in tg.3; g, h in tg.4
		mmv.NewCounter(last, n, "", mmv.Count).Inc()
	}
	startOrSkip(t, last)
	require.NoError(t, last.Close())
	before, err := mmvfile.Open(filepath.Join(dir, "tg.3"))
	require.NoError(t, err)
	// tg.4 held: its burial waits, and meanwhile another owner's file,
	// held, is put at tg.2, which the Start then fails to commit, after
	// burying tg.3.
	held := []*os.File{lockedFile(t, filepath.Join(dir, "tg.4"), nil)}
	two, err := os.ReadFile(filepath.Join(dir, "tg.2"))
	require.NoError(t, err)
	var fired atomic.Bool
	osfile.LockHeldHook = func() {
		if !fired.Swap(true) {
			other := filepath.Join(dir, "other.tmp")
			held = append(held, lockedFile(t, other, two))
			assert.NoError(t, os.Rename(other, filepath.Join(dir, "tg.2")))
		}
	}
	t.Cleanup(func() { osfile.LockHeldHook = nil })
	r := newRegistry(t, "tg", dir, mmv.Options{MaxFileValues: 2})
	for _, n := range []string{"a", "b", "c"} {
		mmv.NewCounter(r, n, "", mmv.Count).Inc()
	}
	require.ErrorIs(t, r.Start(), mmv.ErrInUse)
	osfile.LockHeldHook = nil
	tomb, err := mmvfile.Open(filepath.Join(dir, "tg.3"))
	require.NoError(t, err)
	require.NotZero(t, tomb.Header.Flags&mmv.Sentinel, "tg.3 buried before the failure")
	for _, f := range held {
		require.NoError(t, f.Close())
	}
	for _, n := range []string{"d", "e"} {
		mmv.NewCounter(r, n, "", mmv.Count).Inc()
	}
	require.NoError(t, r.Start())
	f, err := mmvfile.Open(filepath.Join(dir, "tg.3"))
	require.NoError(t, err)
	items := map[string]uint32{}
	for _, m := range f.Metrics {
		items[m.Name] = m.Item
	}
	want := map[string]uint32{}
	for _, m := range before.Metrics {
		want["tg."+m.Name] = m.Item
	}
	assert.Equal(t, want, items, "tg.3's names and items")
	require.NoError(t, r.Close())
}
