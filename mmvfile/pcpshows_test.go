package mmvfile_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/mmvfile"
)

// showsAsPCP are files laid out as real writers lay them out, which PCP's
// reader loads: Parse must read them, and read the values PCP shows. Each
// mutates the sample file (or replaces it), names the rule Lint reports,
// and gives the instances and values PCP shows of one metric over an
// indom: by name, the value as pminfo prints it.
var showsAsPCP = []struct {
	name    string
	version int
	mutate  func(b []byte, f *mmvfile.File) []byte
	rule    mmvfile.Rule
	metric  string // in the file; "" for the sample's first
	want    map[string]string
}{
	{"instances reserved and never registered (Hornet)", 0, func(b []byte, f *mmvfile.File) []byte {
		// Hornet sizes the instances and values sections by the
		// instances its caller declares, and each indom counts those it
		// registers: the records left over stay all zero.
		setValues(b, f)
		put32(b, f.Indoms[0].Offset+4, 1)
		clear(b[f.Instances[1].Offset : f.Instances[1].Offset+instanceSize(f)])
		clear(b[f.Values[1].Offset : f.Values[1].Offset+32])
		return b
	}, mmvfile.RuleUnlistedInstance, "", map[string]string{"get": "7"}},
	{"empty instances section past the end of the file", 0, func(b []byte, f *mmvfile.File) []byte {
		// An indom of no instances: its metric has no values.
		put32(b, f.Indoms[0].Offset+4, 0)
		clear(b[f.Values[0].Offset : f.Values[0].Offset+64])
		put32(b, tocEntry(f, mmvfile.Instances)+4, 0)
		put64(b, tocEntry(f, mmvfile.Instances)+8, uint64(len(b))+4096)
		return b
	}, mmvfile.RuleSection, "", map[string]string{}},
	{"empty labels section past the end of the file", 3, func(b []byte, f *mmvfile.File) []byte {
		setValues(b, f)
		put32(b, tocEntry(f, mmvfile.Labels)+4, 0)
		put64(b, tocEntry(f, mmvfile.Labels)+8, 1<<62)
		return b
	}, mmvfile.RuleSection, "", map[string]string{"get": "7", "put": "9"}},
	{"value of no metric with an instance", 0, func(b []byte, f *mmvfile.File) []byte {
		setValues(b, f)
		return put64(b, f.Values[0].Offset+16, 0) // get's: a dead record
	}, mmvfile.RuleDeadValue, "", map[string]string{"put": "9"}},
	{"value of no metric with an instance offset that is no instance record", 0, func(b []byte, f *mmvfile.File) []byte {
		setValues(b, f)
		put64(b, f.Values[0].Offset+16, 0)
		return put64(b, f.Values[0].Offset+24, f.Instances[0].Offset+4)
	}, mmvfile.RuleDeadValue, "", map[string]string{"put": "9"}},
	{"value of no metric with an instance offset beyond the file", 0, func(b []byte, f *mmvfile.File) []byte {
		setValues(b, f)
		put64(b, f.Values[0].Offset+16, 0)
		return put64(b, f.Values[0].Offset+24, 1<<62)
	}, mmvfile.RuleDeadValue, "", map[string]string{"put": "9"}},
	{"value of a metric PCP skips for its item, with an instance offset inside a record", 0, func(b []byte, f *mmvfile.File) []byte {
		setValues(b, f)
		put32(b, metricField(f, f.Metrics[2], 0), 2000) // busy
		return put64(b, f.Values[3].Offset+24, f.Instances[0].Offset+4)
	}, mmvfile.RuleIgnoredField, "", map[string]string{"get": "7", "put": "9"}},
	{"value of a metric PCP skips for its item, with an instance offset beyond the file", 0, func(b []byte, f *mmvfile.File) []byte {
		setValues(b, f)
		put32(b, metricField(f, f.Metrics[2], 0), 2000)
		return put64(b, f.Values[3].Offset+24, 1<<62)
	}, mmvfile.RuleIgnoredField, "", map[string]string{"get": "7", "put": "9"}},
	{"singular value with an instance, of a metric PCP skips for a duplicate item", 0, func(b []byte, f *mmvfile.File) []byte {
		setValues(b, f)
		put32(b, metricField(f, f.Metrics[1], 0), f.Metrics[0].Item) // version takes requests' item
		return put64(b, f.Values[2].Offset+24, f.Instances[1].Offset)
	}, mmvfile.RuleIgnoredField, "", map[string]string{"get": "7", "put": "9"}},
	{"string value at no string slot, of a metric PCP skips for its item", 0, func(b []byte, f *mmvfile.File) []byte {
		setValues(b, f)
		put32(b, metricField(f, f.Metrics[1], 0), 2000) // version
		return put64(b, f.Values[2].Offset+8, f.Values[2].Offset)
	}, mmvfile.RuleDeadValue, "", map[string]string{"get": "7", "put": "9"}},
}

// TestReadsWhatPCPShows: files of real writers' layouts that PCP's reader
// loads are parsed, with the instances and values PCP shows, and Lint
// names what PCP does with their oddities.
func TestReadsWhatPCPShows(t *testing.T) {
	for _, c := range showsAsPCP {
		eachMutated(t, c.name, c.version, c.mutate, func(t *testing.T, f *mmvfile.File, b []byte) {
			name, metric := "sample", c.metric
			if metric == "" {
				metric = f.Metrics[0].Name
			}
			if pcptest.WantPCP(t) {
				m := pcptest.Find(pcpView(t, name, b), "mmv."+name+"."+metric)
				require.NotNil(t, m, "PCP loads the metric")
				shown := map[string]string{}
				for _, in := range m.Instances {
					if in.Value != "" {
						shown[in.Name] = in.Value
					}
				}
				assert.Equal(t, c.want, shown, "what PCP shows")
			}
			got, err := mmvfile.Parse(b)
			require.NoError(t, err)
			assert.Equal(t, c.want, listedValues(got, metric), "what Parse reads")
			if c.rule != "" {
				assert.Contains(t, rules(got.Lint(name)), c.rule)
			}
		})
	}
}
