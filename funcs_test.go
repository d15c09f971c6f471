package mmv_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/mmvfile"
	"github.com/gopcp/mmv/mmvtest"
)

// TestFuncsThroughPCP: callback metrics show, through PCP's reader, what
// their functions return at Start, after a refresh, and at Close, with
// their types, semantics and units; one declared after Start shows once
// published.
func TestFuncsThroughPCP(t *testing.T) {
	t.Parallel() // it waits for the functions' refresh, every DefaultInterval
	tmp, dir := pcpDir(t)
	r := newRegistry(t, "funcs", dir, mmv.Options{})
	var total atomic.Uint64
	var level, ilevel atomic.Int64
	total.Store(10)
	level.Store(5)
	ilevel.Store(-3)
	mmv.NewCounterFunc(r, "total", "A total kept elsewhere", mmv.Byte, total.Load)
	mmv.NewGaugeFunc(r, "ratio", "A ratio kept elsewhere", mmv.NoUnits, func() float64 { return float64(level.Load()) / 2 })
	mmv.NewIntGaugeFunc(r, "level", "A level kept elsewhere", mmv.Count, ilevel.Load)
	startOrSkip(t, r)
	f, err := mmvfile.Open(r.Path()) // at once: Start itself read the functions
	require.NoError(t, err)
	assert.Equal(t, []float64{10, 2.5, -3}, []float64{float64(f.Values[0].Uint), f.Values[1].Float, float64(f.Values[2].Int)}, "in the file when Start returns")

	values := func() [3]string {
		ms := pcptest.Info(t, tmp)
		return [3]string{get(t, ms, "mmv.funcs.total").Value, get(t, ms, "mmv.funcs.ratio").Value, get(t, ms, "mmv.funcs.level").Value}
	}
	assert.Equal(t, [3]string{"10", "2.5", "-3"}, values(), "at Start")
	ms := pcptest.Info(t, tmp)
	for name, want := range map[string][3]string{
		"total": {"64-bit unsigned int", "counter", "byte"},
		"ratio": {"double", "instant", "none"},
		"level": {"64-bit int", "instant", "count"},
	} {
		m := get(t, ms, "mmv.funcs."+name)
		assert.Equal(t, want, [3]string{m.Type, m.Semantics, m.Units}, "%s: type, semantics, units", name)
	}

	total.Store(20)
	level.Store(7)
	ilevel.Store(4)
	want := [3]string{"20", "3.5", "4"}
	assert.Eventually(t, func() bool { return values() == want }, 5*mmv.DefaultInterval, 100*time.Millisecond, "after a refresh")

	var late atomic.Uint64
	late.Store(99)
	mmv.NewCounterFunc(r, "late", "Declared after Start", mmv.Count, late.Load)
	require.NoError(t, r.Flush())
	assert.Eventually(t, func() bool { return get(t, pcptest.Info(t, tmp), "mmv.funcs.late").Value == "99" },
		5*mmv.DefaultInterval, 100*time.Millisecond, "declared after Start")

	total.Store(30)
	level.Store(9)
	ilevel.Store(-1)
	require.NoError(t, r.Close()) // no Process flag: the file stays, with the values read at Close
	assert.Equal(t, [3]string{"30", "4.5", "-1"}, values(), "after Close")
}

// TestFuncNilPanics: a callback metric without its function is refused at
// declaration, not when the registry first calls it.
func TestFuncNilPanics(t *testing.T) {
	r := newRegistry(t, "nilfunc", t.TempDir(), mmv.Options{})
	for name, declare := range map[string]func(){
		"counter":   func() { mmv.NewCounterFunc(r, "c", "c", mmv.Count, nil) },
		"gauge":     func() { mmv.NewGaugeFunc(r, "g", "g", mmv.Count, nil) },
		"int gauge": func() { mmv.NewIntGaugeFunc(r, "i", "i", mmv.Count, nil) },
	} {
		v := func() (v any) {
			defer func() { v = recover() }()
			declare()
			return nil
		}()
		err, _ := v.(error)
		assert.ErrorIs(t, err, mmv.ErrType, "%s: the panic value %v", name, v)
	}
	startOrSkip(t, r)
	f, err := mmvfile.Open(r.Path())
	require.NoError(t, err)
	assert.Empty(t, f.Metrics, "metrics declared by the refused declarations")
}

