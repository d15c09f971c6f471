package middleware_test

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/middleware"
	"github.com/gopcp/mmv/mmvtest"
)

// TestReadFromKept: net/http's writer is an io.ReaderFrom, which
// io.Copy, http.ServeContent and http.ServeFile use to send a file with
// sendfile and the server's pooled buffers; the writer Wrap handed the
// handler was not, so that every file served through it went through a
// 32 KiB buffer of its own and user space. The bytes so copied are
// counted, none for HEAD.
func TestReadFromKept(t *testing.T) {
	r := mmv.NewRegistry("web", &mmv.Options{Dir: t.TempDir()})
	m := middleware.New(r, nil)
	file := filepath.Join(t.TempDir(), "f")
	const size = 100_000
	require.NoError(t, os.WriteFile(file, make([]byte, size), 0o644))
	readerFrom := make(chan bool, 2)
	mux := http.NewServeMux()
	mux.HandleFunc("/file", func(w http.ResponseWriter, req *http.Request) {
		_, ok := w.(io.ReaderFrom)
		readerFrom <- ok
		f, err := os.Open(file)
		if !assert.NoError(t, err) {
			return
		}
		defer f.Close()
		n, err := io.Copy(w, f)
		assert.NoError(t, err)
		assert.EqualValues(t, size, n)
	})
	srv := httptest.NewServer(m.Wrap(mux))
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/file")
	require.NoError(t, err)
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	require.EqualValues(t, size, n, "the body the client got")
	assert.True(t, <-readerFrom, "w.(io.ReaderFrom) fails inside Wrap, as it does not on net/http's writer")
	assert.EqualValues(t, size, mmvtest.Get(t, r, "http.response_bytes", "/file"))
	assert.Equal(t, []string{"route=/file,status=200"}, m.Requests().Instances())

	resp, err = http.Head(srv.URL + "/file")
	require.NoError(t, err)
	resp.Body.Close()
	<-readerFrom
	assert.EqualValues(t, size, mmvtest.Get(t, r, "http.response_bytes", "/file"), "a HEAD's body is not sent")

	// A copy from a source that fails at once sends nothing: the status
	// written next is the client's.
	mux.HandleFunc("/broken", func(w http.ResponseWriter, req *http.Request) {
		_, err := io.Copy(w, iotest.ErrReader(errors.New("disk gone")))
		assert.Error(t, err)
		http.Error(w, "failed", http.StatusInternalServerError)
	})
	require.Equal(t, http.StatusInternalServerError, getStatus(t, srv, "/broken"))
	assert.Contains(t, m.Requests().Instances(), "route=/broken,status=500")
}

// TestWriteStringAllocatesNothing: net/http's writer is an
// io.StringWriter; the writer Wrap handed the handler was not, so that
// every io.WriteString through it (http.Error's included) converted the
// string to a new []byte: an allocation per write, on top of the
// recorder's one per request.
func TestWriteStringAllocatesNothing(t *testing.T) {
	r := mmv.NewRegistry("web", &mmv.Options{Dir: t.TempDir()})
	m := middleware.New(r, &middleware.Options{Route: func(*http.Request) string { return "all" }})
	handler := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		for range 4 {
			io.WriteString(w, "a response body, written as a string")
		}
	})
	h := m.Wrap(handler)
	req := httptest.NewRequest("GET", "/", nil)
	w := httptest.NewRecorder() // an io.StringWriter, as net/http's writer
	h.ServeHTTP(w, req)
	bare := testing.AllocsPerRun(100, func() { w.Body.Reset(); handler.ServeHTTP(w, req) })
	wrapped := testing.AllocsPerRun(100, func() { w.Body.Reset(); h.ServeHTTP(w, req) })
	assert.Equal(t, bare+1, wrapped, "allocations per request: the recorder's alone")
	assert.EqualValues(t, 4*len("a response body, written as a string"), w.Body.Len())
	assert.EqualValues(t, 102*4*len("a response body, written as a string"), mmvtest.Get(t, r, "http.response_bytes", "all"), "the first request and AllocsPerRun's 101")
}

