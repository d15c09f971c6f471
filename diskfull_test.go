//go:build linux

package mmv_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/mmvfile"
)

// fullVec starts a registry "full" with that PublishDelay in the mmv
// directory of a 256k tmpfs (room for a few hundred instances once
// freed), with a counter vector "v" over label "k" whose instance
// "declared" counts declared, then fills the tmpfs. It returns the tmpfs
// (a PCP_TMP_DIR), the registry, closed when the test ends, the vector,
// and the filler to remove.
func fullVec(t *testing.T, delay time.Duration, declared uint64) (string, *mmv.Registry, *mmv.Vec[mmv.Counter], string) {
	t.Helper()
	tmp := pcptest.SmallTmpfs(t, "256k")
	r := mmv.NewRegistry("full", &mmv.Options{Dir: filepath.Join(tmp, "mmv"), PublishDelay: delay})
	t.Cleanup(func() { r.Close() })
	v := mmv.NewCounterVec(r, "v", "", mmv.Count, "k")
	v.With("declared").Add(declared)
	startOrSkip(t, r)
	return tmp, r, v, pcptest.Fill(t, tmp)
}

func diskRegistry(t *testing.T, dir string, metrics int) *mmv.Registry {
	t.Helper()
	r := mmv.NewRegistry("full", &mmv.Options{Dir: dir})
	for i := range metrics {
		require.NoError(t, r.AddMetric(mmv.Metric{Name: "m" + string(rune('a'+i)), Type: mmv.Uint64, Semantics: mmv.SemCounter,
			ShortHelp: strings.Repeat("h", 200), LongHelp: strings.Repeat("l", 200)}))
	}
	return r
}

// TestDiskFullAtStart: on a full file system Start returns ENOSPC, from
// reserving the file's blocks, instead of the process dying with SIGBUS
// when it first writes the mapping; no temporary file is left behind.
func TestDiskFullAtStart(t *testing.T) {
	needFileLayer(t)
	dir := pcptest.SmallTmpfs(t, "64k")
	pcptest.Fill(t, dir)
	r := diskRegistry(t, dir, 20)
	err := r.Start()
	require.ErrorIs(t, err, syscall.ENOSPC, "Start on a full disk")
	t.Log(err)
	assert.Equal(t, []string{"filler"}, entries(t, dir), "what Start left")
	require.NoError(t, r.Close())
}

// TestDiskFullWhileGrowing: a file started before the disk filled keeps
// working (its blocks are reserved); a declaration that needs the file to
// grow returns ENOSPC, the old file stays intact and keeps taking updates,
// and declares nothing, so once space is freed the same declaration
// succeeds.
func TestDiskFullWhileGrowing(t *testing.T) {
	dir := pcptest.SmallTmpfs(t, "64k")
	r := diskRegistry(t, dir, 1)
	startOrSkip(t, r)
	defer r.Close()
	v, err := r.Value("ma", "")
	require.NoError(t, err)
	v.Set(1)
	filler := pcptest.Fill(t, dir)
	v.Add(1) // a store into the mapping of a full disk: no SIGBUS

	var growErr error
	metric := func(i int) mmv.Metric {
		return mmv.Metric{Name: "m" + string(rune('a'+i)), Type: mmv.Uint64, Semantics: mmv.SemCounter,
			ShortHelp: strings.Repeat("h", 200), LongHelp: strings.Repeat("l", 200)}
	}
	for i := 1; i < 20 && growErr == nil; i++ {
		growErr = r.AddMetric(metric(i))
		if growErr == nil {
			growErr = r.Flush()
		}
	}
	require.ErrorIs(t, growErr, syscall.ENOSPC, "growing on a full disk")
	t.Log(growErr)
	_, err = r.Value("mb", "")
	assert.Error(t, err, "the value of a metric the file could not hold has a handle")
	v.Add(1)
	f, err := mmvfile.Open(filepath.Join(dir, "full"))
	require.NoError(t, err)
	if assert.Len(t, f.Metrics, 1, "the old file's metrics") {
		assert.EqualValues(t, 3, f.Values[0].Uint, "the old file's value")
	}
	assert.Len(t, entries(t, dir), 2, "what the failed growth left: want the file and the filler")

	require.NoError(t, os.Remove(filler))
	require.NoError(t, r.AddMetric(metric(1)))
	require.NoError(t, r.Flush())
	v.Add(1)
	f, err = mmvfile.Open(filepath.Join(dir, "full"))
	require.NoError(t, err)
	if assert.GreaterOrEqual(t, len(f.Metrics), 2, "metrics after freeing space") {
		assert.EqualValues(t, 4, f.Values[0].Uint, "value after freeing space")
	}
	mb, err := r.Value("mb", "")
	require.NoError(t, err)
	mb.Add(5)
	assert.EqualValues(t, 5, mb.Int(), "the new metric")
}

