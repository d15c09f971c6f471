package pcptest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testdata/pminfo.txt is real output of pminfo 6.0.3 (the Info command) on
// two files written by the library, chosen for the awkward cases: help
// with blank lines and lines that look like values, quotes in instance
// names and string values, "]" in a one-line help, an indom with no
// instances, every kind of label.
func TestParseCaptured(t *testing.T) {
	b, err := os.ReadFile("testdata/pminfo.txt")
	require.NoError(t, err)
	ms, err := Parse(string(b))
	require.NoError(t, err)

	var names []string
	for _, m := range ms {
		names = append(names, m.Name)
	}
	assert.Equal(t, []string{
		"mmv.web.f", "mmv.web.busy", "mmv.web.ver", "mmv.web.rate", "mmv.web.req.total",
		"mmv.h", "mmv.b", "mmv.a",
		"mmv.control.files", "mmv.control.debug", "mmv.control.reload",
	}, names)

	f := Find(ms, "mmv.web.f")
	require.NotNil(t, f)
	assert.Equal(t, Metric{
		Name: "mmv.web.f", PMID: "70.42.5", Type: "float", Indom: "PM_INDOM_NULL 0xffffffff",
		Semantics: "instant", Units: "none",
		LongHelp: "    value 3\n    inst [1 or \"x\"] value 2",
		Labels:   `{"agent":"mmv","cl":"x","domainname":"localdomain","groupid":0,"hostname":"vm","machineid":"3d1219c7c4c5404aaa1f6d2a48adfda4","userid":0}`,
		Value:    "0.1",
	}, *f)
	assert.True(t, f.Singular())

	busy := Find(ms, "mmv.web.busy")
	assert.Equal(t, "", busy.ShortHelp)
	assert.Equal(t, "", busy.LongHelp)
	assert.Equal(t, "microsec", busy.Units)
	assert.Equal(t, "3000000", busy.Value)

	ver := Find(ms, "mmv.web.ver")
	assert.Equal(t, "x ] y", ver.ShortHelp)
	assert.Equal(t, "x ] y", ver.LongHelp)
	assert.Equal(t, `"1.0 "q" x"`, ver.Value)

	rate := Find(ms, "mmv.web.rate")
	assert.Equal(t, "Kbyte / sec", rate.Units)
	l, ok := rate.Label("arr")
	assert.True(t, ok)
	assert.Equal(t, `[1,"a",true,null]`, l)
	_, ok = rate.Label("m")
	assert.False(t, ok)

	req := Find(ms, "mmv.web.req.total")
	assert.Equal(t, "Requests", req.ShortHelp)
	assert.Equal(t, "line one\nline two\n\nline four", req.LongHelp)
	assert.Equal(t, "70.86017 0x11815001", req.Indom)
	assert.False(t, req.Singular())
	require.Len(t, req.Instances, 3)
	assert.Equal(t, Instance{ID: 0, Name: "GET", Value: "5",
		Labels: `{"agent":"mmv","cl":"x","domainname":"localdomain","groupid":0,"hostname":"vm","m.k":1.5,"machineid":"3d1219c7c4c5404aaa1f6d2a48adfda4","userid":0}`},
		req.Instances[0])
	assert.Equal(t, 7, req.Instances[2].ID)
	assert.Equal(t, `with space "q"`, req.Instances[2].Name)
	post := req.Instance("POST")
	require.NotNil(t, post)
	l, _ = post.Label("b")
	assert.Equal(t, "false", l)
	l, _ = req.Instance(`with space "q"`).Label("n")
	assert.Equal(t, "null", l)
	assert.Nil(t, req.Instance("PUT"))

	h := Find(ms, "mmv.h")
	assert.Equal(t, "No value(s) available!", h.NoValue)
	assert.Empty(t, h.Instances)
	assert.Equal(t, "", h.Value)

	assert.Equal(t, "long only", Find(ms, "mmv.b").LongHelp)
	assert.Equal(t, "-9223372036854775808", Find(ms, "mmv.b").Value)
	a := Find(ms, "mmv.a")
	assert.Equal(t, "short only", a.ShortHelp)
	assert.Equal(t, "short only", a.LongHelp, "PCP falls back to the short help")
	assert.Equal(t, "18446744073709551615", a.Value)

	reload := Find(ms, "mmv.control.reload")
	assert.Equal(t, "Writing anything other then 0 to this metric will result in\nre-reading directory and re-mapping files.", reload.LongHelp)
	assert.Nil(t, Find(ms, "mmv.nothing"))
}

func TestParseEmptyAndBad(t *testing.T) {
	ms, err := Parse("")
	assert.NoError(t, err)
	assert.Empty(t, ms)

	_, err = Parse("Error: something\n")
	assert.Error(t, err)

	_, err = Parse("mmv.x PMID: 70.1.1 [x]\n    Data Type: float  InDom: PM_INDOM_NULL 0xffffffff\n")
	assert.Error(t, err, "truncated block")
}

