// Package fleet holds the end-to-end tests of a Go service instrumented
// with mmv read through PCP's own distributed path, past one host:
// pmlogger archives, pmproxy loading them into a key server (redis-server),
// pmseries queries by metric name and by label across two hosts,
// pmproxy's OpenMetrics /metrics endpoint parsed by Prometheus' own
// parser, and archives replayed across a restart and a growth step; and a
// fleet simulation (TestFleetScale): the example service recorded once,
// multiplied into -fleet.hosts hosts with their own labels, loaded into a
// key server and measured (series, memory, load time, queries), whose
// committed results (testdata/scale.json) make docs/fleet.md's table. See
// docs/fleet.md for the layouts these tests stand for and how to rerun the
// measurements.
//
// It is a module of its own so that mmv's users never download its test
// dependencies (prometheus/common). Every daemon a test starts listens on
// 127.0.0.1 only, runs from a temporary directory and is stopped by the
// test, failure or not. The tests skip when PCP, pmcd or redis-server is
// missing, and fail instead with MMV_REQUIRE_PCP=1, as in CI.
package fleet
