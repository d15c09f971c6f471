package otelexporter

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/bridge"
	"github.com/gopcp/mmv/internal/canon"
	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/mmvfile"
)

// The accounting property: after every export, every data point is in
// PCP (read by PCP's reader) with its values, or counted as dropped (in
// otelexporter.dropped by the exporter, in mmv.dropped by the registry)
// and named by Err; nothing else of the instruments' is in PCP; each PCP
// metric shows one instrument, under the name the mapping gives it, and
// the same one whatever order the SDK hands the data in. The data is made
// by a seeded generator: every kind and aggregation (exponential
// histograms and summaries too), delta data, scopes of one name in other
// versions and with attributes, scopes whose last elements are the same,
// instruments of one name in other units, names that are a leaf and a
// prefix, names near 255 bytes, attribute values near the limit and with
// the bytes the canonical form escapes, keys outside the first export's,
// values a counter cannot hold, histograms with and without bounds and
// min and max, malformed histogram points (a bucket count too many, a
// count that is not their sum), attribute sets past the limit, and
// restarts.
func TestAccountingProperty(t *testing.T) {
	pcptest.NeedFileLayer(t) // Export starts the service's registry
	pcptest.MustHavePCP(t)
	n, _ := strconv.Atoi(os.Getenv("OTELEXPORTER_SEEDS"))
	for seed := range uint64(max(n, 3)) {
		t.Run(fmt.Sprint("seed", seed+1), func(t *testing.T) {
			g := newGenerator(seed + 1)
			tmp := t.TempDir()
			h := &accounting{t: t, g: g, tmp: tmp}
			h.start()
			for export := range 18 {
				if export > 0 && export%6 == 0 {
					h.restart()
				}
				g.step()
				h.export(export)
			}
			h.stop()
		})
	}
}

var (
	propScopes = []instrumentation.Scope{
		{Name: "example.com/lib", Version: "1"},
		{Name: "example.com/lib", Version: "2"},
		{Name: "example.com/lib", Version: "1", Attributes: attribute.NewSet(attribute.String("tenant", "a"))},
		{Name: "example.org/lib"},
		{Name: "svc"},
	}
	propNames  = []string{"hits", "a.b", "a.b.c", "x-y", "lat", strings.Repeat("n", 236), strings.Repeat("n", 250)}
	propUnits  = []string{"", "ms", "By", "1", "{req}"}
	propKeys   = []attribute.Key{"k", "m.n"}
	propValues = []string{"GET", "a b", "x,y=z%", "Zürich", strings.Repeat("v", 250)}
	propBounds = [][]float64{nil, {1}, {1, 10}}
)

// propKind is what a generated instrument's data is.
type propKind int

const (
	pIntCounter propKind = iota
	pFloatCounter
	pIntUpDown
	pFloatUpDown
	pIntGauge
	pFloatGauge
	pIntHist
	pFloatHist
	pExpHist
	pSummary
	numPropKinds
)

type propInstrument struct {
	scope       instrumentation.Scope
	name, unit  string
	description string // unique: the PCP metric's short help tells the instrument
	kind        propKind
	delta       bool
	bounds      []float64
	minmax      bool
	points      []*propPoint
	keys        []attribute.Key // of its first export with points, since the last restart
}

type propPoint struct {
	attrs attribute.Set
	bad   bool // a value no counter holds
	// malformed is a histogram point's shape at this step: 0 well
	// formed, 1 a bucket count too many, 2 a count one more than the
	// bucket counts' sum.
	malformed int
	v         float64
	counts    []uint64
	sum       float64
	lo, hi    float64
}

type generator struct {
	rnd         *rand.Rand
	instruments []*propInstrument
}

func newGenerator(seed uint64) *generator {
	return &generator{rnd: rand.New(rand.NewPCG(seed, 7))}
}