// TestDeclarationOnFullDisk: a declaration after Start that needs the
// file to grow on a full disk fails whole (nothing declared, so a retry
// works once space returns); an instrument made then does not panic, counts
// from the start, and is published once space returns, as is a vector's
// new instance.
func TestDeclarationOnFullDisk(t *testing.T) {
	dir := pcptest.SmallTmpfs(t, "256k")
	r := mmv.NewRegistry("full", &mmv.Options{Dir: dir})
	defer r.Close()
	vec := mmv.NewCounterVec(r, "byroute", "requests by route", mmv.Count, "route")
	vec.With("/a")
	startOrSkip(t, r)
	filler := pcptest.Fill(t, dir)

	big := mmv.Metric{Name: "s", Type: mmv.String, Semantics: mmv.SemDiscrete}
	err := r.AddMetric(big)
	require.ErrorIs(t, err, syscall.ENOSPC)
	require.ErrorIs(t, err, mmv.ErrFile)

	var c *mmv.Counter
	require.NotPanics(t, func() {
		for i := range 40 { // enough to outgrow the spare room
			c = mmv.NewCounter(r, fmt.Sprintf("late%d", i), "late counter", mmv.Count)
			c.Add(uint64(i))
		}
	})
	b := vec.With("/b")
	require.NotNil(t, b, "a vector instance refused for lack of space")
	b.Add(3)
	assert.Error(t, r.Flush(), "Flush on a full disk")
	assert.ErrorIs(t, r.Err(), syscall.ENOSPC, "Err while the disk is full")

	require.NoError(t, os.Remove(filler))
	require.NoError(t, r.AddMetric(big), "retry after space returned")
	require.NoError(t, r.Flush())
	assert.NoError(t, r.Err(), "Err once published")
	assert.Equal(t, uint64(39), c.Get())
	assert.Equal(t, uint64(3), b.Get())
	v, err := r.Value("late39", "")
	require.NoError(t, err)
	assert.Equal(t, int64(39), v.Int())
	assert.Equal(t, uint64(3), filesValues(t, r)["byroute"]["route=/b"].Uint, "the file's byroute[/b]")
}