// TestFuncCallsOneAtATime: a poll's run of a callback slow to return
// stores its value before Close calls the function again, so the file
// keeps what the function returned to Close; unserialised, the run stored
// its older value after Close's, which the file kept.
func TestFuncCallsOneAtATime(t *testing.T) {
	r := mmvtest.Started(t, nil) // no Process flag: the file outlives Close
	var level, calls atomic.Int64
	level.Store(1)
	var closing atomic.Bool
	inPoll, release := make(chan struct{}), make(chan struct{})
	mmv.NewIntGaugeFunc(r, "a", "A level", mmv.Count, func() int64 {
		v := level.Load()
		if calls.Add(1) == 2 { // the first poll's run, after Start's call
			close(inPoll)
			<-release
		}
		return v
	})
	mmv.NewIntGaugeFunc(r, "b", "B level", mmv.Count, func() int64 {
		if closing.Load() {
			time.Sleep(300 * time.Millisecond) // Close still runs when the poll's run returns
		}
		return 0
	})
	select {
	case <-inPoll:
	case <-time.After(5 * time.Second):
		t.Fatal("no poll run of a's function")
	}
	level.Store(2)
	time.AfterFunc(100*time.Millisecond, func() { close(release) })
	closing.Store(true)
	require.NoError(t, r.Close())
	got := filesValues(t, r)["a"][""].Int
	removeParts(t, r)
	assert.Equal(t, int64(2), got, "a in the file after Close: its function returned 2 to Close")
}

// TestFuncGatheredBeforeStart: Gather on a registry never started (expose
// on a host without PCP) calls a callback metric's function, where it
// served 0, a value the function never returned.
func TestFuncGatheredBeforeStart(t *testing.T) {
	r := mmvtest.NewRegistry(t, nil)
	mmv.NewGaugeFunc(r, "pool_size", "Pool size", mmv.Count, func() float64 { return 42 })
	var got []float64
	r.Gather(func(f *mmv.Family) {
		if f.Name == "pool_size" {
			for _, s := range f.Samples {
				got = append(got, s.Value.Float())
			}
		}
	})
	assert.Equal(t, []float64{42}, got)
}

// TestStuckCallbackRunHoldsNoClose: Close runs a callback metric's
// function once more, waiting for a run in progress up to a second, not
// for ever: a run stuck since a Gather before Start held Close, with the
// registry's lock, and every declaration behind it.
func TestStuckCallbackRunHoldsNoClose(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mmv")
	r := mmv.NewRegistry("stuckcb", &mmv.Options{Dir: dir})
	release := make(chan struct{})
	var calls atomic.Int32
	mmv.NewGaugeFunc(r, "g", "", mmv.Count, func() float64 {
		if calls.Add(1) == 1 {
			<-release // the first run, Gather's, is stuck
		}
		return 1
	})
	t.Cleanup(func() { close(release) })
	r.Gather(func(*mmv.Family) {}) // returns after pollWait, the run stuck
	startOrSkip(t, r)
	closed := make(chan error, 1)
	go func() { closed <- r.Close() }()
	select {
	case <-closed:
	case <-time.After(3 * time.Second):
		t.Fatal("Close waits for a callback run stuck since a Gather before Start, holding the registry's lock")
	}
}

