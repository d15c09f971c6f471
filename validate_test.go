package mmv

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// refusals lists every input the registry refuses, with the error it
// returns. docs/registry.md's table of refused inputs follows this list.
var refusals = []struct {
	name string
	opts Options
	file string
	decl func(r *Registry) error // the declaration that must fail, or nil for Start
	want error
	msg  string // part of the message
}{
	{name: "empty file name", file: "", want: ErrName, msg: "cannot be empty"},
	{name: "file name with dot first", file: ".hidden", want: ErrName, msg: "ignored by PCP"},
	{name: "file name with slash", file: "a/b", want: ErrName, msg: "'/'"},
	{name: "file name with NUL", file: "a\x00b", want: ErrName, msg: "NUL"},
	{name: "file name with digit first", file: "1app", want: ErrName, msg: "start with a letter"},
	{name: "file name with dash", file: "my-app", want: ErrName, msg: "'-'"},
	{name: "file name with empty part", file: "a..b", want: ErrName, msg: "empty part"},
	{name: "file name too long", file: "a" + strings.Repeat("b", 255), want: ErrTooLong},
	{name: "file name too long for its temporary name", file: "a" + strings.Repeat("b", maxFileName), want: ErrTooLong, msg: "temporary name"},
	{name: "file name control", file: "control", want: ErrNamespace, msg: "mmv.control"},
	{name: "file name of an overflow file", file: "web.3", want: ErrName, msg: "overflow files of the registry <file>"},
	{name: "NoPrefix file name of an overflow file", file: "web.3", opts: Options{Flags: NoPrefix}, want: ErrName, msg: "overflow files"},
	{name: "cluster out of range", opts: Options{Cluster: 4096}, want: ErrRange, msg: "cluster 4096"},
	{name: "unknown flag", opts: Options{Flags: 8}, want: ErrRange, msg: "flags"},
	{name: "version 1 forced", opts: Options{Version: 1}, want: ErrRange, msg: "version 1"},
	{name: "version 2 forced with labels", opts: Options{Version: 2, Cluster: 1}, decl: func(r *Registry) error {
		return r.AddLabel(Label{Name: "a", Value: 1})
	}, want: nil},
	{name: "metric name empty", decl: metricNamed(""), want: ErrName, msg: "empty"},
	{name: "metric name with space", decl: metricNamed("a b"), want: ErrName, msg: "' '"},
	{name: "metric name with dash", decl: metricNamed("a-b"), want: ErrName},
	{name: "metric name part with digit first", decl: metricNamed("a.1b"), want: ErrName, msg: "start with a letter"},
	{name: "metric name with empty part", decl: metricNamed("a..b"), want: ErrName, msg: "empty part"},
	{name: "metric name ending in dot", decl: metricNamed("a."), want: ErrName, msg: "empty part"},
	{name: "metric name too long", decl: metricNamed(strings.Repeat("a", 256)), want: ErrTooLong},
	{name: "metric control under NoPrefix", opts: Options{Flags: NoPrefix}, decl: metricNamed("control.x"), want: ErrNamespace},
	{name: "metric mmv, the registry's own", decl: metricNamed("mmv"), want: ErrNamespace, msg: "registry's own"},
	{name: "metric below mmv, the registry's own", decl: metricNamed("mmv.requests"), want: ErrNamespace, msg: "registry's own"},
	{name: "duplicate metric name", decl: func(r *Registry) error {
		r.AddMetric(Metric{Name: "a", Type: Uint64, Semantics: SemCounter})
		return r.AddMetric(Metric{Name: "a", Type: Uint64, Semantics: SemCounter})
	}, want: ErrDuplicate, msg: `metric "a"`},
	{name: "duplicate item", decl: func(r *Registry) error {
		r.AddMetric(Metric{Name: "a", Item: 5, Type: Uint64, Semantics: SemCounter})
		return r.AddMetric(Metric{Name: "b", Item: 5, Type: Uint64, Semantics: SemCounter})
	}, want: ErrDuplicate, msg: "item 5"},
	{name: "item out of range", decl: func(r *Registry) error {
		return r.AddMetric(Metric{Name: "a", Item: 1024, Type: Uint64, Semantics: SemCounter})
	}, want: ErrRange, msg: "item 1024"},
	{name: "unknown type", decl: func(r *Registry) error {
		return r.AddMetric(Metric{Name: "a", Type: 7, Semantics: SemCounter})
	}, want: ErrRange, msg: "type"},
	{name: "unknown semantics", decl: func(r *Registry) error {
		return r.AddMetric(Metric{Name: "a", Type: Uint64, Semantics: 2})
	}, want: ErrRange, msg: "semantics"},
	{name: "units out of range", decl: func(r *Registry) error {
		return r.AddMetric(Metric{Name: "a", Type: Uint64, Semantics: SemCounter, Units: NewUnits(9, 0, 0, 0, 0, 0)})
	}, want: ErrRange, msg: "units"},
	{name: "space scale past Ybyte", decl: func(r *Registry) error {
		return r.AddMetric(Metric{Name: "a", Type: Uint64, Semantics: SemCounter, Units: NewUnits(1, 0, 0, ScaleYbyte+1, 0, 0)})
	}, want: ErrRange, msg: "units"},
	{name: "time scale past hours", decl: func(r *Registry) error {
		return r.AddMetric(Metric{Name: "a", Type: Uint64, Semantics: SemCounter, Units: NewUnits(0, 1, 0, 0, ScaleHour+1, 0)})
	}, want: ErrRange, msg: "units"},
	{name: "help too long", decl: func(r *Registry) error {
		return r.AddMetric(Metric{Name: "a", Type: Uint64, Semantics: SemCounter, LongHelp: strings.Repeat("h", 256)})
	}, want: ErrTooLong, msg: "help"},
	{name: "help with NUL", decl: func(r *Registry) error {
		return r.AddMetric(Metric{Name: "a", Type: Uint64, Semantics: SemCounter, ShortHelp: "a\x00b"})
	}, want: ErrName, msg: `metric "a": invalid help text: a NUL byte in its short help`},
	{name: "indom help with NUL", decl: func(r *Registry) error {
		return r.AddIndom(Indom{Serial: 1, LongHelp: "a\x00b"})
	}, want: ErrName, msg: "invalid help text: a NUL byte in its long help"},
	{name: "metric on undeclared indom", decl: func(r *Registry) error {
		return r.AddMetric(Metric{Name: "a", Type: Uint64, Semantics: SemCounter, Indom: 3})
	}, want: ErrUnknown, msg: "indom 3"},
	{name: "namespace poison", decl: func(r *Registry) error {
		r.AddMetric(Metric{Name: "a.b", Type: Uint64, Semantics: SemCounter})
		r.AddMetric(Metric{Name: "a.b0", Type: Uint64, Semantics: SemCounter})
		return r.AddMetric(Metric{Name: "a.b.c", Type: Uint64, Semantics: SemCounter})
	}, want: ErrNamespace, msg: `"a.b.c"`},
	{name: "indom on cluster 2048", opts: Options{Cluster: 2048}, decl: indomSerial(1), want: ErrRange, msg: "cluster 2048 is more than 2047"},
	{name: "indom serial 0", decl: indomSerial(0), want: ErrRange, msg: "serial"},
	{name: "indom serial 2048", decl: indomSerial(2048), want: ErrRange, msg: "serial"},
	{name: "duplicate indom serial", decl: func(r *Registry) error {
		r.AddIndom(Indom{Serial: 1})
		return r.AddIndom(Indom{Serial: 1})
	}, want: ErrDuplicate, msg: "indom 1"},
	{name: "duplicate instance id", decl: instances(Instance{1, "a"}, Instance{1, "b"}), want: ErrDuplicate, msg: "id 1"},
	{name: "duplicate instance name", decl: instances(Instance{1, "a"}, Instance{2, "a"}), want: ErrDuplicate},
	{name: "instance names equal to the first space", decl: instances(Instance{1, "sda one"}, Instance{2, "sda two"}), want: ErrDuplicate, msg: "first space"},
	{name: "negative instance id", decl: instances(Instance{-1, "a"}), want: ErrRange, msg: "negative"},
	{name: "empty instance name", decl: instances(Instance{1, ""}), want: ErrName},
	{name: "instance name with NUL", decl: instances(Instance{1, "a\x00"}), want: ErrName},
	{name: "instance name with leading space", decl: instances(Instance{1, " a"}), want: ErrName},
	{name: "instance name too long", decl: instances(Instance{1, strings.Repeat("i", 256)}), want: ErrTooLong},
	{name: "instance on undeclared indom", decl: func(r *Registry) error {
		return r.AddInstance(9, Instance{1, "a"})
	}, want: ErrUnknown, msg: "indom 9"},
	{name: "cluster label on the reader's cluster", opts: Options{Cluster: ReaderCluster}, decl: func(r *Registry) error {
		return r.AddLabel(Label{Name: "a", Value: "b"})
	}, want: ErrLabel, msg: "ReaderCluster"},
	{name: "label name with digit first", opts: Options{Cluster: 1}, decl: func(r *Registry) error {
		return r.AddLabel(Label{Name: "1a", Value: "b"})
	}, want: ErrName, msg: `label "1a"`},
	{name: "label name with dot", opts: Options{Cluster: 1}, decl: func(r *Registry) error {
		return r.AddLabel(Label{Name: "a.b", Value: "b"})
	}, want: ErrName},
	{name: "label value not JSON", opts: Options{Cluster: 1}, decl: func(r *Registry) error {
		return r.AddLabel(Label{Name: "a", Value: func() {}})
	}, want: ErrLabel, msg: "JSON"},
	{name: "label value nested map", opts: Options{Cluster: 1}, decl: func(r *Registry) error {
		return r.AddLabel(Label{Name: "a", Value: map[string]any{"b": map[string]int{"c": 1}}})
	}, want: ErrLabel, msg: "garbles"},
	{name: "label map key not a label name", opts: Options{Cluster: 1}, decl: func(r *Registry) error {
		return r.AddLabel(Label{Name: "a", Value: map[string]int{"b": 1, "x.y": 2}})
	}, want: ErrLabel, msg: `map key "x.y"`},
	{name: "label payload too long", opts: Options{Cluster: 1}, decl: func(r *Registry) error {
		return r.AddLabel(Label{Name: "a", Value: strings.Repeat("v", 240)})
	}, want: ErrTooLong, msg: "payload"},
	{name: "label on undeclared metric", decl: func(r *Registry) error {
		return r.AddMetricLabel("nope", Label{Name: "a", Value: 1})
	}, want: ErrUnknown, msg: `"nope"`},
	{name: "label on undeclared instance", decl: func(r *Registry) error {
		r.AddIndom(Indom{Serial: 1})
		return r.AddInstanceLabel(1, 4, Label{Name: "a", Value: 1})
	}, want: ErrUnknown, msg: "instance 4"},
	{name: "too many labels", opts: Options{Cluster: 1}, decl: func(r *Registry) error {
		for i := range MaxLabels + 1 {
			if err := r.AddLabel(Label{Name: fmt.Sprintf("l%d", i), Value: i}); err != nil {
				return err
			}
		}
		return nil
	}, want: ErrTooMany, msg: "255 labels"},
}

