package mmv

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A string label value skips the shape check and compaction, which a
// JSON string needs neither, and a plain one the encoder (plainJSON): its
// payload is the one the checked path makes, and encoding/json's, for
// every byte it escapes or replaces and every printable one.
func TestLabelPayloadStringAsChecked(t *testing.T) {
	var printable []byte
	for c := byte(0x20); c <= 0x7e; c++ {
		printable = append(printable, c)
	}
	for _, s := range []string{"", "/api", `a "b" \c`, "tab\tnl\n\x00\x1f", "<&>", "é\u2028\u2029", "bad\xffutf8", "a b,c=d%", string(printable), "\x7f", "\b\f"} {
		value, text := &label{Label: Label{Name: "route", Value: s}}, &label{Label: Label{Name: "route"}, text: s, isText: true}
		require.NoError(t, checkPayload("vector", value), "%q", s)
		require.NoError(t, checkPayload("vector", text), "%q", s)
		got := value.appendPayload(nil)
		require.Equal(t, string(got), string(text.appendPayload(nil)), "a vector's label, its value kept as text: %q", s)
		var rec [labelSize]byte
		putLabel(rec[:], 0, 0, text)
		require.Equal(t, string(got)+"\x00", string(rec[labelPayloadOff:labelPayloadOff+len(got)+1]), "the record of a vector's label: %q", s)
		checked, err := checkLabelValue(func() string { return "vector" }, got[len(`{"route":`):len(got)-1])
		require.NoError(t, err, "%q", s)
		require.Equal(t, `{"route":`+string(checked)+`}`, string(got), "%q", s)
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		require.NoError(t, enc.Encode(s))
		require.Equal(t, `{"route":`+strings.TrimSuffix(buf.String(), "\n")+`}`, string(got), "%q", s)
	}
}

// labelCount is what each file's labels are (labelsOf), with the vectors'
// records summed over each file's own indoms, and partsHolding the parts
// that hold each indom (hasIndom): vectors in several files, labels of
// every kind, instances labelled and deleted, a refused declaration
// undone, before and after Start.
func TestLabelCountIsLabelsOf(t *testing.T) {
	r := NewRegistry("counted", &Options{Dir: t.TempDir(), MaxFileValues: 64})
	t.Cleanup(func() { r.Close() })
	check := func(after string) {
		t.Helper()
		r.mu.Lock()
		defer r.mu.Unlock()
		require.Greater(t, len(r.parts), 2, "files")
		for _, p := range r.parts {
			require.Equal(t, len(r.labelsOf(p, nil)), r.labelCount(p), "file %d after %s", p.index, after)
		}
		for _, in := range r.indoms {
			var want []*part
			for _, p := range r.parts {
				if p.hasIndom(in) {
					want = append(want, p)
				}
			}
			require.Equal(t, want, slices.Collect(partsHolding(r.parts, in)), "the parts holding indom %d after %s", in.Serial, after)
		}
	}
	vs := make([]*Vec[Counter], 6)
	for i := range vs {
		// Named against their order, which Start lays them out in again;
		// a file each.
		vs[i] = NewCounterVec(r, fmt.Sprintf("v%d", len(vs)-i), "", Count, "k", "j")
		vs[i].SetLimit(40)
	}
	require.NoError(t, r.AddLabel(Label{Name: "cluster", Value: `"c"`}))
	require.NoError(t, r.AddMetricLabel("v4", Label{Name: "metric", Value: `"m"`}))
	require.NoError(t, r.AddIndomLabel(vs[5].Indom(), Label{Name: "indom", Value: `"i"`}))
	for i, v := range vs {
		for j := range 3 + i {
			v.With(fmt.Sprint(j), "x")
		}
	}
	check("declaring")
	vs[4].Delete("0", "x")
	check("a deletion")
	NewCounter(r, "h.count", "", Count)
	_, err := declareHistograms(r, "h", "", Second, nil, []string{"route"}) // its bucket metric declared, then refused: undone
	require.ErrorIs(t, err, ErrDuplicate)
	check("a refusal")
	insts := make([]Instance, 30)
	for i := range insts {
		insts[i] = Instance{ID: int32(i), Name: fmt.Sprint(i)}
	}
	require.NoError(t, r.AddIndom(Indom{Serial: 7, Instances: insts}))
	require.Error(t, r.Transact(func(tx *Tx) error {
		// In a file of its own, over an indom that stays: undone alone.
		if err := tx.AddMetric(Metric{Name: "low", Type: Uint64, Semantics: SemCounter, Indom: 7}); err != nil {
			return err
		}
		return tx.AddMetric(Metric{Name: "h.count", Type: Uint64, Semantics: SemCounter})
	}))
	check("a refused transaction")
	startOrSkip(t, r)
	_, err = declareHistograms(r, "h", "", Second, nil, []string{"route"})
	require.ErrorIs(t, err, ErrDuplicate)
	check("a refusal after Start")
	for i, v := range vs {
		for j := range 10 {
			v.With(fmt.Sprint(j+i), "y")
		}
		v.Delete("1", "x")
	}
	check("Start")
	require.NoError(t, r.Flush())
	check("a publication")
}

// TestHistogramVecLinkedWithItsDeclaration: a registry label added while
// NewHistogramVec runs, named as the vector's label, is refused, as it is
// once the vector is made. NewHistogramVec let the registry's lock go
// between declaring the histograms and linking the vector to its indom,
// where the registry looks for a vector's label names: an AddLabel
// there found none, and both were accepted, PCP showing the registry's
// route on the vector's instances without a label of their own. One P,
// and a leave that yields (sparesAsked), hand the lock to the AddLabel
// waiting as NewHistogramVec first lets it go.
func TestHistogramVecLinkedWithItsDeclaration(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	sparesAsked.Add(1)
	defer sparesAsked.Add(-1)
	r := newTestRegistry(t, "hlinked")
	r.mu.Lock()
	declared := make(chan *Vec[Histogram])
	go func() {
		defer func() {
			if recover() != nil { // refused: the label came first
				declared <- nil
			}
		}()
		declared <- NewHistogramVec(r, "h", "", Second, nil, "route")
	}()
	for r.entering.Load() == 0 { // waiting for the lock, to declare
		runtime.Gosched()
	}
	time.Sleep(5 * time.Millisecond) // queued on the lock, before AddLabel
	added := make(chan error)
	go func() { added <- r.AddLabel(Label{Name: "route", Value: "web"}) }()
	time.Sleep(10 * time.Millisecond) // AddLabel waiting for the lock, after NewHistogramVec
	r.mu.Unlock()
	// Which takes the lock first is the scheduler's (the sleeps make the
	// vector's first likely, AddLabel then meeting the gap): one of the
	// two is refused, never both accepted, whichever came first.
	v, err := <-declared, <-added
	require.True(t, (v == nil) != (err != nil), "vector declared %v, AddLabel's error %v: one of the two refused", v != nil, err)
	if err != nil {
		require.ErrorIs(t, err, ErrDuplicate)
	}
}
