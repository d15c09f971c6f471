package middleware_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/middleware"
	"github.com/gopcp/mmv/mmvtest"
)

// TestMiddlewareThroughPCP: requests through the middleware, read back
// with PCP's reader: by route pattern and status, the latency's count, the
// bytes, nothing left in flight, the route and status as instance labels.
func TestMiddlewareThroughPCP(t *testing.T) {
	pcptest.NeedFileLayer(t)
	pcptest.MustHavePCP(t)
	tmp := t.TempDir()
	r := mmv.NewRegistry("web", &mmv.Options{Dir: filepath.Join(tmp, "mmv"), Cluster: 90})
	m := middleware.New(r, nil)
	require.NoError(t, r.Start())
	defer r.Close()

	mux := http.NewServeMux()
	mux.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "item "+r.PathValue("id"))
	})
	mux.HandleFunc("/fail", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusTeapot)
	})
	srv := httptest.NewServer(m.Wrap(mux))
	defer srv.Close()
	get := func(path string) {
		resp, err := http.Get(srv.URL + path)
		require.NoError(t, err)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	for _, p := range []string{"/items/1", "/items/2", "/items/3", "/fail", "/nowhere"} {
		get(p)
	}
	require.NoError(t, r.Flush())

	ms := pcptest.Info(t, tmp)
	value := func(metric, inst string) string {
		m := pcptest.Find(ms, "mmv.web.http."+metric)
		require.NotNil(t, m, metric)
		if inst == "" {
			return m.Value
		}
		in := m.Instance(inst)
		require.NotNil(t, in, "%s[%s] in %+v", metric, inst, m.Instances)
		return in.Value
	}
	items := "route=GET%20/items/{id}"
	assert.Equal(t, "3", value("requests", items+",status=200"))
	assert.Equal(t, "1", value("requests", "route=/fail,status=418"))
	assert.Equal(t, "1", value("requests", "route=other,status=404"))
	assert.Equal(t, "18", value("response_bytes", items), `"item 1" thrice`)
	assert.Equal(t, "0", value("in_flight", ""))
	in := pcptest.Find(ms, "mmv.web.http.requests").Instance(items + ",status=200")
	route, _ := in.Label("route")
	assert.Equal(t, `"GET /items/{id}"`, route)
	status, _ := in.Label("status")
	assert.Equal(t, `"200"`, status)

	require.NoError(t, r.Close()) // refreshes the histograms
	ms = pcptest.Info(t, tmp)
	assert.Equal(t, "3", value("latency.count", items))
	assert.True(t, strings.HasPrefix(pcptest.Find(ms, "mmv.web.http.latency.p99").Units, "sec"), "latency in seconds")
}

// TestMiddlewareRoute: a Route option names routes; the recorder keeps the
// first status written.
func TestMiddlewareRoute(t *testing.T) {
	r := mmv.NewRegistry("web", &mmv.Options{Dir: t.TempDir()})
	m := middleware.New(r, &middleware.Options{Prefix: "api", Route: func(*http.Request) string { return "all" }})
	h := m.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
		w.WriteHeader(http.StatusInternalServerError) // superfluous: ignored by net/http too
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/x", nil))
	assert.Equal(t, uint64(1), m.Requests().With("all", "201").Get())
	assert.Equal(t, []string{"route=all,status=201"}, m.Requests().Instances())
}

