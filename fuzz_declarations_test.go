package mmv_test

import (
	"bytes"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/mmvfile"
)

// sentinels are the errors every refusal must wrap.
var sentinels = []error{mmv.ErrName, mmv.ErrDuplicate, mmv.ErrRange, mmv.ErrTooLong, mmv.ErrTooMany,
	mmv.ErrNamespace, mmv.ErrUnknown, mmv.ErrLabel, mmv.ErrType, mmv.ErrStarted, mmv.ErrNotStarted,
	mmv.ErrClosed, mmv.ErrInUse, mmv.ErrFile, mmv.ErrUnsupported}

func typedError(err error) bool {
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return strings.HasPrefix(err.Error(), "mmv: ")
		}
	}
	return false
}

// fuzzing reports whether the test runs under go test -fuzz, rather than
// over the seed corpus.
func fuzzing() bool {
	for _, name := range []string{"test.fuzz", "test.fuzzworker"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" && f.Value.String() != "false" {
			return true
		}
	}
	return false
}

// decls decodes fuzz bytes into declarations: every read past the end
// gives 0.
type decls struct{ b []byte }

func (d *decls) byte() byte {
	if len(d.b) == 0 {
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decls) pick(n int) int { return int(d.byte()) % n }

// name builds a name of up to 7 characters from an alphabet with the
// characters PCP refuses, or a name long enough to need a v2 file or to be
// refused.
func (d *decls) name(alphabet string) string {
	switch n := d.pick(16); n {
	case 14:
		return "l" + strings.Repeat("o", 62+d.pick(4)) // 63..66 bytes: v1 or v2
	case 15:
		return "l" + strings.Repeat("o", 254+d.pick(3)) // 255..257 bytes
	default:
		var s []byte
		for range n%8 + 1 {
			s = append(s, alphabet[d.pick(len(alphabet))])
		}
		return string(s)
	}
}

const (
	nameChars     = "abcab.._1A-/ \x00é"
	instanceChars = "ab  1\"'\x00é\n\t-[]"
)

func (d *decls) text() string {
	return []string{"", "", "short", "two\nlines", strings.Repeat("h", 255), strings.Repeat("h", 256),
		"nul\x00", "é ünïcode", "  spaces  ", "%s %d"}[d.pick(10)]
}

func (d *decls) serial() uint32 { return []uint32{1, 2, 3, 1, 2, 0, 2047, 2048}[d.pick(8)] }

func (d *decls) id() int32 { return []int32{0, 1, 2, 3, -1, math.MaxInt32}[d.pick(6)] }

func (d *decls) label() mmv.Label {
	l := mmv.Label{Name: d.name("abl_1.A-"), Optional: d.pick(2) == 1}
	values := []any{"str", 1.5, -2, true, false, nil, []any{1, "a", nil}, map[string]any{"k": 1, "m": []int{2}},
		"long", "quote\" back\\slash", "é", math.NaN(), func() {}, uint64(math.MaxUint64), "</script>", ""}
	if i := d.pick(len(values)); i == 8 {
		l.Value = strings.Repeat("v", 200+d.pick(50)) // around the payload's limit
	} else {
		l.Value = values[i]
	}
	return l
}

// registry declares what the bytes say, in a registry writing to dir, and
// returns it with the metrics it accepted (name to indom serial) and the
// instances of each accepted indom. A Start may come among the
// declarations, which then grow the started file.
func (d *decls) registry(t *testing.T, dir string) (*mmv.Registry, map[string]uint32, map[uint32]int) {
	opts := &mmv.Options{
		Dir:          dir,
		Cluster:      []uint32{0, 1, 42, 4095, 4096}[d.pick(5)],
		Flags:        mmv.Flags(d.pick(16)),
		Version:      []int{0, 0, 0, 2, 3, 1, 4}[d.pick(7)],
		PublishDelay: 1 << 40, // published by Flush only
		// From the input's length, not a byte of it, so that the seeds
		// declare what they declared before the option was.
		PadValues: len(d.b)%2 == 1,
	}
	file := d.name(nameChars)
	if d.pick(4) != 0 {
		file = "app"
	}
	r := mmv.NewRegistry(file, opts)
	metrics, indoms := map[string]uint32{}, map[uint32]int{}
	trace := !fuzzing()
	check := func(op string, err error) bool {
		t.Helper()
		if trace {
			t.Logf("%s: %v", op, err)
		}
		require.False(t, err != nil && !typedError(err), "%s: an error that wraps none of the sentinels: %v", op, err)
		return err == nil
	}
	for range 48 {
		if len(d.b) == 0 {
			break
		}
		switch d.pick(9) {
		case 0:
			in := mmv.Indom{Serial: d.serial(), ShortHelp: d.text(), LongHelp: d.text()}
			// Sometimes past two of AddIndom's batches of 16 (addAll),
			// mostly instances that differ, some of the fuzzer's own.
			n := d.pick(4)
			many := n == 3 && d.pick(4) == 0
			if many {
				n = 33 + d.pick(16)
			}
			for k := range n {
				inst := mmv.Instance{ID: d.id(), Name: d.name(instanceChars)}
				if many && d.pick(8) != 0 {
					inst = mmv.Instance{ID: int32(k), Name: "n" + strconv.Itoa(k)}
				}
				in.Instances = append(in.Instances, inst)
			}
			if check("AddIndom", r.AddIndom(in)) {
				indoms[in.Serial] = len(in.Instances)
			}
		case 1:
			s := d.serial()
			if check("AddInstance", r.AddInstance(s, mmv.Instance{ID: d.id(), Name: d.name(instanceChars)})) {
				indoms[s]++
			}
		case 2, 3:
			m := mmv.Metric{
				Name:      d.name(nameChars),
				Item:      []uint32{0, 0, 0, 1, 2, 1023, 1024}[d.pick(7)],
				Type:      mmv.Type(d.pick(11)),
				Semantics: mmv.Semantics(d.pick(6)),
				Units:     []mmv.Units{mmv.NoUnits, mmv.Count, mmv.Kbyte.Per(mmv.Second), mmv.Microsecond, mmv.Units(0xF0000000), mmv.Units(0x0000FFFF)}[d.pick(6)],
				ShortHelp: d.text(),
				LongHelp:  d.text(),
			}
			if d.pick(2) == 1 {
				m.Indom = d.serial()
			}
			if check("AddMetric", r.AddMetric(m)) {
				metrics[m.Name] = m.Indom
			}
		case 4:
			check("AddLabel", r.AddLabel(d.label()))
		case 5:
			name := d.name(nameChars)
			if len(metrics) > 0 && d.pick(4) != 0 {
				names := make([]string, 0, len(metrics))
				for n := range metrics {
					names = append(names, n)
				}
				sort.Strings(names)
				name = names[d.pick(len(names))]
			}
			check("AddMetricLabel", r.AddMetricLabel(name, d.label()))
		case 6:
			check("AddIndomLabel", r.AddIndomLabel(d.serial(), d.label()))
		case 7:
			check("AddInstanceLabel", r.AddInstanceLabel(d.serial(), d.id(), d.label()))
		case 8:
			check("Start", r.Start())
		}
	}
	return r, metrics, indoms
}

// FuzzDeclarations declares registries from fuzz bytes: indoms, instances,
// metrics and labels of every kind, with names, items, serials, types,
// units, help and label values both valid and not, in any order, a Start
// anywhere among them, values packed or padded. Every refusal must wrap one of the exported
// sentinels, nothing may panic, and a registry that starts must yield a
// file that mmvfile parses with every accepted metric. Over the seed corpus
// (not while fuzzing) PCP's reader, when installed, must load the file
// whole: every accepted metric, and every instance of its indom.
func FuzzDeclarations(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x01\x00\x00\x00\x00\x00\x00\x02\x01\x03\x01\x01\x01\x01\x00\x00\x01\x00"))
	// An indom of 38 instances n0..n37 (past two of AddIndom's batches),
	// a Uint64 counter "ab" over it, then Start.
	many := []byte{2, 0, 0, 0, 0, 1, 0, 0, 0, 0, 3, 0, 5}
	many = append(many, bytes.Repeat([]byte{0, 0, 0, 1}, 38)...)
	f.Add(append(many, 2, 1, 0, 1, 0, 3, 1, 1, 2, 0, 1, 0, 8))
	f.Fuzz(func(t *testing.T, data []byte) {
		tmp := t.TempDir()
		d := &decls{b: data}
		r, metrics, indoms := d.registry(t, filepath.Join(tmp, "mmv"))
		defer r.Close()
		if err := r.Start(); err != nil && !errors.Is(err, mmv.ErrStarted) {
			t.Logf("Start refused: %v", err)
			require.True(t, typedError(err), "Start: an error that wraps none of the sentinels: %v", err)
			es, _ := os.ReadDir(filepath.Join(tmp, "mmv"))
			require.Empty(t, es, "a refused Start left files")
			return
		}
		require.NoError(t, r.Flush(), "Flush")
		file, err := mmvfile.Open(r.Path())
		require.NoError(t, err, "mmvfile cannot parse the file")
		require.Len(t, file.Metrics, len(metrics), "the file's metrics, against those declared")
		for name := range metrics {
			v, err := r.Value(name, "")
			require.False(t, metrics[name] == 0 && (err != nil || v == nil), "no handle on %q: %v", name, err)
		}
		t.Logf("%s: %d metrics, %d indoms, %d labels, version %d", r.Path(), len(file.Metrics), len(file.Indoms), len(file.Labels), file.Header.Version)
		if fuzzing() || !pcptest.WantPCP(t) {
			return
		}
		prefix := "mmv." + r.Name() + "."
		if file.Header.Flags&mmv.NoPrefix != 0 {
			prefix = "mmv."
		}
		shown := map[string]*pcptest.Metric{}
		ms := pcptest.Info(t, tmp)
		for i := range ms {
			if !strings.HasPrefix(ms[i].Name, "mmv.control.") {
				shown[ms[i].Name] = &ms[i]
			}
		}
		t.Logf("PCP's reader shows %d metrics", len(shown))
		for name, serial := range metrics {
			m := shown[prefix+name]
			if !assert.NotNil(t, m, "PCP does not show %s%s", prefix, name) {
				continue
			}
			delete(shown, prefix+name)
			// Values PCP shows per instance: all of them, but where the
			// Sentinel flag hides a String's empty value.
			assert.False(t, serial != 0 && file.Header.Flags&mmv.Sentinel == 0 && len(m.Instances) != indoms[serial], "PCP shows %d instances of %s, the indom has %d", len(m.Instances), m.Name, indoms[serial])
		}
		assert.Empty(t, shown, "PCP shows metrics that were not declared")
	})
}