func metricNamed(name string) func(r *Registry) error {
	return func(r *Registry) error { return r.AddMetric(Metric{Name: name, Type: Uint64, Semantics: SemCounter}) }
}

func indomSerial(s uint32) func(r *Registry) error {
	return func(r *Registry) error { return r.AddIndom(Indom{Serial: s}) }
}

func instances(insts ...Instance) func(r *Registry) error {
	return func(r *Registry) error { return r.AddIndom(Indom{Serial: 1, Instances: insts}) }
}

func TestRefusals(t *testing.T) {
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			file := tc.file
			if file == "" && !strings.Contains(tc.name, "empty file name") {
				file = "app"
			}
			opts := tc.opts
			opts.Dir = t.TempDir()
			r := NewRegistry(file, &opts)
			defer r.Close()
			var err error
			if tc.decl != nil {
				err = tc.decl(r)
			}
			if err == nil {
				err = r.Start()
			}
			if tc.want == nil {
				tc.want = ErrRange // forced versions that cannot hold the declarations fail at Start
			}
			require.ErrorIs(t, err, tc.want)
			assert.Contains(t, err.Error(), tc.msg)
			assert.True(t, strings.HasPrefix(err.Error(), "mmv: "), "message %q does not start with mmv: ", err)
			entries, _ := os.ReadDir(opts.Dir)
			assert.Empty(t, entries, "a refused registry left files")
		})
	}
}

