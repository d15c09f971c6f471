package mmvfile_test

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/mmvfile"
)

// sampleMetric is the name of the sample's first metric in PCP.
func sampleMetric(f *mmvfile.File, i int) string { return "mmv.sample." + f.Metrics[i].Name }

// readCase is a file PCP's reader loads, which Parse must accept: a
// mutation of the sample file, the rule Lint reports for it (none for
// ""), and what PCP shows of its metrics.
type readCase struct {
	name    string
	version int
	mutate  func(b []byte, f *mmvfile.File) []byte
	rule    mmvfile.Rule
	// check looks at PCP's view of the file.
	check func(t *testing.T, f *mmvfile.File, ms []pcptest.Metric)
}

// readsAsPCP are files that PCP's reader (pmdammv 6.0.3, and 7.2) loads,
// which Parse must accept: each mutation of the sample file, the rule Lint
// reports for it, and what PCP shows of its metrics; where the two PCPs
// differ, what each shows (pcptest.AtLeast).
var readsAsPCP = []readCase{
	{"item 2000 (Parfait hashes items)", 0, func(b []byte, f *mmvfile.File) []byte {
		return put32(b, metricField(f, f.Metrics[0], 0), 2000)
	}, mmvfile.RuleItem, func(t *testing.T, f *mmvfile.File, ms []pcptest.Metric) {
		assert.Nil(t, pcptest.Find(ms, sampleMetric(f, 0)), "PCP skips the metric")
		assert.NotNil(t, pcptest.Find(ms, sampleMetric(f, 1)), "and loads the rest")
	}},
	{"duplicate item", 0, func(b []byte, f *mmvfile.File) []byte {
		return put32(b, metricField(f, f.Metrics[1], 0), f.Metrics[0].Item)
	}, mmvfile.RuleDuplicateItem, func(t *testing.T, f *mmvfile.File, ms []pcptest.Metric) {
		assert.NotNil(t, pcptest.Find(ms, sampleMetric(f, 0)), "PCP keeps the first")
		assert.Nil(t, pcptest.Find(ms, sampleMetric(f, 1)), "and skips the second")
	}},
	{"indom serial 3000 (Parfait hashes serials)", 0, func(b []byte, f *mmvfile.File) []byte {
		put32(b, f.Indoms[0].Offset, 3000)
		return put32(b, metricField(f, f.Metrics[0], 16), 3000)
	}, mmvfile.RuleSerial, func(t *testing.T, f *mmvfile.File, ms []pcptest.Metric) {
		m := pcptest.Find(ms, sampleMetric(f, 0))
		require.NotNil(t, m)
		// 12<<11 | 3000: the serial spills into the cluster's bits, where
		// cluster 13's indoms are.
		assert.True(t, strings.HasPrefix(m.Indom, "70.27576 "), m.Indom)
		assert.Len(t, m.Instances, 2)
	}},
	{"cluster 2048 with indoms", 0, func(b []byte, f *mmvfile.File) []byte { return put32(b, 36, 2048) },
		mmvfile.RuleIndomCluster, func(t *testing.T, f *mmvfile.File, ms []pcptest.Metric) {
			m := pcptest.Find(ms, sampleMetric(f, 0))
			require.NotNil(t, m)
			// 2048<<11 | 3 in 22 bits: cluster 0's indom 3.
			assert.True(t, strings.HasPrefix(m.Indom, "70.3 "), m.Indom)
		}},
	{"semantics 0 (PCP's Python binding)", 0, func(b []byte, f *mmvfile.File) []byte {
		return put32(b, metricField(f, f.Metrics[1], 8), 0)
	}, mmvfile.RuleSemantics, func(t *testing.T, f *mmvfile.File, ms []pcptest.Metric) {
		m := pcptest.Find(ms, sampleMetric(f, 1))
		require.NotNil(t, m)
		assert.Equal(t, "counter", m.Semantics)
	}},
	{"label of another cluster", 3, func(b []byte, f *mmvfile.File) []byte { return put32(b, f.Labels[0].Offset+4, 13) },
		mmvfile.RuleLabel, func(t *testing.T, f *mmvfile.File, ms []pcptest.Metric) {
			m := pcptest.Find(ms, sampleMetric(f, 0))
			require.NotNil(t, m)
			_, ok := m.Label("app")
			assert.False(t, ok, "PCP never shows it")
		}},
	{"label name PCP refuses", 3, labelPayload(`{"a-b":"x"}`), mmvfile.RuleLabel, func(t *testing.T, f *mmvfile.File, ms []pcptest.Metric) {
		m := pcptest.Find(ms, sampleMetric(f, 0))
		require.NotNil(t, m)
		assert.NotContains(t, m.Labels, "a-b", "PCP drops the label")
		assert.Contains(t, m.Labels, `"agent":"mmv"`, "and keeps the others")
	}},
	{"label name of a digit first", 3, labelPayload(`{"9pp":"x"}`), mmvfile.RuleLabel, keptBy72(`"9pp":"x"`, "9pp")},
	{"label name of '_' first", 3, labelPayload(`{"_pp":"x"}`), mmvfile.RuleLabel, keptBy72(`"_pp":"x"`, "_pp")},
	{"label map key PCP refuses", 3, labelPayload(`{"app":{"ok":1,"b-d":2}}`), mmvfile.RuleLabel, func(t *testing.T, f *mmvfile.File, ms []pcptest.Metric) {
		m := pcptest.Find(ms, sampleMetric(f, 0))
		require.NotNil(t, m)
		if pcptest.AtLeast(7, 2) {
			// pminfo 7.2 shows a map flattened: app.ok.
			assert.Contains(t, m.Labels, `"app.ok":1`, "7.2 keeps the label")
			assert.NotContains(t, m.Labels, "b-d", "without the key")
		} else {
			assert.NotContains(t, m.Labels, `"app`, "6.0.3 drops the whole label")
		}
		assert.Contains(t, m.Labels, `"agent":"mmv"`, "and keeps the others")
	}},
	{"label map key of a digit first", 3, labelPayload(`{"app":{"9k":1}}`), mmvfile.RuleLabel, keptBy72(`"app.9k":1`, `"app`)},
	{"label payload not JSON", 3, func(b []byte, f *mmvfile.File) []byte { b[f.Labels[0].Offset+12] = '['; return b },
		mmvfile.RuleLabel, func(t *testing.T, f *mmvfile.File, ms []pcptest.Metric) {
			m := pcptest.Find(ms, sampleMetric(f, 1))
			require.NotNil(t, m, "PCP loads the file")
			_, ok := m.Label("app")
			assert.False(t, ok, "and drops the label")
		}},
	{"label of no kind", 3, func(b []byte, f *mmvfile.File) []byte { return put32(b, f.Labels[0].Offset, 0x40) },
		mmvfile.RuleLabel, func(t *testing.T, f *mmvfile.File, ms []pcptest.Metric) {
			m := pcptest.Find(ms, sampleMetric(f, 1))
			require.NotNil(t, m, "PCP loads the file")
			_, ok := m.Label("app")
			assert.False(t, ok, "and drops the label")
		}},
	{"label of two kinds", 3, func(b []byte, f *mmvfile.File) []byte { return put32(b, f.Labels[0].Offset, 0x18) },
		mmvfile.RuleLabel, func(t *testing.T, f *mmvfile.File, ms []pcptest.Metric) {
			m := pcptest.Find(ms, sampleMetric(f, 1))
			require.NotNil(t, m, "PCP loads the file")
			_, ok := m.Label("app")
			assert.True(t, ok, "and takes it for the cluster's")
		}},
	{"metric label with an instance", 3, func(b []byte, f *mmvfile.File) []byte { return put32(b, f.Labels[1].Offset+8, 0) },
		mmvfile.RuleLabel, func(t *testing.T, f *mmvfile.File, ms []pcptest.Metric) {
			m := pcptest.Find(ms, sampleMetric(f, 2))
			require.NotNil(t, m)
			got, ok := m.Label("b")
			assert.True(t, ok, "PCP ignores the instance")
			assert.Equal(t, "1", got)
		}},
	{"label of an unknown instance", 3, func(b []byte, f *mmvfile.File) []byte { return put32(b, f.Labels[3].Offset+8, 9) },
		mmvfile.RuleLabel, func(t *testing.T, f *mmvfile.File, ms []pcptest.Metric) {
			require.NotNil(t, pcptest.Find(ms, sampleMetric(f, 0)))
		}},
	{"semantics 2", 0, func(b []byte, f *mmvfile.File) []byte {
		return put32(b, metricField(f, f.Metrics[1], 8), 2)
	}, mmvfile.RuleSemantics, func(t *testing.T, f *mmvfile.File, ms []pcptest.Metric) {
		m := pcptest.Find(ms, sampleMetric(f, 1))
		require.NotNil(t, m)
		assert.Equal(t, "??? (2)", m.Semantics)
	}},
	{"unknown time scale", 0, func(b []byte, f *mmvfile.File) []byte {
		return put32(b, metricField(f, f.Metrics[1], 12), 0x01006000)
	}, mmvfile.RuleUnits, func(t *testing.T, f *mmvfile.File, ms []pcptest.Metric) {
		m := pcptest.Find(ms, sampleMetric(f, 1))
		require.NotNil(t, m)
		assert.Equal(t, "time-6", m.Units)
	}},
	{"negative instance id (Speed hashes instance names)", 0, func(b []byte, f *mmvfile.File) []byte {
		return put32(b, f.Instances[1].Offset+12, uint32(0x80000001))
	}, "", func(t *testing.T, f *mmvfile.File, ms []pcptest.Metric) {
		m := pcptest.Find(ms, sampleMetric(f, 0))
		require.NotNil(t, m)
		require.Len(t, m.Instances, 2)
		assert.Equal(t, -2147483647, m.Instances[1].ID)
	}},
	{"section type 9", 3, func(b []byte, f *mmvfile.File) []byte {
		for _, s := range f.TOC {
			if s.Type == mmvfile.Labels {
				put32(b, s.TOCOffset, 9)
			}
		}
		return b
	}, mmvfile.RuleSection, func(t *testing.T, f *mmvfile.File, ms []pcptest.Metric) {
		m := pcptest.Find(ms, sampleMetric(f, 1))
		require.NotNil(t, m, "PCP loads the file")
		_, ok := m.Label("app")
		assert.False(t, ok, "and ignores the entry")
	}},
	{"labels in a v2 file", 3, func(b []byte, f *mmvfile.File) []byte { return put32(b, 4, 2) },
		"", func(t *testing.T, f *mmvfile.File, ms []pcptest.Metric) {
			m := pcptest.Find(ms, sampleMetric(f, 1))
			require.NotNil(t, m)
			got, ok := m.Label("app")
			assert.True(t, ok, "PCP reads the labels of any version")
			assert.Equal(t, `"x"`, got)
		}},
	{"metric of an indom not in the file", 0, func(b []byte, f *mmvfile.File) []byte {
		return put32(b, metricField(f, f.Metrics[0], 16), 99)
	}, mmvfile.RuleMissingIndom, func(t *testing.T, f *mmvfile.File, ms []pcptest.Metric) {
		m := pcptest.Find(ms, sampleMetric(f, 0))
		require.NotNil(t, m)
		assert.Equal(t, "No value(s) available!", m.NoValue)
		assert.NotNil(t, pcptest.Find(ms, sampleMetric(f, 1)))
	}},
	{"instance not listed by its indom", 0, func(b []byte, f *mmvfile.File) []byte {
		return put32(b, f.Indoms[0].Offset+4, 1)
	}, mmvfile.RuleUnlistedInstance, func(t *testing.T, f *mmvfile.File, ms []pcptest.Metric) {
		m := pcptest.Find(ms, sampleMetric(f, 0))
		require.NotNil(t, m)
		require.Len(t, m.Instances, 1, "PCP shows the listed instance only")
		assert.Equal(t, "get", m.Instances[0].Name)
	}},
	{"value listed twice", 0, func(b []byte, f *mmvfile.File) []byte {
		put64(b, f.Values[0].Offset, 5)
		put64(b, f.Values[1].Offset, 6)
		return put64(b, f.Values[1].Offset+24, f.Instances[0].Offset) // get's, not put's
	}, mmvfile.RuleDuplicateValue, func(t *testing.T, f *mmvfile.File, ms []pcptest.Metric) {
		m := pcptest.Find(ms, sampleMetric(f, 0))
		require.NotNil(t, m)
		require.NotNil(t, m.Instance("get"))
		assert.Equal(t, "5", m.Instance("get").Value, "PCP reads the first")
	}},
	{"duplicate name", 2, func(b []byte, f *mmvfile.File) []byte {
		return put64(b, f.Metrics[1].Offset, f.Metrics[0].NameOffset)
	}, mmvfile.RuleDuplicateName, func(t *testing.T, f *mmvfile.File, ms []pcptest.Metric) {
		assert.NotNil(t, pcptest.Find(ms, sampleMetric(f, 0)))
		assert.Nil(t, pcptest.Find(ms, sampleMetric(f, 1)))
	}},
	{"name PCP refuses", 1, func(b []byte, f *mmvfile.File) []byte {
		b[f.Metrics[1].Offset+1] = '-'
		return b
	}, mmvfile.RuleName, func(t *testing.T, f *mmvfile.File, ms []pcptest.Metric) {
		assert.Nil(t, pcptest.Find(ms, "mmv.sample.v-rsion"))
		assert.NotNil(t, pcptest.Find(ms, sampleMetric(f, 0)))
	}},
	{"empty name", 1, func(b []byte, f *mmvfile.File) []byte {
		b[f.Metrics[1].Offset] = 0
		return b
	}, mmvfile.RuleName, func(t *testing.T, f *mmvfile.File, ms []pcptest.Metric) {
		assert.NotNil(t, pcptest.Find(ms, "mmv.sample."), "PCP loads it with a trailing dot")
	}},
}

