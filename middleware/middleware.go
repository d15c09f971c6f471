// Package middleware measures an HTTP server into mmv: what every service
// otherwise writes by hand, with the standard library only.
//
//	m := middleware.New(nil, nil) // on mmv.Default, metric names under http.
//	if err := mmv.Default.Start(); err != nil {
//		log.Fatal(err)
//	}
//	defer mmv.Default.Close()
//	mux := http.NewServeMux()
//	mux.HandleFunc("GET /items/{id}", getItem)
//	log.Fatal(http.ListenAndServe(addr, m.Wrap(mux)))
//
// It publishes, under the prefix (http by default):
//
//   - requests: requests served, a counter vector by route and status
//     (instances such as "route=GET%20/items/{id},status=200");
//   - latency: the time to serve a request, a histogram vector by route,
//     in seconds;
//   - in_flight: requests being served, an integer gauge;
//   - response_bytes: bytes of response bodies sent, a counter vector by
//     route: none for a HEAD request, whose body net/http drops.
//
// Each vector holds a bounded number of instances (mmv.Vec.SetLimit):
// requests and response_bytes mmv.DefaultVecLimit, latency as many routes
// as the registry's caps allow over its buckets (mmv.NewHistogramVec),
// 107 with the default 19 buckets and 8 with the log-linear layout's 242.
// A route or status past a limit is left out of that vector alone,
// counted in the registry's mmv.dropped, and the vector's Err says why
// (Requests, Latency, ResponseBytes). For more routes' latencies, raise
// the registry's Options.MaxIndomInstances and MaxFileValues, which the
// default limit follows (431 routes with both at 8192), or give fewer
// buckets (Options.Latency).
//
// A request whose handler panics is counted too, with the status it sent,
// 500 if none (the server drops the connection), and the panic goes on.
// A hijacked connection counts as 101 unless a status was sent. Behind
// http.TimeoutHandler, a request whose time was up before its handler
// returned counts as 503, with no bytes, as the client got
// TimeoutHandler's answer and nothing of the handler's: whether a write
// of the handler's was refused with http.ErrHandlerTimeout or it gave up
// on the request's context without writing again. A request whose client
// went away counts with the status its handler sent, 200 if it wrote
// nothing, as client_golang's promhttp counts it: what the client saw, if
// anything, is not known to the server.
//
// The route is the pattern the ServeMux matched, Go 1.22's
// http.Request.Pattern, so that the number of instances stays that of the
// routes, whatever paths clients send; a request no pattern matched counts
// as "other", and so does a CONNECT request the ServeMux redirects to its
// path with a '/' appended, whose Pattern is that path. The pattern is
// read from the request Wrap's handler served, so the handler must be the
// ServeMux itself, or pass the same request down; Options.Route names
// routes otherwise.
package middleware

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"path"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gopcp/mmv"
)

// Options configure the metrics; the zero value of each field means its
// default.
type Options struct {
	// Prefix is the first part of the metric names: "http" by default.
	Prefix string
	// Route names the route of a request once it is served: by default
	// its Pattern, or "other" when none matched (see the package
	// documentation).
	Route func(*http.Request) string
	// Latency configures the latency histograms (nil: mmv's defaults).
	Latency *mmv.HistogramOptions
}

// Metrics are the instruments of a server.
type Metrics struct {
	requests *mmv.Vec[mmv.Counter]
	latency  *mmv.Vec[mmv.Histogram]
	inFlight *mmv.IntGauge
	bytes    *mmv.Vec[mmv.Counter]
	route    func(*http.Request) string
}

// New declares the metrics on r (mmv.Default when nil), with options o
// (nil for the defaults). It panics, as mmv's New functions do, if the
// registry refuses a declaration, such as a prefix that is not a valid
// metric name, names already declared, or a registry with a label named
// route or status (mmv.Registry.AddLabel), its vectors' labels.
func New(r *mmv.Registry, o *Options) *Metrics {
	var opts Options
	if o != nil {
		opts = *o
	}
	if opts.Prefix == "" {
		opts.Prefix = "http"
	}
	if opts.Route == nil {
		opts.Route = pattern
	}
	p := opts.Prefix + "."
	return &Metrics{
		requests: mmv.NewCounterVec(r, p+"requests", "HTTP requests served, by route and status", mmv.Count, "route", "status"),
		latency:  mmv.NewHistogramVec(r, p+"latency", "HTTP request latency, by route", mmv.Second, opts.Latency, "route"),
		inFlight: mmv.NewIntGauge(r, p+"in_flight", "HTTP requests being served", mmv.Count),
		bytes:    mmv.NewCounterVec(r, p+"response_bytes", "HTTP response body bytes sent, by route", mmv.Byte, "route"),
		route:    opts.Route,
	}
}

