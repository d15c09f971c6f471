package mmv_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/mmvfile"
)

// TestUpdatesDuringClose runs goroutines updating values of every type in
// tight loops (Add, Set, SetFloat, SetString, StartInterval and
// EndInterval, AddDuration, SetNoValue, and the reads) while Close runs,
// and on after it: nothing crashes, the race detector sees nothing, and
// the updates after Close are dropped: without the Process flag the file
// keeps the values it had when Close returned. With the flag, the file is
// gone and the updates land nowhere.
func TestUpdatesDuringClose(t *testing.T) {
	for _, flags := range []mmv.Flags{0, mmv.Process} {
		t.Run(flags.String(), func(t *testing.T) {
			dir := t.TempDir()
			r := mmv.NewRegistry("closing", &mmv.Options{Dir: dir, Flags: flags})
			require.NoError(t, r.AddIndom(mmv.Indom{Serial: 1, Instances: []mmv.Instance{{ID: 0, Name: "a"}, {ID: 1, Name: "b"}}}))
			for _, ty := range sentinelTypes {
				require.NoError(t, r.AddMetric(mmv.Metric{Name: ty.name, Type: ty.typ, Semantics: mmv.SemInstant}))
				require.NoError(t, r.AddMetric(mmv.Metric{Name: "per." + ty.name, Type: ty.typ, Semantics: mmv.SemInstant, Indom: 1}))
			}
			startOrSkip(t, r)
			var values []*mmv.Value
			for _, ty := range sentinelTypes {
				for _, key := range [][2]string{{ty.name, ""}, {"per." + ty.name, "a"}, {"per." + ty.name, "b"}} {
					v, err := r.Value(key[0], key[1])
					require.NoError(t, err)
					values = append(values, v)
				}
			}

			var stop atomic.Bool
			var wg sync.WaitGroup
			var rounds atomic.Int64
			var running sync.WaitGroup // every updater has made a round
			for _, v := range values {
				// Two updaters per value, but one owner of the interval.
				for g := range 2 {
					wg.Add(1)
					running.Add(1)
					go func() {
						defer wg.Done()
						for i := 0; !stop.Load(); i++ {
							switch {
							case v.Type() == mmv.String:
								v.SetString("s")
								_ = v.String()
							case v.Type() == mmv.Elapsed && g == 0:
								v.StartInterval()
								v.EndInterval()
								v.AddDuration(time.Microsecond)
							default:
								v.Add(1)
								v.Inc()
								v.Set(int64(i))
								v.SetFloat(float64(i))
								v.AddFloat(0.5)
								v.AddDuration(time.Microsecond)
								if i%100 == 0 {
									v.SetNoValue()
								}
								_, _, _ = v.Int(), v.Float(), v.String()
							}
							if rounds.Add(1); i == 0 {
								running.Done()
							}
							// Turns, so that 60 updaters all run, and Close
							// with them, in a second rather than ten.
							runtime.Gosched()
						}
					}()
				}
			}
			running.Wait()
			for rounds.Load() < 2000 {
				time.Sleep(time.Millisecond)
			}
			require.NoError(t, r.Close())
			path := filepath.Join(dir, "closing")
			var atClose *mmvfile.File
			if flags&mmv.Process == 0 {
				var err error
				atClose, err = mmvfile.Open(path)
				require.NoError(t, err)
			}
			// Updates go on after Close.
			after := rounds.Load()
			for rounds.Load() < after+2000 {
				time.Sleep(time.Millisecond)
			}
			stop.Store(true)
			wg.Wait()
			require.NoError(t, r.Close())

			_, err := r.Value("i32", "")
			assert.Error(t, err, "Value after Close does not fail")
			if flags&mmv.Process != 0 {
				// The file's closed record alone, which PCP ignores.
				assert.Equal(t, []string{".closing.closed"}, entries(t, dir), "Close with the Process flag left files")
				return
			}
			now, err := mmvfile.Open(path)
			require.NoError(t, err)
			for i, v := range now.Values {
				w := atClose.Values[i]
				assert.False(t, v.Atom != w.Atom || v.Extra != w.Extra || v.String != w.String, "%s %v changed after Close: %x %d %q, was %x %d %q", v.Metric.Name, v.Instance,
					v.Atom, v.Extra, v.String, w.Atom, w.Extra, w.String)
			}
			// The values were being updated before Close.
			assert.False(t, atClose.Values[len(atClose.Values)-1].Atom == [8]byte{} && atClose.Values[0].Atom == [8]byte{}, "no update reached the file before Close")
		})
	}
}

// TestStrayUpdatesAcrossCollections runs, in a child process with two
// CPUs, more goroutines than CPUs updating through whichever registry's
// handles are current while registries start and close and the collector
// runs all the time (GOGC=1): a closed file's range is unmapped as soon as
// the collector finds no handle on it, so the child lives only if every
// update stopped between loading its address and storing holds its
// handle. (With the ranges unmapped at Close, it dies with SIGSEGV within
// the 300 cycles.)
func TestStrayUpdatesAcrossCollections(t *testing.T) {
	if childRole() == "stray" {
		strayUpdates(t)
		return
	}
	t.Parallel() // it waits on its child
	cmd := childCmd(t, "TestStrayUpdatesAcrossCollections", "stray", nil, "GOMAXPROCS=2", "GOGC=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the child died:\n%.2000s", out)
}

