package mmv

import (
	"encoding/binary"
	"math"
	"strconv"
	"strings"
	"time"
)

// Flags are the header flags of an MMV file; they tell the reader how to
// name the file's metrics and when to drop them.
type Flags uint32

const (
	// NoPrefix names metrics mmv.<metric> instead of mmv.<file>.<metric>.
	NoPrefix Flags = 1 << iota
	// Process makes the reader drop the file's metrics once the writing
	// process has exited, and makes Close remove the files from PCP's
	// view: each file renamed to its closed record in its directory
	// (.<file>.closed, .<file>.N.closed for an overflow file <file>.N),
	// which PCP ignores and the next Start of the name reads, so that a
	// name it declares with another descriptor takes another PMID (a
	// client that looked the name up before reads no value by the old
	// descriptor) and the names it no longer declares keep their PMIDs
	// with no value. The reader
	// checks /proc/<pid> in pmcd, as pmcd's user: on Linux, where that
	// check cannot hold, Start writes the files without the flag, Close
	// still taking them from PCP, and Err says why, with an error wrapping
	// ErrUnsupported. That is a process in a PID namespace of its own (a
	// container's; unless its /proc is the host's, when its pid there is
	// written, or a pmcd runs in its namespace), and a /proc mounted with
	// hidepid (noaccess, invisible or ptraceable) that hides it from
	// pmcd's user (pcp; not with a gid= option of a group of that
	// user's). Without the flag,
	// files stay with their last values after a process dies: share the
	// host's PID namespace, or mount /proc with gid=, to keep the promise
	// (docs/production.md, "The Process flag in containers and under
	// hidepid").
	Process
	// Sentinel makes the reader show reserved values (all-ones integers,
	// NaN floats, empty strings) as "no value": an instrument's too, an
	// IntGauge at -1, a Gauge at NaN, a Counter at 2^64-1, which Gather
	// and Snapshot then leave out as well.
	Sentinel
)

const allFlags = NoPrefix | Process | Sentinel

// String returns the names of the flags as PCP's mmvdump names them,
// joined by commas, such as "noprefix,process"; unknown bits in hex after
// "unknown=", as "unknown=10"; "none" for no flag.
func (f Flags) String() string {
	var names []string
	for _, n := range []struct {
		f    Flags
		name string
	}{{NoPrefix, "noprefix"}, {Process, "process"}, {Sentinel, "sentinel"}} {
		if f&n.f != 0 {
			names = append(names, n.name)
			f &^= n.f
		}
	}
	if f != 0 {
		names = append(names, "unknown="+strconv.FormatUint(uint64(f), 16))
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ",")
}

// The header record: magic "MMV\0", version, two generation numbers that a
// reader compares to detect a file being written, the TOC count, flags, the
// writer's pid and the cluster.
const (
	headerSize    = 40
	hdrVersionOff = 4
	hdrGen1Off    = 8
	hdrGen2Off    = 16
	hdrTocsOff    = 24
	hdrFlagsOff   = 28
	hdrPidOff     = 32
	hdrClusterOff = 36
)

// Magic is the four bytes every MMV file starts with.
const Magic = "MMV\x00"

// The file format versions: v1 has fixed 64-byte names, v2 keeps names in
// the string section, v3 adds labels.
const (
	Version1 = 1
	Version2 = 2
	Version3 = 3
)

var ne = binary.NativeEndian

// putHeader writes every header field but gen2, which is written last once
// the rest of the file is complete; this process's pid as PCP checks it
// (pcpPid).
func putHeader(b []byte, version, tocs int, flags Flags, pid int32, cluster uint32, gen uint64) {
	copy(b, Magic)
	ne.PutUint32(b[hdrVersionOff:], uint32(version))
	ne.PutUint64(b[hdrGen1Off:], gen)
	ne.PutUint32(b[hdrTocsOff:], uint32(tocs))
	ne.PutUint32(b[hdrFlagsOff:], uint32(flags))
	ne.PutUint32(b[hdrPidOff:], uint32(pcpPid(pid)))
	ne.PutUint32(b[hdrClusterOff:], cluster)
}

// generation returns a generation number as libpcp makes them: seconds in
// the high 32 bits, microseconds in the low.
func generation(t time.Time) uint64 {
	return uint64(t.Unix())<<32 | uint64(t.Nanosecond()/1000)
}

// head is what a registry reads of another file's header, whatever
// wrote it: the head of its directory's files when it claims a cluster
// (liveClusters) or keeps an earlier run's as a tombstone (buryLocked), the
// writer of a file whose lock is held (fileFormat).
type head struct {
	flags   Flags
	pid     int
	cluster uint32
	gen     uint64 // the first generation
}

// readHead reads the header h, and reports whether it is an MMV file's;
// this process's pid as os.Getpid gives it (localPid).
func readHead(h []byte) (head, bool) {
	if len(h) < headerSize || string(h[:len(Magic)]) != Magic {
		return head{}, false
	}
	return head{flags: Flags(ne.Uint32(h[hdrFlagsOff:])), pid: localPid(int(int32(ne.Uint32(h[hdrPidOff:])))), cluster: ne.Uint32(h[hdrClusterOff:]),
		gen: ne.Uint64(h[hdrGen1Off:])}, true
}

// ReaderCluster, as Options.Cluster, writes cluster 0 in the file, as
// libpcp_mmv does when given none: PCP's reader then picks a cluster of its
// own, which may differ on every restart and on every host, and which
// cluster labels never match (Registry.AddLabel refuses them).
const ReaderCluster = math.MaxUint32

// Limits of one file, as PCP's reader enforces them.
const (
	MaxItem      = 1023 // largest item number
	MaxMetrics   = 1023 // metrics in one file
	MaxSerial    = 2047 // largest indom serial
	MaxCluster   = 4095 // largest cluster; 2047 in a file with indoms
	MaxLabels    = 255  // labels in one file
	MaxStringLen = 255  // bytes of a help text, string value or v2 name
	maxV1Name    = 63   // bytes of a name in a version 1 file

	// An indom's id is cluster<<11|serial in PCP's 22-bit indom serial, so
	// the cluster of a file with indoms must fit in 11 bits.
	indomIDBits     = 22
	maxIndomCluster = 1<<(indomIDBits-11) - 1
)
