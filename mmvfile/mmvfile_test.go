package mmvfile_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/mmvfile"
)

var ne = binary.NativeEndian

// sample returns a small file of the given version by our writer: an
// indom of two instances, a metric over it, a string and an elapsed metric
// with help, and in v3 a label of each kind. It is the one stored in
// testdata (sample_vN.mmv), so that the parsing tests run where mmv writes
// no files; where it does, the writer writes it again and must write what
// is stored (-update stores it).
func sample(t testing.TB, version int) []byte {
	t.Helper()
	stored := filepath.Join("testdata", "sample_v"+strconv.Itoa(version)+".mmv")
	if pcptest.HasFileLayer() != nil {
		b, err := os.ReadFile(stored)
		require.NoError(t, err)
		return b
	}
	opts := &mmv.Options{Cluster: 12, Dir: t.TempDir()}
	r := mmv.NewRegistry("sample", opts)
	name := "requests"
	if version > 1 {
		name = strings.Repeat("long.", 13) + "name" // 69 bytes: v2
	}
	require.NoError(t, r.AddIndom(mmv.Indom{Serial: 3, ShortHelp: "methods", Instances: []mmv.Instance{{ID: 1, Name: "get"}, {ID: 2, Name: "put"}}}))
	require.NoError(t, r.AddMetric(mmv.Metric{Name: name, Type: mmv.Uint64, Semantics: mmv.SemCounter, Units: mmv.Count, Indom: 3}))
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "version", Type: mmv.String, Semantics: mmv.SemDiscrete, ShortHelp: "v", LongHelp: "the version"}))
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "busy", Type: mmv.Elapsed, Semantics: mmv.SemCounter, Units: mmv.Microsecond}))
	if version == 3 {
		require.NoError(t, r.AddLabel(mmv.Label{Name: "app", Value: "x"}))
		require.NoError(t, r.AddMetricLabel("busy", mmv.Label{Name: "b", Value: 1}))
		require.NoError(t, r.AddIndomLabel(3, mmv.Label{Name: "i", Value: true, Optional: true}))
		require.NoError(t, r.AddInstanceLabel(3, 2, mmv.Label{Name: "n", Value: nil}))
	}
	require.NoError(t, r.Start())
	defer r.Close()
	v, err := r.Value("version", "")
	require.NoError(t, err)
	require.NoError(t, v.SetString("1.2.3"))
	b, err := os.ReadFile(r.Path())
	require.NoError(t, err)
	require.Equal(t, version, int(ne.Uint32(b[4:])), "sample version")
	checkStored(t, stored, b)
	return b
}

func section(f *mmvfile.File, typ mmvfile.SectionType) mmvfile.Section {
	for _, s := range f.TOC {
		if s.Type == typ {
			return s
		}
	}
	panic("no " + typ.String() + " section")
}

// metricField is the offset of a metric record's field after the name:
// item 0, type 4, semantics 8, units 12, indom 16, pad 20, help 24 and 32.
func metricField(f *mmvfile.File, m *mmvfile.Metric, field uint64) uint64 {
	if f.Header.Version == 1 {
		return m.Offset + 64 + field
	}
	return m.Offset + 8 + field
}

func TestParseValid(t *testing.T) {
	for version := 1; version <= 3; version++ {
		f, err := mmvfile.Parse(sample(t, version))
		require.NoError(t, err, "version %d", version)
		assert.Equal(t, version, f.Header.Version)
		assert.Equal(t, uint32(12), f.Header.Cluster)
		require.Len(t, f.Indoms, 1)
		in := f.Indoms[0]
		assert.Equal(t, uint32(3), in.Serial)
		assert.Equal(t, "methods", in.ShortHelp.Text)
		assert.Zero(t, in.LongHelp.Offset)
		require.Len(t, in.Instances, 2)
		assert.Equal(t, "put", in.Instances[1].Name)
		assert.Same(t, in, in.Instances[1].Indom)
		require.Len(t, f.Metrics, 3)
		assert.Equal(t, mmv.String, f.Metrics[1].Type)
		assert.Equal(t, "the version", f.Metrics[1].LongHelp.Text)
		assert.True(t, f.Metrics[1].Singular())
		require.Len(t, f.Values, 4)
		assert.Equal(t, "put", f.Values[1].Instance.Name)
		assert.Equal(t, "1.2.3", f.Values[2].String)
		assert.Nil(t, f.Values[2].Instance)
		if version == 3 {
			require.Len(t, f.Labels, 4)
			assert.Equal(t, `{"i":true}`, f.Labels[2].Payload)
			assert.Equal(t, uint32(mmvfile.LabelIndom|mmvfile.LabelOptional), f.Labels[2].Flags)
			assert.Equal(t, int32(2), f.Labels[3].Internal)
		}
	}
}

func TestOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(path, sample(t, 2), 0o644))
	f, err := mmvfile.Open(path)
	require.NoError(t, err)
	assert.Equal(t, 2, f.Header.Version)
	_, err = mmvfile.Open(filepath.Join(t.TempDir(), "missing"))
	assert.ErrorIs(t, err, os.ErrNotExist)
	_, err = mmvfile.Open(t.TempDir())
	assert.ErrorContains(t, err, "not a regular file")
}

// TestOpenRefusesBySize: a file past MaxSize is refused by its size,
// not read first: a sparse one, free on disk, took 2 GiB of memory and
// seconds to refuse.
func TestOpenRefusesBySize(t *testing.T) {
	path := oversized(t)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := mmvfile.Open(path)
	runtime.ReadMemStats(&after)
	require.ErrorIs(t, err, mmvfile.ErrCount)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20), "bytes allocated to refuse it")
}

// TestReadFileErrorsNameThePath: every error of ReadFile and Open about
// the file itself names it, as os's do: a file past MaxSize was refused
// with "file is larger than 1073741824 bytes", and mmvdump FILE printed
// that alone.
func TestReadFileErrorsNameThePath(t *testing.T) {
	path := oversized(t)
	for _, read := range []func(string) error{
		func(p string) error { _, err := mmvfile.ReadFile(p); return err },
		func(p string) error { _, err := mmvfile.Open(p); return err },
	} {
		err := read(path)
		require.ErrorIs(t, err, mmvfile.ErrCount)
		assert.ErrorContains(t, err, path)
		dir := t.TempDir()
		assert.ErrorContains(t, read(dir), dir+": not a regular file")
	}
}

// TestOpenWhileUpdated reads a file while its values change.
func TestOpenWhileUpdated(t *testing.T) {
	pcptest.NeedFileLayer(t)
	r := mmv.NewRegistry("busy", &mmv.Options{Dir: t.TempDir()})
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "n", Type: mmv.Uint64, Semantics: mmv.SemCounter}))
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "s", Type: mmv.String, Semantics: mmv.SemDiscrete}))
	require.NoError(t, r.Start())
	defer r.Close()
	n, err := r.Value("n", "")
	require.NoError(t, err)
	s, err := r.Value("s", "")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 20000 {
			n.Inc()
			assert.NoError(t, s.SetString(strings.Repeat("x", i%256)))
		}
	}()
	for range 200 {
		f, err := mmvfile.Open(r.Path())
		require.NoError(t, err)
		assert.Len(t, f.Values, 2)
	}
	<-done
}

func TestElapsed(t *testing.T) {
	b := sample(t, 1)
	f, err := mmvfile.Parse(b)
	require.NoError(t, err)
	v := f.Values[3]
	require.Equal(t, mmv.Elapsed, v.Metric.Type)
	ne.PutUint64(b[v.Offset:], 500)
	extra := int64(-1_000_000)
	ne.PutUint64(b[v.Offset+8:], uint64(extra))
	f, err = mmvfile.Parse(b)
	require.NoError(t, err)
	v = f.Values[3]
	assert.Equal(t, int64(500), v.Int)
	now := mmvTime(1_000_250)
	assert.Equal(t, int64(750), v.Elapsed(now), "open interval: value + now + extra")
	v.Extra = 0
	assert.Equal(t, int64(500), v.Elapsed(now), "closed")
}

// mutation breaks a valid file; f is the file parsed.
type mutation struct {
	name    string
	version int // 0: every version
	mutate  func(b []byte, f *mmvfile.File) []byte
	want    error
}

func put32(b []byte, off uint64, v uint32) []byte { ne.PutUint32(b[off:], v); return b }
func put64(b []byte, off uint64, v uint64) []byte { ne.PutUint64(b[off:], v); return b }

// tocEntry is the offset of the TOC entry of a section type.
func tocEntry(f *mmvfile.File, typ mmvfile.SectionType) uint64 { return section(f, typ).TOCOffset }

