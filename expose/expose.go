package expose

import (
	"compress/gzip"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/gopcp/mmv"
)

// Format is an exposition format.
type Format int

const (
	// Text is the Prometheus text format, version 0.0.4.
	Text Format = iota
	// OpenMetrics is OpenMetrics text, version 1.0.0.
	OpenMetrics
)

// ContentType returns the format's Content-Type.
func (f Format) ContentType() string {
	if f == OpenMetrics {
		return "application/openmetrics-text; version=1.0.0; charset=utf-8"
	}
	return "text/plain; version=0.0.4; charset=utf-8"
}

// Handler returns a handler serving r (mmv.Default when nil) to
// Prometheus, in the format the request's Accept header prefers (see
// Negotiate), gzipped when its Accept-Encoding allows gzip.
func Handler(r *mmv.Registry) http.Handler {
	if r == nil {
		r = mmv.Default
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		f := Negotiate(req.Header)
		b := bufs.Get().(*buffer)
		defer bufs.Put(b)
		b.b = Append(b.b[:0], r, f)
		h := w.Header()
		h.Set("Content-Type", f.ContentType())
		if !acceptsGzip(req.Header) {
			h.Set("Content-Length", strconv.Itoa(len(b.b)))
			w.Write(b.b)
			return
		}
		h.Set("Content-Encoding", "gzip")
		h.Add("Vary", "Accept-Encoding")
		z := gzips.Get().(*gzip.Writer)
		defer gzips.Put(z)
		z.Reset(w)
		z.Write(b.b)
		z.Close()
	})
}

type buffer struct{ b []byte }

var (
	bufs  = sync.Pool{New: func() any { return new(buffer) }}
	gzips = sync.Pool{New: func() any {
		z, _ := gzip.NewWriterLevel(io.Discard, gzip.BestSpeed)
		return z
	}}
)

// Write writes r's metrics to w in format f.
func Write(w io.Writer, r *mmv.Registry, f Format) error {
	_, err := w.Write(Append(nil, r, f))
	return err
}

// Negotiate returns the format an Accept header asks for, as client_golang's
// promhttp negotiates: the acceptable media type of highest quality (the
// first of equal ones) that is OpenMetrics or the text format; Text when
// none is.
func Negotiate(h http.Header) Format {
	type choice struct {
		f Format
		q float64
	}
	var cs []choice
	for _, field := range h.Values("Accept") {
		for _, part := range strings.Split(field, ",") {
			params := strings.Split(part, ";")
			media := strings.ToLower(strings.TrimSpace(params[0]))
			q, version := 1.0, ""
			for _, p := range params[1:] {
				k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
				switch strings.ToLower(strings.TrimSpace(k)) {
				case "q":
					if x, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
						q = x
					}
				case "version":
					version = strings.TrimSpace(v)
				}
			}
			if q <= 0 {
				continue
			}
			switch {
			case media == "application/openmetrics-text" && (version == "" || version == "1.0.0" || version == "0.0.1"):
				cs = append(cs, choice{OpenMetrics, q})
			case media == "text/plain" && (version == "" || version == "0.0.4"), media == "*/*", media == "text/*":
				cs = append(cs, choice{Text, q})
			}
		}
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].q > cs[j].q })
	if len(cs) == 0 {
		return Text
	}
	return cs[0].f
}

// acceptsGzip reports whether an Accept-Encoding header allows gzip.
func acceptsGzip(h http.Header) bool {
	for _, field := range h.Values("Accept-Encoding") {
		for _, part := range strings.Split(field, ",") {
			enc, params, _ := strings.Cut(part, ";")
			if strings.ToLower(strings.TrimSpace(enc)) != "gzip" {
				continue
			}
			_, q, ok := strings.Cut(strings.ReplaceAll(params, " ", ""), "q=")
			if x, err := strconv.ParseFloat(q, 64); ok && err == nil && x <= 0 {
				return false
			}
			return true
		}
	}
	return false
}
