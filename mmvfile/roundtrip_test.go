package mmvfile_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/mmvfile"
)

// TestRoundTrip is a property test of the writer and the reader together:
// for random registries the writer accepts, the file read back holds what
// was declared and the values the handles set.
func TestRoundTrip(t *testing.T) {
	pcptest.NeedFileLayer(t)
	rng := rand.New(rand.NewPCG(3, 1))
	for i := range 300 {
		reg := randomRegistry(rng, fmt.Sprintf("rt%d", i))
		t.Run(reg.name, func(t *testing.T) { reg.check(t, rng) })
	}
}

type labelDecl struct {
	kind     uint32 // mmvfile.LabelCluster, ...
	metric   string
	serial   uint32
	instance int32
	label    mmv.Label
}

type registry struct {
	name    string
	opts    mmv.Options
	indoms  []mmv.Indom
	metrics []mmv.Metric
	labels  []labelDecl
}

// expected is a value's expected reading, by metric type.
type expected struct {
	i      int64
	u      uint64
	f      float64
	s      string
	open   bool // an elapsed interval left open
	metric *mmv.Metric
}

const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

func randomText(rng *rand.Rand, max int) string {
	const chars = letters + "0123456789 _.-\n\t\"'\\{}é"
	var b strings.Builder
	for b.Len() < rng.IntN(max+1) {
		b.WriteRune([]rune(chars)[rng.IntN(len([]rune(chars)))])
	}
	s := b.String()
	for len(s) > max { // a multi-byte rune may overshoot
		s = s[:len(s)-1]
	}
	return s
}

func randomHelp(rng *rand.Rand) string {
	if rng.IntN(3) == 0 {
		return ""
	}
	return randomText(rng, 255)
}

