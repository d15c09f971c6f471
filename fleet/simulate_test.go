package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/goruntime"
	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/middleware"
)

// variant is one way of declaring the example service (examples/httpserver:
// mmv's middleware, a timer and the runtime bridge), whose fleet cost
// TestFleetScale measures. Every variant but the first trims one thing.
type variant struct {
	name, what string
	runtime    bool                  // the runtime bridge (goruntime)
	latency    *mmv.HistogramOptions // the latency histograms' options
	noLabels   bool                  // requests' instances without PCP instance labels
}

// fewBuckets are latency buckets an operator reads a p99 and an SLO from.
var fewBuckets = []float64{0.005, 0.025, 0.1, 0.5, 2.5}

var variants = []variant{
	{name: "httpserver", what: "examples/httpserver as it is: middleware, timer, runtime bridge", runtime: true},
	{name: "noruntime", what: "without the runtime bridge"},
	{name: "p99only", what: "latency quantiles: p99 only (HistogramOptions.Quantiles)", runtime: true,
		latency: &mmv.HistogramOptions{Quantiles: []float64{0.99}}},
	{name: "fewbuckets", what: "latency buckets: 5 bounds instead of 18 (HistogramOptions.Buckets)", runtime: true,
		latency: &mmv.HistogramOptions{Buckets: fewBuckets}},
	{name: "nolabels", what: "requests' instances without instance labels (Vec.SetInstanceLabels(false))", runtime: true, noLabels: true},
}

// simService is one variant of the example service, running: its own
// registry (file name and cluster unique to the test process and variant)
// and HTTP server on loopback.
type simService struct {
	v       variant
	r       *mmv.Registry
	cluster uint32
	name    string // the registry's name: metrics are mmv.<name>.
	url     string
	srv     *http.Server
}

// simRoutes are the service's routes; requests without one count as
// "other". An operator's query picks /api.
var simRoutes = []string{"/api", "/api", "/api", "/login", "/static", "/slow", "/fail", "/missing"}

