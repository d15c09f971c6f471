package prombridge_test

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcpname"
	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/prombridge"
)

// The accounting property: after every refresh, every sample the bridge
// gathered is in PCP (read by PCP's reader) with its value, or counted in
// prombridge.dropped and named by Err; nothing else of the bridge's is in
// PCP with a value (zero stale: a singular metric no longer gathered shows
// no value with mmv.Sentinel, on every other seed, and is named by Err
// without it), and no sample shows under another family's name. The gatherer is a model driven by a seeded generator:
// every type (gauge histograms included), label sets with the bytes the
// canonical form escapes, names near 255 bytes and names whose PCP names
// collide, histograms with and without classic buckets, summaries,
// families registered again with another type, buckets or quantiles,
// totals no PCP counter holds, metrics without their family's type's
// value, samples carrying their own timestamps (an hour old: absent; 10
// seconds old: shown), series and families that come and go, a family's limit passed,
// metrics with another family's label names, restarts, bridges closed
// and registered again on the registry running (the new one taking the
// closed one's metrics over), and registry labels (AddLabel) named as a
// family's label or a summary's quantile, from the start or added while
// it runs, which the bridge renames exported_<name>.
func TestAccountingProperty(t *testing.T) {
	pcptest.MustHavePCP(t)
	for _, seed := range seeds() {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			m := newModel(seed)
			tmp := t.TempDir()
			h := &harness{t: t, m: m, tmp: tmp, sentinel: seed%2 == 1}
			switch seed % 3 { // the registry's labels from its start
			case 0:
				h.first = labelNames[seed/3%uint64(len(labelNames))]
			case 2:
				h.first = "quantile"
			}
			h.start()
			for round := range 24 {
				switch {
				case round > 0 && round%8 == 0:
					h.restart()
				case round%8 == 4:
					h.rebridge()
				case round%8 == 2:
					// Not of the model's generator: its families are the
					// same whatever the registry's labels.
					h.addLabel(labelNames[(int(seed)+round/8)%len(labelNames)])
				}
				for range 1 + m.rnd.IntN(4) {
					m.step()
				}
				h.refresh(round)
			}
			h.stop()
		})
	}
}

// model is a gatherer of families made by a generator.
type model struct {
	rnd      *rand.Rand
	families map[string]*modelFamily // by name: a gatherer has one type per name
	helps    map[familyKey]string    // a help per name and type, unique
	last     []*dto.MetricFamily     // what the last Gather returned
}

type familyKey struct {
	name string
	typ  dto.MetricType
}

type modelFamily struct {
	typ    dto.MetricType
	labels []string  // sorted
	bounds []float64 // a histogram's buckets (maybe none, maybe +Inf), a summary's quantiles
	series map[string]*modelSeries
	odd    bool // a metric with other label names than the family's
}

type modelSeries struct {
	bad      bool // a total no PCP counter holds, this time
	mistyped bool // the value of another type than the family's, this time
	old      bool // its own timestamp an hour old, this time: absent
	stamped  bool // its own timestamp 10 seconds old, this time: shown
	values   []string
	value    float64
	count    uint64
	sum      float64
	cum      []uint64  // by bound
	qs       []float64 // by quantile
}

var (
	types = []dto.MetricType{dto.MetricType_COUNTER, dto.MetricType_GAUGE, dto.MetricType_UNTYPED,
		dto.MetricType_HISTOGRAM, dto.MetricType_SUMMARY, dto.MetricType_GAUGE_HISTOGRAM}
	// names whose PCP names collide (a_b, a:b; x_total, x), that mmv
	// refuses (mmv, prombridge: the bridge's own), near 255 bytes, and
	// with units.
	names = []string{"a_b", "a:b", "a:b_total", "x", "x_total", "req", "req_total", "lat_seconds", "lat_seconds_total",
		"mmv", "prombridge", "_u", "g:1", "g_1", long(240), long(247), long(249), long(255), long(256)}
	labelNames  = []string{"code", "method", "path"}
	labelValues = []string{"200", "a b", "x,y=z%", "Zürich", "é\t", strings.Repeat("v", 250)}
	boundPool   = []float64{0.1, 1, 10, math.Inf(1)}
	quantiles   = []float64{0.5, 0.9, 0.99}
)