// readsAsPCPReview are the files of the reader's review that PCP 6.0.3
// loads and Parse refused: fields PCP ignores, TOC entries it ignores, and
// string slots with no NUL, of which PCP shows the first 255 bytes; and
// what Parse must make of each (parsed).
var readsAsPCPReview = []struct {
	readCase
	parsed func(t *testing.T, got *mmvfile.File)
}{
	{readCase{"singular value with an instance", 0, func(b []byte, f *mmvfile.File) []byte {
		return put64(b, f.Values[2].Offset+24, f.Instances[0].Offset)
	}, mmvfile.RuleIgnoredField, versionShown(`"1.2.3"`)}, instanceIgnored},
	{readCase{"singular value with an instance offset beyond the file", 0, func(b []byte, f *mmvfile.File) []byte {
		return put64(b, f.Values[2].Offset+24, 1<<62)
	}, mmvfile.RuleIgnoredField, versionShown(`"1.2.3"`)}, instanceIgnored},
	{readCase{"labels of negative count", 3, func(b []byte, f *mmvfile.File) []byte {
		return put32(b, tocEntry(f, mmvfile.Labels)+4, math.MaxUint32)
	}, "", func(t *testing.T, f *mmvfile.File, ms []pcptest.Metric) {
		m := pcptest.Find(ms, sampleMetric(f, 1))
		require.NotNil(t, m, "PCP loads the file")
		_, ok := m.Label("app")
		assert.False(t, ok, "and ignores the labels' entry")
	}}, func(t *testing.T, got *mmvfile.File) {
		assert.Empty(t, got.Labels)
	}},
	{readCase{"metric name with no NUL in its slot", 2, func(b []byte, f *mmvfile.File) []byte {
		copy(b[f.Metrics[1].NameOffset:], strings.Repeat("v", 256))
		return b
	}, mmvfile.RuleString, func(t *testing.T, f *mmvfile.File, ms []pcptest.Metric) {
		assert.NotNil(t, pcptest.Find(ms, "mmv.sample."+strings.Repeat("v", 255)), "PCP names the metric by the slot's first 255 bytes")
	}}, func(t *testing.T, got *mmvfile.File) {
		assert.Equal(t, strings.Repeat("v", 255), got.Metrics[1].Name)
	}},
	{readCase{"help text with no NUL", 0, func(b []byte, f *mmvfile.File) []byte {
		copy(b[f.Metrics[1].LongHelp.Offset:], strings.Repeat("h", 256))
		return b
	}, mmvfile.RuleString, func(t *testing.T, f *mmvfile.File, ms []pcptest.Metric) {
		m := pcptest.Find(ms, sampleMetric(f, 1))
		require.NotNil(t, m)
		assert.Equal(t, strings.Repeat("h", 255), m.LongHelp, "PCP shows the slot's first 255 bytes")
	}}, func(t *testing.T, got *mmvfile.File) {
		assert.Equal(t, strings.Repeat("h", 255), got.Metrics[1].LongHelp.Text)
	}},
	{readCase{"string value with no NUL", 0, func(b []byte, f *mmvfile.File) []byte {
		copy(b[f.Values[2].Extra:], strings.Repeat("x", 256))
		return b
	}, mmvfile.RuleString, versionShown(`"` + strings.Repeat("x", 255) + `"`)}, func(t *testing.T, got *mmvfile.File) {
		assert.Equal(t, strings.Repeat("x", 255), got.Values[2].String)
	}},
	{readCase{"v1 metric name with no NUL in its 64 bytes", 1, func(b []byte, f *mmvfile.File) []byte {
		copy(b[f.Metrics[1].Offset:], strings.Repeat("x", 64))
		return b
	}, mmvfile.RuleName, func(t *testing.T, f *mmvfile.File, ms []pcptest.Metric) {
		assert.NotNil(t, pcptest.Find(ms, sampleMetric(f, 0)), "PCP loads the file")
		assert.NotNil(t, pcptest.Find(ms, sampleMetric(f, 2)))
		for _, m := range ms {
			assert.NotContains(t, m.Name, "xxxx", "and skips the metric")
		}
	}}, func(t *testing.T, got *mmvfile.File) {
		fds := findings(got.Lint("sample"), mmvfile.RuleName)
		require.Len(t, fds, 1)
		assert.Contains(t, fds[0].Msg, "PCP skips the metric")
	}},
	{readCase{"string slot no record uses, with no NUL", 0, func(b []byte, f *mmvfile.File) []byte {
		put64(b, metricField(f, f.Metrics[1], 24), 0) // version's short help: its slot is left unused
		copy(b[f.Metrics[1].ShortHelp.Offset:], strings.Repeat("s", 256))
		return b
	}, mmvfile.RuleString, versionShown(`"1.2.3"`)}, nil},
}