func TestAcceptedEdges(t *testing.T) {
	r := NewRegistry("edge_1.x", &Options{Dir: t.TempDir(), Cluster: maxIndomCluster})
	require.NoError(t, r.AddIndom(Indom{Serial: MaxSerial, Instances: []Instance{{0, "a b"}, {1, "b"}}}))
	require.NoError(t, r.AddMetric(Metric{Name: strings.Repeat("m", 255), Item: MaxItem, Type: Uint64, Semantics: SemCounter, LongHelp: strings.Repeat("h", 255)}))
	require.NoError(t, r.AddMetric(Metric{Name: "a.b", Type: Uint64, Semantics: SemCounter, Indom: MaxSerial}))
	require.NoError(t, r.AddMetric(Metric{Name: "a.bc.d", Type: Uint64, Semantics: SemCounter}))
	require.NoError(t, r.AddLabel(Label{Name: "a", Value: strings.Repeat("v", 243-5-1-2)}))
	startOrSkip(t, r)
	require.NoError(t, r.Close())
}

// TestOverflowFileNamesAreNoRegistrys: a registry's overflow files are
// <file>.2, <file>.3..., so no registry is named so, with any flags. A
// registry web.2 kept web, spilling into an overflow file at Start, from
// starting (ErrInUse, naming web.2's pid) while web.2 ran; closed without
// the Process flag, its last values meant to stay in PCP, web's growth
// renamed its second file over web.2's, no error on either side. Names
// with a dot that do not end in one and digits are a registry's.
func TestOverflowFileNamesAreNoRegistrys(t *testing.T) {
	for _, flags := range []Flags{0, Process, NoPrefix} {
		r := NewRegistry("web.2", &Options{Dir: t.TempDir(), Flags: flags})
		err := r.Start()
		require.ErrorIs(t, err, ErrName, "flags %v", flags)
		assert.EqualError(t, err, `mmv: file "web.2": invalid name: a registry's name cannot end in '.' and digits: <file>.N names the overflow files of the registry <file>`)
	}
	for _, name := range []string{"web2", "web.v2", "web.2a", "v1.web", "web_2"} {
		assert.NoError(t, checkRegistryName(name, 0), name)
	}
	// web's own second file, at Start and after, is named so.
	needFileLayer(t)
	dir := t.TempDir()
	web := NewRegistry("web", &Options{Dir: dir, MaxRegistryMetrics: -1})
	defer web.Close()
	for i := range MaxMetrics + 10 {
		require.NoError(t, web.AddMetric(Metric{Name: fmt.Sprintf("m%04d", i), Type: Uint64, Semantics: SemCounter}))
	}
	startOrSkip(t, web)
	for i := range MaxMetrics + 10 {
		require.NoError(t, web.AddMetric(Metric{Name: fmt.Sprintf("late%04d", i), Type: Uint64, Semantics: SemCounter}))
	}
	require.NoError(t, web.Flush())
	names, err := os.ReadDir(dir)
	require.NoError(t, err)
	var files []string
	for _, e := range names {
		files = append(files, e.Name())
	}
	assert.Equal(t, []string{"web", "web.2", "web.3"}, files)
}