func long(n int) string { return "l" + strings.Repeat("o", n-1) }

func newModel(seed uint64) *model {
	return &model{rnd: rand.New(rand.NewPCG(seed, 42)), families: map[string]*modelFamily{}, helps: map[familyKey]string{}}
}

func (m *model) help(name string, t dto.MetricType) string {
	k := familyKey{name, t}
	if h, ok := m.helps[k]; ok {
		return h
	}
	m.helps[k] = fmt.Sprintf("h%d", len(m.helps))
	return m.helps[k]
}

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

// step changes the model once.
func (m *model) step() {
	r := m.rnd
	name := pick(r, names)
	f := m.families[name]
	switch op := r.IntN(10); {
	case f == nil || op == 0: // a family comes, or comes again with another type
		m.families[name] = m.newFamily()
	case op == 1:
		delete(m.families, name)
	case op == 2: // other buckets or quantiles
		f.bounds = m.bounds(f.typ)
		for _, k := range slices.Sorted(maps.Keys(f.series)) {
			m.values(f, f.series[k])
		}
	case op == 3:
		f.odd = !f.odd
	case op <= 6: // a series comes
		m.addSeries(f)
	case op == 7: // a series goes
		if len(f.series) > 0 {
			delete(f.series, pick(r, slices.Sorted(maps.Keys(f.series))))
		}
	default:
		for _, k := range slices.Sorted(maps.Keys(f.series)) {
			m.values(f, f.series[k])
		}
	}
}

func (m *model) newFamily() *modelFamily {
	r := m.rnd
	f := &modelFamily{typ: pick(r, types), series: map[string]*modelSeries{}}
	for _, l := range labelNames {
		if r.IntN(3) == 0 {
			f.labels = append(f.labels, l)
		}
	}
	f.bounds = m.bounds(f.typ)
	m.addSeries(f)
	return f
}

func (m *model) bounds(t dto.MetricType) []float64 {
	var pool []float64
	switch t {
	case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
		pool = boundPool // none at all: native only, or a const histogram of no bucket
	case dto.MetricType_SUMMARY:
		pool = quantiles
	}
	var bs []float64
	for _, b := range pool {
		if m.rnd.IntN(2) == 0 {
			bs = append(bs, b)
		}
	}
	return bs
}

func (m *model) addSeries(f *modelFamily) {
	s := &modelSeries{}
	for range f.labels {
		s.values = append(s.values, pick(m.rnd, labelValues))
	}
	key := strings.Join(s.values, "\x00")
	if f.series[key] == nil {
		f.series[key] = s
		m.values(f, s)
	}
}

// values gives s new values, cumulative ones never going down.
func (m *model) values(f *modelFamily, s *modelSeries) {
	r := m.rnd
	s.bad = r.IntN(15) == 0
	s.mistyped = r.IntN(15) == 0
	s.old = r.IntN(12) == 0
	s.stamped = r.IntN(4) == 0
	s.value += float64(r.IntN(8)) / 4 // a counter's
	if f.typ != dto.MetricType_COUNTER {
		s.value = float64(r.IntN(64)-32) / 4
	}
	s.count += uint64(r.IntN(5))
	s.sum += float64(r.IntN(16)) / 4
	s.cum = make([]uint64, len(f.bounds))
	for i := range s.cum {
		s.cum[i] = s.count * uint64(i+1) / uint64(len(f.bounds)+1)
		if math.IsInf(f.bounds[i], 1) {
			s.cum[i] = s.count
		}
	}
	s.qs = make([]float64, len(f.bounds))
	for i := range s.qs {
		s.qs[i] = float64(r.IntN(100)) / 4
	}
}

