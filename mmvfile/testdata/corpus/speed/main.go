// Command gen writes MMV files with Speed (github.com/performancecopilot/speed,
// Go): run with PCP_TMP_DIR set, and PCP_CONF naming a pcp.conf that says
// PCP_TMP_DIR=$PCP_TMP_DIR too (Speed takes its directory from pcp.conf
// only), it writes one file per scenario into $PCP_TMP_DIR/mmv and prints
// its name. Speed removes its file when its
// client stops, so each is read before and written back after.
//
// Speed's traits: it derives the cluster from a hash of the file name and
// items and indom serials from hashes of the names, and lays metrics out
// in map order, so two runs give the same records in another order.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/performancecopilot/speed/v4"
)

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// stop stops a client and puts its file back as it was before.
func stop(c *speed.PCPClient, name string) {
	path := filepath.Join(os.Getenv("PCP_TMP_DIR"), "mmv", name)
	b, err := os.ReadFile(path)
	check(err)
	c.Stop()
	check(os.WriteFile(path, b, 0o644))
	fmt.Println(name)
}

func main() {
	if os.Getenv("PCP_CONF") == "" || os.Getenv("PCP_TMP_DIR") == "" {
		check(fmt.Errorf("set PCP_TMP_DIR, and PCP_CONF to a pcp.conf with the same PCP_TMP_DIR: Speed would write in the host's directory"))
	}
	c, err := speed.NewPCPClient("speedsimple")
	check(err)
	counter, err := speed.NewPCPCounter(7, "requests.total", "Requests served")
	check(err)
	gauge, err := speed.NewPCPGauge(0.5, "load", "Requests per second")
	check(err)
	routes, err := speed.NewPCPCounterVector(map[string]int64{"/a": 3, "/b": 5}, "requests.route", "Requests served, by route")
	check(err)
	text, err := speed.NewPCPSingletonMetric("v1.2.3", "version", speed.StringType, speed.DiscreteSemantics, speed.OneUnit, "Version", "The version of the program")
	check(err)
	for _, m := range []speed.Metric{counter, gauge, routes, text} {
		check(c.Register(m))
	}
	check(c.Start())
	counter.Inc(35)
	check(gauge.Set(2.25))
	routes.MustInc(1, "/a")
	stop(c, "speedsimple")

	h, err := speed.NewPCPClient("speedhistogram")
	check(err)
	hist, err := speed.NewPCPHistogram("latency", 1, 1000, 2, speed.MicrosecondUnit, "Request latency")
	check(err)
	check(h.Register(hist))
	check(h.Start())
	for _, v := range []int64{3, 30, 300} {
		check(hist.Record(v))
	}
	stop(h, "speedhistogram")
}