// pattern is the default Route.
func pattern(r *http.Request) string {
	if r.Pattern == "" || connectRedirect(r) {
		return "other"
	}
	return r.Pattern
}

// connectRedirect reports whether r is a CONNECT request that ServeMux
// answered with its trailing-slash redirect, for which it sets r.Pattern
// not to the pattern it found but to the client's path, cleaned as
// ServeMux cleans it (a trailing '/' kept), with a '/' appended (net/http
// findHandler): taken as the route, every path made an instance
// (TestConnectPathIsNoRoute). The mux decides on the escaped path: it
// redirects one not ending in '/', which the decoded path may ("/a%2F",
// whose Pattern is "/a//"). Other requests' redirects carry the pattern
// found. A pattern the mux did match is never that string unless the path
// is made of dot segments such as "/a/x/..": counted as "other" then,
// which bounds the instances all the same.
func connectRedirect(r *http.Request) bool {
	if r.Method != http.MethodConnect {
		return false
	}
	if p := r.URL.EscapedPath(); p == "" || strings.HasSuffix(p, "/") {
		return false // the mux redirects a CONNECT path without a trailing '/' only
	}
	return r.Pattern == cleanPath(r.URL.Path)+"/"
}

// cleanPath is the path as ServeMux cleans it: path.Clean's, but for a
// trailing '/', kept.
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if p[0] != '/' {
		p = "/" + p
	}
	np := path.Clean(p)
	if p[len(p)-1] == '/' && np != "/" {
		np += "/"
	}
	return np
}

// Wrap returns h measured.
func (m *Metrics) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		m.inFlight.Inc()
		defer m.inFlight.Dec()
		rec := &recorder{ResponseWriter: w, code: http.StatusOK, head: r.Method == http.MethodHead, h2: r.ProtoMajor >= 2, ctx: r.Context()}
		defer rec.end()
		served := false
		defer func() {
			if !served { // the handler panicked: counted, the panic going on as it was
				if !rec.wrote {
					rec.code = http.StatusInternalServerError
				}
				m.record(r, rec, start)
			}
		}()
		h.ServeHTTP(rec, r)
		served = true
		m.record(r, rec, start)
	})
}

// record counts a request served, rec its response, from start.
func (m *Metrics) record(r *http.Request, rec *recorder, start time.Time) {
	// A handler that gave up on its context when TimeoutHandler's time was
	// up may write nothing more, so that no write of its meets
	// http.ErrHandlerTimeout (recorder.Write), and TimeoutHandler may not
	// even have noted the timeout yet: told by the context, which ended
	// before the handler's return let TimeoutHandler's wait end, so that
	// TimeoutHandler answers 503 (TestTimeoutWithoutLateWrite). One atomic
	// load for every other request.
	if r.Context().Err() == context.DeadlineExceeded && underTimeoutHandler(rec.ResponseWriter) {
		rec.code, rec.wrote, rec.bytes = http.StatusServiceUnavailable, true, 0
	}
	route := m.route(r)
	m.requests.With(route, status(rec.code)).Inc()
	m.bytes.With(route).Add(uint64(rec.bytes))
	m.latency.With(route).Since(start)
}

// underTimeoutHandler reports whether w is http.TimeoutHandler's writer,
// or wraps it (Unwrap, as http.ResponseController follows).
func underTimeoutHandler(w http.ResponseWriter) bool {
	t := timeoutWriterType()
	for range 16 { // a bound on wrappers, should one unwrap to itself
		if reflect.TypeOf(w) == t {
			return true
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return false
		}
		w = u.Unwrap()
	}
	return false
}

