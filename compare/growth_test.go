//go:build linux

package compare

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/gopcp/mmv"
	"golang.org/x/sys/unix"
)

// BenchmarkGrowthStep is a publication of a file of a counter vector of n
// instances, after one instance was first used and another deleted (so
// that n holds): Flush writes the whole file anew and renames it into
// place. Its cost should follow the file's size (compare the two sizes)
// and stay within twice its floor, "floor": making a file of the same size
// in the same directory as a step does (create it, allocate its blocks,
// write it whole from memory that holds data, rename it over the last).
func BenchmarkGrowthStep(b *testing.B) {
	dir := filepath.Join(tmpDir, "mmv")
	for _, n := range []int{1000, 10000} {
		name := "growth" + strconv.Itoa(n)
		r := mmv.NewRegistry(name, &mmv.Options{Dir: dir, PublishDelay: time.Hour, MaxIndomInstances: -1, MaxInstances: -1, MaxFileValues: -1, MaxValues: -1})
		v := mmv.NewCounterVec(r, "requests", "Requests served, by route", mmv.Count, "route")
		v.SetLimit(n + 1)
		startMMV(b, r)
		route := func(i int) string { return "/api/v1/item/" + strconv.Itoa(i) }
		for i := range n {
			v.With(route(i)).Inc()
		}
		check(b, r.Flush())
		next := n
		size := func() int64 { return must(os.Stat(filepath.Join(dir, name)))(b).Size() }
		b.Run(strconv.Itoa(n)+"/mmv", func(b *testing.B) {
			for b.Loop() {
				if !v.Delete(route(next - n)) {
					b.Fatalf("no instance %s", route(next-n))
				}
				v.With(route(next)).Inc()
				next++
				check(b, r.Flush())
			}
			b.ReportMetric(float64(size()), "file-bytes")
		})
		b.Run(strconv.Itoa(n)+"/floor", func(b *testing.B) {
			buf := make([]byte, size())
			for i := range buf {
				buf[i] = byte(i) | 1
			}
			tmp, to := filepath.Join(dir, ".floor.tmp"), filepath.Join(dir, "floor")
			defer os.Remove(to)
			for b.Loop() {
				f := must(os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644))(b)
				check(b, unix.Fallocate(int(f.Fd()), 0, 0, int64(len(buf))))
				must(f.WriteAt(buf, 0))(b)
				check(b, f.Close())
				check(b, os.Rename(tmp, to))
			}
			b.ReportMetric(float64(len(buf)), "file-bytes")
		})
	}
}
