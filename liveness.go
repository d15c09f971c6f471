package mmv

import (
	"os"
	"sync"

	"github.com/gopcp/mmv/internal/osfile"
	"github.com/gopcp/mmv/internal/pcpconf"
)

// PCP's reader drops a Process file once its writer is gone, which it
// decides from /proc/<pid> in pmcd: the pid in the file's header, looked up
// in pmcd's PID namespace, as pmcd's user sees /proc. Two things make that
// check wrong for a live writer, and both are knowable at Start: a PID
// namespace of the writer's own (a container's), whose pids the host's
// pmcd does not number so, and a /proc mounted with hidepid, which hides
// the writer from pmcd's user. A Process registry that meets either is
// started without the flag in its files (they stay when the process dies,
// as any registry's without the flag), Close still taking them from PCP, and
// Err says why (docs/production.md, "The Process flag in containers and
// under hidepid"; the registry's side is checkLivenessLocked).

// liveness is what PCP's reader can tell of this process's life.
type liveness struct {
	local int    // this process's pid, os.Getpid
	pid   int    // the pid PCP checks: local, as the /proc mounted here numbers it
	why   string // why PCP cannot check it, "" when it can
}

// processLiveness is this process's liveness, found once.
var processLiveness = sync.OnceValue(func() liveness {
	user := pcpconf.Get(os.Getenv, "PCP_USER", pcpconf.Files)
	if user == "" {
		user = "pcp"
	}
	pid, why := osfile.Liveness(user)
	return liveness{local: os.Getpid(), pid: pid, why: why}
})

// pcpPid returns the pid a file's header names for the writer pid: this
// process's pid as PCP checks it, when pid is this process's.
func pcpPid(pid int32) int32 {
	if l := processLiveness(); int(pid) == l.local {
		return int32(l.pid)
	}
	return pid
}

// localPid is pcpPid's inverse, for a pid read from a file's header: this
// process's own pid when the header names this process.
func localPid(pid int) int {
	if l := processLiveness(); pid == l.pid && pid > 0 {
		return l.local
	}
	return pid
}