// fakeTB records what MustHave does instead of stopping the test.
type fakeTB struct {
	testing.TB
	skipped, failed bool
}

func (f *fakeTB) Helper()                        {}
func (f *fakeTB) Skipf(format string, a ...any)  { f.skipped = true }
func (f *fakeTB) Fatalf(format string, a ...any) { f.failed = true }

func TestMustHave(t *testing.T) {
	missing := errors.New("pminfo is not on PATH")
	for _, c := range []struct {
		missing       error
		strict        string
		skip, failing bool
	}{
		{nil, "", false, false},
		{nil, "1", false, false},
		{missing, "", true, false},
		{missing, "1", false, true},
	} {
		t.Setenv(RequireEnv, c.strict)
		f := &fakeTB{TB: t}
		MustHave(f, c.missing)
		assert.Equal(t, c.skip, f.skipped, "%+v", c)
		assert.Equal(t, c.failing, f.failed, "%+v", c)
	}
}

func TestHasPCPWithoutPminfo(t *testing.T) {
	t.Setenv(RootEnv, "")
	t.Setenv("PATH", t.TempDir())
	assert.ErrorContains(t, HasPCP(), "pminfo")
	assert.ErrorContains(t, HasPMCD(), "pminfo")
	t.Setenv(RequireEnv, "")
	f := &fakeTB{TB: t}
	MustHavePCP(f)
	assert.True(t, f.skipped)
	f = &fakeTB{TB: t}
	assert.False(t, WantPCP(f))
	assert.False(t, f.skipped || f.failed, "WantPCP skipped or failed without %s=1", RequireEnv)
	t.Setenv(RequireEnv, "1")
	f = &fakeTB{TB: t}
	MustHavePCP(f)
	assert.True(t, f.failed)
	f = &fakeTB{TB: t}
	WantPCP(f)
	assert.True(t, f.failed)
}

// stoppingTB records whether a helper skipped or failed the test, and
// stops the helper there as testing.T does (Goexit), so that nothing past
// the skip runs.
type stoppingTB struct {
	testing.TB
	skipped, failed bool
}

func (f *stoppingTB) Helper()                        {}
func (f *stoppingTB) Skipf(format string, a ...any)  { f.skipped = true; runtime.Goexit() }
func (f *stoppingTB) Fatalf(format string, a ...any) { f.failed = true; runtime.Goexit() }
func (f *stoppingTB) Fatal(a ...any)                 { f.failed = true; runtime.Goexit() }

// TestEveryHelperAsksForPCP: without PCP, every helper that runs it
// skips the test that forgot to ask (MustHavePCP), and fails it under
// MMV_REQUIRE_PCP=1, instead of failing on a machine with only Go.
func TestEveryHelperAsksForPCP(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PATH", dir)            // no pminfo
	t.Setenv("PCP_CONF", "/nowhere") // and, when /etc/pcp.conf is absent, no agent either
	helpers := map[string]func(tb testing.TB){
		"Info":         func(tb testing.TB) { Info(tb, dir) },
		"Dump":         func(tb testing.TB) { Dump(tb, filepath.Join(dir, "f")) },
		"MustHavePMCD": func(tb testing.TB) { MustHavePMCD(tb) },
		"StartPMCD":    func(tb testing.TB) { StartPMCD(tb) },
	}
	for name, helper := range helpers {
		for _, strict := range []string{"", "1"} {
			t.Setenv(RequireEnv, strict)
			f := &stoppingTB{TB: t}
			done := make(chan struct{})
			go func() { defer close(done); helper(f) }()
			<-done
			assert.Equal(t, strict == "", f.skipped, "%s skipped (%s=%q)", name, RequireEnv, strict)
			assert.Equal(t, strict == "1", f.failed, "%s failed (%s=%q)", name, RequireEnv, strict)
		}
	}
}

func TestConfig(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "pcp.conf")
	require.NoError(t, os.WriteFile(conf, []byte("# PCP_PMDAS_DIR=/no\nPCP_PMDAS_DIR=\"/x/pmdas\"\nPCP_TMP_DIR=/x/tmp\n"), 0o644))
	t.Setenv(RootEnv, "")
	t.Setenv("PCP_CONF", conf)
	t.Setenv("PCP_PMDAS_DIR", "")
	assert.Equal(t, "/x/pmdas", Config("PCP_PMDAS_DIR"))
	assert.Equal(t, "", Config("PCP_NOTHING"))
	t.Setenv("PCP_TMP_DIR", "/env/tmp")
	assert.Equal(t, "/env/tmp", Config("PCP_TMP_DIR"))
}