// TestRouteNotUTF8Dropped: a Route that names a route with bytes that
// are not UTF-8 (the decoded path "/caf\xe9" of /caf%E9) gets values the
// vectors refuse: the request is served, nothing panics, and it is
// counted in the registry's mmv.dropped, not as a route.
func TestRouteNotUTF8Dropped(t *testing.T) {
	r := mmv.NewRegistry("web", &mmv.Options{Dir: t.TempDir()})
	m := middleware.New(r, &middleware.Options{Route: func(r *http.Request) string { return r.URL.Path }})
	h := m.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	rec := httptest.NewRecorder()
	require.NotPanics(t, func() { h.ServeHTTP(rec, httptest.NewRequest("GET", "/caf%E9", nil)) })
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Empty(t, m.Requests().Instances())
	assert.ErrorIs(t, m.Requests().Err(), mmv.ErrLabel)
	snap, err := r.Snapshot()
	require.NoError(t, err)
	var refused any
	for _, ms := range snap {
		for _, v := range ms.Values {
			if ms.Name == "mmv.dropped" && v.Instance == "refused" {
				refused = v.Value
			}
		}
	}
	assert.Equal(t, uint64(3), refused, "mmv.dropped{refused}: requests, latency and response_bytes")
}

// TestInformationalStatusIsNotFinal: an informational status (103 Early
// Hints), which net/http sends at once, is not the response's: the status
// the handler writes next is counted, where 103 was, the client having
// got 404.
func TestInformationalStatusIsNotFinal(t *testing.T) {
	r := mmv.NewRegistry("web", &mmv.Options{Dir: t.TempDir()})
	m := middleware.New(r, nil)
	mux := http.NewServeMux()
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</style.css>; rel=preload; as=style")
		w.WriteHeader(http.StatusEarlyHints)
		http.Error(w, "gone", http.StatusNotFound)
	})
	srv := httptest.NewServer(m.Wrap(mux))
	defer srv.Close()

	require.Equal(t, http.StatusNotFound, getStatus(t, srv, "/page"), "the client's status")
	assert.Equal(t, []string{"route=/page,status=404"}, m.Requests().Instances(), "counted under the status the client did not get")
}

// TestStatusAfterFlush: a flush sends the status as it is (200), and a
// later WriteHeader, which net/http drops, is not counted, where it was:
// Flush went past the recorder, through Unwrap.
func TestStatusAfterFlush(t *testing.T) {
	r := mmv.NewRegistry("web", &mmv.Options{Dir: t.TempDir()})
	m := middleware.New(r, nil)
	mux := http.NewServeMux()
	mux.HandleFunc("/stream", func(w http.ResponseWriter, r *http.Request) {
		assert.NoError(t, http.NewResponseController(w).Flush()) // headers out: 200
		http.Error(w, "failed midway", http.StatusInternalServerError)
	})
	srv := httptest.NewServer(m.Wrap(mux))
	defer srv.Close()

	require.Equal(t, http.StatusOK, getStatus(t, srv, "/stream"), "the client's status")
	assert.Equal(t, []string{"route=/stream,status=200"}, m.Requests().Instances(), "counted under a status never sent")
}

// TestFlusherAndHijackerKept: the writer Wrap hands the handler is an
// http.Flusher and an http.Hijacker, as net/http's is: a streaming handler
// that asserts Flusher kept streaming unmeasured, and once measured its
// event stayed in the server's buffer until it returned.
func TestFlusherAndHijackerKept(t *testing.T) {
	r := mmv.NewRegistry("web", &mmv.Options{Dir: t.TempDir()})
	m := middleware.New(r, nil)
	ifaces := make(chan [2]bool, 1)
	done := make(chan struct{})
	h := m.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, hijacker := w.(http.Hijacker)
		f, ok := w.(http.Flusher)
		ifaces <- [2]bool{ok, hijacker}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: 1\n\n")
		if ok {
			f.Flush()
		}
		select { // the stream stays open until the client has the event
		case <-done:
		case <-r.Context().Done():
		}
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()

	got := make(chan string, 1)
	go func() {
		resp, err := http.Get(srv.URL)
		if err != nil {
			got <- "error: " + err.Error()
			return
		}
		defer resp.Body.Close()
		line, _ := bufio.NewReader(resp.Body).ReadString('\n')
		got <- line
	}()
	var event string
	select {
	case event = <-got:
	case <-time.After(2 * time.Second):
	}
	close(done)
	assert.Equal(t, "data: 1\n", event, "the event flushed by the handler did not reach the client while the stream was open")
	is := <-ifaces
	assert.True(t, is[0], "w.(http.Flusher) fails inside Wrap")
	assert.True(t, is[1], "w.(http.Hijacker) fails inside Wrap")
}

