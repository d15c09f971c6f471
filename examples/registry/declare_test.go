package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/mmvtest"
)

// TestDeclaredAndUpdated: the registry-level declarations and Values, as
// a unit test reads them with mmvtest: no PCP needed.
func TestDeclaredAndUpdated(t *testing.T) {
	pcptest.NeedFileLayer(t) // its Values are the file's
	r, err := declare(&mmv.Options{Dir: filepath.Join(t.TempDir(), "mmv")})
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	require.NoError(t, r.Start())
	s, err := handles(r)
	require.NoError(t, err)
	s.total[1].Inc()
	s.bytes[1].Add(300)
	s.inflight.Inc()
	s.busy.AddDuration(1500 * time.Microsecond)
	s.load.SetFloat(2.5)
	require.NoError(t, mmvtest.Compare(r, `
		busy.time: counter elapsed (microsec) = 1500
		inflight: instant int32 (count) = 1
		load: instant double (none) = 2.5
		requests.bytes: counter uint64 (byte)
		  "GET" = 0
		  "POST" = 300
		  "PUT" = 0
		  "DELETE" = 0
		requests.total: counter uint64 (count)
		  "GET" = 0
		  "POST" = 1
		  "PUT" = 0
		  "DELETE" = 0
		version: discrete string (none) = "1.0.0"
	`))
}
