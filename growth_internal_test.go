package mmv

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMergeInterleavings: the updates that race a growth step at each of
// its points (growthHook) are all kept, every run: a value only added to
// ends on the sum of its adds, a value set on its last Set, whether the
// update landed in the old file after the snapshot, in the new file
// before the merge, or between the merge's load of the word and its
// compare-and-swap (where a plain store would lose it).
func TestMergeInterleavings(t *testing.T) {
	for _, pad := range []bool{false, true} {
		t.Run(fmt.Sprint("padded=", pad), func(t *testing.T) { testMergeInterleavings(t, pad) })
	}
}

func testMergeInterleavings(t *testing.T, pad bool) {
	r := NewRegistry("merge", &Options{Dir: filepath.Join(t.TempDir(), "mmv"), PadValues: pad})
	defer r.Close()
	// Each instrument as a model: update(n) changes it, want is what it
	// must hold, set whether it is set (keeps the last) or added to.
	type instrument struct {
		name   string
		set    bool
		update func(n int)
		get    func() float64
		want   float64
	}
	fset, fadd := NewGauge(r, "fset", "", Count), NewGauge(r, "fadd", "", Count)
	iset, iadd := NewIntGauge(r, "iset", "", Count), NewIntGauge(r, "iadd", "", Count)
	c := NewCounter(r, "counter", "", Count)
	insts := []*instrument{
		{name: "Gauge.Set", set: true, update: func(n int) { fset.Set(float64(n)) }, get: fset.Get},
		{name: "Gauge.Add", update: func(n int) { fadd.Add(float64(n)) }, get: fadd.Get},
		{name: "IntGauge.Set", set: true, update: func(n int) { iset.Set(int64(n)) }, get: func() float64 { return float64(iset.Get()) }},
		{name: "IntGauge.Add", update: func(n int) { iadd.Add(int64(n)) }, get: func() float64 { return float64(iadd.Get()) }},
		{name: "Counter.Add", update: func(n int) { c.Add(uint64(n)) }, get: func() float64 { return float64(c.Get()) }},
	}
	startOrSkip(t, r)
	n := 0
	update := func(in *instrument) {
		n++
		in.update(n)
		if in.set {
			in.want = float64(n)
		} else {
			in.want += float64(n)
		}
	}
	for _, in := range insts {
		update(in)
	}
	defer func() { growthHook = nil }()
	step := 0
	for _, in := range insts {
		for _, racing := range [][]growthPoint{
			{afterSnapshot},
			{afterSnapshot, afterRemap},
			{afterSnapshot, beforeMergeCAS},
			{afterSnapshot, afterRemap, beforeMergeCAS},
		} {
			// A set value written in the new file keeps its write: merge
			// has nothing to swap.
			if in.set && len(racing) == 3 {
				continue
			}
			reached := map[growthPoint]int{}
			growthHook = func(p growthPoint) {
				reached[p]++
				// Once per point: at the compare-and-swap, the retry
				// must then succeed.
				if reached[p] == 1 && slices.Contains(racing, p) {
					update(in)
				}
			}
			step++
			NewCounter(r, fmt.Sprint("grow", step), "", Count) // a declaration to publish
			require.NoError(t, r.Flush())
			growthHook = nil
			for _, p := range racing {
				require.NotZero(t, reached[p], "%s: point %d of the growth step not reached", in.name, p)
			}
			for _, other := range insts {
				assert.Equal(t, other.want, other.get(), "%s, after %s raced points %v", other.name, in.name, racing)
			}
		}
	}
}