// timeoutWriterType is the type of http.TimeoutHandler's writer, which
// net/http does not export: learnt from a TimeoutHandler run once, rather
// than by its name.
var timeoutWriterType = sync.OnceValue(func() reflect.Type {
	var t reflect.Type
	h := http.TimeoutHandler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		t = reflect.TypeOf(w)
	}), time.Hour, "")
	h.ServeHTTP(nopWriter{}, new(http.Request)) // returns once the handler has
	return t
})

// nopWriter is a ResponseWriter that drops everything.
type nopWriter struct{}

func (nopWriter) Header() http.Header         { return http.Header{} }
func (nopWriter) Write(b []byte) (int, error) { return len(b), nil }
func (nopWriter) WriteHeader(int)             {}

// Requests returns the counter vector of requests by route and status, to
// read or to add labels to.
func (m *Metrics) Requests() *mmv.Vec[mmv.Counter] { return m.requests }

// Latency returns the histogram vector of latencies by route: to read, or
// to learn why a route was refused (Err).
func (m *Metrics) Latency() *mmv.Vec[mmv.Histogram] { return m.latency }

// ResponseBytes returns the counter vector of response body bytes by
// route, as Latency.
func (m *Metrics) ResponseBytes() *mmv.Vec[mmv.Counter] { return m.bytes }

// recorder notes the status and body size of a response. It is an
// http.Flusher and an http.Hijacker, as net/http's writers are, so that a
// handler asserting them keeps streaming: embedding the writer alone, it
// was neither, and a handler's Flush was silently skipped. It is an
// io.StringWriter and an io.ReaderFrom as net/http's writer is, so that
// io.WriteString does not copy its string and a file is sent with the
// server's own ReadFrom (sendfile). And an http.Pusher, as net/http's
// HTTP/2 writer is, and an http.CloseNotifier, as both its writers are:
// frameworks still assert it on the writer they wrap (gin's Context.Stream
// panicked inside Wrap).
type recorder struct {
	http.ResponseWriter
	code  int
	bytes int
	wrote bool            // the status is sent: later ones are net/http's to drop
	head  bool            // a HEAD request's: no body is sent
	h2    bool            // HTTP/2 or later, where 101 is informational
	ctx   context.Context // the request's, which CloseNotify tells the end of below a writer without it
	gone  <-chan bool     // CloseNotify's
	told  chan bool       // gone when it is the recorder's own, told by stop's
	stop  func() bool     // context.AfterFunc's, which tells told when the context ends
}

// end is the request's: CloseNotify's channel of its own is told now, and
// its wait on the context stopped, which a context the server does not
// end with the request kept, with the recorder, a goroutine per request
// below a context not the standard library's
// (TestCloseNotifyEndsWithTheRequest).
func (r *recorder) end() {
	if r.stop != nil && r.stop() {
		r.told <- true
	}
}

// WriteHeader notes the first final status: an informational one (1xx
// but 101, and 101 too from HTTP/2 on, which has no protocol switch, RFC
// 9113 §8.6, and net/http's writer sends as 1xx) is sent at once and the
// final one follows, where it was taken for the response's. It notes it once the writer below has taken it: a
// code net/http refuses (not 3 digits) panics there, is never sent, and
// was counted, an instance per code, where the handler that panicked
// sent nothing (500).
func (r *recorder) WriteHeader(code int) {
	r.ResponseWriter.WriteHeader(code)
	if !r.wrote && (code < 100 || code > 199 || code == http.StatusSwitchingProtocols && !r.h2) {
		r.code, r.wrote = code, true
	}
}

// Write notes the body's bytes sent: none for a HEAD request, whose body
// net/http's writer takes and drops, where they were counted. A write
// refused with http.ErrHandlerTimeout, by http.TimeoutHandler's writer
// once the time is up, means the client got TimeoutHandler's 503 Service
// Unavailable and none of what the handler wrote, held back until then:
// counted as the status the handler meant and its bytes, the timeouts
// were successes.
func (r *recorder) Write(b []byte) (int, error) {
	n, err := r.ResponseWriter.Write(b)
	r.sent(n, err)
	return n, err
}

// sent notes a write of n body bytes that returned err, as Write says.
func (r *recorder) sent(n int, err error) {
	if errors.Is(err, http.ErrHandlerTimeout) {
		r.code, r.wrote, r.bytes = http.StatusServiceUnavailable, true, 0
		return
	}
	r.wrote = true
	if !r.head {
		r.bytes += n
	}
}

