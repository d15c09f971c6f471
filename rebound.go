package mmv

import "time"

// Cells bound lately. An update loads its cell's handle, then adds: one
// that loaded the cell's own memory before the binding adds there after
// it, whenever the OS runs it again, and only a carry (cell.carry) moves
// that into the file. So the cells a wake binds are a generation, carried
// at the two publications after it, then at publications past ages of
// it (reboundAges), and let go after the last. Snapshot, Gather and
// Flush carry every generation.
//
// Carried by the two publications alone, a registry publishing every
// 50 µs on a loaded 2-core machine lost such an update for good, the
// file a count short of the instrument
// (TestConcurrentOperationsMatchTheFiles, TestUpdateRacingBindCarriedPublicationsLater).
// Carried at every publication for a second, each cell would be touched
// at every publication of that second under the registry's lock, up to
// thousands of times. An update held past the last age (a process
// stopped, a VM paused) is still lost to the file; the instrument's own
// reads (Get) count it.

// reboundAges are the ages, from its first carry, past which a
// generation is carried again, at the first publication after each.
var reboundAges = [...]time.Duration{10 * time.Millisecond, 100 * time.Millisecond, time.Second}

// reboundGen is a generation: the cells one wake bound.
type reboundGen struct {
	cells []*cell
	at    time.Time // its first carry
	pubs  int       // publications that carried it
	age   int       // the first of reboundAges it has not been carried past
}

// rebound is a registry's generations, oldest first.
type rebound struct{ gens []reboundGen }

// fresh returns the list the cells a wake binds go to: the newest
// generation, unless a publication carried it already; a new one takes
// the array of one let go, if any.
func (b *rebound) fresh() *[]*cell {
	if n := len(b.gens); n == 0 || b.gens[n-1].pubs > 0 {
		if n < cap(b.gens) {
			b.gens = b.gens[:n+1]
			b.gens[n] = reboundGen{cells: b.gens[n].cells[:0]}
		} else {
			b.gens = append(b.gens, reboundGen{})
		}
	}
	return &b.gens[len(b.gens)-1].cells
}

// empty reports whether no generation is left: none keeps the timer armed.
func (b *rebound) empty() bool { return len(b.gens) == 0 }

// carryAll carries every generation (Snapshot, Gather, Flush).
func (b *rebound) carryAll() {
	for i := range b.gens {
		b.gens[i].carry()
	}
}

func (g *reboundGen) carry() {
	for _, c := range g.cells {
		c.carry()
	}
}

// published carries the generations due at a publication at now, all of
// them when all is set (Flush's), and lets go of those carried past the
// last age.
//
// The generations let go keep their arrays, past the length, cleared,
// for fresh: a wake after them allocates none.
func (b *rebound) published(now time.Time, all bool) {
	kept := 0
	for i := range b.gens {
		g := &b.gens[i]
		if len(g.cells) > 0 && (all || g.pubs < 2 || now.Sub(g.at) >= reboundAges[g.age]) {
			g.carry()
			if g.pubs == 0 {
				g.at = now
			}
			g.pubs++
			for g.age < len(reboundAges) && now.Sub(g.at) >= reboundAges[g.age] {
				g.age++
			}
		}
		if len(g.cells) > 0 && g.age < len(reboundAges) {
			b.gens[kept], b.gens[i] = b.gens[i], b.gens[kept]
			kept++
		} else { // let go, or a wake bound none
			clear(g.cells)
			g.cells = g.cells[:0]
		}
	}
	b.gens = b.gens[:kept]
}