var mutations = []mutation{
	{"bad magic", 0, func(b []byte, f *mmvfile.File) []byte { b[0] = 'm'; return b }, mmvfile.ErrMagic},
	{"magic without NUL", 0, func(b []byte, f *mmvfile.File) []byte { b[3] = ' '; return b }, mmvfile.ErrMagic},
	{"version 0", 0, func(b []byte, f *mmvfile.File) []byte { return put32(b, 4, 0) }, mmvfile.ErrVersion},
	{"version 4", 0, func(b []byte, f *mmvfile.File) []byte { return put32(b, 4, 4) }, mmvfile.ErrVersion},
	{"version -1", 0, func(b []byte, f *mmvfile.File) []byte { return put32(b, 4, math.MaxUint32) }, mmvfile.ErrVersion},
	{"zero generations", 0, func(b []byte, f *mmvfile.File) []byte { return put64(put64(b, 8, 0), 16, 0) }, mmvfile.ErrGeneration},
	{"gen2 not yet written", 0, func(b []byte, f *mmvfile.File) []byte { return put64(b, 16, 0) }, mmvfile.ErrGeneration},
	{"mismatched generations", 0, func(b []byte, f *mmvfile.File) []byte { return put64(b, 16, f.Header.Gen1+1) }, mmvfile.ErrGeneration},
	{"1 TOC entry", 0, func(b []byte, f *mmvfile.File) []byte { return put32(b, 24, 1) }, mmvfile.ErrCount},
	// PCP reads any number of entries (TestReadsTOCEntriesPCPIgnores),
	// but these are over the first section.
	{"7 TOC entries over the indoms", 0, func(b []byte, f *mmvfile.File) []byte { return put32(b, 24, 7) }, mmvfile.ErrOffset},
	{"negative TOC entries", 0, func(b []byte, f *mmvfile.File) []byte { return put32(b, 24, math.MaxUint32) }, mmvfile.ErrCount},
	{"cluster 4096", 0, func(b []byte, f *mmvfile.File) []byte { return put32(b, 36, 4096) }, mmvfile.ErrField},
	{"section listed twice", 0, func(b []byte, f *mmvfile.File) []byte { return put32(b, 56, ne.Uint32(b[40:])) }, mmvfile.ErrSection},
	{"1024 metrics", 0, func(b []byte, f *mmvfile.File) []byte { return put32(b, tocEntry(f, mmvfile.Metrics)+4, 1024) }, mmvfile.ErrCount},
	{"256 labels", 3, func(b []byte, f *mmvfile.File) []byte { return put32(b, tocEntry(f, mmvfile.Labels)+4, 256) }, mmvfile.ErrCount},
	{"count beyond the file", 0, func(b []byte, f *mmvfile.File) []byte {
		return put32(b, tocEntry(f, mmvfile.Values)+4, 1<<30)
	}, mmvfile.ErrTruncated},
	{"offset beyond the file", 0, func(b []byte, f *mmvfile.File) []byte {
		return put64(b, tocEntry(f, mmvfile.Metrics)+8, 1<<40)
	}, mmvfile.ErrOffset},
	{"offset wrapping around", 0, func(b []byte, f *mmvfile.File) []byte {
		return put64(b, tocEntry(f, mmvfile.Values)+8, math.MaxUint64-31)
	}, mmvfile.ErrOffset},
	{"strings wrapping around", 0, func(b []byte, f *mmvfile.File) []byte {
		return put64(b, tocEntry(f, mmvfile.Strings)+8, math.MaxUint64-255)
	}, mmvfile.ErrOffset},
	{"misaligned section", 0, func(b []byte, f *mmvfile.File) []byte {
		return put64(b, tocEntry(f, mmvfile.Metrics)+8, section(f, mmvfile.Metrics).Offset+4)
	}, mmvfile.ErrOffset},
	{"section over the header", 0, func(b []byte, f *mmvfile.File) []byte { return put64(b, tocEntry(f, mmvfile.Indoms)+8, 0) }, mmvfile.ErrOffset},
	{"overlapping sections", 0, func(b []byte, f *mmvfile.File) []byte {
		return put64(b, tocEntry(f, mmvfile.Values)+8, section(f, mmvfile.Metrics).Offset)
	}, mmvfile.ErrOffset},
	{"value at a non-metric offset", 0, func(b []byte, f *mmvfile.File) []byte {
		return put64(b, f.Values[0].Offset+16, f.Values[0].Metric.Offset+8)
	}, mmvfile.ErrReference},
	{"value at an indom", 0, func(b []byte, f *mmvfile.File) []byte {
		return put64(b, f.Values[0].Offset+16, f.Indoms[0].Offset)
	}, mmvfile.ErrReference},
	{"value at a non-instance", 0, func(b []byte, f *mmvfile.File) []byte {
		return put64(b, f.Values[0].Offset+24, f.Values[0].Instance.Offset+4)
	}, mmvfile.ErrReference},
	{"value of an indom metric with no instance", 0, func(b []byte, f *mmvfile.File) []byte {
		return put64(b, f.Values[0].Offset+24, 0)
	}, mmvfile.ErrReference},
	{"string value at a non-string", 0, func(b []byte, f *mmvfile.File) []byte {
		return put64(b, f.Values[2].Offset+8, f.Values[2].Offset)
	}, mmvfile.ErrReference},
	{"instance of a non-indom", 0, func(b []byte, f *mmvfile.File) []byte {
		return put64(b, f.Instances[1].Offset, f.Metrics[0].Offset)
	}, mmvfile.ErrReference},
	{"indom listing an empty instance record", 0, func(b []byte, f *mmvfile.File) []byte {
		clear(b[f.Instances[1].Offset : f.Instances[1].Offset+instanceSize(f)])
		return b
	}, mmvfile.ErrReference},
	{"value of an empty instance record", 0, func(b []byte, f *mmvfile.File) []byte {
		put32(b, f.Indoms[0].Offset+4, 1)
		clear(b[f.Instances[1].Offset : f.Instances[1].Offset+instanceSize(f)])
		return b
	}, mmvfile.ErrReference},
	{"instance id -1", 0, func(b []byte, f *mmvfile.File) []byte {
		return put32(b, f.Instances[1].Offset+12, math.MaxUint32)
	}, mmvfile.ErrField},
	{"duplicate instance id", 0, func(b []byte, f *mmvfile.File) []byte {
		return put32(b, f.Instances[1].Offset+12, uint32(f.Instances[0].ID))
	}, mmvfile.ErrField},
	{"indom with more instances than there are", 0, func(b []byte, f *mmvfile.File) []byte {
		return put32(b, f.Indoms[0].Offset+4, 3)
	}, mmvfile.ErrReference},
	{"indom's instances at a non-instance", 0, func(b []byte, f *mmvfile.File) []byte {
		return put64(b, f.Indoms[0].Offset+8, f.Indoms[0].FirstInstance+8)
	}, mmvfile.ErrReference},
	{"indom help at a non-string", 0, func(b []byte, f *mmvfile.File) []byte {
		return put64(b, f.Indoms[0].Offset+16, f.Indoms[0].ShortHelp.Offset+1)
	}, mmvfile.ErrReference},
	{"metric help at a non-string", 0, func(b []byte, f *mmvfile.File) []byte {
		return put64(b, metricField(f, f.Metrics[1], 32), f.Metrics[1].LongHelp.Offset+256*1000)
	}, mmvfile.ErrReference},
	{"metric name at a non-string", 2, func(b []byte, f *mmvfile.File) []byte {
		return put64(b, f.Metrics[1].Offset, f.Metrics[1].NameOffset-1)
	}, mmvfile.ErrReference},
	{"unknown type", 0, func(b []byte, f *mmvfile.File) []byte { return put32(b, metricField(f, f.Metrics[0], 4), 7) }, mmvfile.ErrField},
	// PCP reads an instance name past its slot, into the next (of the
	// other strings with no NUL, it shows the first 255 bytes:
	// TestReadsWhatPCPReadsReview).
	{"instance name without NUL", 2, func(b []byte, f *mmvfile.File) []byte {
		copy(b[f.Instances[0].NameOffset:], bytes.Repeat([]byte{'s'}, 256))
		return b
	}, mmvfile.ErrField},
	{"instance name without NUL", 3, func(b []byte, f *mmvfile.File) []byte {
		copy(b[f.Instances[0].NameOffset:], bytes.Repeat([]byte{'s'}, 256))
		return b
	}, mmvfile.ErrField},
	{"instance name without NUL", 1, func(b []byte, f *mmvfile.File) []byte {
		copy(b[f.Instances[0].Offset+16:], bytes.Repeat([]byte{'s'}, 64))
		return b
	}, mmvfile.ErrField},
	{"label payload without NUL", 3, func(b []byte, f *mmvfile.File) []byte {
		copy(b[f.Labels[0].Offset+12:], bytes.Repeat([]byte{' '}, 244))
		return b
	}, mmvfile.ErrField},
}