func TestItemsStableAcrossOrder(t *testing.T) {
	names := make([]string, 300)
	for i := range names {
		names[i] = fmt.Sprintf("group%d.metric%d", i%7, i)
	}
	itemsOf := func(order []string) map[string]uint32 {
		var ms []*metric
		for _, n := range order {
			ms = append(ms, &metric{Metric: Metric{Name: n}})
		}
		ms = append(ms, &metric{Metric: Metric{Name: "fixed", Item: 17}})
		items := assignItems(ms)
		got := map[string]uint32{}
		seen := map[uint32]string{}
		for i, it := range items {
			require.False(t, it < 1 || it > MaxItem, "item %d out of range", it)
			require.NotContains(t, seen, it, "item %d given to %q and %q", it, seen[it], ms[i].Name)
			seen[it] = ms[i].Name
			got[ms[i].Name] = it
		}
		require.EqualValues(t, 17, got["fixed"], "explicit item moved to")
		return got
	}
	want := itemsOf(names)
	for range 5 {
		shuffled := append([]string(nil), names...)
		rand.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		got := itemsOf(shuffled)
		for n, it := range want {
			require.Equal(t, it, got[n], "%q got item", n)
		}
	}
}

func TestItemsFillEveryItem(t *testing.T) {
	var ms []*metric
	for i := range MaxMetrics {
		ms = append(ms, &metric{Metric: Metric{Name: fmt.Sprintf("m%d", i)}})
	}
	seen := map[uint32]bool{}
	for _, it := range assignItems(ms) {
		require.False(t, seen[it] || it == 0 || it > MaxItem, "item %d repeated or out of range", it)
		seen[it] = true
	}
}