// Gather returns the model's families as client_golang gathers them:
// sorted by name, label pairs sorted by name.
func (m *model) Gather() ([]*dto.MetricFamily, error) {
	var mfs []*dto.MetricFamily
	for name, f := range m.families {
		mf := &dto.MetricFamily{Name: proto.String(name), Help: proto.String(m.help(name, f.typ)), Type: f.typ.Enum()}
		for _, k := range slices.Sorted(maps.Keys(f.series)) {
			s := f.series[k]
			labels := f.labels
			if f.odd && len(mf.Metric) == 0 {
				labels = append(slices.Clone(labels), "zz")
			}
			mt := &dto.Metric{}
			for i, l := range labels {
				v := "odd"
				if i < len(s.values) {
					v = s.values[i]
				}
				mt.Label = append(mt.Label, &dto.LabelPair{Name: proto.String(l), Value: proto.String(v)})
			}
			switch f.typ {
			case dto.MetricType_COUNTER:
				mt.Counter = &dto.Counter{Value: proto.Float64(s.value)}
				if s.bad {
					mt.Counter.Value = proto.Float64(-1)
				}
			case dto.MetricType_GAUGE:
				mt.Gauge = &dto.Gauge{Value: proto.Float64(s.value)}
			case dto.MetricType_UNTYPED:
				mt.Untyped = &dto.Untyped{Value: proto.Float64(s.value)}
			case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
				h := &dto.Histogram{SampleCount: proto.Uint64(s.count), SampleSum: proto.Float64(s.sum)}
				for i, b := range f.bounds {
					h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: proto.Float64(b), CumulativeCount: proto.Uint64(s.cum[i])})
				}
				if s.bad {
					h.SampleSum = proto.Float64(math.NaN())
				}
				mt.Histogram = h
			case dto.MetricType_SUMMARY:
				q := &dto.Summary{SampleCount: proto.Uint64(s.count), SampleSum: proto.Float64(s.sum)}
				for i, b := range f.bounds {
					q.Quantile = append(q.Quantile, &dto.Quantile{Quantile: proto.Float64(b), Value: proto.Float64(s.qs[i])})
				}
				if s.bad {
					q.SampleSum = proto.Float64(math.Inf(1))
				}
				mt.Summary = q
			}
			if s.mistyped {
				mistype(mt, f.typ)
			}
			switch {
			case s.old:
				mt.TimestampMs = proto.Int64(time.Now().Add(-time.Hour).UnixMilli())
			case s.stamped:
				mt.TimestampMs = proto.Int64(time.Now().Add(-10 * time.Second).UnixMilli())
			}
			mf.Metric = append(mf.Metric, mt)
		}
		mfs = append(mfs, mf)
	}
	slices.SortFunc(mfs, func(a, b *dto.MetricFamily) int { return cmp.Compare(a.GetName(), b.GetName()) })
	m.last = mfs
	return mfs, nil
}

// mistype replaces the value of mt, a metric of type t, by one of
// another type, or none (a histogram's), as a Gatherer of its own may
// gather; a gauge histogram's, not bridged, stays.
func mistype(mt *dto.Metric, t dto.MetricType) {
	switch t {
	case dto.MetricType_COUNTER:
		mt.Gauge, mt.Counter = &dto.Gauge{Value: mt.Counter.Value}, nil
	case dto.MetricType_GAUGE:
		mt.Untyped, mt.Gauge = &dto.Untyped{Value: mt.Gauge.Value}, nil
	case dto.MetricType_UNTYPED:
		mt.Counter, mt.Untyped = &dto.Counter{Value: mt.Untyped.Value}, nil
	case dto.MetricType_HISTOGRAM:
		mt.Histogram = nil
	case dto.MetricType_SUMMARY:
		mt.Histogram, mt.Summary = &dto.Histogram{SampleCount: mt.Summary.SampleCount, SampleSum: mt.Summary.SampleSum}, nil
	}
}

