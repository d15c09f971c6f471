package fleet

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
)

// cluster is the service's PMID cluster: fixed, so that its PMIDs are the
// same on every host and across restarts (cluster 0 would let each pmcd
// choose). Like the file name it is the test process's own, so that
// concurrent runs on one pmcd do not collide (mmv.ErrClusterInUse).
var cluster = uint32(1 + os.Getpid()%2047)

// routes are the instances of the service's hits vector.
var routes = []string{"/api", "/health"}

// service is a Go service instrumented with mmv, as on every host of a
// fleet: the same file name, cluster and labels everywhere.
type service struct {
	r        *mmv.Registry
	requests *mmv.Counter          // perMS per millisecond since t0
	workers  *mmv.IntGauge         // fixed per service
	hits     *mmv.Vec[mmv.Counter] // fixed per route
	late     *mmv.IntGauge         // declared after Start: a growth step

	t0                      time.Time
	perMS                   uint64
	workersValue, lateValue float64
	stop                    chan struct{}
	done                    sync.WaitGroup
}

// serviceName is the file name, unique to the test process so that
// concurrent runs on one pmcd do not collide (mmv.ErrInUse).
var serviceName = fmt.Sprintf("fleet%d", os.Getpid())

// startService starts the service in dir (pmcd's MMV directory), its
// registry with flags: requests counts perMS every millisecond, workers
// and the hits are set once, and late is declared after Start and set to
// lateValue. With the Process flag, pmcd drops the metrics when the
// process is gone, and Close renames the files to closed records, which
// the test removes at its end; without it, the test removes the file at
// its end: nothing is left in the system directory.
func startService(t *testing.T, dir, label string, flags mmv.Flags, perMS uint64, workers int64, lateValue int64) *service {
	t.Helper()
	if flags&mmv.Process == 0 {
		t.Cleanup(func() { os.Remove(filepath.Join(dir, serviceName)) })
	} else {
		pcptest.RemoveClosedRecords(t, dir, serviceName)
	}
	r := mmv.NewRegistry(serviceName, &mmv.Options{Cluster: cluster, Dir: dir, Flags: flags})
	s := &service{r: r, perMS: perMS, workersValue: float64(workers), lateValue: float64(lateValue), stop: make(chan struct{})}
	s.requests = mmv.NewCounter(r, "requests", "Requests served", mmv.Count)
	s.workers = mmv.NewIntGauge(r, "workers", "Worker goroutines", mmv.Count)
	s.hits = mmv.NewCounterVec(r, "hits", "Requests by route", mmv.Count, "route")
	for _, rt := range routes { // instance ids in this order
		s.hits.With(rt)
	}
	// The service label on the whole registry (a cluster label) is what
	// pmseries queries by; pmproxy 6.0.3's /metrics leaves cluster labels
	// out, so the role label goes on the metrics themselves too.
	require.NoError(t, r.AddLabel(mmv.Label{Name: "service", Value: label}), "service label")
	for _, m := range []string{"requests", "workers"} {
		require.NoError(t, r.AddMetricLabel(m, mmv.Label{Name: "role", Value: "frontend"}), "role label on %s", m)
	}
	// Values set before they are published: an archive recorded across a
	// restart sees each generation's values, never a zero in between.
	s.workers.Set(workers)
	for _, rt := range routes {
		s.hits.With(rt).Set(uint64(s.hitsValues()["route="+rt]))
	}
	require.NoError(t, r.Start(), "starting the service's registry")
	t.Cleanup(s.close)
	s.late = mmv.NewIntGauge(r, "late", "Declared after Start", mmv.Count)
	s.late.Set(lateValue)
	require.NoError(t, r.Flush(), "publishing the metric declared after Start")
	s.t0 = time.Now()
	s.done.Add(1)
	go func() {
		defer s.done.Done()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			s.requests.Set(s.want(time.Now()))
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

// hitsValues are the values of hits by instance name ("route=/api"):
// 100, 200, ...
func (s *service) hitsValues() map[string]float64 {
	m := map[string]float64{}
	for i, rt := range routes {
		m["route="+rt] = float64(100 * (i + 1))
	}
	return m
}

// want is what requests holds at time at.
func (s *service) want(at time.Time) uint64 {
	return s.perMS * uint64(at.Sub(s.t0).Milliseconds())
}

// close stops the service; it may be called more than once.
func (s *service) close() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	s.done.Wait()
	s.r.Close()
}