// TestPusherKept: over HTTP/2, net/http's writer is an
// http.Pusher; the writer Wrap handed the handler was not, so that a
// handler pushing its resources when it can silently pushed nothing. Over
// HTTP/1, Push says it is not supported, as http.Pusher documents.
func TestPusherKept(t *testing.T) {
	r := mmv.NewRegistry("web", &mmv.Options{Dir: t.TempDir()})
	m := middleware.New(r, nil)
	type result struct {
		proto  int
		pusher bool
		err    error
	}
	results := make(chan result, 2)
	h := m.Wrap(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		p, ok := w.(http.Pusher)
		res := result{proto: req.ProtoMajor, pusher: ok}
		if ok {
			res.err = p.Push("/style.css", nil)
		}
		results <- res
	}))
	srv := httptest.NewUnstartedServer(h)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 2, resp.ProtoMajor)
	res := <-results
	assert.True(t, res.pusher, "w.(http.Pusher) fails inside Wrap over HTTP/2, as it does not on net/http's writer")

	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // HTTP/1.1
	defer c.CloseIdleConnections()
	resp, err = c.Get(srv.URL)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 1, resp.ProtoMajor)
	res = <-results
	if res.pusher {
		assert.ErrorIs(t, res.err, http.ErrNotSupported, "Push over HTTP/1")
	}
}

// TestInvalidStatusNotCounted: a status net/http refuses
// (WriteHeader(0), WriteHeader(1000)) panics in the handler and is never
// sent: the client's connection is dropped, so the request counts as 500,
// a handler that sent nothing, where it counted under the code refused,
// an instance per such code.
func TestInvalidStatusNotCounted(t *testing.T) {
	r := mmv.NewRegistry("web", &mmv.Options{Dir: t.TempDir()})
	m := middleware.New(r, &middleware.Options{Route: func(*http.Request) string { return "all" }})
	for _, code := range []int{0, 99, 1000} {
		h := m.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(code) }))
		var p any
		func() {
			defer func() { p = recover() }() // as net/http's server does
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
		}()
		msg, _ := p.(string)
		require.True(t, strings.Contains(msg, "invalid WriteHeader code"), "net/http refuses %d: %v", code, p)
	}
	assert.Equal(t, []string{"route=all,status=500"}, m.Requests().Instances(), "statuses never sent")
	assert.EqualValues(t, 3, m.Requests().With("all", "500").Get())
}

// TestLatencyPastTheLimitIsSaid: the latency histogram vector holds
// as many routes as the registry's cap on an indom's instances allows over
// its buckets, 107 with the default buckets (mmv.NewHistogramVec): a
// service with more routes lost the latency of the later ones with no
// way to learn why or to raise the limit, the vector being out of reach.
// The vectors are reachable, and say why.
func TestLatencyPastTheLimitIsSaid(t *testing.T) {
	r := mmv.NewRegistry("web", &mmv.Options{Dir: t.TempDir()})
	m := middleware.New(r, &middleware.Options{Route: func(req *http.Request) string { return req.URL.Path }})
	h := m.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	limit := m.Latency().Limit()
	require.Equal(t, 107, limit, "the default buckets' limit")
	for i := range limit + 1 {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/r"+strings.Repeat("x", i), nil))
	}
	assert.Len(t, m.Latency().Instances(), limit)
	assert.True(t, errors.Is(m.Latency().Err(), mmv.ErrTooMany), "the latency vector says why: %v", m.Latency().Err())
	assert.Len(t, m.Requests().Instances(), limit+1)
	assert.Len(t, m.ResponseBytes().Instances(), limit+1)
	assert.NoError(t, m.ResponseBytes().Err())
}

// TestLatencyLimitFollowsTheCaps: the package documentation's
// remedy, the registry's caps raised, raises the latency vector's limit.
func TestLatencyLimitFollowsTheCaps(t *testing.T) {
	r := mmv.NewRegistry("web", &mmv.Options{Dir: t.TempDir(), MaxIndomInstances: 8192, MaxFileValues: 8192})
	assert.Equal(t, 431, middleware.New(r, nil).Latency().Limit())
}

