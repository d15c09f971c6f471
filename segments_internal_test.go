package mmv

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// segLengths are lengths on either side of a segList's segment bounds.
var segLengths = []int{0, 1, segLen - 1, segLen, segLen + 1, 2 * segLen, 3*segLen + 7}

// requireSegList requires l to hold exactly want, through each way of
// reading it.
func requireSegList(t *testing.T, want []int, l *segList[int], msg string) {
	t.Helper()
	require.Equal(t, len(want), l.len(), msg)
	require.Equal(t, append([]int{}, want...), l.appendTo([]int{}), msg)
	for i, x := range l.all() {
		require.Equal(t, want[i], x, "%s: element %d", msg, i)
		require.Equal(t, want[i], *l.at(i), "%s: at(%d)", msg, i)
	}
}

// TestSegList: a segList holds what was pushed, in order, across its
// segments' bounds, and truncates to any length, clearing what it drops,
// then grows again.
func TestSegList(t *testing.T) {
	for _, n := range segLengths {
		var l segList[int]
		var want []int
		for i := range n {
			l.push(i + 1)
			want = append(want, i+1)
		}
		requireSegList(t, want, &l, "pushed")
		for _, k := range segLengths {
			if k > n {
				continue
			}
			c := segList[int]{head: append([]int(nil), l.head...), n: l.n}
			for _, s := range l.tail {
				c.tail = append(c.tail, append([]int(nil), s...))
			}
			c.truncate(k)
			requireSegList(t, want[:k], &c, "truncated")
			for _, s := range c.tail {
				assert.Len(t, s, segLen, "a kept segment keeps its array")
			}
			assert.Len(t, c.tail, max(k-1, segLen-1)>>segShift, "segments kept after truncate(%d) of %d", k, n)
			if k < len(l.head) {
				assert.Zero(t, c.head[k:len(l.head)][0], "head cleared past %d", k)
			}
			if k >= segLen && k < n && k&(segLen-1) != 0 {
				last := c.tail[len(c.tail)-1]
				assert.Zero(t, last[k&(segLen-1)], "segment cleared past %d", k)
			}
			grown := append(append([]int(nil), want[:k]...), -1, -2)
			c.push(-1)
			c.push(-2)
			requireSegList(t, grown, &c, "grown again")
		}
	}
	assert.Panics(t, func() {
		var l segList[int]
		for i := range segLen + 2 {
			l.push(i)
		}
		l.at(segLen + 2)
	}, "an index past the length, inside the last segment's array")
}

// TestSegListPushRun: push, an element at a time, and extend, a run at
// once, then written in spans or by index, append a run of elements from
// any length, across segment bounds, to a list pushed or of a slice's
// elements, and a copy taken before it keeps its elements.
func TestSegListPushRun(t *testing.T) {
	for _, n := range segLengths {
		for _, k := range []int{0, 1, 19, segLen + 3} {
			run := make([]int, k)
			for i := range run {
				run[i] = -i - 1
			}
			start := make([]int, n)
			for i := range start {
				start[i] = i
			}
			for _, from := range []string{"pushed", "of a slice"} {
				l := segListOf(append([]int(nil), start...))
				if from == "pushed" {
					l = segList[int]{}
					for _, x := range start {
						l.push(x)
					}
				}
				for _, how := range []string{"pushed", "extended, written in spans", "extended, written by index"} {
					l := l
					l.head = slices.Clip(l.head) // not to write into the other case's spare room
					snap := l
					switch how {
					case "pushed":
						for _, x := range run {
							l.push(x)
						}
					case "extended, written in spans":
						l.extend(k)
						for i := n; i < n+k; {
							s := l.span(i, n+k)
							require.NotEmpty(t, s, "the span at %d", i)
							require.LessOrEqual(t, len(s), segLen-i&(segLen-1), "the span at %d passes its array's end", i)
							i += copy(s, run[i-n:])
						}
					default:
						l.extend(k)
						for i, x := range run {
							*l.at(n + i) = x
						}
					}
					msg := fmt.Sprintf("%d elements %s, then %d more %s", n, from, k, how)
					requireSegList(t, append(append([]int(nil), start...), run...), &l, msg)
					requireSegList(t, start, &snap, msg+": the copy before")
				}
			}
		}
	}
}

// TestSegListGrowsInPlace: once its first segment is full, a segList never
// moves an element: a pointer to one stays the element's, and segLen more
// elements cost one allocation of a segment (and at times the list of
// segments), where a slice's append copies the whole into an array twice
// as large.
func TestSegListGrowsInPlace(t *testing.T) {
	var l segList[int]
	for i := range 64 * segLen {
		l.push(i)
	}
	first, last := l.at(segLen-1), l.at(l.len()-1)
	allocs := testing.AllocsPerRun(10, func() {
		for i := range segLen {
			l.push(i)
		}
	})
	assert.LessOrEqual(t, allocs, 2.0, "allocations for %d more elements", segLen)
	assert.Same(t, first, l.at(segLen-1), "the first segment's last element stayed")
	assert.Same(t, last, l.at(64*segLen-1), "a tail element stayed")
}