// mistyped reports whether mt lacks the value of its family's type t,
// bridged.
func mistyped(mt *dto.Metric, t dto.MetricType) bool {
	switch t {
	case dto.MetricType_COUNTER:
		return mt.Counter == nil
	case dto.MetricType_GAUGE:
		return mt.Gauge == nil
	case dto.MetricType_UNTYPED:
		return mt.Untyped == nil
	case dto.MetricType_HISTOGRAM:
		return mt.Histogram == nil
	case dto.MetricType_SUMMARY:
		return mt.Summary == nil
	}
	return false
}

// harness runs a bridge over the model and checks the property.
type harness struct {
	t   *testing.T
	m   *model
	tmp string
	r   *mmv.Registry
	b   *prombridge.Bridge
	// dropped is prombridge.dropped's sum, and refreshes the bridge's
	// count, at the last check.
	sentinel  bool     // the registry has the Sentinel flag
	first     string   // a label the registry has from its start, if not ""
	labels    []string // the registry's label names
	dropped   uint64
	refreshes uint64
	round     int // the last checked
}

func (h *harness) start() {
	t := h.t
	var flags mmv.Flags
	if h.sentinel {
		flags = mmv.Sentinel
	}
	h.r = mmv.NewRegistry(file, &mmv.Options{Dir: filepath.Join(h.tmp, "mmv"), Cluster: 324, Flags: flags})
	h.labels = nil
	if h.first != "" {
		h.addLabel(h.first)
	}
	h.b = started(t, h.r, h.m, h.opts())
	h.dropped, h.refreshes = droppedSum(read(t, h.r, h.tmp)), h.b.Stats().Refreshes
}

// addLabel adds a registry label named name, which mmv refuses while a
// vector of the bridge's has a label of that name.
func (h *harness) addLabel(name string) {
	err := h.r.AddLabel(mmv.Label{Name: name, Value: "registry"})
	if err != nil {
		require.ErrorIs(h.t, err, mmv.ErrDuplicate, "registry label %s", name)
		return
	}
	h.labels = append(h.labels, name)
}

// staleNamed reports whether err names metric, PCP's full name, as of
// the singular metric of family name keeping an old value, on a registry
// without the Sentinel flag. By metric: a closed bridge's x, kept old,
// and x_total, the family's own, may both be the family's.
func (h *harness) staleNamed(err error, name, metric string) bool {
	return !h.sentinel && err != nil && strings.Contains(err.Error(), "family "+name+": its singular metric "+pcpFamily(metric)+" keeps an old value")
}

// pcpFamily returns the family's PCP name, below the file, of metric,
// PCP's full name: the bridge's only dots are before the suffixes.
func pcpFamily(metric string) string {
	name, _, _ := strings.Cut(strings.TrimPrefix(metric, "mmv."+file+"."), ".")
	return name
}

// droppedSum returns the sum of prombridge.dropped over its reasons.
func droppedSum(ms []pcptest.Metric) uint64 {
	var sum uint64
	if d := pcptest.Find(ms, "mmv."+file+".prombridge.dropped"); d != nil {
		for _, in := range d.Instances {
			n, _ := strconv.ParseUint(in.Value, 10, 64)
			sum += n
		}
	}
	return sum
}

func (h *harness) stop() {
	h.b.Close()
	require.NoError(h.t, h.r.Close())
}

