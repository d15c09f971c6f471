package mmv

import (
	"fmt"
	"math/bits"
	"os"

	"github.com/gopcp/mmv/internal/osfile"
)

// The identities the registry chooses itself derive from the names they
// stand for, so that a restarted program, or the same program on another
// host, publishes the same ones whatever the order its declarations and
// label values arrive in: a metric's item and a file's cluster (below), an
// instrument's indom serial from its metric's name, a vector's instance id
// from the instance's name. A derived identity that is taken probes to the
// next free one: the name that came first keeps its own, and the later one
// moves. An identity once given never moves and never names another name
// while the registry lives (see instanceIDs.idLocked for how a vector keeps that
// with bounded memory).

// Indom serials derived from names are in the upper half of the serials,
// so that the serials a program chooses itself, usually from 1 up, stay
// free unless that half is full.
const (
	derivedSerials     = (MaxSerial + 1) / 2
	firstDerivedSerial = MaxSerial + 1 - derivedSerials
)

// autoSerial returns the serial an indom of the registry's own, for the
// metric or metrics named key, takes among those not taken: derived from
// key, 1024..2047, probing up and wrapping to the next free one, else the
// highest free one below 1024; 0 when none is free.
func autoSerial(key string, taken *serialSet) uint32 {
	home := fnv32(key) % derivedSerials
	for j := range uint32(derivedSerials) {
		if s := firstDerivedSerial + (home+j)%derivedSerials; !taken.has(s) {
			return s
		}
	}
	return highestFree(taken, firstDerivedSerial-1)
}

// highestFree returns the highest serial from down to 1 not taken, 0 when
// none is.
func highestFree(taken *serialSet, from uint32) uint32 {
	for s := from; s > 0; s-- {
		if !taken.has(s) {
			return s
		}
	}
	return 0
}

// vecIDSpace is the number of ids a vector's instances may have, 0 up:
// PCP's instance ids are 31 bits.
const vecIDSpace = 1 << 31

// instanceIDs are the ids a vector gave the names of its instances. The
// id of a name that its indom still has, live or removed, and the name of
// an id, are the indom's (vecKind.idOfLocked, nameOfLocked): the vector
// keeps nothing per instance of its own, only the ids of the names its
// indom forgot, while it derives ids.
type instanceIDs struct {
	forgotten map[int32]string // the ids of names the indom forgot, while deriving (idLocked)
	counting  bool             // ids of new names are counted, no longer derived
	counted   int64            // ids counted
}

// idLocked returns the id the instance name of the vector takes, and
// whether the indom has that instance (seen), or false when the vector has
// given every id it may: ids are 0 to space-1 (vecKind.idSpace). nameOf
// returns the name of an id the indom has. While the vector derives ids,
// a name the indom has is found on its probe, and one not found there is
// new to the indom (no other adds to a vector's indom: see
// Registry.AddInstance); once it counts, it finds the ids of names by name
// first (Vec.add).
//
// Derived: FNV-1a of the name in the lower half of the ids, probing up
// and wrapping within that half to the first id that no other name was
// given in the registry's life: one the indom has, or one of a name it
// forgot (forgotLocked), so that none names another name later; the
// forgotten name itself, used again, finds its id there. To keep that
// memory bounded, a vector whose indom forgot more names than it may
// hold, and 64, stops deriving: from then on names new to it are counted
// in the upper half, in order, and none of its derived ids is given again.
func (s *instanceIDs) idLocked(name string, space int64, nameOf func(int32) (string, bool)) (id int32, seen, ok bool) {
	half := space / 2
	if !s.counting {
		home := int64(fnv32(name)) % half
		for j := range half {
			id := int32((home + j) % half)
			if o, has := nameOf(id); has {
				if o == name {
					return id, true, true
				}
				continue
			}
			if o, forgot := s.forgotten[id]; !forgot || o == name {
				return id, false, true
			}
		}
	}
	if half+s.counted >= space {
		return 0, false, false
	}
	return int32(half + s.counted), false, true
}

