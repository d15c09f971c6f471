package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
)

const (
	interval = 250 * time.Millisecond // pmlogger's sampling interval
	// slack is how far a sample's value may lag or lead its timestamp:
	// pmcd stamps a fetch once for all agents, the service updates every
	// millisecond, and the machine is shared (and -race slows the writer).
	slack = 150 * time.Millisecond
)

// sample is one value pmseries returns.
type sample struct {
	at    time.Time
	value float64
	inst  string // the instance's series id, "" for a singular metric
}

var (
	seriesRE = regexp.MustCompile(`^[0-9a-f]{40}$`)
	sampleRE = regexp.MustCompile(`^\s+\[(\d+)\.(\d+)\] (\S+)(?: ([0-9a-f]{40}))?$`)
)

// parseSeries parses what pmseries -t prints for a query: each series id
// on a line of its own, then its samples as "[ms.frac] value [instance]".
func parseSeries(out string) (map[string][]sample, error) {
	series := map[string][]sample{}
	cur := ""
	for l := range strings.Lines(out) {
		l = strings.TrimRight(l, "\n")
		switch {
		case strings.TrimSpace(l) == "":
		case seriesRE.MatchString(l):
			cur = l
			series[cur] = series[cur][:len(series[cur]):len(series[cur])]
		case sampleRE.MatchString(l) && cur != "":
			m := sampleRE.FindStringSubmatch(l)
			ms, _ := strconv.ParseInt(m[1], 10, 64)
			frac, _ := strconv.ParseFloat("0."+m[2], 64)
			v, err := strconv.ParseFloat(m[3], 64)
			if err != nil {
				return nil, fmt.Errorf("pmseries value in %q: %v", l, err)
			}
			at := time.UnixMilli(ms).Add(time.Duration(frac * float64(time.Millisecond)))
			series[cur] = append(series[cur], sample{at: at, value: v, inst: m[4]})
		default:
			return nil, fmt.Errorf("unexpected pmseries line %q in:\n%s", l, out)
		}
	}
	return series, nil
}

// seriesClient runs pmseries against one redis-server.
type seriesClient struct {
	t    *testing.T
	tl   tools
	port int
}

func (c seriesClient) run(args ...string) string {
	c.t.Helper()
	return command(c.t, nil, c.tl.pmseries, append([]string{"-h", "127.0.0.1", "-p", strconv.Itoa(c.port)}, args...)...)
}

// query returns the series of a pmseries query and their samples.
func (c seriesClient) query(expr string) map[string][]sample {
	c.t.Helper()
	s, err := parseSeries(c.run("-t", expr))
	require.NoError(c.t, err, "pmseries %s", expr)
	return s
}

