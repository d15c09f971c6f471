package canon

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestName(t *testing.T) {
	for _, c := range []struct {
		names, values []string
		want          string
	}{
		{[]string{"route"}, []string{"/api"}, "route=/api"},
		{[]string{"route", "status"}, []string{"/api", "200"}, "route=/api,status=200"},
		{[]string{"method"}, []string{"GET /a"}, "method=GET%20/a"},
		{[]string{"a"}, []string{"x,b=y"}, "a=x%2Cb%3Dy"},
		{[]string{"a"}, []string{"50%"}, "a=50%25"},
		{[]string{"a"}, []string{"tab\there\n"}, "a=tab%09here%0A"},
		{[]string{"city"}, []string{"Zürich"}, "city=Zürich"},
		{[]string{"a", "b"}, []string{"", ""}, "a=,b="},
		{[]string{"a"}, []string{" lead"}, "a=%20lead"},
		{[]string{"a", "b", "c"}, []string{"plain", "x y", "/z"}, "a=plain,b=x%20y,c=/z"},
		{[]string{"a", "b"}, []string{"50%", "ok"}, "a=50%25,b=ok"},
	} {
		got, ok := Name(c.names, c.values)
		require.True(t, ok, "%q", c.values)
		assert.Equal(t, c.want, got)
		assert.NotContains(t, got, " ", "PCP compares names up to the first space")
	}
}

// TestNameUnique: lists that differ, in values or in where one ends, have
// different names and, in the main, different hashes.
func TestNameUnique(t *testing.T) {
	names := []string{"a", "b"}
	lists := [][]string{{"x,b=y", ""}, {"x", "y"}, {"x", "b=y"}, {"", "x,b=y"}, {"x y", ""}, {"x%20y", ""}, {"xy", ""}, {"x", "y "}}
	seen := map[string][]string{}
	hashes := map[uint64][]string{}
	for _, l := range lists {
		n, ok := Name(names, l)
		require.True(t, ok)
		_, dup := seen[n]
		assert.False(t, dup, "%q and %q share %q", l, seen[n], n)
		seen[n] = l
		h := Hash(l)
		_, dup = hashes[h]
		assert.False(t, dup, "%q and %q share a hash", l, hashes[h])
		hashes[h] = l
	}
	assert.NotEqual(t, Hash([]string{"ab", "c"}), Hash([]string{"a", "bc"}))
}

func TestNameTooLong(t *testing.T) {
	_, ok := Name([]string{"a"}, []string{strings.Repeat("x", MaxLen-2)})
	assert.True(t, ok, "255 bytes fit")
	_, ok = Name([]string{"a"}, []string{strings.Repeat("x", MaxLen-1)})
	assert.False(t, ok, "256 bytes do not")
	_, ok = Name([]string{"a"}, []string{strings.Repeat(" ", 100)})
	assert.False(t, ok, "escapes count")
}

// TestHashTellsApart: lists differing in one byte of one value, at every
// place of values of every length up to 40, in the order of their values,
// or in where one ends, have different hashes. A hash of values hashed
// apart and xored, which read 9 to 16 bytes as two overlapping words and
// xored the length into the second, failed it: lengths 10 and 11 (lowest
// bit apart) cancelled a byte of that word one bit apart, whatever the
// seed.
// TestLen: Len is the length of a value as Name writes it, which vectors
// name the label at fault by.
func TestLen(t *testing.T) {
	for _, v := range []string{"", "/api", "a b", ",,,", "x=1%", "\x00\x7fé"} {
		name, ok := Name([]string{"k"}, []string{v})
		require.True(t, ok)
		assert.Equal(t, len(name)-len("k="), Len(v), "%q", v)
	}
}

func TestHashTellsApart(t *testing.T) {
	seen := map[uint64][]string{}
	add := func(l ...string) {
		h := Hash(l)
		prev, dup := seen[h]
		require.False(t, dup, "%q and %q share a hash", l, prev)
		seen[h] = l
	}
	for n := range 41 {
		v := strings.Repeat("v", n)
		add(v, "m", "s")
		add("m", v, "s")
		add("m", "s", v)
		for i := range n {
			b := []byte(v)
			b[i] = 'w'
			add(string(b), "m", "s")
			add("m", "s", string(b))
		}
	}
	add("s", "m")
	add("a", "a")
	add("b", "b")
	add("ab", "c")
	add("a", "bc")
}

// TestHashSpreads: the low bits of the hashes of similar lists, which
// pick a vector's table slot, spread as a uniform hash's would. 4,096
// lists put in 8,192 slots by a uniform hash fill 3,223 of them on
// average, give or take 25; routes differing in a few digits, triples
// differing in a value of each length up to 16 bytes, and values of every
// length up to 60 must fill at least 3,100.
func TestHashSpreads(t *testing.T) {
	lists := map[string]func(i int) []string{
		"routes": func(i int) []string { return []string{"/api/v1/item/" + strconv.Itoa(i)} },
		"triples": func(i int) []string {
			return []string{strings.Repeat("r", 1+i%16), strconv.Itoa(i / 16), [2]string{"GET", "POST"}[i&1]}
		},
		"lengths": func(i int) []string { return []string{strings.Repeat("x", i%61), strconv.Itoa(i / 61)} },
	}
	for name, list := range lists {
		slots := map[uint64]bool{}
		for i := range 4096 {
			slots[Hash(list(i))&8191] = true
		}
		assert.Greater(t, len(slots), 3100, "%s: %d slots of 8,192 filled", name, len(slots))
	}
}

func BenchmarkHash(b *testing.B) {
	values := []string{"/api/v1/users", "200"}
	for b.Loop() {
		Hash(values)
	}
}

// BenchmarkName names the values of one short label, and of three, a
// route, a method and a status, whose name is longer than the 32 bytes
// the compiler keeps on the stack.
func BenchmarkName(b *testing.B) {
	for _, c := range []struct{ names, values []string }{
		{[]string{"route"}, []string{"/api/item/7"}},
		{[]string{"route", "method", "status"}, []string{"/api/v1/users/profile", "POST", "200"}},
	} {
		b.Run(strconv.Itoa(len(c.names)), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Name(c.names, c.values)
			}
		})
	}
}

func TestValuesUndoName(t *testing.T) {
	names := []string{"route", "code"}
	for _, values := range [][]string{
		{"/api", "200"},
		{"", ""},
		{"a b,c=d%e", "\x00\x7f,"},
		{"ünï", "x"},
	} {
		name, ok := Name(names, values)
		require.True(t, ok)
		got, ok := Values([]string{"kept"}, name, names)
		require.True(t, ok, name)
		assert.Equal(t, append([]string{"kept"}, values...), got, name)
	}
	for _, bad := range []string{"", "route=/a", "route=/a,code=1,x=2", "code=1,route=/a", "route=%4,code=1", "route=%zz,code=1", "route=/a;code=1"} {
		got, ok := Values([]string{"kept"}, bad, names)
		assert.False(t, ok, bad)
		assert.Equal(t, []string{"kept"}, got, bad)
	}
}