// TestCallbackPanicAtCloseClosesAll: a callback metric whose
// function panics at Close (a pool read after its own shutdown) makes
// Close panic with the function's value, on the caller's goroutine, as
// its doc allows; but the registry is closed all the same: the Process
// file removed, its name free for another registry, the polls declared
// after the callback stopped. Close stopped at the panic, half done: the
// file stayed at its name, PCP showing the closed program's last values,
// the name locked for good (a second Close did nothing, a new registry
// of the name got ErrInUse), and the later polls ran for ever.
func TestCallbackPanicAtCloseClosesAll(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mmv")
	before := runtime.NumGoroutine()
	r := mmv.NewRegistry("cbpanic", &mmv.Options{Dir: dir, Flags: mmv.Process})
	var closing atomic.Bool
	var calls atomic.Int32
	mmv.NewIntGaugeFunc(r, "pool.open", "", mmv.Count, func() int64 {
		if closing.Load() {
			panic("pool closed")
		}
		calls.Add(1)
		return 3
	})
	var polls atomic.Int64
	r.Poll(time.Millisecond, func() { polls.Add(1) })
	mmv.NewHistogram(r, "latency", "", mmv.Second, nil).Observe(1)
	startOrSkip(t, r)
	path := r.Path()
	require.FileExists(t, path)

	// Start's run and its poll's first: the next is a second away.
	for calls.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	closing.Store(true)
	var got any
	func() {
		defer func() { got = recover() }()
		r.Close()
	}()
	assert.Equal(t, "pool closed", got, "Close panics with the callback's value")
	assert.NoFileExists(t, path, "the Process file is removed")
	again := mmv.NewRegistry("cbpanic", &mmv.Options{Dir: dir, Flags: mmv.Process})
	assert.NoError(t, again.Start(), "the name is free")
	require.NoError(t, again.Close())
	n := polls.Load()
	time.Sleep(20 * time.Millisecond)
	assert.Equal(t, n, polls.Load(), "the poll stopped")
	for end := time.Now().Add(2 * time.Second); runtime.NumGoroutine() > before && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
	assert.LessOrEqual(t, runtime.NumGoroutine(), before, "goroutines left")
}

// TestCallbackReadingAVectorCloses: a callback metric whose
// function reads a vector of its registry (the number of its instances:
// tenants active), which takes the registry's lock, lets Snapshot and
// Close return: they ran it holding that lock, and waited for ever.
func TestCallbackReadingAVectorCloses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mmv")
	r := mmv.NewRegistry("cbvec", &mmv.Options{Dir: dir, Flags: mmv.Process})
	tenants := mmv.NewCounterVec(r, "requests", "", mmv.Count, "tenant")
	mmv.NewIntGaugeFunc(r, "tenants", "Tenants active", mmv.Count, func() int64 { return int64(len(tenants.Instances())) })
	tenants.With("a").Inc()
	tenants.With("b").Inc()
	startOrSkip(t, r)
	done := make(chan error, 1)
	go func() {
		iv, err := mmvtest.Lookup(r, "tenants") // a Snapshot
		if err == nil && iv.Value != int64(2) {
			err = fmt.Errorf("tenants %v, not 2", iv.Value)
		}
		if err == nil {
			err = r.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Snapshot or Close waits for ever: the callback waits for the registry's lock they hold")
	}
}

// TestStuckCallbacksHoldCloseASecond: callback metrics that all
// block for ever in Close's run (the counts of one pool, read through the
// lock its shutdown holds: database/sql's Stats has nine) let Close
// return after a second in all, the registry closed (its Process file
// removed), as the doc says, and Snapshot too. Close ran them on its own
// goroutine and waited for ever, and a service's shutdown with it; then
// each was waited for a second in turn, so four held Close four seconds.
func TestStuckCallbacksHoldCloseASecond(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mmv")
	r := mmv.NewRegistry("cbstuckall", &mmv.Options{Dir: dir, Flags: mmv.Process})
	var closing atomic.Bool
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	for _, name := range []string{"open", "idle", "in_use", "waits"} {
		mmv.NewIntGaugeFunc(r, "pool."+name, "", mmv.Count, func() int64 {
			if closing.Load() {
				<-release
			}
			return 1
		})
	}
	startOrSkip(t, r)
	path := r.Path()
	closing.Store(true)
	for _, c := range []struct {
		what string
		call func() error
	}{
		{"Snapshot", func() error { _, err := r.Snapshot(); return err }},
		{"Close", r.Close},
	} {
		began := time.Now()
		require.NoError(t, c.call(), c.what)
		assert.Less(t, time.Since(began), 2*time.Second, "%s held by four stuck callbacks", c.what)
	}
	assert.NoFileExists(t, path, "the Process file is removed")
}

