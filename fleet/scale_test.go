package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var (
	fleetHosts    = flag.Int("fleet.hosts", 10, "TestFleetScale: hosts the recorded service is multiplied into")
	fleetRecords  = flag.Int("fleet.records", 20, "TestFleetScale: pmlogger records per host archive, at 100ms (360 stands for an hour at 10s)")
	fleetVariants = flag.String("fleet.variants", "httpserver", `TestFleetScale: the service variants measured, comma-separated, or "all"`)
	fleetOut      = flag.String("fleet.out", "", "TestFleetScale: merge the measurements into this JSON file (testdata/scale.json) and docs/fleet.md's table")
)

// scaleEvery is the simulation's sampling interval: records at 100ms, so
// that an hour's worth of a 10s interval (360 records) takes 36s to record.
const scaleEvery = 100 * time.Millisecond

// query is one operator query TestFleetScale times.
type query struct {
	Name   string  `json:"name"`
	Expr   string  `json:"expr"`
	MS     float64 `json:"ms"`     // median wall time of pmseries, process start included
	Series int     `json:"series"` // series it returned
	Values int     `json:"values"` // values it returned
}

// scaleRun is the measurement of one variant at one fleet size.
type scaleRun struct {
	Variant         string  `json:"variant"`
	What            string  `json:"what"`
	Hosts           int     `json:"hosts"`
	Records         int     `json:"records"` // per host archive
	Series          int     `json:"series"`  // metric series in the key server
	Instances       int     `json:"instances"`
	SeriesPerHost   float64 `json:"series_per_host"`
	InstPerHost     float64 `json:"instances_per_host"`
	Keys            int64   `json:"keys"`
	MemoryBytes     int64   `json:"memory_bytes"` // used_memory after the load less before
	MemoryPerHost   float64 `json:"memory_per_host"`
	MemoryPerSeries float64 `json:"memory_per_series"`
	ArchiveBytes    int64   `json:"archive_bytes_per_host"`
	LoadSeconds     float64 `json:"load_seconds"`
	HostsPerSecond  float64 `json:"hosts_per_second"`
	Queries         []query `json:"queries,omitempty"`
	Parts           []part  `json:"parts_of_one_host,omitempty"` // one host's series by group
	scrapeRun
}

// scrapeRun is pmproxy's /metrics of the live service, one host.
type scrapeRun struct {
	ScrapeMS      float64 `json:"scrape_ms,omitempty"` // median of 5
	ScrapeBytes   int     `json:"scrape_bytes,omitempty"`
	ScrapeSamples int     `json:"scrape_samples,omitempty"`
}

// TestFleetScale records the example service once with pmlogger, makes
// -fleet.hosts hosts of the recording (pmlogrewrite: host name, machine
// id, zone label), loads them into a key server of its own with pmseries
// --load, and measures what the fleet costs: series and key-server memory
// per host and per series, load time, the latency of an operator's
// queries, pmproxy's /metrics of one host. In CI it runs at 10 hosts and
// 20 records; docs/fleet.md gives the command for 100 and 1,000 hosts,
// whose results are in testdata/scale.json.
func TestFleetScale(t *testing.T) {
	tl, p := mustHaveFleet(t)
	var vs []variant
	for _, v := range variants {
		if *fleetVariants == "all" || slices.Contains(strings.Split(*fleetVariants, ","), v.name) {
			vs = append(vs, v)
		}
	}
	require.NotEmpty(t, vs, "-fleet.variants=%q names no variant", *fleetVariants)
	hosts, records := *fleetHosts, *fleetRecords
	require.Positive(t, hosts)
	require.GreaterOrEqual(t, records, 2)

	// The services, live, driven by a client of their own.
	var ss []*simService
	for k, v := range vs {
		ss = append(ss, startSimService(t, p.Dir, v, uint32(os.Getpid()+1+k*97)))
	}
	ctx, cancel := context.WithCancel(context.Background())
	wait := drive(ctx, ss)
	defer func() { cancel(); wait() }()
	for _, s := range ss {
		waitForPMCD(t, p, "mmv."+s.name+".http.in_flight")
	}
	time.Sleep(time.Second) // every route seen, the histograms refreshed

	// pmproxy's /metrics of one host, live.
	redisPort := startRedis(t, tl)
	px := startPMProxy(t, tl, redisPort)
	scrapes := map[string]scrapeRun{}
	for _, s := range ss {
		scrapes[s.v.name] = scrape(t, px, s.name)
	}

	// One recording of every variant.
	dir := t.TempDir()
	arch := filepath.Join(dir, "recorded")
	var subtrees []string
	for _, s := range ss {
		subtrees = append(subtrees, "mmv."+s.name)
	}
	start := time.Now()
	recordSamples(t, tl, arch, records, scaleEvery, subtrees...)
	t.Logf("recorded %d variants for %v", len(ss), time.Since(start).Round(time.Millisecond))
	cancel()
	wait()

	var runs []scaleRun
	for _, s := range ss {
		// The variant's metrics alone.
		conf := filepath.Join(dir, s.v.name+".extract")
		require.NoError(t, os.WriteFile(conf, []byte("mmv."+s.name+"\n"), 0o644))
		base := filepath.Join(dir, s.v.name)
		command(t, nil, tl.pmlogextract, "-c", conf, arch, base)
		run := measure(t, tl, s, base, hosts)
		run.scrapeRun = scrapes[s.v.name]
		runs = append(runs, run)
		b, _ := json.MarshalIndent(run, "", "  ")
		t.Logf("%s at %d hosts:\n%s", s.v.name, hosts, b)
	}
	if *fleetOut != "" {
		require.NoError(t, mergeResults(*fleetOut, runs))
		require.NoError(t, writeScaleTable(*fleetOut, filepath.Join("..", "docs", "fleet.md")))
	}
}

