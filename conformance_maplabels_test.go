package mmv_test

// Map labels: PCP 6.0.3 flattens a map label into name.key labels, and
// garbles anything nested deeper ({"n":{"a":{"b":1}}} shows as "n.b":1,
// [[1,2],3] as "n":6V), and drops a map label whole when a key is not a
// label name. The registry refuses those (ErrLabel); what it accepts reads
// back whole.

import (
	"bytes"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
	needFileLayer(t)
	for _, withCluster := range []bool{false, true} {
		t.Run(map[bool]string{false: "no cluster label", true: "with cluster label"}[withCluster], func(t *testing.T) {
			tmp, dir := pcpDir(t)
			r := newRegistry(t, "maps", dir, mmv.Options{Cluster: 80})
			require.NoError(t, r.AddIndom(mmv.Indom{Serial: 1, Instances: []mmv.Instance{{ID: 1, Name: "a"}}}))
			require.NoError(t, r.AddMetric(mmv.Metric{Name: "item", Item: 1, Type: mmv.Uint32, Semantics: mmv.SemInstant}))
			require.NoError(t, r.AddMetric(mmv.Metric{Name: "per", Item: 2, Type: mmv.Uint32, Semantics: mmv.SemInstant, Indom: 1}))
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

// badMapKeys are keys PCP's label-name rule refuses (a letter, then
// letters, digits and '_'), each with a key of the same length that it
// accepts, so one can be patched over the other in a written file.
var badMapKeys = []struct{ bad, good string }{
	{"bad key", "goodkey"},
	{"1x", "x1"},
	{"", "k"},
	{"x.y", "xyz"},
	{"é", "ee"},
}

// keysRegistry declares, for the map key tests, the metric "per" on an
// indom of one instance, "a", in a fresh PCP_TMP_DIR.
func keysRegistry(t *testing.T) (r *mmv.Registry, tmp string) {
	t.Helper()
	tmp, dir := pcpDir(t)
	r = newRegistry(t, "keys", dir, mmv.Options{Cluster: 81})
	require.NoError(t, r.AddIndom(mmv.Indom{Serial: 1, Instances: []mmv.Instance{{ID: 1, Name: "a"}}}))
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "per", Item: 1, Type: mmv.Uint32, Semantics: mmv.SemInstant, Indom: 1}))
	return r, tmp
}

// TestConformanceMapLabelKeysPCPDrops is why the registry refuses those
// keys: a metric or instance label whose map has one, patched into a file
// the registry wrote, is dropped by PCP's reader without a word, while the
// same label with an accepted key shows.
func TestConformanceMapLabelKeysPCPDrops(t *testing.T) {
	for _, k := range badMapKeys {
		t.Run(k.bad, func(t *testing.T) {
			r, tmp := keysRegistry(t)
			good := map[string]any{k.good: 1}
			require.NoError(t, r.AddMetricLabel("per", mmv.Label{Name: "ml", Value: good}))
			require.NoError(t, r.AddInstanceLabel(1, 1, mmv.Label{Name: "il", Value: good}))
			startOrSkip(t, r)

			per := get(t, pcptest.Info(t, tmp), "mmv.keys.per")
			require.Len(t, per.Instances, 1)
			_, ok := mapLabel(per.Labels, "ml", k.good)
			require.True(t, ok, "metric label with key %q missing before the patch: %s", k.good, per.Labels)
			_, ok = mapLabel(per.Instances[0].Labels, "il", k.good)
			require.True(t, ok, "instance label with key %q missing before the patch: %s", k.good, per.Instances[0].Labels)

			file, err := os.ReadFile(r.Path())
			require.NoError(t, err)
			from := []byte(`{"` + k.good + `":1}`)
			// The bad key over the good one, padded with the NULs that end
			// a payload.
			to := append([]byte(`{"`+k.bad+`":1}`), make([]byte, len(k.good)-len(k.bad))...)
			require.Equal(t, 2, bytes.Count(file, from), "the two labels' payloads")
			f, err := os.OpenFile(r.Path(), os.O_WRONLY, 0)
			require.NoError(t, err)
			for range 2 {
				at := bytes.Index(file, from)
				_, err = f.WriteAt(to, int64(at))
				require.NoError(t, err)
				copy(file[at:], to)
			}
			require.NoError(t, f.Close())

			// PCP 6.0.3 drops the whole label. 7.2 drops the key and
			// shows the label as an empty map, but for a key that starts
			// with a digit, which it shows as a label of its own,
			// "ml.1x". The label is lost or changed either way.
			per = get(t, pcptest.Info(t, tmp), "mmv.keys.per")
			require.Len(t, per.Instances, 1)
			ml, mok := per.Label("ml")
			il, iok := per.Instances[0].Label("il")
			switch {
			case pcptest.AtLeast(7, 2) && k.bad == "1x":
				assert.False(t, mok || iok, "PCP %s shows the labels with key %q: %s, %s", pcptest.Version(), k.bad, per.Labels, per.Instances[0].Labels)
				ml, _ = per.Label("ml.1x")
				il, _ = per.Instances[0].Label("il.1x")
				assert.Equal(t, []string{"1", "1"}, []string{ml, il}, "PCP %s's ml.1x and il.1x: %s, %s", pcptest.Version(), per.Labels, per.Instances[0].Labels)
			case pcptest.AtLeast(7, 2):
				assert.Equal(t, "{}", ml, "PCP %s's metric label with key %q: %s", pcptest.Version(), k.bad, per.Labels)
				assert.Equal(t, "{}", il, "PCP %s's instance label with key %q: %s", pcptest.Version(), k.bad, per.Instances[0].Labels)
			default:
				assert.False(t, mok, "PCP shows the metric label with key %q: %s", k.bad, per.Labels)
				assert.False(t, iok, "PCP shows the instance label with key %q: %s", k.bad, per.Instances[0].Labels)
			}
		})
	}
}

// TestConformanceMapLabelKeysRefused: the registry refuses, with ErrLabel
// naming the label and the key, the map keys PCP drops, for every kind of
// label, and declares nothing.
func TestConformanceMapLabelKeysRefused(t *testing.T) {
	for _, k := range badMapKeys {
		t.Run(k.bad, func(t *testing.T) {
			r, tmp := keysRegistry(t)
			bad := map[string]any{"ok": 1, k.bad: 1}
			for _, c := range []struct {
				label string
				err   error
			}{
				{"rl", r.AddLabel(mmv.Label{Name: "rl", Value: bad})},
				{"ml", r.AddMetricLabel("per", mmv.Label{Name: "ml", Value: bad})},
				{"dl", r.AddIndomLabel(1, mmv.Label{Name: "dl", Value: bad})},
				{"il", r.AddInstanceLabel(1, 1, mmv.Label{Name: "il", Value: bad})},
			} {
				if assert.ErrorIs(t, c.err, mmv.ErrLabel, "label %s", c.label) {
					assert.Contains(t, c.err.Error(), "label "+strconv.Quote(c.label), "the error names the label")
					assert.Contains(t, c.err.Error(), "key "+strconv.Quote(k.bad), "the error names the key")
				}
			}
			startOrSkip(t, r)
			per := get(t, pcptest.Info(t, tmp), "mmv.keys.per")
			for _, name := range []string{"rl", "ml", "dl"} {
				_, ok := per.Label(name)
				assert.False(t, ok, "refused label %s declared: %s", name, per.Labels)
			}
			require.Len(t, per.Instances, 1)
			_, ok := per.Instances[0].Label("il")
			assert.False(t, ok, "refused instance label declared: %s", per.Instances[0].Labels)
		})
	}
}