// TestLateCallbackPanicEndsProgram: a callback metric's function
// that panics past the second Close waits for it, Close returned, ends
// the program with its own stack, as it does on the registry's
// goroutine: its run swallowed the panic, and the program went on as if
// the function had returned (run in a child, which must die of it).
func TestLateCallbackPanicEndsProgram(t *testing.T) {
	if childRole() == "latepanic" {
		r := mmv.NewRegistry("latepanic", &mmv.Options{Dir: os.Getenv("MMV_LATE_DIR"), Flags: mmv.Process})
		var closing, panicked atomic.Bool
		mmv.NewIntGaugeFunc(r, "pool.open", "", mmv.Count, func() int64 {
			if closing.Load() && !panicked.Swap(true) { // Close's run, once
				time.Sleep(1500 * time.Millisecond)
				panic("pool read after its shutdown")
			}
			return 1
		})
		if err := r.Start(); err != nil {
			fmt.Println("no start:", err)
			return
		}
		closing.Store(true)
		fmt.Println("close returned:", r.Close())
		time.Sleep(2 * time.Second)
		fmt.Println("survived")
		return
	}
	cmd := childCmd(t, "TestLateCallbackPanicEndsProgram", "latepanic", nil, "MMV_LATE_DIR="+filepath.Join(t.TempDir(), "mmv"))
	out, err := cmd.CombinedOutput()
	if strings.Contains(string(out), "no start:") {
		t.Skipf("the child could not start: %s", out)
	}
	assert.Error(t, err, "the child lived on:\n%s", out)
	assert.Contains(t, string(out), "close returned: <nil>", "Close returned first")
	assert.NotContains(t, string(out), "survived")
	assert.Contains(t, string(out), "panic: pool read after its shutdown", "the function's panic")
	assert.Contains(t, string(out), "TestLateCallbackPanicEndsProgram.func", "the function's own frame in the trace")
}

// TestCallbackPanicBeforeStartReachesCaller: before Start, a
// callback metric's function that panics in Snapshot's run panics in
// Snapshot's caller, as its doc says, and in Gather's (package expose's
// handler, which net/http recovers): it panicked on the goroutine
// Snapshot and Gather run the polls on, and no caller could recover, so
// a scrape killed the service (run in a child, which must survive).
func TestCallbackPanicBeforeStartReachesCaller(t *testing.T) {
	if childRole() == "unstartedpanic" {
		r := mmv.NewRegistry("unstartedpanic", &mmv.Options{Dir: os.Getenv("MMV_UNSTARTED_DIR")})
		mmv.NewIntGaugeFunc(r, "pool.open", "", mmv.Count, func() int64 { panic("no pool yet") })
		for what, call := range map[string]func(){
			"snapshot": func() { _, _ = r.Snapshot() },
			"gather":   func() { r.Gather(func(*mmv.Family) {}) },
		} {
			func() {
				defer func() { fmt.Printf("%s recovered: %v\n", what, recover()) }()
				call()
			}()
		}
		fmt.Println("survived")
		return
	}
	cmd := childCmd(t, "TestCallbackPanicBeforeStartReachesCaller", "unstartedpanic", nil, "MMV_UNSTARTED_DIR="+filepath.Join(t.TempDir(), "mmv"))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the child died:\n%s", out)
	assert.Contains(t, string(out), "snapshot recovered: no pool yet")
	assert.Contains(t, string(out), "gather recovered: no pool yet")
	assert.Contains(t, string(out), "survived")
}