// scrape GETs pmproxy's /metrics for a service five times and returns the
// median time, the body's size and its samples.
func scrape(t *testing.T, px *pmproxy, name string) scrapeRun {
	t.Helper()
	var ms []float64
	var body string
	for range 5 {
		start := time.Now()
		b, err := px.get("/metrics?names=mmv." + name)
		require.NoError(t, err)
		ms = append(ms, float64(time.Since(start).Microseconds())/1000)
		body = b
	}
	samples := 0
	for l := range strings.Lines(body) {
		if !strings.HasPrefix(l, "#") && strings.TrimSpace(l) != "" {
			samples++
		}
	}
	require.Positive(t, samples, "pmproxy /metrics?names=mmv.%s:\n%s", name, body)
	return scrapeRun{ScrapeMS: median(ms), ScrapeBytes: len(body), ScrapeSamples: samples}
}

func median(xs []float64) float64 {
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// measure multiplies a variant's archive into n hosts, loads them into a
// redis-server of its own, and measures it.
func measure(t *testing.T, tl tools, s *simService, base string, n int) scaleRun {
	t.Helper()
	run := scaleRun{Variant: s.v.name, What: s.v.what, Hosts: n}
	dir := t.TempDir()
	start := time.Now()
	archives := multiply(t, tl, base, dir, n)
	t.Logf("%s: %d host archives written in %v", s.v.name, n, time.Since(start).Round(time.Millisecond))
	run.ArchiveBytes = dirBytes(t, dir) / int64(n)
	run.Records = len(archiveValues(t, tl, archives[0], "mmv."+s.name+".http.in_flight"))

	port, rd := startRedisDaemon(t, tl)
	defer rd.stop(t)
	rc, err := dialRedis(port)
	require.NoError(t, err)
	defer rc.Close()
	before, err := rc.infoInt("memory", "used_memory")
	require.NoError(t, err)

	// pmseries --load, two at a time (the machine's cores).
	start = time.Now()
	jobs := make(chan string)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for a := range jobs {
				_, err := commandErr(nil, tl.pmseries, "-h", "127.0.0.1", "-p", strconv.Itoa(port), "--load", fmt.Sprintf("{source.path:%q}", a))
				errs <- err
			}
		}()
	}
	for _, a := range archives {
		jobs <- a
	}
	close(jobs)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	// pmseries --load (6.0.3) may exit before redis has its last records:
	// the load ends when redis stops changing.
	last := quiesce(t, rc)
	run.LoadSeconds = last.Sub(start).Seconds()
	run.HostsPerSecond = float64(n) / run.LoadSeconds

	after, err := rc.infoInt("memory", "used_memory")
	require.NoError(t, err)
	run.MemoryBytes = after - before
	run.MemoryPerHost = float64(run.MemoryBytes) / float64(n)
	keys, err := rc.do("DBSIZE")
	require.NoError(t, err)
	run.Keys = keys.(int64)
	series, err := rc.keys("pcp:desc:series:*")
	require.NoError(t, err)
	insts, err := rc.keys("pcp:inst:series:*")
	require.NoError(t, err)
	run.Series, run.Instances = len(series), len(insts)
	require.Positive(t, run.Series, "no series in the key server after loading %d hosts", n)
	require.Zero(t, run.Series%n, "%d series for %d hosts: every host has the same metrics", run.Series, n)
	run.SeriesPerHost = float64(run.Series) / float64(n)
	run.InstPerHost = float64(run.Instances) / float64(n)
	run.MemoryPerSeries = float64(run.MemoryBytes) / float64(run.Series)

	run.Parts, err = breakdown(rc, hostName(0), "mmv."+s.name+".")
	require.NoError(t, err, "the key-server memory of %s's series", hostName(0))
	slices.SortFunc(run.Parts, func(a, b part) int { return int(b.Bytes - a.Bytes) })

	// The operator's queries.
	prefix := "mmv." + s.name + "."
	ps := seriesClient{t: t, tl: tl, port: port}
	one := fmt.Sprintf(`{hostname:%q}`, hostName(n-1))
	zone0 := (n + 9) / 10 // hosts 0, 10, 20...
	for _, q := range []struct {
		query
		series int // the series it must return
	}{
		// pmseries 6.0.3 matches no instance label: the query
		// finds nothing, instance.name does (docs/fleet.md says so).
		{query{Name: "requests by route label, all hosts", Expr: prefix + `http.requests{route:"/api"}[samples:1]`}, 0},
		{query{Name: "requests of /api, all hosts", Expr: prefix + `http.requests{instance.name:"route=/api*"}[samples:1]`}, n},
		{query{Name: "requests, one host", Expr: prefix + "http.requests" + one + "[samples:1]"}, 1},
		{query{Name: "latency p99, all hosts", Expr: prefix + `http.latency.p99[samples:1]`}, n},
		{query{Name: "in_flight, one zone", Expr: prefix + `http.in_flight{zone:"zone-0"}[samples:1]`}, zone0},
		{query{Name: "requests, one host, the last hour", Expr: prefix + "http.requests" + one + `[start:"-1hour"]`}, 1},
		{query{Name: "latency p99, all hosts, the last hour", Expr: prefix + `http.latency.p99[start:"-1hour"]`}, n},
	} {
		var ms []float64
		var got map[string][]sample
		for range 3 {
			start := time.Now()
			out := ps.run("-t", q.Expr)
			ms = append(ms, float64(time.Since(start).Microseconds())/1000)
			got, err = parseSeries(out)
			require.NoError(t, err)
		}
		q.MS = median(ms)
		q.Series = len(got)
		for _, vs := range got {
			q.Values += len(vs)
		}
		require.Equal(t, q.series, q.Series, "%s: pmseries -t %s", q.Name, q.Expr)
		run.Queries = append(run.Queries, q.query)
	}
	require.NoError(t, os.RemoveAll(dir), "removing the host archives")
	return run
}