// TestSegListCopies: a copy of a segList keeps its length and elements
// while the list grows past it, and a list of a slice's elements shares
// them, its last segment copied whole before it grows.
func TestSegListCopies(t *testing.T) {
	var l segList[int]
	var want []int
	for i := range 2*segLen + 3 {
		l.push(i)
		want = append(want, i)
	}
	snap := l
	for i := range 3 * segLen {
		l.push(-i)
	}
	l.truncate(len(want) + 1)
	requireSegList(t, want, &snap, "the copy after the list grew")

	s := make([]int, 2*segLen+5, 3*segLen)
	for i := range s {
		s[i] = i
	}
	v := segListOf(s)
	requireSegList(t, s, &v, "of a slice")
	*v.at(segLen + 1) = -7
	assert.Equal(t, -7, s[segLen+1], "the slice's element written")
	v.push(99)
	assert.Equal(t, 0, s[:len(s)+1][len(s)], "the slice's memory past its length untouched")
	assert.Equal(t, 99, *v.at(len(s)))
	*v.at(2*segLen + 1) = -8
	assert.Equal(t, 2*segLen+1, s[2*segLen+1], "the last segment was copied before growing")
}

// TestSegListShares: a snapshot share makes holds what the list held
// whatever the list then does below and past its length (writes through
// set, truncations and pushes back over them, runs extended), from any
// length, while the list holds what a slice would; once unshared, the
// list writes in place, and copies no array of its own twice.
func TestSegListShares(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range segLengths {
		for round := range 20 {
			var l segList[int]
			var want []int
			for i := range n {
				l.push(i + 1)
				want = append(want, i+1)
			}
			snap := l.share()
			kept := slices.Clone(want)
			for range 50 {
				switch op := rng.IntN(4); {
				case op == 0 && len(want) > 0:
					i := rng.IntN(len(want))
					*l.set(i) = -round
					want[i] = -round
				case op == 1:
					k := rng.IntN(len(want) + 1)
					l.truncate(k)
					want = want[:k]
				case op == 2:
					l.push(-7)
					want = append(want, -7)
				default:
					k := rng.IntN(2 * segLen)
					from := l.len()
					l.extend(k)
					for i := from; i < l.len(); {
						run := l.span(i, l.len())
						for j := range run {
							run[j] = -i - j
						}
						i += len(run)
					}
					for i := range k {
						want = append(want, -from-i)
					}
				}
			}
			msg := fmt.Sprintf("length %d, round %d", n, round)
			requireSegList(t, kept, &snap, msg+": the snapshot")
			requireSegList(t, want, &l, msg+": the list")
			l.unshare()
			if len(want) > 0 {
				head := &l.head[0]
				*l.set(0) = 42
				assert.Same(t, head, &l.head[0], "%s: unshared, the list copied its head", msg)
			}
		}
	}
}

// TestSegQueue: a segQueue pushed, dropped from its front, filtered and
// truncated in any order holds what a slice would, lets go of the arrays
// wholly dropped, and holds none once empty.
func TestSegQueue(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 100 {
		var q segQueue[*int]
		var want []*int
		next := 0
		for step := range 60 {
			switch op := rng.IntN(10); {
			case op < 6: // pushes, up to a few segments at once
				for range rng.IntN(3 * segLen) {
					next++
					x := next
					q.push(&x)
					want = append(want, &x)
				}
			case op < 7:
				n := rng.IntN(len(want) + 1)
				q.drop(n)
				want = want[n:]
			case op < 9: // keeps the odd ones, or none, up to a stop
				stopAt, odd := rng.IntN(len(want)+1), rng.IntN(2) == 0
				var at *(*int)
				if stopAt < len(want) {
					at = q.at(stopAt)
				}
				i := 0
				q.retain(func(x *int) (keep, stop bool) {
					i++
					return odd && *x%2 == 1, i > stopAt
				})
				var kept []*int
				for _, x := range want[:stopAt] {
					if odd && *x%2 == 1 {
						kept = append(kept, x)
					}
				}
				want = append(kept, want[stopAt:]...)
				if len(kept) == 0 && at != nil {
					require.Same(t, at, q.at(0), "the rest moved, none kept before it")
				}
			default:
				n := rng.IntN(len(want) + 1)
				q.truncate(n)
				want = want[:n]
			}
			msg := fmt.Sprintf("round %d, step %d", round, step)
			require.Equal(t, len(want), q.len(), msg)
			i := 0
			for x := range q.all() {
				if x != want[i] || *q.at(i) != want[i] {
					require.Failf(t, "element differs", "%s: element %d", msg, i)
				}
				i++
			}
			require.Equal(t, len(want), i, "%s: elements yielded", msg)
			if len(want) == 0 {
				require.Equal(t, segQueue[*int]{}, q, "%s: an empty queue holds no array", msg)
				continue
			}
			for k, a := range q.l.tail {
				if (k+2)<<segShift <= q.from {
					require.Nil(t, a, "%s: array %d wholly dropped", msg, k)
				}
			}
			if q.from >= segLen {
				require.Nil(t, q.l.head, msg)
			}
			for s, i := range q.l.segments() { // what is dropped is cleared
				for j, x := range s[:max(min(q.from-i, len(s)), 0)] {
					require.Nil(t, x, "%s: element %d dropped", msg, i+j)
				}
			}
		}
	}
}
