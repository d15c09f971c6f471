//go:build linux

package osfile

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// initialPIDNamespace is the link /proc/<pid>/ns/pid of a process of the
// initial PID namespace, the host's: its inode is fixed
// (PROC_PID_INIT_INO).
const initialPIDNamespace = "pid:[4026531836]"

// Liveness returns this process's pid as PCP's reader checks it for a
// Process file, access("/proc/<pid>") in pmcd, and why that check cannot
// hold, "" when it can; pcpUser is pmcd's user (PCP_USER). The pid is the
// one the /proc mounted here shows, which NSpid names first (the host's
// when this process is in a PID namespace of its own under the host's
// /proc). The check cannot hold in a PID namespace of its own with its
// own /proc (a container's, when no pmcd runs in it), whose pids the
// host's pmcd does not number so, nor under a /proc mounted with hidepid
// that hides this process from pcpUser.
func Liveness(pcpUser string) (pid int, why string) {
	v := procView()
	pid = os.Getpid()
	if len(v.chain) > 0 {
		pid = v.chain[0]
	}
	if !v.pcps {
		return pid, fmt.Sprintf("this process is in a PID namespace of its own (a container's, where it is pid %d) and its pid in the host's namespace, where pmcd checks it, is not visible here, "+
			"so PCP would go on showing its last values once it dies, or never show them; "+
			"run it in the host's PID namespace (docker run --pid=host, a pod's hostPID) or leave the flag out", os.Getpid())
	}
	if v.hide != "" && !userSees(pcpUser, v.gid) {
		return pid, fmt.Sprintf("/proc is mounted with hidepid=%s, which hides this process (uid %d) from pmcd's user, %s, so PCP would not show its files while it runs; "+
			"mount /proc with gid= a group of %s (mount -o remount,hidepid=%s,gid=$(id -g %s) /proc) or leave the flag out", v.hide, os.Geteuid(), pcpUser, pcpUser, v.hide, pcpUser)
	}
	return pid, ""
}

// view is what the /proc mounted here tells of this process and others.
type view struct {
	chain []int  // this process's NSpid, from /proc's namespace down to its own
	pcps  bool   // /proc numbers pids as PCP checks them: the initial namespace's, or one a pmcd runs in
	kill  bool   // kill(2) numbers pids as /proc does: this process's PID namespace is /proc's
	hide  string // /proc's hidepid, "" when it hides no process (procHidepid)
	gid   int    // /proc's gid option, -1 when none
}

// procView is the view of the /proc mounted here, found once: mounts and
// namespaces do not change under a running program that mmv knows of.
var procView = sync.OnceValue(func() view {
	status, _ := os.ReadFile("/proc/self/status")
	v := view{chain: nsPids(string(status))}
	v.pcps = procNamespaceInitial(len(v.chain)) || pmcdInView()
	v.kill = len(v.chain) == 0 || v.chain[0] == os.Getpid()
	mountinfo, _ := os.ReadFile("/proc/self/mountinfo")
	v.hide, v.gid = procHidepid(string(mountinfo))
	return v
})

// processGone decides as PCP's reader does, access("/proc/<pid>"), for
// the pid of another writer's file: gone when /proc has no such entry,
// and kill(pid, 0) finds no process either where it numbers pids as /proc
// does (hidepid=invisible hides other users' processes from /proc, and
// kill's EPERM says one lives); with no kill of /proc's numbering, a
// /proc that hides processes cannot tell. Where /proc does not number
// pids as PCP does (a PID namespace of this process's own, with its own
// /proc, no pmcd in it), a pid it lacks may be a live writer's in PCP's
// namespace: nothing is gone. Two system calls at most, one for a live
// pid.
func processGone(pid int) bool { return procView().gone(pid) }