func TestDir(t *testing.T) {
	tmp := t.TempDir()
	conf := filepath.Join(tmp, "pcp.conf")
	os.WriteFile(conf, []byte("# comment\nPCP_VAR_DIR=/x\nPCP_TMP_DIR=\"/from/conf\"\n"), 0o644)
	pcpDir := filepath.Join(tmp, "root")
	os.MkdirAll(filepath.Join(pcpDir, "etc"), 0o755)
	os.WriteFile(filepath.Join(pcpDir, "etc", "pcp.conf"), []byte("PCP_TMP_DIR='/from/pcpdir'\n"), 0o644)
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"environment wins", map[string]string{"PCP_TMP_DIR": "/env", "PCP_CONF": conf}, "/env/mmv"},
		{"PCP_CONF", map[string]string{"PCP_CONF": conf, "PCP_DIR": pcpDir}, "/from/conf/mmv"},
		{"PCP_DIR", map[string]string{"PCP_DIR": pcpDir}, "/from/pcpdir/mmv"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{"PCP_TMP_DIR", "PCP_CONF", "PCP_DIR"} {
				t.Setenv(k, tc.env[k])
			}
			assert.Equal(t, tc.want, Dir(), "Dir()")
		})
	}
	t.Run("no pcp.conf", func(t *testing.T) {
		// A directory per user: a shared one, made 0755 by its first user,
		// refused every other user's files.
		want := filepath.Join(os.TempDir(), "mmv")
		if uid := os.Getuid(); uid >= 0 {
			want += "-" + strconv.Itoa(uid)
		}
		assert.Equal(t, want, dirFrom(func(string) string { return "" }, []string{filepath.Join(tmp, "missing")}))
	})
}

// assignItems gives ms their items as the first file of a registry would at
// Start, and returns them in the order of ms.
func assignItems(ms []*metric) []uint32 {
	p := newPart(0, "items", 0)
	for _, m := range ms {
		m.item = m.Item
		if !m.auto() {
			p.used.add(m.item)
		}
		p.metrics = append(p.metrics, m)
	}
	p.assignItems()
	items := make([]uint32, len(ms))
	for i, m := range ms {
		items[i] = m.item
	}
	return items
}