func randomRegistry(rng *rand.Rand, name string) *registry {
	r := &registry{name: name}
	long := rng.IntN(3) == 0 // some names of 64 bytes or more: a v2 file
	// A cluster of the file's own: 0 would derive one, unknown here.
	r.opts.Cluster = uint32(1 + rng.IntN(mmv.MaxCluster))
	r.opts.Flags = mmv.Flags(rng.IntN(8))
	serials := map[uint32]bool{}
	for range rng.IntN(5) {
		in := mmv.Indom{Serial: uint32(1 + rng.IntN(mmv.MaxSerial)), ShortHelp: randomHelp(rng), LongHelp: randomHelp(rng)}
		if serials[in.Serial] {
			continue
		}
		serials[in.Serial] = true
		ids := map[int32]bool{}
		for range rng.IntN(7) {
			id := rng.Int32N(1 << 20)
			if ids[id] {
				continue
			}
			ids[id] = true
			inst := mmv.Instance{ID: id, Name: fmt.Sprintf("i%d", id)}
			if rng.IntN(3) == 0 && long {
				inst.Name += " " + strings.TrimSpace(randomText(rng, 250))
				inst.Name = strings.TrimSpace(inst.Name)
			}
			in.Instances = append(in.Instances, inst)
		}
		r.indoms = append(r.indoms, in)
	}
	if len(r.indoms) > 0 {
		r.opts.Cluster = 1 + (r.opts.Cluster-1)%2047 // the writer's limit: PCP's indom ids hold 11 bits of cluster
	}
	types := []mmv.Type{mmv.Int32, mmv.Uint32, mmv.Int64, mmv.Uint64, mmv.Float, mmv.Double, mmv.String, mmv.Elapsed}
	sems := []mmv.Semantics{mmv.SemCounter, mmv.SemInstant, mmv.SemDiscrete}
	items := map[uint32]bool{}
	for i := range 1 + rng.IntN(20) {
		m := mmv.Metric{
			Name:      fmt.Sprintf("g%d.m%d", rng.IntN(4), i),
			Type:      types[rng.IntN(len(types))],
			Semantics: sems[rng.IntN(len(sems))],
			Units: mmv.NewUnits(rng.IntN(16)-8, rng.IntN(16)-8, rng.IntN(16)-8,
				mmv.SpaceScale(rng.IntN(int(mmv.ScaleYbyte)+1)), mmv.TimeScale(rng.IntN(int(mmv.ScaleHour)+1)), mmv.CountScale(rng.IntN(16)-8)),
			ShortHelp: randomHelp(rng),
			LongHelp:  randomHelp(rng),
		}
		if long && rng.IntN(3) == 0 {
			m.Name += "_" + strings.Repeat("x", 64+rng.IntN(150))
		}
		if item := uint32(1 + rng.IntN(mmv.MaxItem)); rng.IntN(2) == 0 && !items[item] {
			m.Item = item
			items[item] = true
		}
		if len(r.indoms) > 0 && rng.IntN(3) > 0 {
			m.Indom = r.indoms[rng.IntN(len(r.indoms))].Serial
		}
		r.metrics = append(r.metrics, m)
	}
	values := []func() any{
		func() any { return randomText(rng, 30) },
		func() any { return rng.IntN(1 << 40) },
		func() any { return rng.NormFloat64() },
		func() any { return rng.IntN(2) == 0 },
		func() any { return nil },
		func() any { return []any{rng.IntN(9), "x", nil} },
		func() any { return map[string]any{"k": rng.IntN(9), "a": []int{}} },
	}
	for i := range rng.IntN(12) * rng.IntN(2) { // no labels in half the files
		l := labelDecl{label: mmv.Label{Name: fmt.Sprintf("l%d_%c", i, letters[rng.IntN(len(letters))]), Value: values[rng.IntN(len(values))](), Optional: rng.IntN(2) == 0}}
		switch rng.IntN(4) {
		case 0:
			l.kind = mmvfile.LabelCluster
		case 1:
			l.kind, l.metric = mmvfile.LabelItem, r.metrics[rng.IntN(len(r.metrics))].Name
		case 2, 3:
			if len(r.indoms) == 0 {
				continue
			}
			in := r.indoms[rng.IntN(len(r.indoms))]
			l.kind, l.serial = mmvfile.LabelIndom, in.Serial
			if len(in.Instances) > 0 && rng.IntN(2) == 0 {
				l.kind, l.instance = mmvfile.LabelInstances, in.Instances[rng.IntN(len(in.Instances))].ID
			}
		}
		r.labels = append(r.labels, l)
	}
	if rng.IntN(4) == 0 {
		r.opts.Version = mmv.Version3
		if len(r.labels) == 0 && rng.IntN(2) == 0 {
			r.opts.Version = mmv.Version2
		}
	}
	return r
}

// version is the file version the registry should get.
func (r *registry) version() int {
	v := mmv.Version1
	for _, m := range r.metrics {
		if len(m.Name) >= 64 {
			v = mmv.Version2
		}
	}
	for _, in := range r.indoms {
		for _, inst := range in.Instances {
			if len(inst.Name) >= 64 {
				v = mmv.Version2
			}
		}
	}
	if len(r.labels) > 0 {
		v = mmv.Version3
	}
	return max(v, r.opts.Version)
}

// start declares the registry, starts it and sets every value at random.
func (r *registry) start(t *testing.T, rng *rand.Rand) (*mmv.Registry, map[string]*expected) {
	opts := r.opts
	opts.Dir = t.TempDir()
	reg := mmv.NewRegistry(r.name, &opts)
	for _, in := range r.indoms {
		require.NoError(t, reg.AddIndom(in))
	}
	for _, m := range r.metrics {
		require.NoError(t, reg.AddMetric(m))
	}
	for _, l := range r.labels {
		var err error
		switch l.kind {
		case mmvfile.LabelCluster:
			err = reg.AddLabel(l.label)
		case mmvfile.LabelItem:
			err = reg.AddMetricLabel(l.metric, l.label)
		case mmvfile.LabelIndom:
			err = reg.AddIndomLabel(l.serial, l.label)
		case mmvfile.LabelInstances:
			err = reg.AddInstanceLabel(l.serial, l.instance, l.label)
		}
		require.NoError(t, err)
	}
	require.NoError(t, reg.Start())
	want := map[string]*expected{}
	for i := range r.metrics {
		m := &r.metrics[i]
		for _, inst := range r.instances(m) {
			v, err := reg.Value(m.Name, inst)
			require.NoError(t, err)
			want[m.Name+"\x00"+inst] = set(t, rng, v, m)
		}
	}
	return reg, want
}