var sentinels = []error{mmvfile.ErrTruncated, mmvfile.ErrMagic, mmvfile.ErrVersion, mmvfile.ErrGeneration,
	mmvfile.ErrSection, mmvfile.ErrOffset, mmvfile.ErrCount, mmvfile.ErrReference, mmvfile.ErrField}

// checkError checks that err wraps want and no other sentinel.
func checkError(t *testing.T, err, want error) {
	t.Helper()
	require.ErrorIs(t, err, want)
	for _, s := range sentinels {
		if s != want {
			assert.False(t, errors.Is(err, s), "%v also wraps %v", err, s)
		}
	}
	assert.True(t, strings.HasPrefix(err.Error(), "mmvfile: "+want.Error()+": "), "%v", err)
}

func TestCorrupt(t *testing.T) {
	for version := 1; version <= 3; version++ {
		valid := sample(t, version)
		f, err := mmvfile.Parse(valid)
		require.NoError(t, err)
		for _, m := range mutations {
			if m.version != 0 && m.version != version {
				continue
			}
			t.Run(m.name+"/v"+string(rune('0'+version)), func(t *testing.T) {
				_, err := mmvfile.Parse(m.mutate(bytes.Clone(valid), f))
				checkError(t, err, m.want)
			})
		}
	}
}