func pickOf[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

// step adds instruments and points, and records new values.
func (g *generator) step() {
	r := g.rnd
	for range r.IntN(3) {
		in := &propInstrument{scope: pickOf(r, propScopes), name: pickOf(r, propNames), unit: pickOf(r, propUnits),
			description: fmt.Sprintf("d%d", len(g.instruments)), kind: propKind(r.IntN(int(numPropKinds))),
			delta: r.IntN(12) == 0, bounds: pickOf(r, propBounds), minmax: r.IntN(2) == 0}
		g.instruments = append(g.instruments, in)
	}
	for _, in := range g.instruments {
		if r.IntN(2) == 0 {
			var kvs []attribute.KeyValue
			for _, k := range propKeys {
				if r.IntN(2) == 0 {
					kvs = append(kvs, attribute.String(string(k), pickOf(r, propValues)))
				}
			}
			if r.IntN(8) == 0 {
				kvs = append(kvs, attribute.Int("extra", 1))
			}
			set := attribute.NewSet(kvs...)
			if !slices.ContainsFunc(in.points, func(p *propPoint) bool { return p.attrs.Equals(&set) }) {
				in.points = append(in.points, &propPoint{attrs: set, bad: r.IntN(10) == 0, counts: make([]uint64, len(in.bounds)+1)})
			}
		}
		for _, p := range in.points {
			p.bad = p.bad || r.IntN(30) == 0 // and stays so
			switch in.kind {
			case pIntCounter, pFloatCounter:
				p.v += float64(r.IntN(8)) / 4
			default:
				p.v = float64(r.IntN(64)-32) / 4
			}
			for i := range p.counts {
				p.counts[i] += uint64(r.IntN(3))
			}
			p.sum += float64(r.IntN(16)) / 4
			p.lo, p.hi = -float64(r.IntN(4)), float64(r.IntN(4))
			p.malformed = 0
			if (in.kind == pIntHist || in.kind == pFloatHist) && r.IntN(10) == 0 {
				p.malformed = 1 + r.IntN(2)
			}
		}
	}
}

// restart starts every instrument's values again, as a restarted SDK.
func (g *generator) restart() {
	for _, in := range g.instruments {
		in.points, in.keys = nil, nil
	}
}

// badValue reports whether p has a value no counter holds: a counter's
// value, or a float histogram's sum.
func (in *propInstrument) badValue(p *propPoint) bool {
	return p.bad && (in.kind == pIntCounter || in.kind == pFloatCounter || in.kind == pFloatHist)
}

// droppedValue reports whether the exporter drops p for its values: one
// no counter holds, or a malformed histogram point.
func (in *propInstrument) droppedValue(p *propPoint) bool {
	return in.badValue(p) || p.malformed != 0
}

func (in *propInstrument) integer() bool {
	return in.kind == pIntCounter || in.kind == pIntUpDown || in.kind == pIntGauge || in.kind == pIntHist
}

// value returns a point's value as the SDK would report it.
func (in *propInstrument) value(p *propPoint) float64 {
	v := p.v
	if in.integer() {
		v = math.Floor(v)
	}
	if in.badValue(p) && in.kind != pFloatHist {
		v = -1
		if !in.integer() {
			v = math.NaN()
		}
	}
	return v
}

func (in *propInstrument) histSum(p *propPoint) float64 {
	s := p.sum
	if in.integer() {
		s = math.Floor(s)
	}
	if in.badValue(p) && in.kind == pFloatHist {
		s = math.Inf(1)
	}
	return s
}

// data returns the instrument's data as the SDK exports it.
func (in *propInstrument) data() metricdata.Aggregation {
	tmp := metricdata.CumulativeTemporality
	if in.delta {
		tmp = metricdata.DeltaTemporality
	}
	ints := func() (pts []metricdata.DataPoint[int64]) {
		for _, p := range in.points {
			pts = append(pts, metricdata.DataPoint[int64]{Attributes: p.attrs, Value: int64(in.value(p))})
		}
		return pts
	}
	floats := func() (pts []metricdata.DataPoint[float64]) {
		for _, p := range in.points {
			pts = append(pts, metricdata.DataPoint[float64]{Attributes: p.attrs, Value: in.value(p)})
		}
		return pts
	}
	switch in.kind {
	case pIntCounter, pIntUpDown:
		return metricdata.Sum[int64]{Temporality: tmp, IsMonotonic: in.kind == pIntCounter, DataPoints: ints()}
	case pFloatCounter, pFloatUpDown:
		return metricdata.Sum[float64]{Temporality: tmp, IsMonotonic: in.kind == pFloatCounter, DataPoints: floats()}
	case pIntGauge:
		return metricdata.Gauge[int64]{DataPoints: ints()}
	case pFloatGauge:
		return metricdata.Gauge[float64]{DataPoints: floats()}
	case pIntHist:
		return metricdata.Histogram[int64]{Temporality: tmp, DataPoints: histPoints[int64](in)}
	case pFloatHist:
		return metricdata.Histogram[float64]{Temporality: tmp, DataPoints: histPoints[float64](in)}
	case pExpHist:
		return metricdata.ExponentialHistogram[float64]{Temporality: tmp, DataPoints: make([]metricdata.ExponentialHistogramDataPoint[float64], len(in.points))}
	}
	return metricdata.Summary{DataPoints: make([]metricdata.SummaryDataPoint, len(in.points))}
}

func histPoints[N int64 | float64](in *propInstrument) (pts []metricdata.HistogramDataPoint[N]) {
	for _, p := range in.points {
		hp := metricdata.HistogramDataPoint[N]{Attributes: p.attrs, Bounds: in.bounds, BucketCounts: slices.Clone(p.counts), Sum: N(in.histSum(p))}
		for _, c := range p.counts {
			hp.Count += c
		}
		switch p.malformed {
		case 1:
			hp.BucketCounts = append(hp.BucketCounts, 1)
			hp.Count++
		case 2:
			hp.Count++
		}
		if in.minmax {
			hp.Min, hp.Max = metricdata.NewExtrema(N(p.lo)), metricdata.NewExtrema(N(p.hi))
		}
		pts = append(pts, hp)
	}
	return pts
}

// resourceMetrics returns the export of every instrument, scopes and
// metrics shuffled as the SDK's map might order them.
func (g *generator) resourceMetrics(shuffle *rand.Rand) *metricdata.ResourceMetrics {
	rm := &metricdata.ResourceMetrics{Resource: testResource}
	for _, in := range g.instruments {
		i := slices.IndexFunc(rm.ScopeMetrics, func(sm metricdata.ScopeMetrics) bool { return scopeEqual(sm.Scope, in.scope) })
		if i < 0 {
			i = len(rm.ScopeMetrics)
			rm.ScopeMetrics = append(rm.ScopeMetrics, metricdata.ScopeMetrics{Scope: in.scope})
		}
		rm.ScopeMetrics[i].Metrics = append(rm.ScopeMetrics[i].Metrics,
			metricdata.Metrics{Name: in.name, Unit: in.unit, Description: in.description, Data: in.data()})
	}
	shuffle.Shuffle(len(rm.ScopeMetrics), func(i, j int) { rm.ScopeMetrics[i], rm.ScopeMetrics[j] = rm.ScopeMetrics[j], rm.ScopeMetrics[i] })
	for _, sm := range rm.ScopeMetrics {
		shuffle.Shuffle(len(sm.Metrics), func(i, j int) { sm.Metrics[i], sm.Metrics[j] = sm.Metrics[j], sm.Metrics[i] })
	}
	return rm
}

func scopeEqual(a, b instrumentation.Scope) bool {
	return a.Name == b.Name && a.Version == b.Version && a.SchemaURL == b.SchemaURL && a.Attributes.Equals(&b.Attributes)
}

// accounting runs two exporters on the generated data and checks the
// property on each.
type accounting struct {
	t    *testing.T
	g    *generator
	tmp  string
	exps [2]*Exporter
	// drops are otelexporter.dropped's and mmv.dropped's sums at the last
	// check, by exporter.
	drops [2][2]uint64
}

var propFiles = [2]string{"otelprop_a", "otelprop_b"}

func (h *accounting) start() {
	for i := range h.exps {
		h.exps[i] = New(&Options{Name: propFiles[i], Limit: 3, Registry: mmv.Options{Dir: filepath.Join(h.tmp, "mmv"), Cluster: uint32(401 + i)}})
	}
	h.g.restart()
	h.drops = [2][2]uint64{}
}

func (h *accounting) stop() {
	for _, e := range h.exps {
		require.NoError(h.t, e.Shutdown(context.Background()))
	}
}

func (h *accounting) restart() {
	h.stop()
	h.start()
}

// export exports the generated data to both exporters and checks.
func (h *accounting) export(n int) {
	t := h.t
	ctx := context.Background()
	for i, e := range h.exps {
		require.NoError(t, e.Export(ctx, h.g.resourceMetrics(rand.New(rand.NewPCG(uint64(n), uint64(i))))))
		require.NoError(t, e.ForceFlush(ctx))
	}
	// The keys of an instrument's first export with points.
	for _, in := range h.g.instruments {
		if in.keys == nil && len(in.points) > 0 {
			var sets []attribute.Set
			for _, p := range in.points {
				sets = append(sets, p.attrs)
			}
			in.keys = keysOf(slices.Values(sets))
			if in.keys == nil {
				in.keys = []attribute.Key{}
			}
		}
	}
	ms := pcptest.Info(t, h.tmp)
	var owners [2]map[string]string // PCP name to the description shown there
	for i, e := range h.exps {
		owners[i] = h.check(n, propFiles[i], e, ms, &h.drops[i])
	}
	require.Equal(t, owners[0], owners[1], "export %d: the instruments the PCP names show, whatever the order", n)
}

// check checks the property on the file of exporter e, and returns which
// instrument each PCP metric shows.
func (h *accounting) check(n int, file string, e *Exporter, ms []pcptest.Metric, drops *[2]uint64) map[string]string {
	t := h.t
	prefix := "mmv." + file + "."
	byName := map[string]*pcptest.Metric{}
	owners := map[string]string{}
	ours := map[string]*propInstrument{}
	for _, in := range h.g.instruments {
		ours[in.description] = in
	}
	for i := range ms {
		pm := &ms[i]
		if !strings.HasPrefix(pm.Name, prefix) {
			continue
		}
		byName[pm.Name] = pm
		desc, _, _ := strings.Cut(pm.ShortHelp, ",")
		if in := ours[desc]; in != nil {
			owners[strings.TrimPrefix(pm.Name, prefix)] = desc
			require.True(t, strings.HasPrefix(pm.Name, prefix+metricName(in.scope, in.name)),
				"export %d: %s shows %s of %q, whose name is %s", n, pm.Name, desc, in.name, metricName(in.scope, in.name))
		}
	}
	err := e.Err()
	shown := map[string]bool{}
	missing := 0
	for _, in := range h.g.instruments {
		name := prefix + metricName(in.scope, in.name)
		for _, p := range in.groups() {
			vals := in.expected(p)
			found := 0
			for _, v := range vals {
				pm := byName[name+v.part]
				if pm == nil || !strings.HasPrefix(pm.ShortHelp, in.description) || (pm.ShortHelp != in.description && !strings.HasPrefix(pm.ShortHelp, in.description+",")) {
					continue
				}
				got := pm.Value
				if v.instance != "" {
					got = ""
					if pin := pm.Instance(v.instance); pin != nil {
						got = pin.Value
					}
				} else if !pm.Singular() {
					got = ""
				}
				if got == "" {
					continue
				}
				if len(in.keys) == 0 && p.droppedValue {
					// A singular metric cannot be removed: it keeps its
					// last value, and the point is counted and named so.
					require.ErrorContains(t, err, "PCP cannot withdraw a singular metric")
					shown[pm.Name+"\x00"] = true
					continue
				}
				found++
				shown[pm.Name+"\x00"+v.instance] = true
				f, perr := strconv.ParseFloat(got, 64)
				require.NoError(t, perr)
				require.InDelta(t, v.value, f, 1e-9*max(1, math.Abs(v.value)), "export %d: %s[%s] of %s", n, pm.Name, v.instance, in.description)
			}
			switch found {
			case len(vals):
			case 0:
				missing += len(p.points)
				o := owner(in.scope, in.name)
				if !strings.Contains(err.Error(), o) {
					require.Contains(t, err.Error(), " more refusals", "export %d: Err does not name %s (%s): %v", n, o, in.description, err)
				}
			default:
				t.Fatalf("export %d: %d of the %d values of a point of %s (%s) in PCP", n, found, len(vals), in.description, p.points[0].attrs.Encoded(attribute.DefaultEncoder()))
			}
		}
	}
	// An earlier run's overflow file this run has not made again is a
	// tombstone: its metrics show no value, a float's NaN on PCP 6.0.3.
	buried := buriedMetrics(t, filepath.Join(h.tmp, "mmv"))
	noValue := func(name, v string) bool { return v == "" || buried[name] && strings.HasSuffix(v, "nan") }
	for name, pm := range byName {
		if _, ok := owners[strings.TrimPrefix(name, prefix)]; !ok {
			continue
		}
		if pm.Singular() {
			require.True(t, shown[name+"\x00"] || noValue(name, pm.Value), "export %d: %s shows %s, no point's", n, name, pm.Value)
			continue
		}
		for _, in := range pm.Instances {
			if buried[name] && noValue(name, in.Value) {
				continue
			}
			require.True(t, shown[name+"\x00"+in.Name], "export %d: %s[%s] shows %s, no point's", n, name, in.Name, in.Value)
		}
	}
	sum := func(metric string) uint64 {
		var s uint64
		if d := byName[prefix+metric]; d != nil {
			for _, in := range d.Instances {
				v, _ := strconv.ParseUint(in.Value, 10, 64)
				s += v
			}
		}
		return s
	}
	otel, reg := sum(droppedMetric), sum("mmv.dropped")
	dOtel, dReg := otel-drops[0], reg-drops[1]
	require.LessOrEqual(t, dOtel, uint64(missing), "export %d: the exporter counts no point that is in PCP", n)
	require.GreaterOrEqual(t, dOtel+dReg, uint64(missing), "export %d: every point not in PCP is counted; Err: %v", n, err)
	if missing > 0 {
		require.Error(t, err)
	}
	*drops = [2]uint64{otel, reg}
	return owners
}

// value is one of a point's values as PCP should show it.
type value struct {
	part, instance string
	value          float64
}

// propGroup is the points of an instrument that PCP shows as one
// instance: one point, or those of the same label values of which one
// or more has keys past the labels, which a counter's and a histogram's
// instance adds up (merge.go).
type propGroup struct {
	points       []*propPoint
	droppedValue bool // one of them is dropped for its values (droppedValue), and the instance with it
}

// merges reports whether the exporter adds up the points of in that
// have keys past its labels.
func (in *propInstrument) merges() bool {
	return in.kind == pIntCounter || in.kind == pFloatCounter || in.kind == pIntHist || in.kind == pFloatHist
}

// extra reports whether p has a key past in's labels.
func (in *propInstrument) extra(p *propPoint) bool {
	return slices.ContainsFunc(p.attrs.ToSlice(), func(kv attribute.KeyValue) bool { return !slices.Contains(in.keys, kv.Key) })
}

// groups returns the points of in by the instance PCP shows them in: each
// its own, but those added up.
func (in *propInstrument) groups() []propGroup {
	var gs []propGroup
	at := map[string]int{} // by label values, the groups that add up
	for _, p := range in.points {
		if !in.merges() || !in.extra(p) {
			gs = append(gs, propGroup{points: []*propPoint{p}, droppedValue: in.droppedValue(p)})
		}
	}
	if !in.merges() {
		return gs
	}
	for _, p := range in.points {
		if !in.extra(p) {
			continue
		}
		key := fmt.Sprint(in.labelValues(p))
		i, ok := at[key]
		if !ok {
			// The point of the same label values and no key past them, if any, adds up with it.
			i = slices.IndexFunc(gs, func(g propGroup) bool { return fmt.Sprint(in.labelValues(g.points[0])) == key })
			if i < 0 {
				i = len(gs)
				gs = append(gs, propGroup{})
			}
			at[key] = i
		}
		gs[i].points = append(gs[i].points, p)
		gs[i].droppedValue = gs[i].droppedValue || in.droppedValue(p)
	}
	return gs
}

// labelValues returns the values of p's keys among in's labels.
func (in *propInstrument) labelValues(p *propPoint) []string {
	var vals []string
	for _, k := range in.keys {
		v, _ := p.attrs.Value(k)
		vals = append(vals, v.Emit())
	}
	return vals
}

// expected returns the values of the points of group g in PCP, as the
// package doc maps them; nil when none can be there.
func (in *propInstrument) expected(g propGroup) []value {
	p := g.points[0]
	if !in.merges() && in.extra(p) {
		return []value{{"", "\x00", 0}} // a key outside the first export's: dropped
	}
	var names []string
	for _, k := range in.keys {
		names = append(names, labelName(k))
	}
	vals := in.labelValues(p)
	inst := func(le string) string {
		ns, vs := names, vals
		if le != "" {
			ns, vs = append(slices.Clone(ns), "le"), append(slices.Clone(vs), le)
		}
		if len(ns) == 0 {
			return ""
		}
		s, ok := canon.Name(ns, vs)
		if !ok {
			return "\x00" // no instance can be named so
		}
		return s
	}
	u, _ := unitsOf(in.unit)
	_, factor := bridge.Fine(u)
	switch in.kind {
	case pIntUpDown, pIntGauge, pFloatUpDown, pFloatGauge:
		return []value{{"", inst(""), in.value(p)}}
	case pIntCounter, pFloatCounter:
		if in.kind == pIntCounter {
			factor = 1
		}
		var v float64
		for _, p := range g.points {
			v += math.Round(in.value(p) * factor)
		}
		return []value{{"", inst(""), v}}
	case pIntHist, pFloatHist:
		if in.kind == pIntHist {
			factor = 1
		}
		counts := make([]uint64, len(p.counts))
		var count uint64
		var sum float64
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, p := range g.points {
			for i, c := range p.counts {
				counts[i] += c
				count += c
			}
			sum += math.Round(in.histSum(p) * factor)
			lo, hi = min(lo, p.lo), max(hi, p.hi)
		}
		vs := []value{}
		for i, c := range counts {
			le := "+Inf"
			if i < len(in.bounds) {
				le = strconv.FormatFloat(in.bounds[i], 'g', -1, 64)
			}
			vs = append(vs, value{".bucket", inst(le), float64(c)})
		}
		vs = append(vs, value{".count", inst(""), float64(count)}, value{".sum", inst(""), sum})
		if in.minmax {
			vs = append(vs, value{".min", inst(""), lo}, value{".max", inst(""), hi})
		}
		return vs
	}
	return []value{{"", "\x00", 0}} // never exported
}

// buriedMetrics returns the PCP names of the metrics of the tombstones in
// dir: the files with the Sentinel flag, which the exporters never set.
func buriedMetrics(t *testing.T, dir string) map[string]bool {
	names := map[string]bool{}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		f, err := mmvfile.Open(filepath.Join(dir, e.Name()))
		if err != nil || f.Header.Flags&mmv.Sentinel == 0 {
			continue
		}
		for _, m := range f.Metrics {
			names["mmv."+m.Name] = true
		}
	}
	return names
}
