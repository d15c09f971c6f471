//go:build (darwin || freebsd) && !mmv_noport

package osfile

import (
	"errors"

	"golang.org/x/sys/unix"
)

// processGone: no PID namespaces, and as a rule no /proc mounted, where
// PCP checks a pid with kill(pid, 0) too: gone when kill says ESRCH.
func processGone(pid int) bool { return errors.Is(unix.Kill(pid, 0), unix.ESRCH) }
