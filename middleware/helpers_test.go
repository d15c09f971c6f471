package middleware_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

// getStatus requests path from srv and returns the status the client saw.
func getStatus(t *testing.T, srv *httptest.Server, path string) int {
	t.Helper()
	resp, err := http.Get(srv.URL + path)
	require.NoError(t, err)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// connect sends srv a CONNECT request for path, written as it is, and
// returns the status the client saw.
func connect(t *testing.T, srv *httptest.Server, path string) int {
	t.Helper()
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: x\r\n\r\n", path)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// serverContext is a request context as some servers and adapters give
// one: not the standard library's, its Done the server's, closed when it
// shuts down, not when the request is served.
type serverContext struct {
	context.Context
	done chan struct{}
}

func (c serverContext) Done() <-chan struct{} { return c.done }

func (c serverContext) Err() error {
	select {
	case <-c.done:
		return context.Canceled
	default:
		return nil
	}
}