// instanceIgnored checks that Parse reads a singular metric's value as
// PCP does, whatever instance it names.
func instanceIgnored(t *testing.T, got *mmvfile.File) {
	assert.Nil(t, got.Values[2].Instance, "PCP ignores the instance of a singular metric's value")
	assert.Equal(t, "1.2.3", got.Values[2].String)
}

// versionShown checks that PCP shows the sample's version metric with the
// value want, as pminfo prints it.
func versionShown(want string) func(t *testing.T, f *mmvfile.File, ms []pcptest.Metric) {
	return func(t *testing.T, f *mmvfile.File, ms []pcptest.Metric) {
		m := pcptest.Find(ms, sampleMetric(f, 1))
		require.NotNil(t, m, "PCP loads the metric")
		assert.Equal(t, want, m.Value)
	}
}

// TestReadsTOCEntriesPCPIgnores: PCP ignores a TOC entry of a type mmv(5)
// does not define, or of a negative count, whatever their number, and
// reads the rest of the file.
func TestReadsTOCEntriesPCPIgnores(t *testing.T) {
	for _, c := range []struct {
		name  string
		extra [][3]int64
	}{
		{"7 entries, 3 of types mmv(5) does not define", [][3]int64{{9, 0, 0}, {0, 5, 0}, {77, 1, 1 << 40}}},
		{"a second indoms entry of negative count", [][3]int64{{1, -1, 0}}},
		{"a second instances entry of negative count", [][3]int64{{2, -1, 0}}},
		{"a second metrics entry of negative count", [][3]int64{{3, -1, 0}}},
		{"a second values entry of negative count", [][3]int64{{4, -1, 0}}},
		{"strings of negative count", [][3]int64{{5, -1, 1 << 40}}},
		{"labels of negative count", [][3]int64{{6, -1, 0}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := rawV1TOC(1, 2, 2, 1, c.extra...)
			if pcptest.WantPCP(t) {
				m := pcptest.Find(pcpView(t, "raw", b), "mmv.raw.m")
				require.NotNil(t, m, "PCP loads the metric")
				require.Len(t, m.Instances, 2)
				assert.Equal(t, "0", m.Instances[1].Value)
			}
			f, err := mmvfile.Parse(b)
			require.NoError(t, err)
			assert.Len(t, f.Values, 2)
			assert.Len(t, f.Indoms[0].Instances, 2)
			assert.Contains(t, rules(f.Lint("raw")), mmvfile.RuleSection)
		})
	}
}

// TestReadsWhatPCPReads: files PCP's reader loads, metric by metric, are
// parsed, and Lint names what PCP makes of them.
func TestReadsWhatPCPReads(t *testing.T) {
	for _, c := range readsAsPCP {
		readsAsPCPShows(t, c, nil)
	}
	for _, c := range readsAsPCPReview {
		readsAsPCPShows(t, c.readCase, c.parsed)
	}
}

// readsAsPCPShows checks the file of c: PCP's view of it, and that Parse
// accepts it, Lint names c.rule, and parsed, when not nil, passes.
func readsAsPCPShows(t *testing.T, c readCase, parsed func(t *testing.T, got *mmvfile.File)) {
	eachMutated(t, c.name, c.version, c.mutate, func(t *testing.T, f *mmvfile.File, b []byte) {
		if pcptest.WantPCP(t) {
			c.check(t, f, pcpView(t, "sample", b))
		}
		got, err := mmvfile.Parse(b)
		require.NoError(t, err)
		require.Len(t, got.Metrics, len(f.Metrics))
		if c.rule != "" {
			assert.Contains(t, rules(got.Lint("sample")), c.rule)
		}
		if parsed != nil {
			parsed(t, got)
		}
	})
}
