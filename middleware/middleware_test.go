package middleware_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/internal/pcptest"
	"github.com/gopcp/mmv/middleware"
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