// gone is processGone under the view v.
func (v view) gone(pid int) bool {
	if !v.pcps {
		return false
	}
	if err := unix.Access("/proc/"+strconv.Itoa(pid), unix.F_OK); !errors.Is(err, unix.ENOENT) {
		return false // there, or hidden with EPERM (hidepid=noaccess): alive
	}
	if v.kill {
		return errors.Is(unix.Kill(pid, 0), unix.ESRCH)
	}
	return v.hide == ""
}

// nsPids returns the pids of the NSpid line of /proc/<pid>/status, none
// when it has none (Linux before 4.1).
func nsPids(status string) []int {
	for line := range strings.Lines(status) {
		rest, ok := strings.CutPrefix(line, "NSpid:")
		if !ok {
			continue
		}
		var pids []int
		for _, f := range strings.Fields(rest) {
			n, err := strconv.Atoi(f)
			if err != nil || n <= 0 {
				return nil
			}
			pids = append(pids, n)
		}
		return pids
	}
	return nil
}

// procNamespaceInitial reports whether the /proc mounted here is the
// initial PID namespace's, depth being how many namespaces NSpid lists
// (one: /proc is this process's own). What cannot be read counts as the
// initial namespace: no error without a cause.
func procNamespaceInitial(depth int) bool {
	// Pid 1 of /proc is its namespace's init: readable as root, or when
	// this process is that init.
	if ns, err := os.Readlink("/proc/1/ns/pid"); err == nil {
		return ns == initialPIDNamespace
	}
	if depth <= 1 {
		ns, err := os.Readlink("/proc/self/ns/pid")
		return err != nil || ns == initialPIDNamespace
	}
	// Kernel threads are in the initial namespace alone, kthreadd pid 2.
	comm, err := os.ReadFile("/proc/2/comm")
	return err != nil || string(comm) == "kthreadd\n"
}

// pmcdInView reports whether a pmcd runs in the PID namespace of the /proc
// mounted here (a pod's PCP sharing it), which then checks the pids that
// /proc shows.
func pmcdInView() bool {
	es, _ := os.ReadDir("/proc")
	for _, e := range es {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		if comm, _ := os.ReadFile("/proc/" + e.Name() + "/comm"); string(comm) == "pmcd\n" {
			return true
		}
	}
	return false
}

// procHidepid returns the hidepid option of the proc file system mounted
// last at /proc in mountinfo when it hides other users' processes from
// PCP's check, access("/proc/<pid>", F_OK): noaccess too, which fails it
// with EPERM (1, 2 and 4 in kernels before 5.8 for noaccess, invisible and
// ptraceable); and its gid option, -1 when it has none.
func procHidepid(mountinfo string) (hide string, gid int) {
	var opts string
	for line := range strings.Lines(mountinfo) {
		mount, super, ok := strings.Cut(strings.TrimSpace(line), " - ")
		fs, sfs := strings.Fields(mount), strings.Fields(super)
		if ok && len(fs) >= 6 && len(sfs) >= 3 && fs[4] == "/proc" && sfs[0] == "proc" {
			opts = fs[5] + "," + sfs[2]
		}
	}
	gid = -1
	for o := range strings.SplitSeq(opts, ",") {
		k, v, _ := strings.Cut(o, "=")
		switch {
		case k == "hidepid" && v != "0" && v != "off":
			hide = v
		case k == "gid":
			if n, err := strconv.Atoi(v); err == nil {
				gid = n
			}
		}
	}
	return hide, gid
}

// userSees reports whether the user name sees this process under hidepid
// with the gid option gid (-1: none): as root, as this process's user, or
// as a member of gid.
func userSees(name string, gid int) bool {
	u, err := user.Lookup(name)
	if err != nil {
		return false
	}
	if u.Uid == "0" || u.Uid == strconv.Itoa(os.Geteuid()) {
		return true
	}
	if gid < 0 {
		return false
	}
	g := strconv.Itoa(gid)
	groups, _ := u.GroupIds()
	return u.Gid == g || slices.Contains(groups, g)
}
