package pcptest

import (
	"runtime"
	"strings"
)

// Pollers counts the goroutines of mmv's polls (Registry.Poll, and the
// histograms' and callback metrics'), running or about to (those show no
// frame of poll yet): by the function that made them.
func Pollers() int {
	buf := make([]byte, 1<<20)
	for {
		if n := runtime.Stack(buf, true); n < len(buf) {
			return strings.Count(string(buf[:n]), "created by github.com/gopcp/mmv.(*poller).startLocked")
		}
		buf = make([]byte, 2*len(buf))
	}
}