// TestFlushDuringOutageKeepsRetrying: on a full disk, whatever fails
// during the outage (the timer's publications, a Flush, a declaration that
// must be published at once, in any order) the registry keeps retrying:
// once space returns, every count waiting in memory reaches the file and
// PCP within a few publication delays, with no further call, and Err
// clears. It failed before when the last call of the outage was a Flush:
// the Flush stopped the retry and scheduled none, so nothing was published
// (0 of 320 instances) and Err kept reporting ENOSPC.
func TestFlushDuringOutageKeepsRetrying(t *testing.T) {
	flush := func(t *testing.T, r *mmv.Registry) {
		require.ErrorIs(t, r.Flush(), syscall.ENOSPC, "Flush during the outage")
	}
	refused := func(t *testing.T, r *mmv.Registry) {
		err := r.AddMetric(mmv.Metric{Name: "s", Type: mmv.String, Semantics: mmv.SemDiscrete})
		require.ErrorIs(t, err, syscall.ENOSPC, "a declaration published at once, during the outage")
	}
	for _, tc := range []struct {
		name string
		last []func(*testing.T, *mmv.Registry) // the calls that end the outage
	}{
		{"flush", []func(*testing.T, *mmv.Registry){flush}},
		{"refused then flush", []func(*testing.T, *mmv.Registry){refused, flush}},
		{"flush then refused", []func(*testing.T, *mmv.Registry){flush, refused}},
		{"timer only", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp, r, v, filler := fullVec(t, 10*time.Millisecond, 1)

			const n = 320
			for i := range n {
				v.With(fmt.Sprint("i", i)).Add(uint64(i + 1))
			}
			time.Sleep(50 * time.Millisecond) // the timer's tries fail meanwhile
			for _, call := range tc.last {
				call(t, r)
			}
			require.ErrorIs(t, r.Err(), syscall.ENOSPC)

			require.NoError(t, os.Remove(filler))
			published := func() int {
				f, err := mmvfile.Open(r.Path())
				if err != nil {
					return -1
				}
				got := 0
				for _, val := range f.Values {
					if val.Metric != nil && val.Metric.Name == "v" && val.Instance != nil && strings.HasPrefix(val.Instance.Name, "k=i") &&
						int(val.Uint) == 1+atoiSuffix(val.Instance.Name) {
						got++
					}
				}
				return got
			}
			require.Eventually(t, func() bool { return published() == n }, 10*time.Second, 5*time.Millisecond,
				"the retry never published the instances counted during the outage (%d of %d in the file)", published(), n)
			// The file is at its name before the publication that wrote it,
			// without the lock, has returned: Err says the outage's error
			// until then (CI once read it in that moment).
			assert.Eventually(t, func() bool { return r.Err() == nil }, 10*time.Second, 5*time.Millisecond,
				"Err once everything is published: %v", r.Err())

			if pcptest.WantPCP(t) {
				m := get(t, pcptest.Info(t, tmp), "mmv.full.v")
				shown := 0
				for i := range n {
					if in := m.Instance(fmt.Sprint("k=i", i)); in != nil && in.Value == fmt.Sprint(i+1) {
						shown++
					}
				}
				assert.Equal(t, n, shown, "instances PCP shows with their counts")
			}
		})
	}
}

// TestErrClearedByADeclarationsPublication: once a publication that a
// low-level declaration makes at once (a String value's) puts every
// declaration in the file, Err says nothing of the outage before it. It
// said the outage's full disk for good: that publication stops the timer,
// which has nothing left to publish, and only the timer's and Flush's
// cleared the error.
func TestErrClearedByADeclarationsPublication(t *testing.T) {
	_, r, v, filler := fullVec(t, time.Hour, 1)
	const n = 320
	for i := range n {
		v.With(fmt.Sprint("i", i)).Add(uint64(i + 1))
	}
	require.ErrorIs(t, r.Flush(), syscall.ENOSPC)
	require.ErrorIs(t, r.Err(), syscall.ENOSPC)
	require.NoError(t, os.Remove(filler))

	require.NoError(t, r.AddMetric(mmv.Metric{Name: "s", Type: mmv.String, Semantics: mmv.SemDiscrete}))
	f, err := mmvfile.Open(r.Path())
	require.NoError(t, err)
	shown := 0
	for _, val := range f.Values {
		if val.Metric != nil && val.Metric.Name == "v" && val.Instance != nil {
			shown++
		}
	}
	require.Equal(t, n+1, shown, "the vector's values in the file")
	assert.NoError(t, r.Err(), "Err once the file holds every declaration")
}

