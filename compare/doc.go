// Package compare measures mmv against the other Go libraries that publish
// metrics: Speed (github.com/performancecopilot/speed, the other Go MMV
// writer) and prometheus/client_golang. It is a module of its own so that
// users of mmv never download them. It holds only tests and benchmarks; see
// README.md for how to run them and the results.
package compare
