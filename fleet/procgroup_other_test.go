//go:build !unix

package fleet

import "os/exec"

// ownGroup: the fleet's daemons (pmcd, pmproxy, redis) run on Unix only;
// elsewhere this builds, for go vet.
func ownGroup(*exec.Cmd) {}
