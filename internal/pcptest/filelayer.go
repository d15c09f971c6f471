package pcptest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/gopcp/mmv/internal/osfile"
)

// HasFileLayer reports whether mmv writes files on this system: nil on
// Linux, macOS and FreeBSD, and otherwise osfile.ErrUnsupported, where
// every registry's Start returns mmv.ErrUnsupported: the systems without a
// port of internal/osfile, and Linux built with -tags mmv_noport, which is
// how CI runs what they run.
var HasFileLayer = sync.OnceValue(func() error {
	d, err := osfile.OpenDir(os.TempDir(), osfile.Format{})
	if errors.Is(err, osfile.ErrUnsupported) {
		return err
	}
	if d != nil {
		d.Close()
	}
	return nil
})

// NeedFileLayer skips a test that needs mmv's files (a started registry,
// or a program that starts one) where there are none (HasFileLayer).
// Unlike MustHave it never fails, even under MMV_REQUIRE_PCP=1: whether a
// system has a port is the build's fact, not the environment's.
func NeedFileLayer(t testing.TB) {
	t.Helper()
	if err := HasFileLayer(); err != nil {
		t.Skipf("no file layer here: %v", err)
	}
}

// RunWithoutFiles runs an example's run function where there is no file
// layer and returns its error: that of its registry's Start, which the
// caller checks is mmv.ErrUnsupported. It fails the test unless run
// returns an error within a second, so that an example stops at once and
// says why instead of serving with no file (or leaving its test waiting
// for one). Where there is a file layer it skips the test.
func RunWithoutFiles(t *testing.T, run func(context.Context, io.Writer, time.Duration) error) error {
	t.Helper()
	if HasFileLayer() == nil {
		t.Skip("mmv writes files here: the test is of systems where it does not")
	}
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	var out bytes.Buffer
	began := time.Now()
	err := run(ctx, &out, time.Minute)
	if took := time.Since(began); err == nil || took > time.Second {
		t.Fatalf("with no file layer the example returned %v after %v, printing %q: it must fail at once", err, took, out.String())
	}
	return err
}