// TestReadFromBelowAWriterWithoutIt: below a writer that has no
// ReadFrom (http.TimeoutHandler's), the recorder's copies through its
// Write: the bytes counted, the client's body whole.
func TestReadFromBelowAWriterWithoutIt(t *testing.T) {
	r := mmv.NewRegistry("web", &mmv.Options{Dir: t.TempDir()})
	m := middleware.New(r, nil)
	mux := http.NewServeMux()
	mux.HandleFunc("/copy", func(w http.ResponseWriter, req *http.Request) {
		n, err := w.(io.ReaderFrom).ReadFrom(struct{ io.Reader }{strings.NewReader("hello")})
		assert.NoError(t, err)
		assert.EqualValues(t, 5, n)
	})
	srv := httptest.NewServer(http.TimeoutHandler(m.Wrap(mux), 5*time.Second, "timeout"))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/copy")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, "hello", string(body))
	assert.EqualValues(t, 5, mmvtest.Get(t, r, "http.response_bytes", "/copy"))
	assert.Equal(t, []string{"route=/copy,status=200"}, m.Requests().Instances())
}

// TestCloseNotifierKept: net/http's writers are http.CloseNotifiers, and
// frameworks call it on the writer they are given (gin's Context.Stream,
// through its writer's CloseNotify, which asserts the interface on the
// writer below it and panicked inside Wrap). The client going away is
// told, by the writer below when it tells it, else by the request's
// context, which ends then.
func TestCloseNotifierKept(t *testing.T) {
	r := mmv.NewRegistry("web", &mmv.Options{Dir: t.TempDir()})
	m := middleware.New(r, nil)
	told := make(chan bool, 1)
	h := m.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		cn, ok := w.(http.CloseNotifier) //nolint:staticcheck // what frameworks still assert
		if !ok {
			told <- false
			return
		}
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select {
		case <-cn.CloseNotify():
			told <- true
		case <-time.After(5 * time.Second):
			told <- false
		}
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	cancel() // the client goes away
	resp.Body.Close()
	assert.True(t, <-told, "w.(http.CloseNotifier) fails inside Wrap, or its channel never tells the client went away")

	// Below a writer that is no http.CloseNotifier: the request's context.
	reqCtx, end := context.WithCancel(context.Background())
	go func() { time.Sleep(10 * time.Millisecond); end() }()
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil).WithContext(reqCtx))
	assert.True(t, <-told, "below a writer without CloseNotify")
}

// TestSwitchingProtocolsOverHTTP2IsNotFinal: HTTP/2 has no 101 Switching
// Protocols (RFC 9113 §8.6); net/http's HTTP/2 writer sends it as an
// informational status and the handler's next status is the response's.
// The recorder took 101 as final, as on HTTP/1, and counted the request
// under a status the client never got as its answer.
func TestSwitchingProtocolsOverHTTP2IsNotFinal(t *testing.T) {
	r := mmv.NewRegistry("web", &mmv.Options{Dir: t.TempDir()})
	m := middleware.New(r, &middleware.Options{Route: func(*http.Request) string { return "all" }})
	srv := httptest.NewUnstartedServer(m.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusSwitchingProtocols)
		http.Error(w, "no upgrade here", http.StatusBadRequest)
	})))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	require.NoError(t, err)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	require.Equal(t, 2, resp.ProtoMajor)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, "the client's status")
	assert.Equal(t, []string{"route=all,status=400"}, m.Requests().Instances())
}

// TestCloseNotifyEndsWithTheRequest: below a writer that is no
// http.CloseNotifier, CloseNotify's channel waits on the request's
// context; that wait outlived the request, a goroutine and the recorder
// held per request for as long as a context the server does not end with
// the request (serverContext) lives.
func TestCloseNotifyEndsWithTheRequest(t *testing.T) {
	r := mmv.NewRegistry("web", &mmv.Options{Dir: t.TempDir()})
	m := middleware.New(r, nil)
	h := m.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_ = w.(http.CloseNotifier).CloseNotify() //nolint:staticcheck // what frameworks still assert
	}))
	ctx := serverContext{Context: context.Background(), done: make(chan struct{})}
	defer close(ctx.done)
	before := runtime.NumGoroutine()
	for range 100 {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil).WithContext(ctx))
	}
	assert.Eventually(t, func() bool { return runtime.NumGoroutine() < before+10 }, time.Second, 10*time.Millisecond,
		"goroutines left waiting on the context of requests served: %d", runtime.NumGoroutine()-before)
}
