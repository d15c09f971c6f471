package osfile

import (
	"strconv"
	"strings"
)

// A file is written under a temporary name, ".<name>.<pid>.<random>", and
// renamed into place once complete: PCP's reader ignores names starting
// with '.'. The pid is the writer's, as its PID namespace numbers it, for
// people and mmvdump -lint to read; whether the writer is gone is told by
// the temporary's lock, which its writer holds until it renames or
// removes it (see createTemp and reclaim). The random part is TempRandom
// lowercase hex digits. This file is the one definition of that shape,
// for the writer and for mmvfile's lint alike; it builds on every system.

// TempRandom is the length of a temporary name's random part.
const TempRandom = 8

// TempLen is the most a temporary name adds to its file's name: the dots,
// a pid (pid_max is at most 2^22, 7 digits) and the random part.
const TempLen = 1 + 1 + 7 + 1 + TempRandom

// tempName is the temporary name of name written by pid, with its random
// part.
func tempName(name string, pid int, random string) string {
	return "." + name + "." + strconv.Itoa(pid) + "." + random
}

// ParseTemp returns the name of the file and the pid of the writer of the
// temporary named entry, and false when entry is no temporary's name: a
// '.', a name, a '.', a pid in decimal, a '.', and TempRandom lowercase
// hex digits. A temporary of the overflow file name.2 is
// .<name>.2.<pid>.<random>, whose file is name.2; names such as
// .<name>.<digits>.lock are not temporaries.
func ParseTemp(entry string) (name string, pid int, ok bool) {
	rest, ok := strings.CutPrefix(entry, ".")
	if !ok {
		return "", 0, false
	}
	i := strings.LastIndexByte(rest, '.')
	if i < 0 || len(rest)-i-1 != TempRandom || strings.Trim(rest[i+1:], "0123456789abcdef") != "" {
		return "", 0, false
	}
	rest = rest[:i]
	j := strings.LastIndexByte(rest, '.')
	if j <= 0 {
		return "", 0, false
	}
	digits := rest[j+1:]
	pid, err := strconv.Atoi(digits)
	if err != nil || digits[0] == '0' || strings.Trim(digits, "0123456789") != "" {
		return "", 0, false // as strconv.Itoa writes a pid, 1 up
	}
	return rest[:j], pid, true
}

// registryFile reports whether file is name or one of its overflow files,
// name.N (N digits).
func registryFile(file, name string) bool {
	n, ok := strings.CutPrefix(file, name+".")
	return file == name || ok && n != "" && strings.Trim(n, "0123456789") == ""
}

// ClosedName is the name a registry with the Process flag gives each of
// its files at Close, in its directory, instead of removing it: ".<name>.closed",
// which PCP's reader ignores (it starts with '.'), and which is no
// temporary's (its last part is not TempRandom hex digits) nor a
// registry's file's (no registry's name starts with '.'). The next run of
// the name reads it as it reads a file left at the name (mmv's carry.go).
func ClosedName(name string) string { return "." + name + closedSuffix }

// ClosedOf returns the name whose closed record (ClosedName) is entry, and
// whether entry is one.
func ClosedOf(entry string) (string, bool) {
	n, ok := strings.CutSuffix(entry, closedSuffix)
	if !ok || len(n) < 2 || n[0] != '.' {
		return "", false
	}
	return n[1:], true
}

const closedSuffix = ".closed"