// TestPanickingHandlerCounted: a handler that panics, as
// httputil.ReverseProxy does with http.ErrAbortHandler when a proxied body
// breaks off, is counted with the status and bytes it sent, and its
// latency, where it was counted nowhere but in_flight; one that sent
// nothing counts as 500. The panic goes on.
func TestPanickingHandlerCounted(t *testing.T) {
	r := mmv.NewRegistry("web", &mmv.Options{Dir: t.TempDir()})
	m := middleware.New(r, nil)
	mux := http.NewServeMux()
	mux.HandleFunc("/download", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "partial")
		panic(http.ErrAbortHandler)
	})
	h := m.Wrap(mux)
	rec := httptest.NewRecorder()
	func() {
		defer func() { recover() }() // as net/http's server does
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/download", nil))
	}()
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "partial", rec.Body.String(), "sent before the abort")

	snap, err := r.Snapshot()
	require.NoError(t, err)
	values := map[string]any{}
	for _, ms := range snap {
		for _, iv := range ms.Values {
			values[ms.Name+"["+iv.Instance+"]"] = iv.Value
		}
	}
	assert.EqualValues(t, 0, values["http.in_flight[]"], "in flight")
	assert.EqualValues(t, uint64(1), values["http.requests[route=/download,status=200]"], "the aborted request is not counted: %v", values)
	assert.EqualValues(t, uint64(7), values["http.response_bytes[route=/download]"], "the 7 bytes sent are not counted")
	assert.EqualValues(t, uint64(1), values["http.latency.count[route=/download]"], "its latency is not observed")

	mux.HandleFunc("/crash", func(w http.ResponseWriter, r *http.Request) { panic("bug") })
	assert.PanicsWithValue(t, "bug", func() { h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/crash", nil)) })
	assert.Contains(t, m.Requests().Instances(), "route=/crash,status=500", "a handler that sent nothing")
}

// TestHijackCounted: a connection the handler hijacks, to switch
// protocols, counts as 101 Switching Protocols.
func TestHijackCounted(t *testing.T) {
	r := mmv.NewRegistry("web", &mmv.Options{Dir: t.TempDir()})
	m := middleware.New(r, nil)
	mux := http.NewServeMux()
	mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
		c, rw, err := w.(http.Hijacker).Hijack()
		require.NoError(t, err)
		defer c.Close()
		rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: Upgrade\r\n\r\n")
		rw.Flush()
	})
	srv := httptest.NewServer(m.Wrap(mux))
	defer srv.Close()
	req, err := http.NewRequest("GET", srv.URL+"/ws", nil)
	require.NoError(t, err)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "x")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)
	// Counted once the handler returns, after the client has its answer.
	assert.Eventually(t, func() bool { return len(m.Requests().Instances()) > 0 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, []string{"route=/ws,status=101"}, m.Requests().Instances())
}

// TestFailedFlushSendsNoStatus: a flush that fails (http.TimeoutHandler's
// writer has none) sends no status: the status written next is counted,
// where 200 was.
func TestFailedFlushSendsNoStatus(t *testing.T) {
	r := mmv.NewRegistry("web", &mmv.Options{Dir: t.TempDir()})
	m := middleware.New(r, nil)
	mux := http.NewServeMux()
	mux.HandleFunc("/busy", func(w http.ResponseWriter, r *http.Request) {
		err := http.NewResponseController(w).Flush()
		assert.ErrorIs(t, err, http.ErrNotSupported, "TimeoutHandler's writer cannot flush")
		http.Error(w, "busy", http.StatusServiceUnavailable)
	})
	srv := httptest.NewServer(http.TimeoutHandler(m.Wrap(mux), 5*time.Second, "timeout"))
	defer srv.Close()

	require.Equal(t, http.StatusServiceUnavailable, getStatus(t, srv, "/busy"), "the client's status")
	assert.Equal(t, []string{"route=/busy,status=503"}, m.Requests().Instances(), "counted under a status the client never got")
}

