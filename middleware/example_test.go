//go:build (linux || darwin || freebsd) && !mmv_noport

package middleware_test

import (
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/middleware"
)

// A server measured by the middleware: the registry is started before it
// serves, and the request it served is counted by route and status.
// (Options.Dir keeps the example's file out of PCP's directory; a service
// passes nil to New, for mmv.Default, and starts mmv.Default.)
func ExampleNew() {
	dir, err := os.MkdirTemp("", "mmv-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	r := mmv.NewRegistry("web", &mmv.Options{Dir: filepath.Join(dir, "mmv"), Flags: mmv.Process})
	m := middleware.New(r, nil)
	if err := r.Start(); err != nil {
		log.Fatal(err)
	}
	defer r.Close()

	mux := http.NewServeMux()
	mux.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "an item") })
	h := m.Wrap(mux)
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/items/42", nil))

	fmt.Println("requests:", m.Requests().With("GET /items/{id}", "200").Get())
	// Output:
	// requests: 1
}
