package mmv

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNamespaceCheckReadsNoUnrelatedFile: beside 100 files whose names
// relate to none of a registry's at a dot, Start's check of its names
// reads none of them, its cost that of a look at each name of the
// directory's scan, which the claim of a cluster makes anyway; beside 100
// NoPrefix files, whose names may be anything, it reads their names (200
// each, in string records: version 2), and finds no clash. The costs are
// logged.
func TestNamespaceCheckReadsNoUnrelatedFile(t *testing.T) {
	for _, flags := range []Flags{0, NoPrefix} {
		t.Run(fmt.Sprintf("flags %d", flags), func(t *testing.T) {
			dir := t.TempDir()
			for i := range 100 {
				o := NewRegistry(fmt.Sprintf("unrelated%03d", i), &Options{Dir: dir, Flags: flags, Version: Version2}) // names in string records
				t.Cleanup(func() { o.Close() })
				for j := range 200 {
					NewCounter(o, fmt.Sprintf("u%03d.c%03d", i, j), "", Count).Inc()
				}
				startOrSkip(t, o)
			}
			r := NewRegistry("probe", &Options{Dir: dir})
			defer r.Close()
			NewCounter(r, "x", "", Count).Inc()
			d, err := openDir(dir)
			require.NoError(t, err)
			defer d.Close()

			r.mu.Lock()
			defer r.mu.Unlock()
			began := time.Now()
			_, shown := liveClusters(d, func(string) bool { return false })
			scan := time.Since(began)
			require.Len(t, shown, 100)
			read := 0
			for _, f := range shown {
				if f.flags&NoPrefix != 0 || r.clashLocked(f.name) != nil {
					read++
				}
			}
			began = time.Now()
			require.NoError(t, r.checkNamespaceLocked(d, shown))
			check := time.Since(began)
			if flags == 0 {
				assert.Zero(t, read, "files whose names the check reads")
			} else {
				assert.Equal(t, 100, read, "a NoPrefix file's names may be anything")
			}
			t.Logf("the directory's scan %v, the check %v, reading the names of %d files", scan, check, read)
		})
	}
}