// TestConnectPathIsNoRoute: a CONNECT request ServeMux redirects to its
// path with a '/' appended gets that path as its Pattern, cleaned of dot
// segments (here against /files/{a}/{b}/{c}/): each counts as "other",
// where each client path made an instance. The mux decides on the escaped
// path, so a path whose last '/' is escaped (%2F) is redirected too, with
// a Pattern ending in "//", which made an instance per path as well. A
// CONNECT request the mux matches counts under the pattern.
func TestConnectPathIsNoRoute(t *testing.T) {
	r := mmv.NewRegistry("web", &mmv.Options{Dir: t.TempDir()})
	m := middleware.New(r, nil)
	mux := http.NewServeMux()
	mux.HandleFunc("/users/{id}/", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("/files/{a}/{b}/{c}/", func(w http.ResponseWriter, r *http.Request) {})
	srv := httptest.NewServer(m.Wrap(mux))
	defer srv.Close()

	const n = 10
	for i := range n {
		require.Equal(t, http.StatusTemporaryRedirect, connect(t, srv, fmt.Sprintf("/users/%d", i)))
		require.Equal(t, http.StatusTemporaryRedirect, connect(t, srv, fmt.Sprintf("/files/%d/x/..", i)))
		require.Equal(t, http.StatusTemporaryRedirect, connect(t, srv, fmt.Sprintf("/users/%d%%2F", i)))
		require.Equal(t, http.StatusTemporaryRedirect, connect(t, srv, fmt.Sprintf("/files/%d/x/..%%2F", i)))
		require.Equal(t, http.StatusTemporaryRedirect, connect(t, srv, fmt.Sprintf("/files/%d/x/%%2E%%2E", i)))
	}
	require.Equal(t, http.StatusOK, connect(t, srv, "/users/1/"), "matched")
	assert.ElementsMatch(t, []string{"route=other,status=307", "route=/users/{id}/,status=200"}, m.Requests().Instances(),
		"one route per client path (%d requests)", 5*n)
}

// TestTimeoutStatus: behind http.TimeoutHandler, a handler that overruns
// has its Write refused with http.ErrHandlerTimeout and the client gets
// 503, none of the body written before the time was up: counted so, where
// the request counted as the 200 the handler meant, with its bytes.
func TestTimeoutStatus(t *testing.T) {
	r := mmv.NewRegistry("web", &mmv.Options{Dir: t.TempDir()})
	m := middleware.New(r, nil)
	mux := http.NewServeMux()
	release := make(chan struct{})
	done := make(chan struct{})
	mux.HandleFunc("GET /slow", func(w http.ResponseWriter, r *http.Request) {
		defer close(done)
		io.WriteString(w, "early") // held back by TimeoutHandler
		<-release
		_, err := io.WriteString(w, "late")
		assert.ErrorIs(t, err, http.ErrHandlerTimeout)
	})
	srv := httptest.NewServer(http.TimeoutHandler(m.Wrap(mux), 20*time.Millisecond, "timed out"))
	defer srv.Close()

	require.Equal(t, http.StatusServiceUnavailable, getStatus(t, srv, "/slow"), "the client's status")
	close(release)
	<-done
	require.Eventually(t, func() bool { return len(m.Requests().Instances()) > 0 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, []string{"route=GET%20/slow,status=503"}, m.Requests().Instances(), "counted under a status the client never got")
	assert.Zero(t, mmvtest.Get(t, r, "http.response_bytes", "GET /slow"), "no byte of the handler's body was sent")
}

// TestTimeoutWithoutLateWrite: behind http.TimeoutHandler, a handler
// that gives up on r.Context() once the time is up, writing nothing more,
// never meets http.ErrHandlerTimeout, yet the client gets 503: counted
// so, with no byte of what it wrote before, where it counted as the 200
// it meant. A deadline of the request's without TimeoutHandler leaves the
// handler's status, the one the client gets.
func TestTimeoutWithoutLateWrite(t *testing.T) {
	r := mmv.NewRegistry("web", &mmv.Options{Dir: t.TempDir()})
	m := middleware.New(r, nil)
	mux := http.NewServeMux()
	done := make(chan struct{}, 3)
	mux.HandleFunc("GET /slow", func(w http.ResponseWriter, r *http.Request) {
		defer func() { done <- struct{}{} }()
		<-r.Context().Done() // TimeoutHandler cancels it at the timeout
	})
	mux.HandleFunc("GET /partial", func(w http.ResponseWriter, r *http.Request) {
		defer func() { done <- struct{}{} }()
		io.WriteString(w, "early") // held back by TimeoutHandler
		<-r.Context().Done()
	})
	srv := httptest.NewServer(http.TimeoutHandler(m.Wrap(mux), 20*time.Millisecond, "timed out"))
	defer srv.Close()
	deadline := func(h http.Handler) http.Handler { // a deadline, no TimeoutHandler
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx, cancel := context.WithTimeout(r.Context(), 20*time.Millisecond)
			defer cancel()
			h.ServeHTTP(w, r.WithContext(ctx))
		})
	}
	plain := httptest.NewServer(deadline(m.Wrap(mux)))
	defer plain.Close()

	require.Equal(t, http.StatusServiceUnavailable, getStatus(t, srv, "/slow"), "the client's status")
	require.Equal(t, http.StatusServiceUnavailable, getStatus(t, srv, "/partial"), "the client's status")
	require.Equal(t, http.StatusOK, getStatus(t, plain, "/partial"), "the client's status without TimeoutHandler")
	for range 3 {
		<-done
	}
	require.Eventually(t, func() bool { return len(m.Requests().Instances()) == 3 }, 5*time.Second, time.Millisecond)
	assert.ElementsMatch(t, []string{"route=GET%20/slow,status=503", "route=GET%20/partial,status=503", "route=GET%20/partial,status=200"},
		m.Requests().Instances(), "the statuses the clients got")
	assert.EqualValues(t, 5, mmvtest.Get(t, r, "http.response_bytes", "GET /partial"), "the bytes sent: without TimeoutHandler's only")
	assert.Zero(t, mmvtest.Get(t, r, "http.response_bytes", "GET /slow"))
}

// TestHeadBodyBytes: net/http sends no body for a HEAD request while its
// Write takes every byte: response_bytes counts none, where it counted
// the bytes the handler wrote.
func TestHeadBodyBytes(t *testing.T) {
	r := mmv.NewRegistry("web", &mmv.Options{Dir: t.TempDir()})
	m := middleware.New(r, nil)
	mux := http.NewServeMux()
	mux.HandleFunc("/file", func(w http.ResponseWriter, r *http.Request) {
		n, err := w.Write(make([]byte, 1<<20))
		assert.NoError(t, err)
		assert.Equal(t, 1<<20, n, "taken")
	})
	srv := httptest.NewServer(m.Wrap(mux))
	defer srv.Close()

	resp, err := http.Head(srv.URL + "/file")
	require.NoError(t, err)
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	require.Zero(t, n, "the body the client got")
	assert.Zero(t, mmvtest.Get(t, r, "http.response_bytes", "/file"), "bytes never sent")
	require.Equal(t, http.StatusOK, getStatus(t, srv, "/file"))
	assert.EqualValues(t, 1<<20, mmvtest.Get(t, r, "http.response_bytes", "/file"), "a GET's body")
}