// ids returns the series ids of a query, sorted.
func (c seriesClient) ids(expr string) []string {
	c.t.Helper()
	var ids []string
	for id := range c.query(expr) {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// archiveHost returns the host name an archive's label records.
func archiveHost(t *testing.T, tl tools, archive string) string {
	t.Helper()
	out := command(t, nil, tl.pmdumplog, "-L", archive)
	m := regexp.MustCompile(`(?m)^Performance metrics from host (\S+)$`).FindStringSubmatch(out)
	require.NotNil(t, m, "pmdumplog -L %s: no host:\n%s", archive, out)
	return m[1]
}

// archiveValues returns the values of a singular metric in an archive,
// record by record, as pmdumplog prints them.
func archiveValues(t *testing.T, tl tools, archive, metric string) []float64 {
	t.Helper()
	out := command(t, nil, tl.pmdumplog, archive, metric)
	var vs []float64
	re := regexp.MustCompile(`\(` + regexp.QuoteMeta(metric) + `\): value (\S+)$`)
	for l := range strings.Lines(out) {
		if m := re.FindStringSubmatch(strings.TrimRight(l, "\n")); m != nil {
			v, err := strconv.ParseFloat(m[1], 64)
			require.NoError(t, err, "pmdumplog %s %s: %q", archive, metric, l)
			vs = append(vs, v)
		}
	}
	return vs
}

// loadedRun checks that the samples redis holds of a host are a run of
// the archive's values, short of at most three, and returns how many.
func loadedRun(t *testing.T, host string, archive []float64, got []sample) int {
	t.Helper()
	// How many records pmproxy misses before it discovers an archive
	// depends on the machine's load: half is kept under any seen here.
	require.GreaterOrEqual(t, len(got), max(1, len(archive)/2), "%s: redis holds %d of the archive's %d records", host, len(got), len(archive))
	var vs []float64
	for _, s := range slices.Backward(got) { // pmseries lists the newest first
		vs = append(vs, s.value)
	}
	first := slices.Index(archive, vs[0])
	require.GreaterOrEqual(t, first, 0, "%s: redis' first value %v is not in the archive %v", host, vs[0], archive)
	require.LessOrEqual(t, first+len(vs), len(archive), "%s: redis holds more than the archive", host)
	assert.Equal(t, archive[first:first+len(vs)], vs, "%s: redis' values against the archive's", host)
	t.Logf("%s: redis holds records %d..%d of the archive's %d", host, first+1, first+len(vs), len(archive))
	return len(vs)
}

// waitForPMCD waits until pmcd's MMV agent shows the service's metrics.
func waitForPMCD(t *testing.T, p *pcptest.PMCD, metric string) {
	t.Helper()
	ok := waitFor(10*time.Second, func() bool {
		ms, err := p.Fetch(context.Background(), metric)
		return err == nil && len(ms) == 1 && ms[0].NoValue == ""
	})
	require.True(t, ok, "pmcd does not show %s", metric)
}

// TestFleet runs the service on two simulated hosts through PCP's own
// distributed path: pmlogger records host A into the directory a pmproxy
// of the test's own discovers, so pmproxy log-tails it into redis as it
// grows; host B is recorded apart, its archive's host name rewritten with
// pmloglabel, and loaded with pmseries --load. pmseries then finds both
// hosts' series by metric name and by the registry's label, with the
// values the service wrote; pmproxy's /metrics serves the live values to
// Prometheus' own parser.
func TestFleet(t *testing.T) {
	tl, p := mustHaveFleet(t)
	redisPort := startRedis(t, tl)
	px := startPMProxy(t, tl, redisPort)
	ps := seriesClient{t: t, tl: tl, port: redisPort}
	prefix := "mmv." + serviceName + "."
	const label = "checkout"

	// Host A: recorded where pmproxy discovers archives.
	a := startService(t, p.Dir, label, mmv.Process, 1, 7, 1)
	waitForPMCD(t, p, prefix+"late")
	t.Run("prometheus", func(t *testing.T) { testPrometheus(t, px, a) })
	// pmproxy's discovery may read a new archive's records before its
	// metadata, and then drops the values of every metric it has no
	// descriptor for yet, for good (the order of metadata and data at
	// discovery, which PCP issue #796 says depends on the order of the
	// file events; CI lost workers' series of host A so).
	// pmlogger therefore starts outside the directory pmproxy watches,
	// and the archive moves in once its first record is written, every
	// metric's descriptor before it: pmproxy then log-tails an archive
	// whose metadata is whole.
	staging := filepath.Join(t.TempDir(), "hosta")
	require.NoError(t, os.Mkdir(staging, 0o755))
	recorded := startRecording(t, tl, filepath.Join(staging, serviceName), 3*time.Second, "mmv."+serviceName)
	require.True(t, waitFor(10*time.Second, func() bool {
		out, err := commandErr(nil, tl.pmdumplog, filepath.Join(staging, serviceName), prefix+"requests")
		return err == nil && strings.Contains(out, "value")
	}), "pmlogger wrote no record of %srequests", prefix)
	require.NoError(t, os.Rename(staging, filepath.Join(px.archive, "hosta")))
	archA := filepath.Join(px.archive, "hosta", serviceName)
	recorded()
	a.close()

	// Host B: another rate and gauge, its own host name.
	b := startService(t, p.Dir, label, mmv.Process, 3, 11, 2)
	waitForPMCD(t, p, prefix+"late")
	archB := filepath.Join(t.TempDir(), serviceName)
	record(t, tl, archB, 2*time.Second, "mmv."+serviceName)
	b.close()
	const hostB = "fleet-b"
	command(t, nil, tl.pmloglabel, "-h", hostB, archB)
	hostA := archiveHost(t, tl, archA)
	require.Equal(t, hostB, archiveHost(t, tl, archB), "pmloglabel -h did not rename host B")
	require.NotEqual(t, hostA, hostB)
	out := command(t, nil, tl.pmseries, "-h", "127.0.0.1", "-p", strconv.Itoa(redisPort), "--load", fmt.Sprintf("{source.path:%q}", archB))
	t.Logf("pmseries --load %s: %s", archB, strings.TrimSpace(out))

	// pmproxy may not have written host A's last records to redis yet, and
	// pmseries --load (6.0.3) may exit before redis has its last records.
	// What reached redis must be a run of each archive's own records,
	// values equal, at least half of them.
	archValues := archiveValues(t, tl, archA, prefix+"requests")
	require.Greater(t, len(archValues), 8, "records of %s in host A's archive", prefix+"requests")
	exprA := fmt.Sprintf(`%srequests{hostname:%q}[count:1000]`, prefix, hostA)
	var gotA []sample
	waitFor(10*time.Second, func() bool {
		last := len(gotA)
		gotA = nil
		for _, s := range ps.query(exprA) {
			gotA = append(gotA, s...)
		}
		return len(gotA) >= len(archValues) || (len(gotA) > 0 && len(gotA) == last)
	})
	loaded := map[string]int{
		hostA: loadedRun(t, hostA+" (discovered by pmproxy)", archValues, gotA),
		hostB: loadedRun(t, hostB+" (pmseries --load)", archiveValues(t, tl, archB, prefix+"requests"),
			slices.Concat(slices.Collect(maps.Values(ps.query(fmt.Sprintf(`%srequests{hostname:%q}[count:1000]`, prefix, hostB))))...)),
	}

	// By metric name: one series per host.
	byName := ps.ids(prefix + "requests")
	require.Len(t, byName, 2, "pmseries %srequests: one series per host", prefix)
	// By the registry's label: the same two series, and per host one.
	byLabel := ps.ids(fmt.Sprintf(`%srequests{service:%q}`, prefix, label))
	assert.Equal(t, byName, byLabel, "by label service=%q", label)
	onlyA := ps.ids(fmt.Sprintf(`%srequests{hostname:%q}`, prefix, hostA))
	onlyB := ps.ids(fmt.Sprintf(`%srequests{hostname:%q}`, prefix, hostB))
	require.Len(t, onlyA, 1, "host A's series")
	require.Len(t, onlyB, 1, "host B's series")
	assert.ElementsMatch(t, byLabel, append(onlyA, onlyB...), "the label query returns both hosts' series")
	assert.Empty(t, ps.ids(fmt.Sprintf(`%srequests{service:"other"}`, prefix)), "a label value no host has")

	// pmproxy's REST API answers the same query, as grafana-pcp asks it.
	body, err := px.get("/series/query?expr=" + url.QueryEscape(fmt.Sprintf(`%srequests{service:%q}`, prefix, label)))
	require.NoError(t, err)
	var rest []string
	require.NoError(t, json.Unmarshal([]byte(body), &rest), "/series/query: %s", body)
	slices.Sort(rest)
	assert.Equal(t, byLabel, rest, "pmproxy /series/query")

	// The values the service wrote, per host.
	for _, h := range []struct {
		host    string
		s       *service
		workers float64
		late    float64
		samples int
	}{{hostA, a, a.workersValue, a.lateValue, loaded[hostA]}, {hostB, b, b.workersValue, b.lateValue, loaded[hostB]}} {
		q := func(metric string) []sample {
			t.Helper()
			got := ps.query(fmt.Sprintf(`%s%s{service:%q,hostname:%q}[count:1000]`, prefix, metric, label, h.host))
			require.Len(t, got, 1, "%s on %s: one series", metric, h.host)
			for _, s := range got {
				return s
			}
			return nil
		}
		reqs := q("requests")
		assert.Len(t, reqs, h.samples, "requests samples on %s", h.host)
		var worst time.Duration
		for _, s := range reqs {
			// The time at which the service held this value.
			held := h.s.t0.Add(time.Duration(s.value / float64(h.s.perMS) * float64(time.Millisecond)))
			off := s.at.Sub(held)
			if off.Abs() > worst.Abs() {
				worst = off
			}
			assert.LessOrEqual(t, off.Abs(), slack, "%s: requests=%v at %v: the service held that value at %v",
				h.host, s.value, s.at.Format(time.StampMilli), held.Format(time.StampMilli))
		}
		t.Logf("%s: %d requests samples, %v..%v, each within %v of the service's value at its time",
			h.host, len(reqs), reqs[len(reqs)-1].value, reqs[0].value, worst)
		for metric, want := range map[string]float64{"workers": h.workers, "late": h.late} {
			got := q(metric)
			assert.NotEmpty(t, got, "%s on %s", metric, h.host)
			for _, s := range got {
				assert.Equal(t, want, s.value, "%s on %s at %v", metric, h.host, s.at)
			}
		}
		// hits: one series, its samples by instance, named through
		// pmproxy's /series/instances (pmseries prints instance ids).
		// pmseries 6.0.3 matches the cluster label on singular metrics
		// only: a metric with instances is found by host here.
		assert.Empty(t, ps.query(fmt.Sprintf(`%shits{service:%q}`, prefix, label)),
			"pmseries 6.0.3 finds no metric with instances by a cluster label; docs/fleet.md says so: revisit it if this fails")
		hits := ps.query(fmt.Sprintf(`%shits{hostname:%q}[count:1000]`, prefix, h.host))
		require.Len(t, hits, 1, "hits on %s: one series", h.host)
		for id, ss := range hits {
			body, err := px.get("/series/instances?series=" + id)
			require.NoError(t, err)
			var insts []struct{ Instance, Name string }
			require.NoError(t, json.Unmarshal([]byte(body), &insts), "/series/instances: %s", body)
			names := map[string]string{}
			for _, in := range insts {
				names[in.Instance] = in.Name
			}
			got := map[string]float64{}
			for _, s := range ss {
				name, ok := names[s.inst]
				require.True(t, ok, "hits on %s: instance %s not in /series/instances %s", h.host, s.inst, body)
				if v, seen := got[name]; seen {
					assert.Equal(t, v, s.value, "hits[%s] on %s changed", name, h.host)
				}
				got[name] = s.value
			}
			assert.Equal(t, h.s.hitsValues(), got, "hits by route on %s", h.host)
		}
	}
}
