package mmvfile_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/mmvfile"
)

// sampleMetric is the name of the sample's first metric in PCP.
func sampleMetric(f *mmvfile.File, i int) string { return "mmv.sample." + f.Metrics[i].Name }

// readsAsPCP are files that PCP's reader (pmdammv 6.0.3, and 7.2) loads,
// which Parse must accept: each mutation of the sample file, the rule Lint
// reports for it, and what PCP shows of its metrics; where the two PCPs
// differ, what each shows (pcptest.AtLeast).
var readsAsPCP = []struct {
	name    string
	version int
	mutate  func(b []byte, f *mmvfile.File) []byte
	rule    mmvfile.Rule
	// check looks at PCP's view of the file.
	check func(t *testing.T, f *mmvfile.File, ms []pcptest.Metric)
}{
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

// TestReadsWhatPCPReads: files PCP's reader loads, metric by metric, are
// parsed, and Lint names what PCP makes of them.
func TestReadsWhatPCPReads(t *testing.T) {
	for _, c := range readsAsPCP {
		eachMutated(t, c.name, c.version, c.mutate, func(t *testing.T, f *mmvfile.File, b []byte) {
			if pcptest.WantPCP(t) {
				c.check(t, f, pcpView(t, "sample", b))
			}
			got, err := mmvfile.Parse(b)
			require.NoError(t, err)
			if c.rule != "" {
				assert.Contains(t, rules(got.Lint("sample")), c.rule)
			}
		})
	}
}