// atoiSuffix returns the number after "k=i" in an instance name.
func atoiSuffix(name string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(name, "k=i"))
	return n
}

// TestFailedDeclarationKeepsPlaceholder: a declaration of a placeholder's
// name (carry.go) whose publication meets a full disk is undone, the
// registry and its files as they were: the placeholder too, which the
// failed publication had dropped, and undeclareMetric did not put back.
// The next publication showed neither (the PMID vanished), and the
// declaration retried once space returned took another item. A
// placeholder now leaves the file only with a publication that succeeds.
func TestFailedDeclarationKeepsPlaceholder(t *testing.T) {
	needFileLayer(t)
	pcptest.MustHavePCP(t)
	tmp := pcptest.SmallTmpfs(t, "256k")
	dir := filepath.Join(tmp, "mmv")
	late := mmv.Metric{Name: "late", Type: mmv.String, Semantics: mmv.SemDiscrete} // a String value needs a publication now
	last := mmv.NewRegistry("undo", &mmv.Options{Dir: dir})
	mmv.NewCounter(last, "count", "", mmv.Count).Add(1)
	startOrSkip(t, last)
	require.NoError(t, last.AddMetric(late))
	require.NoError(t, last.Close())
	before := get(t, pcptest.Info(t, tmp), "mmv.undo.late")

	r := newRegistry(t, "undo", dir, mmv.Options{})
	mmv.NewCounter(r, "count", "", mmv.Count).Add(2)
	startOrSkip(t, r)
	require.Equal(t, before.PMID, get(t, pcptest.Info(t, tmp), "mmv.undo.late").PMID, "the placeholder")
	filler := pcptest.Fill(t, tmp)
	require.Error(t, r.AddMetric(late), "AddMetric on a full disk")
	require.NoError(t, os.Remove(filler))

	mmv.NewCounter(r, "other", "", mmv.Count).Add(1) // any publication of the first file
	require.NoError(t, r.Flush())
	m := pcptest.Find(pcptest.Info(t, tmp), "mmv.undo.late")
	if assert.NotNil(t, m, "the placeholder after a failed, undone AddMetric of its name: PMID %s vanished", before.PMID) {
		assert.Equal(t, before.PMID, m.PMID)
		assert.Empty(t, m.Value)
	}

	require.NoError(t, r.AddMetric(late), "the retry")
	require.NoError(t, r.Flush())
	assert.Equal(t, before.PMID, get(t, pcptest.Info(t, tmp), "mmv.undo.late").PMID, "late's PMID, declared again once space returned")
}

// TestOutageRetriesNotPaced: a publication that fails on a full disk
// replaces no file, so PCP's agent rebuilds nothing for it, and the
// registry retries it every PublishDelay, as the package doc says, until
// it succeeds: once space returns, the values waiting reach the file
// within a few delays. Counted against the timer's pace, the outage's
// failures spent its budget, and the first retry after space returned
// came up to a second later.
func TestOutageRetriesNotPaced(t *testing.T) {
	_, r, v, filler := fullVec(t, 10*time.Millisecond, 1)
	const n = 320
	for i := range n {
		v.With(fmt.Sprint("i", i)).Add(uint64(i + 1))
	}
	time.Sleep(300 * time.Millisecond) // the timer's tries fail meanwhile, more than a burst of them
	require.ErrorIs(t, r.Err(), syscall.ENOSPC)
	require.NoError(t, os.Remove(filler))
	began := time.Now()
	for r.Err() != nil && time.Since(began) < 5*time.Second {
		time.Sleep(time.Millisecond)
	}
	took := time.Since(began)
	t.Logf("published %v after space returned", took.Round(time.Millisecond))
	assert.Less(t, took, 200*time.Millisecond, "the retry after space returned, at a PublishDelay of 10ms")
	assert.Equal(t, uint64(n), filesValues(t, r)["v"][fmt.Sprint("k=i", n-1)].Uint)
}
