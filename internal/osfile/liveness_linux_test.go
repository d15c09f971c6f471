//go:build linux

package osfile

import (
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