// TestTruncated cuts a file of each version at every byte: within the
// header and TOC, at every section boundary and within every record.
func TestTruncated(t *testing.T) {
	for version := 1; version <= 3; version++ {
		valid := sample(t, version)
		for n := range len(valid) {
			_, err := mmvfile.Parse(valid[:n])
			require.ErrorIs(t, err, mmvfile.ErrTruncated, "v%d cut at %d of %d", version, n, len(valid))
		}
	}
}

func TestErrorNamesTheRecord(t *testing.T) {
	valid := sample(t, 2)
	f, err := mmvfile.Parse(valid)
	require.NoError(t, err)
	b := put64(bytes.Clone(valid), f.Values[1].Offset+16, 8)
	_, err = mmvfile.Parse(b)
	assert.EqualError(t, err, "mmvfile: bad reference: value [1] at offset "+itoa(f.Values[1].Offset)+": metric offset 8 is not a metric record")
}

// TestOverlapNamesTheSections: sections that overlap are named by their
// TOC entries, as every other section error names its own; the error
// gave their offsets alone.
func TestOverlapNamesTheSections(t *testing.T) {
	valid := sample(t, 2)
	f, err := mmvfile.Parse(valid)
	require.NoError(t, err)
	metrics, values := section(f, mmvfile.Metrics), section(f, mmvfile.Values)
	b := put64(bytes.Clone(valid), values.TOCOffset+8, metrics.Offset)
	_, err = mmvfile.Parse(b)
	index := func(s mmvfile.Section) string { return itoa((s.TOCOffset - 40) / 16) }
	assert.EqualError(t, err, "mmvfile: bad offset: TOC["+index(values)+"] (values) at offset "+itoa(values.TOCOffset)+
		": offset "+itoa(metrics.Offset)+" is within TOC["+index(metrics)+"] (metrics), which runs from "+itoa(metrics.Offset)+
		" to "+itoa(metrics.Offset+uint64(metrics.Count)*48))
}

// TestEmptySection accepts an empty section anywhere within the file, and
// an indom with no instances.
func TestEmptySection(t *testing.T) {
	pcptest.NeedFileLayer(t)
	r := mmv.NewRegistry("empty", &mmv.Options{Dir: t.TempDir()})
	require.NoError(t, r.AddIndom(mmv.Indom{Serial: 1}))
	require.NoError(t, r.AddMetric(mmv.Metric{Name: "m", Type: mmv.Int32, Semantics: mmv.SemCounter, Indom: 1}))
	require.NoError(t, r.Start())
	defer r.Close()
	f, err := mmvfile.Open(r.Path())
	require.NoError(t, err)
	assert.Equal(t, 0, section(f, mmvfile.Instances).Count)
	assert.Equal(t, 0, section(f, mmvfile.Values).Count)
	assert.Empty(t, f.Indoms[0].Instances)
}

func mmvTime(usec int64) time.Time { return time.UnixMicro(usec) }

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

// TestParseLinearInIndoms: a file's values of a metric whose indom the
// file lacks, on instances of another indom, are checked against a set of
// the file's serials: a walk of every indom each, a hostile file of 6.4 MB
// (100,000 indoms and values) took 14.5 s to parse, 50 ms now. The
// deadline, 60 times that, guards against the walk, not a speed.
func TestParseLinearInIndoms(t *testing.T) {
	const n = 100_000
	b := rawV1(n, 1, n, 5_000_000)
	var err error
	within(t, 5*time.Second, "Parse of a 6.4 MB file", func() { _, err = mmvfile.Parse(b) })
	require.NoError(t, err)
}
