package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestREADMEs: the READMEs hold the tables benchtable makes of the
// committed run, testdata/bench.txt.
func TestREADMEs(t *testing.T) {
	tables, err := tablesOf(filepath.Join("..", "testdata", "bench.txt"))
	require.NoError(t, err)
	for _, path := range []string{filepath.Join("..", "README.md"), filepath.Join("..", "..", "README.md")} {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		want, err := fill(string(b), tables)
		require.NoError(t, err, path)
		assert.Equal(t, want, string(b), "%s: run `go run ./benchtable testdata/bench.txt` in compare/", path)
		assert.Contains(t, string(b), "<!-- benchtable ", "%s has no table", path)
	}
}

func TestParseAndMedian(t *testing.T) {
	rs, err := parse(strings.NewReader(`goos: linux
BenchmarkX/atomic-2   	100	  2.0 ns/op	0 allocs/op
BenchmarkX/mmv_Add-2  	100	  5.0 ns/op	0 allocs/op
BenchmarkX/atomic-2   	100	  4.0 ns/op	0 allocs/op
BenchmarkX/atomic-2   	100	  3.0 ns/op	0 allocs/op
BenchmarkY-8          	 10	  7 ns/op	 12 file-bytes
PASS
`))
	require.NoError(t, err)
	assert.Equal(t, []string{"X/atomic", "X/mmv_Add", "Y"}, rs.order)
	m, err := rs.median("X/atomic", "ns/op")
	require.NoError(t, err)
	assert.Equal(t, 3.0, m)
	m, err = rs.median("Y", "file-bytes")
	require.NoError(t, err)
	assert.Equal(t, 12.0, m)
	_, err = rs.median("Y", "allocs/op")
	assert.ErrorContains(t, err, "no allocs/op for benchmark Y")
	assert.Equal(t, []string{"atomic", "mmv_Add"}, rs.subs("X"))

	_, err = parse(strings.NewReader("PASS\n"))
	assert.ErrorContains(t, err, "no benchmark results")
}

func TestFill(t *testing.T) {
	tables := map[string]string{"a": "| 1 |\n"}
	got, err := fill("x\n<!-- benchtable a -->\nold\nrows\n<!-- end benchtable -->\ny\n", tables)
	require.NoError(t, err)
	assert.Equal(t, "x\n<!-- benchtable a -->\n| 1 |\n<!-- end benchtable -->\ny\n", got)
	again, err := fill(got, tables)
	require.NoError(t, err)
	assert.Equal(t, got, again, "filling is idempotent")
	_, err = fill("<!-- benchtable b -->\n<!-- end benchtable -->\n", tables)
	assert.ErrorContains(t, err, `no table "b"`)
	_, err = fill("<!-- benchtable a -->\n", tables)
	assert.ErrorContains(t, err, "has no")
}

func TestFormats(t *testing.T) {
	assert.Equal(t, "2.35", nanos(2.346))
	assert.Equal(t, "13,100", nanos(13100))
	assert.Equal(t, "1.25 ms", nanos(1.25e6))
	assert.Equal(t, "**1.00x**", ratio(3, 3, true))
	assert.Equal(t, "1.50x", ratio(3, 2, false))
	assert.Equal(t, "62,869x", ratio(62868.66, 1, false))
	assert.Equal(t, "0.77 ms", withUnit(771720))
	assert.Equal(t, "89.6 ns", withUnit(89.6))
	assert.Equal(t, "mmv `Counter.Inc`", implementation("mmv_Counter.Inc"))
	assert.Equal(t, "atomic (the floor)", implementation("atomic"))
}

func TestFastestOther(t *testing.T) {
	rs, err := parse(strings.NewReader(`BenchmarkF/atomic-2 	100	  1.0 ns/op
BenchmarkF/mmv_Observe-2 	100	  2.0 ns/op
BenchmarkF/prometheus_Observe-2 	100	  9.0 ns/op
BenchmarkF/victoriametrics_Update-2 	100	  4.0 ns/op
BenchmarkF/otel_Record-2 	100	  40 ns/op
BenchmarkF/x/victoriametrics_Update-2 	100	  0.5 ns/op
`))
	require.NoError(t, err)
	name, what, err := rs.fastestOther("F/")
	require.NoError(t, err)
	assert.Equal(t, "F/victoriametrics_Update", name, "not the floor, not mmv, not a deeper level")
	assert.Equal(t, "the fastest other, victoriametrics `Update`", what)
	_, _, err = rs.fastestOther("G/")
	assert.ErrorContains(t, err, "no other library's results under G/")
}
