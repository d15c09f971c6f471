//go:build !linux

package mmv

// findLiveness: PCP's check of a pid holds on systems without PID
// namespaces.
func findLiveness() liveness { return localLiveness() }