func strayUpdates(t *testing.T) {
	type handles struct {
		v []*mmv.Value
		c *mmv.Counter
		g *mmv.Gauge
	}
	var current atomic.Pointer[handles]
	var stop atomic.Bool
	var wg sync.WaitGroup
	// One update per load of current: nothing else holds the handles.
	ops := []func(h *handles, g int){
		func(h *handles, g int) { h.v[g%len(h.v)].Add(1) },
		func(h *handles, g int) { h.v[g%len(h.v)].SetFloat(2) },
		func(h *handles, g int) { h.c.Inc() },
		func(h *handles, g int) { h.g.Add(1) },
	}
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				if h := current.Load(); h != nil {
					ops[g%len(ops)](h, g/len(ops))
				}
			}
		}()
	}
	dir := t.TempDir()
	types := []mmv.Type{mmv.Uint64, mmv.Int32, mmv.Double, mmv.Float}
	var prev *mmv.Registry
	for i := range 300 {
		r := mmv.NewRegistry(fmt.Sprint("stray", i%2), &mmv.Options{Dir: dir, Flags: mmv.Process})
		h := &handles{c: mmv.NewCounter(r, "c", "", mmv.Count), g: mmv.NewGauge(r, "g", "", mmv.NoUnits)}
		for j, ty := range types {
			require.NoError(t, r.AddMetric(mmv.Metric{Name: fmt.Sprint("m", j), Type: ty, Semantics: mmv.SemInstant}))
		}
		startOrSkip(t, r)
		for j := range types {
			v, err := r.Value(fmt.Sprint("m", j), "")
			require.NoError(t, err)
			h.v = append(h.v, v)
		}
		current.Store(h)
		if prev != nil {
			require.NoError(t, prev.Close())
		}
		prev = r
	}
	stop.Store(true)
	wg.Wait()
	require.NoError(t, prev.Close())
}

// TestCloseWhilePaced: Close while the timer waits out its pace (a
// burst of publications spent, first uses waiting for the next) publishes
// what the files lack, without the Process flag, and leaves nothing to
// fire: no file replaced, made or left after it, with the flag or
// without.
func TestCloseWhilePaced(t *testing.T) {
	needFileLayer(t)
	for _, flags := range []mmv.Flags{0, mmv.Process} {
		t.Run(fmt.Sprint("flags=", flags), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "mmv")
			r := newRegistry(t, "closepaced", dir, mmv.Options{Flags: flags})
			v := mmv.NewCounterVec(r, "requests", "", mmv.Count, "id")
			startOrSkip(t, r)
			for i := range 10 { // past the burst
				v.With(fmt.Sprint("f", i)).Inc()
				require.NoError(t, r.Flush())
			}
			for i := range 100 {
				v.With(fmt.Sprint("w", i)).Add(uint64(i))
			}
			time.Sleep(100 * time.Millisecond) // past PublishDelay: the pace holds them
			require.False(t, fileShows(r, "requests", "id=w99"), "published within the pace")
			require.NoError(t, r.Close())
			before := entries(t, dir)
			var closed os.FileInfo
			if flags == 0 {
				f, err := mmvfile.Open(r.Path())
				require.NoError(t, err)
				got := 0
				for _, val := range f.Values {
					if val.Instance != nil && strings.HasPrefix(val.Instance.Name, "id=w") {
						got++
					}
				}
				assert.Equal(t, 100, got, "the values first used while paced, in the file Close left")
				closed, err = os.Stat(r.Path())
				require.NoError(t, err)
			} else {
				assert.Equal(t, []string{".closepaced.closed"}, before, "the files after Close, with the Process flag: the closed record alone")
			}
			time.Sleep(1500 * time.Millisecond) // past the pace's wait
			assert.Equal(t, before, entries(t, dir), "the directory after the pace's wait")
			if closed != nil {
				now, err := os.Stat(r.Path())
				require.NoError(t, err)
				assert.True(t, os.SameFile(closed, now), "the file Close left, replaced after it")
			}
		})
	}
}

// TestProcessCloseRemovesFileWhenRecordFails: a Process registry's Close
// that cannot rename a file to its closed record (a directory planted at
// .<file>.closed, or at .<file>.2.closed for its overflow file) removes
// the file all the same, so that PCP stops showing it, and says why; its
// other file becomes its record.
func TestProcessCloseRemovesFileWhenRecordFails(t *testing.T) {
	needFileLayer(t)
	for _, c := range []struct{ planted, record string }{
		{".planted.closed", ".planted.2.closed"},
		{".planted.2.closed", ".planted.closed"},
	} {
		t.Run(c.planted, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.Mkdir(filepath.Join(dir, c.planted), 0o755))
			r := newRegistry(t, "planted", dir, mmv.Options{Flags: mmv.Process, MaxFileValues: 1})
			mmv.NewCounter(r, "m", "", mmv.Count).Inc()
			mmv.NewCounter(r, "n", "", mmv.Count).Inc() // planted.2
			startOrSkip(t, r)
			require.FileExists(t, r.Path()+".2")
			err := r.Close()
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.planted)
			assert.ElementsMatch(t, []string{c.planted, c.record}, entries(t, dir), "the file removed, the directory left")
		})
	}
}