// TestNoCallbackRunAfterClose: a callback metric's poll that
// comes due while Close's own run of the function holds it (a slow
// function, its run past Close's second) does not run the function once
// Close has returned: it waited for that run, then ran the function
// again, on a closed registry (a pool read after its shutdown).
func TestNoCallbackRunAfterClose(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mmv")
	r := mmv.NewRegistry("cbafterclose", &mmv.Options{Dir: dir, Flags: mmv.Process})
	var closing atomic.Bool
	var closedAt atomic.Int64 // unix nanoseconds, once Close returned
	var after atomic.Int32    // runs begun after Close returned
	mmv.NewIntGaugeFunc(r, "pool.open", "", mmv.Count, func() int64 {
		if c := closedAt.Load(); c != 0 && time.Now().UnixNano() > c {
			after.Add(1)
		}
		if closing.Load() {
			time.Sleep(1500 * time.Millisecond) // past Close's second, past the poll's next tick
		}
		return 1
	})
	startOrSkip(t, r)
	closing.Store(true)
	require.NoError(t, r.Close())
	closedAt.Store(time.Now().UnixNano())
	time.Sleep(3 * mmv.DefaultInterval)
	assert.Zero(t, after.Load(), "runs of the function begun after Close returned")
}

// TestCallbackGoexitReachesCaller: a callback metric's function that
// ends its goroutine (runtime.Goexit, as testing's FailNow does) in the
// run of Snapshot, before Start and after, or of Close, ends the
// caller's goroutine, as it would have had it run there, Close having
// closed the registry first: its run recovered nothing, and the caller
// panicked with nil.
func TestCallbackGoexitReachesCaller(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mmv")
	r := mmv.NewRegistry("cbgoexit", &mmv.Options{Dir: dir, Flags: mmv.Process})
	var exit atomic.Bool
	mmv.NewIntGaugeFunc(r, "pool.open", "", mmv.Count, func() int64 {
		if exit.Load() {
			runtime.Goexit()
		}
		return 1
	})
	// call runs f on a goroutine of its own, and says how it ended.
	call := func(f func()) (returned bool, recovered any) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer func() { recovered = recover() }()
			f()
			returned = true
		}()
		<-done
		return returned, recovered
	}
	snapshot := func() { _, _ = r.Snapshot() }
	exit.Store(true)
	returned, recovered := call(snapshot)
	assert.False(t, returned, "Snapshot before Start returned")
	assert.Nil(t, recovered, "Snapshot before Start panicked")
	exit.Store(false)
	startOrSkip(t, r)
	path := r.Path()
	exit.Store(true)
	returned, recovered = call(snapshot)
	assert.False(t, returned, "Snapshot returned")
	assert.Nil(t, recovered, "Snapshot panicked")
	returned, recovered = call(func() { _ = r.Close() })
	assert.False(t, returned, "Close returned")
	assert.Nil(t, recovered, "Close panicked")
	assert.NoFileExists(t, path, "Close closed the registry first: its Process file is removed")
}

// TestCallbackSnapshotWaitsNotForItself: a callback metric's
// function that reads its registry's Snapshot (a diagnostic, a test)
// does not wait for its own run: Snapshot waited a second at each such
// call, for the run it was called from, and each refresh with it.
func TestCallbackSnapshotWaitsNotForItself(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mmv")
	r := mmv.NewRegistry("cbselfsnap", &mmv.Options{Dir: dir, Flags: mmv.Process})
	var inside atomic.Bool
	var took atomic.Int64 // the longest Snapshot inside a run, ns
	mmv.NewIntGaugeFunc(r, "pool.open", "", mmv.Count, func() int64 {
		if inside.Swap(true) {
			return 1 // the Snapshot below runs the function too
		}
		defer inside.Store(false)
		began := time.Now()
		_, _ = r.Snapshot() // ErrClosed in a refresh racing Close
		if d := int64(time.Since(began)); d > took.Load() {
			took.Store(d)
		}
		return 1
	})
	startOrSkip(t, r)
	began := time.Now()
	_, err := r.Snapshot()
	require.NoError(t, err)
	assert.Less(t, time.Since(began), 500*time.Millisecond, "a Snapshot whose callback reads Snapshot")
	assert.Less(t, time.Duration(took.Load()), 500*time.Millisecond, "the Snapshot inside the callback")
	require.NoError(t, r.Close())
}