func TestEnviron(t *testing.T) {
	got := environ([]string{"A=1", "PCP_TMP_DIR=/sys", "PCP_TMP_DIRX=2"}, []string{"PCP_TMP_DIR=", "B=3"})
	assert.Equal(t, []string{"A=1", "PCP_TMP_DIRX=2", "B=3"}, got)
}

func TestOnlyUnknown(t *testing.T) {
	assert.True(t, onlyUnknown("Error: mmv.x: Unknown metric name\n"))
	assert.False(t, onlyUnknown(""))
	assert.False(t, onlyUnknown("pminfo: Cannot connect to PMCD on host \"local:\": Connection refused\n"))
}

func TestRunTimeout(t *testing.T) {
	old := Timeout
	Timeout = 100 * time.Millisecond
	defer func() { Timeout = old }()
	start := time.Now()
	// The test binary itself is the hung command, so no tool is needed.
	_, _, err := run(context.Background(), []string{"PCPTEST_HANG=1"}, os.Args[0], "-test.run=^TestHelperHang$")
	assert.ErrorContains(t, err, "timed out")
	assert.Less(t, time.Since(start), 5*time.Second)
}

// TestHelperHang is the hung command of TestRunTimeout.
func TestHelperHang(t *testing.T) {
	if os.Getenv("PCPTEST_HANG") != "1" {
		t.Skip("run by TestRunTimeout")
	}
	time.Sleep(time.Minute)
}

// TestInfoEmpty runs the real reader on an empty directory: only the MMV
// agent's own control metrics, of which PCP 7.2 has one more than 6.0.3,
// mmv.control.metrics (the count of metrics mapped).
func TestInfoEmpty(t *testing.T) {
	MustHavePCP(t)
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "mmv"), 0o755))
	ms := Info(t, dir)
	var names []string
	for _, m := range ms {
		names = append(names, m.Name)
	}
	want := []string{"mmv.control.files", "mmv.control.debug", "mmv.control.reload"}
	if AtLeast(7, 2) {
		want = append(want, "mmv.control.metrics")
		assert.Equal(t, "0", Find(ms, "mmv.control.metrics").Value)
	}
	assert.ElementsMatch(t, want, names, "PCP %s", Version())
	assert.Equal(t, "0", Find(ms, "mmv.control.files").Value)
}

func TestDumpMissing(t *testing.T) {
	MustHavePCP(t)
	out := Dump(t, filepath.Join(t.TempDir(), "nothing"))
	assert.True(t, strings.Contains(out, "No such file"), out)
}

// TestPMCD reads through the running pmcd, which .ci/run starts.
func TestPMCD(t *testing.T) {
	p := MustHavePMCD(t)
	ms, err := p.Fetch(context.Background(), "mmv.control.files", "mmv.no.such.metric")
	require.NoError(t, err)
	require.Len(t, ms, 1)
	assert.Equal(t, "70.0.2", ms[0].PMID)
	assert.NotEmpty(t, ms[0].Value)
	assert.NotEmpty(t, p.Dir)
	assert.NoError(t, p.Reload(context.Background()))
}

// TestDropVanished: a metric whose file vanished mid-fetch is left out,
// the others parse.
func TestDropVanished(t *testing.T) {
	out := "mmv.a.count: pmLookupDesc: Unknown or illegal metric identifier\n\n" +
		"mmv.c.count: pmLookupName: Unknown metric name\n" +
		"mmv.b.count PMID: 70.1.1 [count]\n" +
		"    Data Type: 64-bit unsigned int  InDom: PM_INDOM_NULL 0xffffffff\n" +
		"    Semantics: counter  Units: none\n" +
		"    labels {\"agent\":\"mmv\"}\n" +
		"Help:\ncount\n    value 3\n"
	ms, err := Parse(dropVanished(out))
	require.False(t, err != nil || len(ms) != 1 || ms[0].Name != "mmv.b.count" || ms[0].Value != "3", "got %+v, %v", ms, err)
}

// TestStartPMCD: a pmcd of the test's own answers on its port, reads its
// own directory, takes a fetch loop, and is gone once stopped.
func TestStartPMCD(t *testing.T) {
	p := StartPMCD(t)
	assert.NotEqual(t, Config("PCP_TMP_DIR"), filepath.Dir(p.Dir), "the host's directory")
	ms, err := p.Fetch(context.Background(), "mmv.control.files")
	require.NoError(t, err)
	require.Len(t, ms, 1)
	assert.Equal(t, "0", ms[0].Value, "files in a new directory")
	assert.NoError(t, p.Reload(context.Background()))
	f := p.FetchLoop(t, "mmv.control.files", 200*time.Millisecond)
	assert.False(t, f.Lost)
	assert.Positive(t, f.N)
	assert.Equal(t, f.N, f.Values)
	assert.NoError(t, p.Died())
	p.private.stop()
	assert.Error(t, p.Died())
}
