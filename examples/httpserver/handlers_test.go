package main

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/middleware"
	"github.com/gopcp/mmv/mmvtest"
)

// TestHandlersCount: the service's routes, wrapped by the middleware,
// count what they serve, read as a unit test reads it: no PCP, no
// started registry (mmvtest).
func TestHandlersCount(t *testing.T) {
	r := mmvtest.NewRegistry(t, nil)
	m := middleware.New(r, nil)
	work := mmv.NewTimer(r, "app.work_time", "Time spent in the handlers' work")
	h := m.Wrap(newMux(work))
	for _, path := range []string{"/hello", "/hello", "/fail", "/slow"} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, path, nil))
	}
	require.NoError(t, mmvtest.Compare(r, `
		http.requests: counter uint64 (count)
		  "route=/hello,status=200" {route="/hello",status="200"} = 2
		  "route=/fail,status=500" {route="/fail",status="500"} = 1
		  "route=/slow,status=200" {route="/slow",status="200"} = 1
		http.response_bytes: counter uint64 (byte)
		  "route=/hello" {route="/hello"} = 12
		  "route=/fail" {route="/fail"} = 7
		  "route=/slow" {route="/slow"} = 5
	`, "http.requests", "http.response_bytes"))
	assert.Equal(t, 0.0, mmvtest.Get(t, r, "http.in_flight"))
	assert.Equal(t, 4.0, mmvtest.Get(t, r, "http.latency.count", "/hello")+mmvtest.Get(t, r, "http.latency.count", "/fail")+mmvtest.Get(t, r, "http.latency.count", "/slow"))
	assert.Greater(t, mmvtest.ToFloat64(work), 0.0, "/slow's work timed")
}
