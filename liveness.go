package mmv

import (
	"os"
	"sync"
)

// PCP's reader drops a Process file once its writer is gone, which it
// decides from /proc/<pid> in pmcd: the pid in the file's header, looked up
// in pmcd's PID namespace, as pmcd's user sees /proc. Two things make that
// check wrong for a live writer, and both are knowable at Start: a PID
// namespace of the writer's own (a container's), whose pids the host's
// pmcd does not number so, and a /proc mounted with hidepid, which hides
// the writer from pmcd's user. A Process registry that meets either is
// started without the flag in its files (they stay when the process dies,
// as any registry's without the flag), Close still removing them, and
// Err says why (docs/production.md, "The Process flag in containers and
// under hidepid").

// liveness is what PCP's reader can tell of this process's life.
type liveness struct {
	local int    // this process's pid, os.Getpid
	pid   int    // the pid PCP checks: local, as the /proc mounted here numbers it
	why   string // why PCP cannot check it, "" when it can
}

// processLiveness is this process's liveness, found once.
var processLiveness = sync.OnceValue(findLiveness)

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

// checkLivenessLocked withholds the Process flag from the files of a
// registry that has it when PCP's reader cannot check this process's life,
// and records why for Err. It returns the flags withheld, which
// restoreFlagsLocked gives back when Start fails.
func (r *Registry) checkLivenessLocked() Flags {
	r.liveErr = nil
	why := processLiveness().why
	if r.opts.Flags&Process == 0 || why == "" {
		return 0
	}
	r.liveErr = errorf(ErrUnsupported, subject("file", r.name), "the Process flag: %s; its files are written without it, so they stay with their last values if the process dies without Close (Close still removes them)", why)
	r.opts.Flags &^= Process
	for _, p := range r.parts {
		p.flags &^= Process
	}
	return Process
}

// restoreFlagsLocked gives back the flags checkLivenessLocked withheld.
func (r *Registry) restoreFlagsLocked(withheld Flags) {
	r.opts.Flags |= withheld
	for _, p := range r.parts {
		p.flags |= withheld
	}
	r.liveErr = nil
}

// processAsked reports whether the registry was given the Process flag,
// withheld from its files or not: Close removes its files.
func (r *Registry) processAsked() bool { return r.opts.Flags&Process != 0 || r.liveErr != nil }

// localLiveness is the liveness of a system where PCP's check holds.
func localLiveness() liveness { return liveness{local: os.Getpid(), pid: os.Getpid()} }
