//go:build linux

package osfile

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestProcHidepid: the /proc mounted last at /proc decides, its hidepid
// option from the per-mount or the super block's options, in either
// notation; hidepid=off does not hide, and gid= is read.
func TestProcHidepid(t *testing.T) {
	const host = "22 27 0:21 / /proc rw,relatime - proc proc rw\n"
	for _, c := range []struct {
		mountinfo, hide string
		gid             int
	}{
		{host, "", -1},
		{host + "68 22 0:40 / /proc rw,relatime - proc proc rw,gid=995,hidepid=invisible\n", "invisible", 995},
		{host + "68 22 0:40 / /proc rw,relatime - proc proc rw,hidepid=2\n", "2", -1},
		{host + "68 22 0:40 / /proc rw,relatime - proc proc rw,hidepid=noaccess\n", "noaccess", -1},
		{host + "68 22 0:40 / /proc rw,relatime - proc proc rw,hidepid=off\n", "", -1},
		{"68 22 0:40 / /proc rw,relatime - proc proc rw,hidepid=ptraceable\n" + host, "", -1}, // mounted over
		{"68 22 0:40 / /mnt/proc rw - proc proc rw,hidepid=2\n" + host, "", -1},
		{"68 22 0:40 / /proc rw shared:5 - proc proc rw,hidepid=4", "4", -1},
	} {
		hide, gid := procHidepid(c.mountinfo)
		assert.Equal(t, c.hide, hide, c.mountinfo)
		assert.Equal(t, c.gid, gid, c.mountinfo)
	}
}

// TestNSPids: NSpid lists the pids from the namespace of the /proc read
// down to the process's own; none without the line.
func TestNSPids(t *testing.T) {
	assert.Equal(t, []int{23234, 1}, nsPids("Name:\tx\nNSpid:\t23234\t1\nNStgid:\t23234\t1\n"))
	assert.Equal(t, []int{7}, nsPids("NSpid:\t7\n"))
	assert.Nil(t, nsPids("Name:\tx\nPid:\t7\n"))
}

// TestProcessGoneByView: a pid /proc lacks is gone where /proc numbers
// pids as PCP does, kill(pid, 0) agreeing where it numbers them alike;
// where /proc hides others and kill numbers pids otherwise (a PID
// namespace of its own under the host's /proc), or where /proc is not
// PCP's (its own, in a container), nothing is gone. A pid /proc shows
// lives.
func TestProcessGoneByView(t *testing.T) {
	const dead = 1<<22 + 12345 // past pid_max
	self := procView().chain
	pid := os.Getpid()
	if len(self) > 0 {
		pid = self[0]
	}
	for _, c := range []struct {
		v          view
		deadIsGone bool
	}{
		{view{pcps: true, kill: true}, true},
		{view{pcps: true, kill: true, hide: "invisible"}, true},
		{view{pcps: true}, true},
		{view{pcps: true, hide: "2"}, false},
		{view{kill: true}, false},
		{view{}, false},
	} {
		assert.Equal(t, c.deadIsGone, c.v.gone(dead), "%+v", c.v)
		assert.False(t, c.v.gone(pid), "%+v", c.v)
	}
}
