package goruntime

import (
	"os"
	"path/filepath"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
)

// TestScalarsBoundAfterDiskFull: Register on a started registry whose disk
// is full succeeds, its instruments counting in their memory until there
// is room, then in the file, where the bridge once kept nil handles for
// good and every scalar stayed 0, with no error anywhere.
func TestScalarsBoundAfterDiskFull(t *testing.T) {
	pcptest.NeedFileLayer(t)
	tmp := pcptest.SmallTmpfs(t, "256k")
	r := mmv.NewRegistry("goruntime", &mmv.Options{Dir: filepath.Join(tmp, "mmv")})
	defer r.Close()
	mmv.NewCounter(r, "own", "the program's", mmv.Count).Inc()
	require.NoError(t, r.Start())
	filler := pcptest.Fill(t, tmp)
	require.NoError(t, Register(r, &Options{Interval: 10 * time.Millisecond}), "a full disk is no refusal")
	time.Sleep(100 * time.Millisecond) // refreshes on the full disk
	require.NoError(t, os.Remove(filler))
	require.NoError(t, r.Flush(), "room again: the bridge's metrics published")
	require.NoError(t, r.Err())

	gogc := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(gogc)
	require.NotZero(t, gogc[0].Value.Uint64())
	assert.EqualValues(t, gogc[0].Value.Uint64(), refreshed(t, r, "gc.gogc_percent"),
		"gc.gogc_percent in the file once the disk has room")
	assert.Positive(t, refreshed(t, r, "sched.goroutines_goroutines"), "goroutines in the file once the disk has room")
}