// rebridge closes the bridge and registers another on the registry
// running: nothing of the closed one's stays in PCP with a value but what
// the new one gathers (checked at the next refresh), and its prombridge.dropped
// starts again from zero.
func (h *harness) rebridge() {
	t := h.t
	err := h.b.Close()
	// Nothing of the closed bridge's shows a value, but what Close names
	// (a singular metric, without Sentinel).
	families := map[string]familyKey{}
	for k, help := range h.m.helps {
		families[help] = k
	}
	for _, pm := range read(t, h.r, h.tmp) {
		k, ours := families[pm.ShortHelp]
		switch {
		case pm.Name == "mmv."+file+".prombridge.dropped":
			require.Empty(t, pm.Instances, "prombridge.dropped after Close")
		case !ours:
		case !pm.Singular():
			require.Empty(t, pm.Instances, "%s after Close", pm.Name)
		case h.sentinel:
			require.True(t, pm.Value == "" || pm.Value == "nan", "%s shows %s after Close", pm.Name, pm.Value)
		case pm.Value != "":
			require.True(t, h.staleNamed(err, k.name, pm.Name), "%s shows %s after Close, which does not name it: %v", pm.Name, pm.Value, err)
		}
	}
	b, err := prombridge.Register(h.r, h.m, h.opts())
	require.NoError(t, err, "a new bridge of a closed one's prefix")
	h.b = b
	// The refresh the started registry's poll runs at once.
	require.Eventually(t, func() bool { return b.Stats().Refreshes >= 1 }, 10*time.Second, time.Millisecond)
	h.dropped, h.refreshes = droppedSum(read(t, h.r, h.tmp)), b.Stats().Refreshes
}

// opts are the bridge's options.
func (h *harness) opts() *prombridge.Options {
	return &prombridge.Options{Limit: 3, Grace: time.Nanosecond, Interval: time.Hour}
}

func (h *harness) restart() {
	h.stop()
	h.start()
}

// expect is one sample as PCP should show it.
type expect struct {
	family           familyKey
	suffix, instance string // instance "" when singular
	value            float64
	counter          bool
	absent           bool // not of its family's type, or its own timestamp past MaxSampleAge: never in PCP
}

// samples lists the samples of the gathered families, as the package doc
// maps them, on a registry of labels named registry: a label of one of
// those names is exported_<name>. The registry's labels only grow, and
// mmv refuses one named as a vector's label: a family's vector was
// declared after the registry had the label, renamed.
func samples(mfs []*dto.MetricFamily, registry []string) []expect {
	label := func(name string) string {
		if name = pcpname.Part(name, "x"); slices.Contains(registry, name) {
			return pcpname.Exported + name
		}
		return name
	}
	var out []expect
	for _, mf := range mfs {
		k := familyKey{mf.GetName(), mf.GetType()}
		scale := 1.0
		switch prombridge.Units(k.name) {
		case mmv.Second:
			scale = 1e6
		case mmv.Millisecond:
			scale = 1e3
		}
		for _, mt := range mf.Metric {
			var ns, vs []string
			for _, l := range mt.Label {
				ns, vs = append(ns, label(l.GetName())), append(vs, l.GetValue())
			}
			inst := func(l, v string) string {
				if l != "" {
					l = label(l)
				}
				return instanceName(ns, vs, l, v)
			}
			absent := mistyped(mt, k.typ) || mt.TimestampMs != nil && time.Since(time.UnixMilli(mt.GetTimestampMs())) > prombridge.DefaultMaxSampleAge
			add := func(suffix, in string, v float64, counter bool) {
				out = append(out, expect{k, suffix, in, v, counter, absent})
			}
			totals := func(sum float64, count uint64) {
				add(".sum", inst("", ""), math.Round(sum*sumScale(prombridge.Units(k.name))), true)
				add(".count", inst("", ""), float64(count), true)
			}
			switch k.typ {
			case dto.MetricType_COUNTER:
				add("", inst("", ""), math.Round(mt.GetCounter().GetValue()*scale), true)
			case dto.MetricType_GAUGE:
				add("", inst("", ""), mt.GetGauge().GetValue(), false)
			case dto.MetricType_UNTYPED:
				add("", inst("", ""), mt.GetUntyped().GetValue(), false)
			case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
				hg := mt.GetHistogram()
				inf := false
				for _, b := range hg.GetBucket() {
					le := strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64)
					if inf = math.IsInf(b.GetUpperBound(), 1); inf {
						le = "+Inf"
					}
					add(".bucket", inst("le", le), float64(b.GetCumulativeCount()), true)
				}
				if !inf {
					add(".bucket", inst("le", "+Inf"), float64(hg.GetSampleCount()), true)
				}
				totals(hg.GetSampleSum(), hg.GetSampleCount())
			case dto.MetricType_SUMMARY:
				q := mt.GetSummary()
				for _, x := range q.GetQuantile() {
					add(".quantile", inst("quantile", strconv.FormatFloat(x.GetQuantile(), 'g', -1, 64)), x.GetValue(), false)
				}
				totals(q.GetSampleSum(), q.GetSampleCount())
			}
		}
	}
	return out
}

