package promcheck

import (
	"bytes"
	"errors"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/expose"
)

// exposition is what a parser read: every sample by series key, and every
// family's type.
type exposition struct {
	samples map[string]float64
	types   map[string]string
}

// key names a series: its name, then its labels sorted, le formatted as a
// float so that both parsers agree.
func key(name string, ls map[string]string) string {
	names := make([]string, 0, len(ls))
	for n := range ls {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('{')
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		v := ls[n]
		if n == "le" {
			f, _ := strconv.ParseFloat(v, 64)
			v = strconv.FormatFloat(f, 'g', -1, 64)
		}
		b.WriteString(n + "=" + strconv.Quote(v))
	}
	b.WriteByte('}')
	return b.String()
}

// parseText parses the text format with expfmt's parser.
func parseText(t *testing.T, text []byte) exposition {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(text))
	require.NoError(t, err, "%s", text)
	e := exposition{samples: map[string]float64{}, types: map[string]string{}}
	for name, mf := range mfs {
		e.types[name] = strings.ToLower(mf.GetType().String())
		for _, m := range mf.GetMetric() {
			ls := map[string]string{}
			for _, l := range m.GetLabel() {
				ls[l.GetName()] = l.GetValue()
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				e.add(t, key(name, ls), m.GetCounter().GetValue())
			case dto.MetricType_GAUGE:
				e.add(t, key(name, ls), m.GetGauge().GetValue())
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				for _, b := range h.GetBucket() {
					ls["le"] = strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64)
					e.add(t, key(name+"_bucket", ls), float64(b.GetCumulativeCount()))
				}
				delete(ls, "le")
				e.add(t, key(name+"_sum", ls), h.GetSampleSum())
				e.add(t, key(name+"_count", ls), float64(h.GetSampleCount()))
			default:
				t.Fatalf("family %s: type %v", name, mf.GetType())
			}
		}
	}
	// expfmt is client_golang's reader; a scrape of the text format reads
	// it with textparse's PromParser, which must read the same.
	scraped := parseScrape(t, textparse.NewPromParser(text, labels.NewSymbolTable(), false), text)
	require.Equal(t, e.samples, scraped.samples, "expfmt and Prometheus's scrape parser disagree")
	return e
}

// parseOpenMetrics parses OpenMetrics with Prometheus's own parser, the
// one its scrapes use.
func parseOpenMetrics(t *testing.T, text []byte) exposition {
	t.Helper()
	return parseScrape(t, textparse.NewOpenMetricsParser(text, labels.NewSymbolTable()), text)
}

// parseScrape reads text with p, one of the parsers of Prometheus's
// scrapes.
func parseScrape(t *testing.T, p textparse.Parser, text []byte) exposition {
	t.Helper()
	e := exposition{samples: map[string]float64{}, types: map[string]string{}}
	for {
		entry, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, "%s", text)
		switch entry {
		case textparse.EntryType:
			name, typ := p.Type()
			e.types[string(name)] = string(typ)
		case textparse.EntrySeries:
			_, _, v := p.Series()
			var ls labels.Labels
			p.Labels(&ls)
			m := ls.Map()
			name := m["__name__"]
			delete(m, "__name__")
			e.add(t, key(name, m), v)
		}
	}
	return e
}

func (e exposition) add(t *testing.T, k string, v float64) {
	_, dup := e.samples[k]
	require.False(t, dup, "series %s twice", k)
	e.samples[k] = v
}

// scrape returns r's exposition in format f, as the handler serves it.
func scrape(t *testing.T, r *mmv.Registry, f expose.Format) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, expose.Write(&b, r, f))
	return b.Bytes()
}

// near reports whether two values agree to 1e-9 relatively.
func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(1, math.Abs(a), math.Abs(b)) }

func io_Copy(w io.Writer, resp *http.Response) (int64, error) {
	defer resp.Body.Close()
	return io.Copy(w, resp.Body)
}