// gaveLocked records that a new name took id, of space ids.
func (s *instanceIDs) gaveLocked(id int32, space int64) {
	if int64(id) >= space/2 {
		s.counted++
	}
}

// forgotLocked records that the indom forgot the instance inst, of a
// vector that may hold holds instances (its limit, within the registry's
// cap per indom): while the vector derives ids it keeps the id, so that
// no other name takes it, until it keeps more than holds, and 64; it then
// stops deriving (see idLocked) and keeps none.
func (s *instanceIDs) forgotLocked(inst Instance, holds int) {
	if s.counting {
		return
	}
	if s.forgotten == nil {
		s.forgotten = map[int32]string{}
	}
	s.forgotten[inst.ID] = inst.Name
	if len(s.forgotten) > max(holds, 64) {
		s.counting, s.forgotten = true, nil
	}
}

// idsExhausted is the error of a vector (subject) that has given every
// id of space it may to name.
func idsExhausted(subject, name string, space int64) error {
	return errorf(ErrTooMany, inside(subject, "instance", name), "the vector has counted all its ids, %d to %d, once it forgot more values than its limit: it refuses new values for the registry's life", space/2, space-1)
}

// itemSet is a set of items, 0..MaxItem, a bit each: a part holds one,
// and a bool each made every part, and so every registry, 1 KB larger.
type itemSet [(MaxItem + 64) / 64]uint64

func (s *itemSet) has(it uint32) bool { return s[it/64]&(1<<(it%64)) != 0 }
func (s *itemSet) add(it uint32)      { s[it/64] |= 1 << (it % 64) }
func (s *itemSet) remove(it uint32)   { s[it/64] &^= 1 << (it % 64) }

// removeAll removes the items of o.
func (s *itemSet) removeAll(o *itemSet) {
	for i := range s {
		s[i] &^= o[i]
	}
}

// count is the number of items in s.
func (s *itemSet) count() (n int) {
	for _, w := range s {
		n += bits.OnesCount64(w)
	}
	return n
}

// fixedInstances returns the instances of an indom of the registry's own
// whose names are fixed at its declaration (a histogram's buckets, by
// upper bound; the reasons of mmv.dropped), each id derived from its name
// as a vector's are (FNV-1a in the lower half of the ids), the next free
// one when taken. Numbered by position, a new version that changed a
// histogram's buckets gave a bucket's id to another bound (le=1's to
// le=2), and a client that had resolved the instance (pmval -i, pmrep)
// showed the other bucket's counts under the old bound, no one told
// (TestHistogramBucketIDsFollowBounds).
func fixedInstances(names []string) []Instance {
	insts := make([]Instance, len(names))
	taken := make(map[int32]bool, len(names))
	for i, n := range names {
		id := int32(int64(fnv32(n)) % (vecIDSpace / 2))
		for taken[id] {
			id = int32((int64(id) + 1) % (vecIDSpace / 2))
		}
		taken[id] = true
		insts[i] = Instance{ID: id, Name: n}
	}
	return insts
}

// takeItem returns the item name hashes to, or the next one not in used,
// and marks it used.
func takeItem(name string, used *itemSet) uint32 {
	it := 1 + fnv32(name)%MaxItem
	for used.has(it) {
		it = 1 + it%MaxItem
	}
	used.add(it)
	return it
}