// instances are the instance names of a metric's values, "" when singular.
func (r *registry) instances(m *mmv.Metric) []string {
	if m.Indom == 0 {
		return []string{""}
	}
	var names []string
	for _, in := range r.indoms {
		if in.Serial == m.Indom {
			for _, inst := range in.Instances {
				names = append(names, inst.Name)
			}
		}
	}
	return names
}

// set updates v at random and returns what it should then read.
func set(t *testing.T, rng *rand.Rand, v *mmv.Value, m *mmv.Metric) *expected {
	e := &expected{metric: m}
	n, d := int64(rng.Uint64()), rng.Int64N(2000)-1000
	x, y := rng.NormFloat64()*1e6, rng.NormFloat64()
	switch m.Type {
	case mmv.Int32:
		v.Set(n)
		v.Add(d)
		e.i = int64(int32(uint32(n) + uint32(d)))
	case mmv.Uint32:
		v.Set(n)
		v.Add(d)
		e.u = uint64(uint32(n) + uint32(d))
	case mmv.Int64:
		v.Set(n)
		v.Add(d)
		e.i = n + d
	case mmv.Uint64:
		v.Set(n)
		v.Add(d)
		e.u = uint64(n) + uint64(d)
	case mmv.Float:
		v.SetFloat(x)
		v.AddFloat(y)
		e.f = float64(float32(x) + float32(y))
	case mmv.Double:
		v.SetFloat(x)
		v.AddFloat(y)
		e.f = x + y
	case mmv.String:
		e.s = randomText(rng, mmv.MaxStringLen)
		require.NoError(t, v.SetString(e.s))
	case mmv.Elapsed:
		e.i = rng.Int64N(1 << 40)
		v.AddDuration(time.Duration(e.i) * time.Microsecond)
		if rng.IntN(2) == 0 {
			v.StartInterval()
			e.open = true
		}
	}
	return e
}