// sumScale is the factor from a histogram's or summary's sum of units u,
// from prombridge.Units, to the units PCP shows it in, as the package doc
// maps them: times in microseconds (nanoseconds stay), counts and
// dimensionless values in thousandths, bytes as they are.
func sumScale(u mmv.Units) float64 {
	switch u {
	case mmv.Second:
		return 1e6
	case mmv.Millisecond, mmv.Count, mmv.NoUnits:
		return 1e3
	}
	return 1
}

// refresh refreshes the bridge and checks the property.
func (h *harness) refresh(round int) {
	t := h.t
	err := h.b.Refresh()
	mfs := h.m.last
	t.Cleanup(func() {
		if t.Failed() && round == h.round {
			for _, mf := range mfs {
				t.Logf("gathered %.20s %s %d metrics: %v", mf.GetName(), mf.GetType(), len(mf.Metric), mf.Metric)
			}
			t.Logf("Err: %v", err)
		}
	})
	h.round = round
	if err != nil {
		// A family's label named as the registry's is renamed, never
		// refused.
		require.NotContains(t, err.Error(), "the registry has a label of that name", "round %d", round)
	}
	ms := read(t, h.r, h.tmp)
	want := samples(mfs, h.labels)

	// Where PCP shows each family: the metrics of its help, whose names
	// are its PCP name (a counter's with or without _total) and a suffix.
	byHelp := map[string][]*pcptest.Metric{}
	for i := range ms {
		byHelp[ms[i].ShortHelp] = append(byHelp[ms[i].ShortHelp], &ms[i])
	}
	families := map[string]familyKey{}
	for k, help := range h.m.helps {
		families[help] = k
	}
	// withdrawn reports whether PCP shows nothing of pm as current: no
	// instance, no value, or an old value Err names as a closed bridge's.
	withdrawn := func(pm *pcptest.Metric) bool {
		if len(pm.Instances) > 0 {
			return false
		}
		return pm.Value == "" || pm.Value == "nan" ||
			err != nil && strings.Contains(err.Error(), "its singular metric "+pcpFamily(pm.Name)+" keeps an old value since a bridge closed")
	}
	metric := func(e expect) *pcptest.Metric {
		base := "mmv." + file + "." + prombridge.Name(e.family.name, e.family.typ)
		full := "mmv." + file + "." + pcpname.Part(e.family.name, "x")
		var found []*pcptest.Metric
		for _, pm := range byHelp[h.m.help(e.family.name, e.family.typ)] {
			if pm.Name == base+e.suffix || pm.Name == full+e.suffix {
				found = append(found, pm)
			}
		}
		if len(found) == 2 {
			// A counter published as x by a closed bridge, and as x_total
			// by this one (x taken), or the other way: the closed
			// bridge's was withdrawn at Close, the family's is the other.
			if i := slices.IndexFunc(found, func(pm *pcptest.Metric) bool { return !withdrawn(pm) }); i >= 0 {
				return found[i]
			}
		}
		if len(found) > 0 {
			return found[0]
		}
		return nil
	}

	missing := 0
	missingFamilies := map[string]bool{}
	shown := map[string]bool{} // metric and instance
	for _, e := range want {
		pm := metric(e)
		got := ""
		if pm != nil && e.instance != unnamable {
			got = pm.Value
			if e.instance != "" {
				got = ""
				if in := pm.Instance(e.instance); in != nil {
					got = in.Value
				}
			}
		}
		if got != "" && e.instance == "" && h.staleNamed(err, e.family.name, pm.Name) {
			// A singular metric PCP cannot withdraw keeps an old value,
			// named by Err; the sample is not copied, and counted.
			shown[pm.Name+"\x00"] = true
			got = ""
		}
		if got == "nan" && h.sentinel && e.instance == "" && !e.counter && !math.IsNaN(e.value) {
			// A singular gauge withdrawn (its family refused, a closed
			// bridge's metric it does not fit): the no-value marker, NaN,
			// which PCP 6.0.3 prints; the sample is not copied, and counted.
			shown[pm.Name+"\x00"] = true
			got = ""
		}
		if e.absent && got != "" {
			// A metric without its family's type's value, or too old:
			// its series shows no value (a withdrawn singular gauge's
			// NaN, PCP 6.0.3 printing it).
			require.Equal(t, "nan", got, "round %d: %s[%q] of family %s (%s) shows a value for a metric without its type's, or too old", round, pm.Name, e.instance, e.family.name, e.family.typ)
			shown[pm.Name+"\x00"+e.instance] = true
			got = ""
		}
		if got == "" {
			missing++
			missingFamilies[e.family.name] = true
			continue
		}
		shown[pm.Name+"\x00"+e.instance] = true
		v, perr := strconv.ParseFloat(got, 64)
		require.NoError(t, perr, "round %d: %s[%s] = %q", round, pm.Name, e.instance, got)
		require.InDelta(t, e.value, v, 1e-9*max(1, math.Abs(e.value)), "round %d: %s[%q] of family %s (%s, %d bytes)", round, pm.Name, e.instance, e.family.name, e.family.typ, len(e.family.name))
	}

	// Zero stale: whatever else PCP shows of the families has no value.
	for _, pm := range ms {
		if _, ours := families[pm.ShortHelp]; !ours {
			continue
		}
		if pm.Singular() {
			switch {
			case shown[pm.Name+"\x00"]:
			case h.sentinel:
				require.True(t, pm.Value == "" || pm.Value == "nan", "round %d: %s shows %s, gathered no more", round, pm.Name, pm.Value)
			case pm.Value != "":
				require.True(t, h.staleNamed(err, families[pm.ShortHelp].name, pm.Name), "round %d: %s shows %s, gathered no more, and Err does not say so: %v", round, pm.Name, pm.Value, err)
			}
			continue
		}
		for _, in := range pm.Instances {
			require.True(t, shown[pm.Name+"\x00"+in.Name], "round %d: %s[%s] shows %s, gathered no more", round, pm.Name, in.Name, in.Value)
		}
	}

	// Every sample not shown is counted, at every refresh, and named.
	dropped := droppedSum(ms)
	refreshes := h.b.Stats().Refreshes
	require.Equal(t, uint64(missing)*(refreshes-h.refreshes), dropped-h.dropped,
		"round %d: samples not in PCP, times the refreshes since the last check, and prombridge.dropped's increase; Err: %v", round, err)
	h.dropped, h.refreshes = dropped, refreshes
	if missing > 0 {
		require.Error(t, err, "round %d", round)
	}
	for name := range missingFamilies {
		if !strings.Contains(err.Error(), "family "+name+" ") && !strings.Contains(err.Error(), "family "+name+":") {
			require.Contains(t, err.Error(), " more refusals", "round %d: Err does not name family %s: %v", round, name, err)
		}
	}
}

// seeds are the generator's seeds: three, or PROMBRIDGE_SEEDS of them
// from 1 for a longer hunt.
func seeds() []uint64 {
	n, _ := strconv.Atoi(os.Getenv("PROMBRIDGE_SEEDS"))
	return slices.Collect(func(yield func(uint64) bool) {
		for i := range max(n, 3) {
			if !yield(uint64(i + 1)) {
				return
			}
		}
	})
}