// startSimService starts a variant of the service publishing in dir
// (pmcd's MMV directory) with the cluster label service="httpserver" and a
// zone label, which the simulation rewrites per host.
func startSimService(t *testing.T, dir string, v variant, cluster uint32) *simService {
	t.Helper()
	s := &simService{v: v, name: fmt.Sprintf("%s%d", v.name, os.Getpid())}
	pcptest.RemoveClosedRecords(t, dir, s.name) // Close leaves them (the Process flag)
	var m *middleware.Metrics
	var work *mmv.Timer
	// The cluster is fixed, as a fleet's must be; another test's file may
	// hold it on this shared pmcd: then the next one.
	for try := 0; ; try++ {
		s.cluster = 1 + (cluster+uint32(try))%2047
		s.r = mmv.NewRegistry(s.name, &mmv.Options{Cluster: s.cluster, Dir: dir, Flags: mmv.Process})
		require.NoError(t, s.r.AddLabel(mmv.Label{Name: "service", Value: "httpserver"}))
		require.NoError(t, s.r.AddLabel(mmv.Label{Name: "zone", Value: "zone-0"}))
		m = middleware.New(s.r, &middleware.Options{Latency: v.latency})
		if v.noLabels {
			m.Requests().SetInstanceLabels(false)
		}
		work = mmv.NewTimer(s.r, "app.work_time", "Time spent in the handlers' work")
		if v.runtime {
			require.NoError(t, goruntime.Register(s.r, &goruntime.Options{Prefix: "go"}))
		}
		err := s.r.Start()
		if err == nil {
			break
		}
		s.r.Close()
		require.True(t, errors.Is(err, mmv.ErrClusterInUse) && try < 20, "starting %s: %v", s.name, err)
	}

	mux := http.NewServeMux()
	mux.HandleFunc("/api", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"ok":true}`) })
	mux.HandleFunc("/login", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "welcome\n") })
	mux.HandleFunc("/static", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Repeat("0123456789abcdef", 64+rand.IntN(256)))
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		work.Time(func() { time.Sleep(time.Duration(1+rand.IntN(10)) * time.Millisecond) })
		io.WriteString(w, "done\n")
	})
	mux.HandleFunc("/fail", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "failed", http.StatusInternalServerError) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s.srv = &http.Server{Handler: m.Wrap(mux)}
	go s.srv.Serve(ln)
	s.url = "http://" + ln.Addr().String()
	t.Cleanup(func() {
		s.srv.Close()
		s.r.Close()
	})
	return s
}

// drive sends the services requests on the simulated routes from two
// goroutines until ctx is done; the returned function waits for them.
func drive(ctx context.Context, ss []*simService) func() {
	var wg sync.WaitGroup
	c := &http.Client{Timeout: 5 * time.Second}
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				for _, s := range ss {
					req, _ := http.NewRequestWithContext(ctx, "GET", s.url+simRoutes[rand.IntN(len(simRoutes))], nil)
					if resp, err := c.Do(req); err == nil {
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
				}
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}
	return func() { wg.Wait(); c.CloseIdleConnections() }
}

// hostName is the simulated host i's name.
func hostName(i int) string { return fmt.Sprintf("fleet-%04d", i) }

// multiply writes n host archives from the archive base into dir, each
// host i's own: its host name in the archive's label (pmlogrewrite) and in
// the hostname context label, which is what pmseries matches and tells
// hosts apart by; its machineid; and its zone (the service's cluster
// label), one of 10 as a fleet spread over zones. It returns their bases.
func multiply(t *testing.T, tl tools, base, dir string, n int) []string {
	t.Helper()
	meta, err := os.ReadFile(base + ".meta")
	require.NoError(t, err)
	vol, err := filepath.Abs(base + ".0")
	require.NoError(t, err)
	// Re-encoded unchanged, pmlogger's own label records are byte for
	// byte what it wrote.
	for _, typ := range []uint32{labelContext, labelCluster} {
		same, err := setLabels(meta, typ, nil)
		require.NoError(t, err, "%s.meta", base)
		require.Equal(t, meta, same, "%s.meta: label records of type %d re-encoded unchanged", base, typ)
	}
	tmp := filepath.Join(dir, "relabelled")
	out := make([]string, n)
	for i := range n {
		m, err := setLabels(meta, labelContext, map[string]string{"hostname": hostName(i), "machineid": fmt.Sprintf("%032x", 0xf1ee7000+i)})
		require.NoError(t, err, "%s.meta", base)
		m, err = setLabels(m, labelCluster, map[string]string{"zone": fmt.Sprintf("zone-%d", i%10)})
		require.NoError(t, err, "%s.meta", base)
		// The relabelled metadata with the recording's volume and no
		// index (the labels' offsets moved): pmlogrewrite writes both.
		require.NoError(t, os.WriteFile(tmp+".meta", m, 0o644))
		require.NoError(t, os.Symlink(vol, tmp+".0"))
		conf := tmp + ".rewrite"
		require.NoError(t, os.WriteFile(conf, fmt.Appendf(nil, "GLOBAL { HOSTNAME -> %s }\n", hostName(i)), 0o644))
		out[i] = filepath.Join(dir, hostName(i))
		command(t, nil, tl.pmlogrewrite, "-c", conf, tmp, out[i])
		for _, f := range []string{".meta", ".0", ".rewrite"} {
			require.NoError(t, os.Remove(tmp+f))
		}
	}
	// PCP's reader sees the last host's labels, whole.
	labels := command(t, nil, tl.pmdumplog, "-e", out[n-1])
	for _, want := range []string{
		fmt.Sprintf(`"hostname":%q,"machineid":"%032x"`, hostName(n-1), 0xf1ee7000+n-1),
		fmt.Sprintf(`{"service":"httpserver","zone":"zone-%d"}`, (n-1)%10),
	} {
		require.Contains(t, labels, want, "pmdumplog -e %s", out[n-1])
	}
	return out
}
