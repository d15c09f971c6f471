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

// BenchmarkGrowthStep is a declaration after Start and its publication,
// on a file of an indom of n instances over four metrics: one instance
// added, then Flush, which writes the whole file anew and renames it into
// place. Its cost should follow the file's size (compare the two sizes)
// and stay within twice its floor, "floor": making a file of the same size
// in the same directory as a step does (create it, allocate its blocks,
// write it whole from memory that holds data, rename it over the last).
func BenchmarkGrowthStep(b *testing.B) {
	dir := filepath.Join(tmpDir, "mmv")
	for _, n := range []int{1000, 10000} {
		name := "growth" + strconv.Itoa(n)
		r := mmv.NewRegistry(name, &mmv.Options{Dir: dir, PublishDelay: time.Hour, MaxIndomInstances: -1, MaxInstances: -1})
		check(b, r.AddIndom(mmv.Indom{Serial: 1, ShortHelp: "Instances"}))
		for i := range 4 {
			check(b, r.AddMetric(mmv.Metric{Name: "m" + strconv.Itoa(i), Type: mmv.Uint64, Semantics: mmv.SemCounter, Indom: 1}))
		}
		startMMV(b, r)
		id := int32(0)
		add := func() error {
			id++
			return r.AddInstance(1, mmv.Instance{ID: id, Name: "i" + strconv.Itoa(int(id))})
		}
		for range n {
			check(b, add())
		}
		check(b, r.Flush())
		size := func() int64 { return must(os.Stat(filepath.Join(dir, name)))(b).Size() }
		b.Run(strconv.Itoa(n)+"/mmv", func(b *testing.B) {
			for b.Loop() {
				check(b, add())
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