// WriteString is Write for a string, as net/http's writer has it: through
// Write, io.WriteString made a copy of the string at every call.
func (r *recorder) WriteString(s string) (int, error) {
	n, err := io.WriteString(r.ResponseWriter, s)
	r.sent(n, err)
	return n, err
}

// ReadFrom copies src into the body through the writer's own ReadFrom,
// as net/http's writer has it: io.Copy, http.ServeContent and
// http.ServeFile use it to send a file with sendfile and the server's
// pooled buffers, where through Write they copied it through a buffer of
// their own. A writer without one is written to as Write does. Its bytes
// are counted as Write's; a copy of nothing sends no status (net/http's
// ReadFrom writes nothing until src gives bytes), so that the status
// written next, after a src that failed at once, is counted.
func (r *recorder) ReadFrom(src io.Reader) (int64, error) {
	rf, ok := r.ResponseWriter.(io.ReaderFrom)
	if !ok {
		return io.Copy(writerOnly{r}, src)
	}
	n, err := rf.ReadFrom(src)
	if n > 0 || errors.Is(err, http.ErrHandlerTimeout) { // else nothing sent: a status written next is the client's
		r.sent(int(n), err)
	}
	return n, err
}

// writerOnly hides the recorder's ReadFrom from io.Copy, which would call
// it again.
type writerOnly struct{ io.Writer }

// FlushError sends the status as it is (200 if none) and what is written:
// a status written later is dropped by net/http, and was counted.
// http.ResponseController calls it; Flush is http.Flusher's. Both are
// offered whatever the writer below supports, as Hijack is: its error
// (http.ErrNotSupported) then says so.
func (r *recorder) FlushError() error {
	err := http.NewResponseController(r.ResponseWriter).Flush()
	if err == nil { // a flush that failed sent nothing (http.TimeoutHandler's)
		r.wrote = true
	}
	return err
}

func (r *recorder) Flush() { _ = r.FlushError() }

// Hijack hands the connection to the handler, which writes its response
// itself: counted as 101 Switching Protocols unless a status was sent.
func (r *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(r.ResponseWriter).Hijack()
	if err == nil && !r.wrote {
		r.code, r.wrote = http.StatusSwitchingProtocols, true
	}
	return c, rw, err
}

// Push is http.Pusher's, as net/http's HTTP/2 writer has it: without it a
// handler pushing what it can pushed nothing through Wrap. A writer below
// (or one it unwraps to) without it makes it return http.ErrNotSupported,
// as http.Pusher says of a connection that cannot push.
func (r *recorder) Push(target string, opts *http.PushOptions) error {
	if p, ok := below[http.Pusher](r.ResponseWriter); ok {
		return p.Push(target, opts)
	}
	return http.ErrNotSupported
}

// CloseNotify is http.CloseNotifier's, deprecated but offered by
// net/http's writers: the writer below's (or one it unwraps to), else a
// channel told when the request's context ends, which it does when the
// client goes away (as http.CloseNotifier's deprecation advises), or once
// the request is served, whichever is first.
func (r *recorder) CloseNotify() <-chan bool {
	if r.gone != nil {
		return r.gone
	}
	if cn, ok := below[http.CloseNotifier](r.ResponseWriter); ok { //nolint:staticcheck // net/http's writers offer it
		r.gone = cn.CloseNotify()
		return r.gone
	}
	r.told = make(chan bool, 1)
	r.stop = context.AfterFunc(r.ctx, func() { r.told <- true })
	r.gone = r.told
	return r.gone
}

// below returns w as a T, or the first writer it unwraps to (Unwrap, as
// http.ResponseController follows) that is one.
func below[T any](w http.ResponseWriter) (T, bool) {
	for range 16 { // a bound on wrappers, as underTimeoutHandler's
		if t, ok := w.(T); ok {
			return t, true
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			break
		}
		w = u.Unwrap()
	}
	var none T
	return none, false
}

// Unwrap lets http.ResponseController reach the writer's deadlines.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// statuses are the status codes as text, made once.
var statuses = func() (s [600]string) {
	for i := range s {
		s[i] = strconv.Itoa(i)
	}
	return s
}()

func status(code int) string {
	if code >= 0 && code < len(statuses) {
		return statuses[code]
	}
	return strconv.Itoa(code)
}
