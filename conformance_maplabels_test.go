package mmv_test

// Map labels: PCP 6.0.3 flattens a map label into name.key labels, and
// garbles anything nested deeper ({"n":{"a":{"b":1}}} shows as "n.b":1,
// [[1,2],3] as "n":6V). The registry refuses those shapes (ErrLabel); the
// shapes it accepts read back whole.

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
)

// mapLabel returns the label as PCP shows a map: whole, or flattened into
// name.key labels as PCP's label merging does.
func mapLabel(labels, name, key string) (string, bool) {
	m := pcptest.Metric{Labels: labels}
	if v, ok := m.Label(name + "." + key); ok {
		return v, true
	}
	whole, ok := m.Label(name)
	if !ok {
		return "", false
	}
	sub := pcptest.Metric{Labels: whole}
	return sub.Label(key)
}

func TestConformanceMapLabels(t *testing.T) {
	for _, withCluster := range []bool{false, true} {
		t.Run(map[bool]string{false: "no cluster label", true: "with cluster label"}[withCluster], func(t *testing.T) {
			tmp, dir := pcpDir(t)
			r := mmv.NewRegistry("maps", &mmv.Options{Cluster: 80, Dir: dir})
			must(t, r.AddIndom(mmv.Indom{Serial: 1, Instances: []mmv.Instance{{ID: 1, Name: "a"}}}))
			must(t, r.AddMetric(mmv.Metric{Name: "item", Item: 1, Type: mmv.Uint32, Semantics: mmv.SemInstant}))
			must(t, r.AddMetric(mmv.Metric{Name: "per", Item: 2, Type: mmv.Uint32, Semantics: mmv.SemInstant, Indom: 1}))
			for _, bad := range []any{
				map[string]any{"a": map[string]any{"b": 1}, "c": "x"},
				map[string]any{"a": []any{1, map[string]any{"b": 2}}},
				[]any{map[string]any{"a": 1}},
				[]any{[]any{1, 2}, 3},
			} {
				err := r.AddMetricLabel("item", mmv.Label{Name: "n", Value: bad})
				assert.ErrorIs(t, err, mmv.ErrLabel, "label value %v", bad)
			}
			accepted := r.AddMetricLabel("item", mmv.Label{Name: "m", Value: map[string]any{"k": 1}}) == nil
			accepted = r.AddMetricLabel("item", mmv.Label{Name: "n", Value: map[string]any{"a": []int{1, 2}, "c": "x"}}) == nil && accepted
			accepted = r.AddIndomLabel(1, mmv.Label{Name: "im", Value: map[string]any{"j": 2, "k": 3}}) == nil && accepted
			accepted = r.AddInstanceLabel(1, 1, mmv.Label{Name: "inm", Value: map[string]any{"k": 4}}) == nil && accepted
			if withCluster {
				accepted = r.AddLabel(mmv.Label{Name: "cm", Value: map[string]any{"k": 5}}) == nil && accepted
			}
			if !assert.True(t, accepted, "flat map labels refused") || !assert.NoError(t, r.Start()) {
				return
			}
			defer r.Close()
			ms := pcptest.Info(t, tmp)
			item := get(t, ms, "mmv.maps.item")
			check := func(what, labels, name, key, want string) {
				t.Helper()
				v, ok := mapLabel(labels, name, key)
				if assert.True(t, ok, "%s: map label %s (key %s) missing: %s", what, name, key, labels) {
					assert.Equal(t, want, v, "%s: %s.%s", what, name, key)
				}
			}
			check("metric", item.Labels, "m", "k", "1")
			check("metric", item.Labels, "n", "c", `"x"`)
			check("metric", item.Labels, "n", "a", "[1,2]")
			if withCluster {
				check("cluster", item.Labels, "cm", "k", "5")
			}
			per := get(t, ms, "mmv.maps.per")
			check("indom", per.Labels, "im", "j", "2")
			check("indom", per.Labels, "im", "k", "3")
			if assert.Len(t, per.Instances, 1) {
				check("instance", per.Instances[0].Labels, "inm", "k", "4")
			}
		})
	}
}