func fnv32(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

// A part's cluster is claimed under the directory's lock (osfile.Dir.LockClaims),
// held from the scan of the directory's files until the part's file is at
// its name: so of registries starting at once, in one process or several,
// each sees the files of those before it, and no two take one cluster.
// The parts a Start or a publication makes are claimed under one hold of
// the lock and one scan (claims): a scan for each part read every file
// of the directory for each of the registry's files, 11 s for the 1,000
// files of 2,000 vectors at the default budget.

// claims are the live clusters of a directory whose claim lock is held,
// scanned once (liveClusters), which claimCluster chooses among, and the
// clusters of the parts made since under the same hold (took).
type claims struct {
	live   map[uint32]holder
	shown  []shownFile // the files the reader shows, of every cluster (liveClusters)
	unlock func()
}

// release lets the directory's claim lock go, if cl holds it.
func (cl *claims) release() {
	if cl != nil {
		cl.unlock()
	}
}

// took records that the file name, of this process, is at its name on
// cluster c (none for 0: the reader picks it).
func (cl *claims) took(name string, c uint32) {
	if c != 0 {
		cl.live[c] = holder{name: name, pid: os.Getpid(), alive: true}
	}
}

// claimCluster chooses the cluster of the file name (a registry's first,
// or an overflow file) about to start, in a registry whose first file has
// cluster c (Options.Cluster for the first file itself), among the live
// clusters of its directory (claims.live), which leave out the files the
// registry's own are about to replace:
//   - for the first file, c when given, refused with ErrClusterInUse when
//     another live file of d has it; 0 for ReaderCluster, and PCP's reader
//     then picks a cluster for every file; for 0, the first free cluster
//     from one derived from the file's name (FNV-1a), so the same on every
//     restart and every host while it is free;
//   - for an overflow file, the first free cluster after c, or 0 when c
//     is 0.
//
// A cluster searched for wraps within 1..2047, the clusters a file with
// indoms may have; a free one is one no live file of d has (liveClusters).
func claimCluster(name string, overflow bool, c uint32, live map[uint32]holder) (uint32, error) {
	if c == ReaderCluster || overflow && c == 0 {
		return 0, nil
	}
	if !overflow && c != 0 {
		if h, taken := live[c]; taken {
			return 0, errorf(ErrClusterInUse, subject("file", name), "cluster %d is that of file %s, %s: PCP would show one file's values under the other's names",
				c, quote(h.name), h.writer())
		}
		return c, nil
	}
	from := c%maxIndomCluster + 1
	if !overflow {
		from = 1 + fnv32(name)%maxIndomCluster
	}
	for j := range uint32(maxIndomCluster) {
		cand := (from-1+j)%maxIndomCluster + 1
		if _, taken := live[cand]; !taken {
			return cand, nil
		}
	}
	return 0, errorf(ErrTooMany, subject("file", name), "no cluster left: every one of 1..%d is in use", maxIndomCluster)
}

// holder is a live file of the directory on a cluster.
type holder struct {
	name  string
	pid   int
	alive bool
}

// writer names the process that wrote the file.
func (h holder) writer() string {
	switch {
	case h.pid <= 0:
		return "whose header names no writer"
	case h.alive:
		return fmt.Sprintf("written by pid %d", h.pid)
	}
	return fmt.Sprintf("left by pid %d, no longer running (the file has no Process flag, so PCP goes on reading it: remove it if its program is gone for good)", h.pid)
}

// liveClusters returns the files of d that PCP's reader shows on a
// cluster of their own, by cluster: every MMV file but those about to be
// replaced, those whose names start with '.' (temporaries, which the
// reader ignores), those on cluster 0 (the reader picks theirs) and
// Process files whose writer is gone (the reader skips them). The files of
// the registry's started parts count, so its parts never share a cluster.
// It returns too every file of those the reader shows, whatever its
// cluster, with its flags: the files whose names a Start checks its own
// against (checkNamespaceLocked), from the same read of their headers.
func liveClusters(d *osfile.Dir, replaced func(name string) bool) (map[uint32]holder, []shownFile) {
	live := map[uint32]holder{}
	var shown []shownFile
	for _, name := range d.List() {
		if name[0] == '.' || replaced(name) {
			continue
		}
		var b [headerSize]byte
		h, ok := readHead(b[:d.ReadHead(name, b[:])])
		if !ok {
			continue
		}
		alive := h.pid > 0 && !osfile.ProcessGone(h.pid)
		if h.flags&Process != 0 && !alive {
			continue
		}
		shown = append(shown, shownFile{name: name, flags: h.flags, pid: h.pid})
		if h.cluster != 0 {
			live[h.cluster] = holder{name: name, pid: h.pid, alive: alive}
		}
	}
	return live, shown
}

// shownFile is a file of the directory PCP's reader shows, and its
// header's flags and pid.
type shownFile struct {
	name  string
	flags Flags
	pid   int
}