// quiesce waits until redis's key count and memory stop changing for a
// second (bounded by two minutes) and returns when they last changed.
func quiesce(t *testing.T, rc *redisConn) time.Time {
	t.Helper()
	var lastKeys, lastMem int64 = -1, -1
	changed := time.Now()
	for end := time.Now().Add(2 * time.Minute); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		k, err := rc.do("DBSIZE")
		require.NoError(t, err)
		m, err := rc.infoInt("memory", "used_memory")
		require.NoError(t, err)
		if k.(int64) != lastKeys || m != lastMem {
			lastKeys, lastMem, changed = k.(int64), m, time.Now()
		} else if time.Since(changed) >= time.Second {
			return changed
		}
	}
	t.Fatalf("redis still changing two minutes after the last pmseries --load")
	return changed
}

// archiveSpan returns the times of an archive's first and last records.
func archiveSpan(t *testing.T, tl tools, archive string) (time.Time, time.Time) {
	t.Helper()
	out := command(t, nil, tl.pmdumplog, "-Z", "UTC", "-L", archive)
	var ts []time.Time
	for l := range strings.Lines(out) {
		for _, p := range []string{"commencing ", "ending "} {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(l), p); ok {
				at, err := time.Parse("Mon Jan 2 15:04:05.000000 2006", strings.Join(strings.Fields(rest), " "))
				require.NoError(t, err, "pmdumplog -L: %q", l)
				ts = append(ts, at)
			}
		}
	}
	require.Len(t, ts, 2, "pmdumplog -L %s:\n%s", archive, out)
	return ts[0], ts[1]
}

// dirBytes returns the size of the files in dir.
func dirBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	require.NoError(t, filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return err
	}))
	return n
}

var errNoResults = errors.New("no measurements")

// mergeResults merges runs into the JSON file path, replacing the runs of
// the same variant and size.
func mergeResults(path string, runs []scaleRun) error {
	var all []scaleRun
	if b, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(b, &all); err != nil {
			return fmt.Errorf("%s: %v", path, err)
		}
	}
	for _, r := range runs {
		all = slices.DeleteFunc(all, func(o scaleRun) bool {
			return o.Variant == r.Variant && o.Hosts == r.Hosts && o.Records == r.Records
		})
		all = append(all, r)
	}
	if len(all) == 0 {
		return errNoResults
	}
	b, err := json.MarshalIndent(all, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
