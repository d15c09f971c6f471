//go:build linux

package osfile

import (
	"fmt"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"
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
	pid = os.Getpid()
	status, _ := os.ReadFile("/proc/self/status")
	chain := nsPids(string(status))
	if len(chain) > 0 {
		pid = chain[0]
	}
	if !procNamespaceInitial(len(chain)) && !pmcdInView() {
		return pid, fmt.Sprintf("this process is in a PID namespace of its own (a container's, where it is pid %d) and its pid in the host's namespace, where pmcd checks it, is not visible here, "+
			"so PCP would go on showing its last values once it dies, or never show them; "+
			"run it in the host's PID namespace (docker run --pid=host, a pod's hostPID) or leave the flag out", os.Getpid())
	}
	mountinfo, _ := os.ReadFile("/proc/self/mountinfo")
	if hide, gid := procHidepid(string(mountinfo)); hide != "" && !userSees(pcpUser, gid) {
		return pid, fmt.Sprintf("/proc is mounted with hidepid=%s, which hides this process (uid %d) from pmcd's user, %s, so PCP would not show its files while it runs; "+
			"mount /proc with gid= a group of %s (mount -o remount,hidepid=%s,gid=$(id -g %s) /proc) or leave the flag out", hide, os.Geteuid(), pcpUser, pcpUser, hide, pcpUser)
	}
	return pid, ""
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