// TestInstanceNameEnds: an instance name cannot start or end with what
// PCP's tools take for white space, C's isspace (ASCII); a Unicode space
// is bytes to them, as any UTF-8. A name not UTF-8 ("a\xa0", Latin-1's
// no-break space) is refused whatever its ends (TestInstanceNamesNotUTF8, expose/promcheck).
func TestInstanceNameEnds(t *testing.T) {
	for _, name := range []string{" a", "a ", "\ta", "a\n", "a\v", "\fa", "a\r", "a\xa0"} {
		assert.ErrorIs(t, checkInstanceName("", name), ErrName, "%q", name)
	}
	for _, name := range []string{"a b", "a\u00a0", "\u00a0a", "a\u3000", "a\u2028", "\u0085a"} {
		assert.NoError(t, checkInstanceName("", name), "%q", name)
	}
}

// TestInstanceNameKeyAsChecked: the one pass that adds an instance
// (instanceNameKey) accepts exactly the names checkInstanceName does, and
// keys them as nameKey does, over the edges (ASCII and Unicode spaces at
// either end, NUL, lengths around the limit) and random names of bytes
// drawn from them.
func TestInstanceNameKeyAsChecked(t *testing.T) {
	names := []string{"", "a", "a b", " a", "a ", "\ta", "a\n", "a\x00", "\x00", "a\u00a0", "\u0085a", "\u3000", "a\u2000b",
		"\xff", "a\xc2", "é b", strings.Repeat("x", MaxStringLen), strings.Repeat("x", MaxStringLen+1), strings.Repeat("x ", 40) + "x"}
	alphabet := []string{"a", "b", " ", "\t", "\x00", "\x01", "\x80", "\u00a0", "\u0085", "\u2028", "é", "\xc2", "\xa0", "\xff", strings.Repeat("y", 30)}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		names = append(names, b.String())
	}
	for _, name := range names {
		key, ok := instanceNameKey(name)
		want := checkInstanceName("", name) == nil
		require.Equal(t, want, ok, "%q: accepted", name)
		if ok {
			require.Equal(t, nameKey(name), key, "%q: key", name)
		}
	}
}

// TestNameErrorQuotesTheCharacterAsWritten: a name refused for a character
// outside PCP's names quotes that character as the program wrote it, é for
// "café", not the rune of its first byte (Ã), and an invalid byte as \xff.
func TestNameErrorQuotesTheCharacterAsWritten(t *testing.T) {
	for _, tc := range []struct{ name, char string }{
		{"café", `'é'`},
		{"cpu.t温度", `'温'`},
		{"bad\xffbyte", `'\xff'`},
	} {
		r := NewRegistry("app", &Options{Dir: t.TempDir()})
		err := r.AddMetric(Metric{Name: tc.name, Type: Uint64, Semantics: SemCounter})
		require.ErrorIs(t, err, ErrName)
		assert.Contains(t, err.Error(), tc.char+" is not a letter", "metric %q", tc.name)

		err = NewRegistry(tc.name, &Options{Dir: t.TempDir()}).Start()
		require.ErrorIs(t, err, ErrName)
		assert.Contains(t, err.Error(), tc.char+" is not a letter", "file %q", tc.name)
	}
}

// TestHelpWithNULNamed: a help text holding a NUL byte, which ends a
// string in PCP, is refused with ErrName, as a string value holding one
// is, and the message names the metric, the help text and the rule; it
// said "invalid name: help text cannot contain NUL", and a help text is
// no name.
func TestHelpWithNULNamed(t *testing.T) {
	r := NewRegistry("app", &Options{Dir: t.TempDir()})
	_, err := Declare[Counter](r, "requests", "served\nby\x00us", Count)
	require.ErrorIs(t, err, ErrName)
	assert.EqualError(t, err, `mmv: metric "requests": invalid help text: a NUL byte in its long help (PCP's strings end at one)`)
	_, err = Declare[Counter](r, "requests", "served\x00", Count)
	assert.EqualError(t, err, `mmv: metric "requests": invalid help text: a NUL byte in its short help (PCP's strings end at one)`)
}
