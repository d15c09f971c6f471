package mmv_test

import (
	"fmt"
	"hash/fnv"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
)

// TestArchiveValuesUnderTheirInstances: a pmlogger logging a vector
// through pmcd across a program's life, looked up once, archives every
// value under its own instance: label values added after Start (growth
// steps), deleted and used again, expired, and the
// program restarted with the Process flag, its values arriving in another
// order, then without it. Each instance's value is a code of its name,
// so a value under another instance's id shows.
func TestArchiveValuesUnderTheirInstances(t *testing.T) {
	needFileLayer(t)
	t.Parallel() // a pmcd of its own
	p := loggerPMCD(t)
	code := func(k string) float64 {
		h := fnv.New32a()
		h.Write([]byte(k))
		return float64(h.Sum32() % 100000)
	}
	const name = "life"
	var r *mmv.Registry
	var v *mmv.Vec[mmv.Gauge]
	run := func(flags mmv.Flags, keys ...string) {
		r = newRegistry(t, name, p.Dir, mmv.Options{Flags: flags, PublishDelay: 50 * time.Millisecond})
		v = mmv.NewGaugeVec(r, "g", "", mmv.Count, "k")
		startOrSkip(t, r)
		for _, k := range keys {
			v.With(k).Set(code(k))
		}
		require.NoError(t, r.Flush())
	}
	run(mmv.Process, "a", "b")
	logger := startPmlogger(t, p, filepath.Join(t.TempDir(), "arch"), "log mandatory on 100 msec { mmv."+name+".g }\n")
	time.Sleep(700 * time.Millisecond)
	for i := range 200 { // new label values under pmlogger: growth steps
		k := fmt.Sprint("n", i)
		v.With(k).Set(code(k))
		if i%20 == 0 {
			time.Sleep(50 * time.Millisecond)
		}
	}
	time.Sleep(500 * time.Millisecond)
	v.Delete("b")
	v.Delete("n5")
	time.Sleep(500 * time.Millisecond)
	v.With("b").Set(code("b"))
	v.With("n5").Set(code("n5"))
	time.Sleep(500 * time.Millisecond)
	v.SetExpiry(300 * time.Millisecond)
	for range 10 { // the others expire
		v.With("a").Set(code("a"))
		time.Sleep(100 * time.Millisecond)
	}
	require.NoError(t, r.Close())
	run(mmv.Process, "n7", "z", "b", "a")
	time.Sleep(time.Second)
	require.NoError(t, r.Close())
	run(0, "a", "q", "n1")
	time.Sleep(time.Second)
	require.NoError(t, r.Close())
	run(0, "n1", "a", "r")
	time.Sleep(time.Second)
	out := logger.dump(t, []string{"-a"})
	seen := map[string]int{}
	wrong := 0
	for _, m := range regexp.MustCompile(`inst \[(\d+) or "k=([^"]*)"\] value (\S+)`).FindAllStringSubmatch(out, -1) {
		seen[m[2]]++
		if f, _ := strconv.ParseFloat(m[3], 64); f != code(m[2]) {
			if wrong++; wrong <= 10 {
				t.Errorf("k=%s (id %s) archived as %s, its value %v", m[2], m[1], m[3], code(m[2]))
			}
		}
	}
	assert.Zero(t, wrong, "values under another instance")
	for _, k := range []string{"a", "b", "n5", "n199", "z", "q", "r"} { // each step's
		assert.NotZero(t, seen[k], "k=%s never archived", k)
	}
	require.NoError(t, p.Died())
}