func (r *registry) check(t *testing.T, rng *rand.Rand) {
	reg, want := r.start(t, rng)
	defer reg.Close()
	f, err := mmvfile.Open(reg.Path())
	require.NoError(t, err, "the reader refuses a file of the writer")

	h := f.Header
	assert.Equal(t, r.version(), h.Version)
	assert.Equal(t, r.opts.Cluster, h.Cluster)
	assert.Equal(t, r.opts.Flags, h.Flags)
	assert.Equal(t, int32(os.Getpid()), h.PID)

	require.Len(t, f.Indoms, len(r.indoms))
	for _, in := range r.indoms {
		got := f.Indom(in.Serial)
		require.NotNil(t, got, "indom %d", in.Serial)
		checkText(t, in.ShortHelp, got.ShortHelp, "indom %d short help", in.Serial)
		checkText(t, in.LongHelp, got.LongHelp, "indom %d long help", in.Serial)
		require.Len(t, got.Instances, len(in.Instances), "indom %d", in.Serial)
		for j, inst := range in.Instances {
			assert.Equal(t, inst.ID, got.Instances[j].ID)
			assert.Equal(t, inst.Name, got.Instances[j].Name)
		}
	}

	metrics := map[string]*mmvfile.Metric{}
	for _, m := range f.Metrics {
		metrics[m.Name] = m
	}
	require.Len(t, f.Metrics, len(r.metrics))
	for _, m := range r.metrics {
		got := metrics[m.Name]
		require.NotNil(t, got, "metric %s", m.Name)
		if m.Item != 0 {
			assert.Equal(t, m.Item, got.Item, "metric %s item", m.Name)
		}
		assert.Equal(t, m.Type, got.Type, "metric %s", m.Name)
		assert.Equal(t, m.Semantics, got.Semantics, "metric %s", m.Name)
		assert.Equal(t, m.Units, got.Units, "metric %s", m.Name)
		if m.Indom == 0 {
			assert.True(t, got.Singular(), "metric %s", m.Name)
		} else {
			assert.Equal(t, m.Indom, got.Indom, "metric %s", m.Name)
		}
		checkText(t, m.ShortHelp, got.ShortHelp, "metric %s short help", m.Name)
		checkText(t, m.LongHelp, got.LongHelp, "metric %s long help", m.Name)
	}

	now := time.Now()
	require.Len(t, f.Values, len(want))
	for _, v := range f.Values {
		inst := ""
		if v.Instance != nil {
			inst = v.Instance.Name
		}
		e := want[v.Metric.Name+"\x00"+inst]
		require.NotNil(t, e, "value of %s[%s]", v.Metric.Name, inst)
		what := fmt.Sprintf("value of %s[%s]", v.Metric.Name, inst)
		switch v.Metric.Type {
		case mmv.Int32, mmv.Int64:
			assert.Equal(t, e.i, v.Int, what)
		case mmv.Uint32, mmv.Uint64:
			assert.Equal(t, e.u, v.Uint, what)
		case mmv.Float, mmv.Double:
			assert.Equal(t, math.Float64bits(e.f), math.Float64bits(v.Float), "%s: %v, want %v", what, v.Float, e.f)
		case mmv.String:
			assert.Equal(t, e.s, v.String, what)
		case mmv.Elapsed:
			assert.Equal(t, e.i, v.Int, what)
			assert.Equal(t, e.open, v.Extra < 0, "%s: extra %d", what, v.Extra)
			if e.open {
				assert.GreaterOrEqual(t, v.Elapsed(now), e.i, what)
				assert.Less(t, v.Elapsed(now), e.i+time.Minute.Microseconds(), what)
			} else {
				assert.Zero(t, v.Extra, what)
			}
		}
	}

	require.Len(t, f.Labels, len(r.labels))
	for j, l := range r.labels {
		got := f.Labels[j]
		flags := l.kind
		if l.label.Optional {
			flags |= mmvfile.LabelOptional
		}
		assert.Equal(t, flags, got.Flags, "label %s", l.label.Name)
		identity, internal := l.serial, int32(-1)
		switch l.kind {
		case mmvfile.LabelCluster:
			identity = r.opts.Cluster
		case mmvfile.LabelItem:
			identity = metrics[l.metric].Item
		case mmvfile.LabelInstances:
			internal = l.instance
		}
		assert.Equal(t, identity, got.Identity, "label %s", l.label.Name)
		assert.Equal(t, internal, got.Internal, "label %s", l.label.Name)
		assert.Equal(t, jsonValue(t, map[string]any{l.label.Name: l.label.Value}), jsonValue(t, json.RawMessage(got.Payload)),
			"label %s payload %s", l.label.Name, got.Payload)
		var compact bytes.Buffer
		require.NoError(t, json.Compact(&compact, []byte(got.Payload)))
		assert.Equal(t, compact.String(), got.Payload, "PCP's payloads have no spaces outside strings")
	}
}

// checkText checks a help text: the writer leaves an empty one out.
func checkText(t *testing.T, want string, got mmvfile.Text, msg string, args ...any) {
	t.Helper()
	assert.Equal(t, want, got.Text, append([]any{msg}, args...)...)
	assert.Equal(t, want != "", got.Offset != 0, append([]any{msg + ": present"}, args...)...)
}

// jsonValue returns v as the generic value its JSON decodes to.
func jsonValue(t *testing.T, v any) any {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	var out any
	require.NoError(t, json.Unmarshal(b, &out))
	return out
}
