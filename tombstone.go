package mmv

import (
	"bytes"
	"errors"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/gopcp/mmv/internal/osfile"
)

// An earlier run's overflow files: a registry started again finds the
// files <file>.N its last run made past the parts it has at Start (its
// metrics declared after Start, a bridge's families, overflow the first
// file later). Left as they were, PCP showed that run's values as this
// run's, and a name this run declares as a leaf, which they held as a
// prefix, made PCP's namespace fail whole; removed, their PMIDs vanished
// and came back when this run made <file>.N again, which crashes pmcd
// while a client fetches them (docs/design.md, "A pmcd crash in PCP's
// reader"; TestRestartOverflowKeepsPMCD). So Start rewrites each as a
// tombstone: its metrics, showing no value, but those whose names this run
// declares in another file or that clash with one at a dot; the file
// this run makes at its name later is renamed over it, the PMIDs kept.

// maxTombstone bounds the file read to make a tombstone: past it, a file
// of an overflow file's name is none of mmv's.
const maxTombstone = 1 << 30

// buryLeftoversLocked makes a tombstone of every overflow file an earlier
// run of the registry's name left past its own parts, <file>.N for N
// above them: a file of that name with the NoPrefix flag, which every
// overflow file has, that no live registry holds; a registry named so
// without the flag is another's, and stays, and so is one with a name not
// under the registry's (bury), and so is one whose writer, another
// process, is alive (libpcp_mmv's takes no lock). A NoPrefix registry's
// overflow files carry no prefix, so nothing else tells them from another
// writer's NoPrefix file named <file>.N, its writer gone: no NoPrefix
// registry of mmv's is named so (checkRegistryName). A Process run's
// Close left each as its closed record (osfile.ClosedName), buried at
// <file>.N where nothing is, as carryLocked carries the record of a part
// this run has at Start: Close removed them, and a name of one that the
// next run declared again with another descriptor took its old PMID
// (TestClosedProcessRunKeepsOverflowIdentities). Under the directory's
// claim lock, at Start.
func (r *Registry) buryLeftoversLocked() error {
	names := r.dir.List()
	if tombstoneHook != nil {
		tombstoneHook(buryListed)
	}
	for _, name := range names {
		from := ""
		if n, ok := osfile.ClosedOf(name); ok {
			from, name = name, n
		}
		if i, ok := overflowIndex(r.name, name); !ok || i <= len(r.parts) {
			continue
		}
		if err := r.buryLocked(name, from); err != nil {
			return err
		}
	}
	return nil
}

// tombstonePoint is a point where tombstoneHook is called.
type tombstonePoint int

const (
	buryListed   tombstonePoint = iota // buryLeftoversLocked listed the directory, and has yet to bury
	closeStopped                       // Close let its parts' files go, and has yet to close its tombstones
)

// tombstoneHook, when tests set it, is called at the tombstonePoints.
var tombstoneHook func(tombstonePoint)

// overflowIndex returns N of a file named <registry>.N, the name of the
// registry's overflow file N (1 up, written as strconv writes it), and
// whether name is such a name. Start reads every name of the directory
// through it: it makes no error, nor any string, for the others.
func overflowIndex(registry, name string) (int, bool) {
	n, ok := strings.CutPrefix(name, registry)
	if !ok || len(n) < 2 || n[0] != '.' || n[1] == '0' {
		return 0, false
	}
	i := 0
	for _, c := range []byte(n[1:]) {
		d := int(c - '0')
		if c < '0' || c > '9' || i > (math.MaxInt-d)/10 {
			return 0, false
		}
		i = i*10 + d
	}
	return i, true
}

// buryLocked rewrites the overflow file at name, held by no registry, as
// a tombstone that keeps the metrics whose names are free of this run's
// other files (nameFreeLocked), and records it; it removes the file when
// it keeps none, or when it is no MMV file whose metrics it can read.
// Given from, the closed record of the file at name, it makes the
// tombstone from the record where nothing is at name (osfile.RewriteFrom),
// and the record is removed once Start succeeds.
func (r *Registry) buryLocked(name, from string) error {
	var kept []string
	var gen uint64
	buried := false
	rewrite := func(b []byte) []byte {
		switch h, ok := readHead(b); {
		case !ok || h.flags&NoPrefix == 0:
			return b // a registry's first file, named so: another's
		case from != "": // a closed record: its writer is done with it, whatever its pid
		case h.pid > 0 && localPid(h.pid) != os.Getpid() && !osfile.ProcessGone(h.pid):
			return b // a live writer's, which holds no lock (libpcp_mmv's): an earlier run's is gone
		}
		if _, tomb := r.tombs[name]; tomb && from == "" && !r.tombAtLocked(name, b) {
			return b // put at the tombstone's name since: another's
		}
		prefix := r.prefixAtLocked(name, b)
		var owner int32
		if r.fileFlagsLocked()&Process != 0 { // as its files have it: withheld, they name no writer
			owner = pcpPid(int32(os.Getpid())) // as PCP checks it (liveness.go)
		}
		nb, names, cut, ours := bury(b, prefix, overflowPrefix(r.name, r.opts.Flags), owner, func(x string) bool { return r.nameFreeLocked(x, name) })
		if !ours {
			return b // a NoPrefix registry's first file, named so: another's
		}
		buried = true
		if len(cut) > 0 {
			h, _ := readHead(b)
			if r.cut == nil {
				r.cut = map[string]cutItems{}
			}
			c := r.cut[name]
			r.cut[name] = cutItems{cluster: h.cluster, items: append(c.items, cut...)}
		}
		if kept = names; len(names) == 0 {
			return nil
		}
		h, _ := readHead(nb)
		gen = h.gen
		return nb
	}
	var err error
	if from == "" {
		_, err = r.dir.RewriteUnheld(name, maxTombstone, rewrite)
	} else {
		_, err = r.dir.RewriteFrom(name, from, maxTombstone, rewrite)
	}
	if err != nil {
		return fileError(name, "an earlier run's overflow file, which Start keeps with no values", err)
	}
	if from != "" {
		if !buried {
			return nil // nothing made at name
		}
		r.closedRecords = append(r.closedRecords, from)
	}
	delete(r.tombs, name)
	if buried && len(kept) > 0 {
		if r.tombs == nil {
			r.tombs = map[string]tombstone{}
		}
		r.tombs[name] = tombstone{names: kept, gen: gen, prefix: overflowPrefix(r.name, r.opts.Flags)}
	}
	return nil
}

// tombAtLocked reports whether the file at name is still the tombstone
// this run made there, read from its head b: another may have put its
// file at the name since (it was held by no one).
func (r *Registry) tombAtLocked(name string, b []byte) bool {
	t, ok := r.tombs[name]
	h, mmv := readHead(b)
	return ok && mmv && h.gen == t.gen
}

// prefixAtLocked returns the prefix of the metric names of the file at
// the overflow name, whose head is b: the one a tombstone this registry
// made there was written in (bury), else the last run's (lastPrefix). A
// Start that failed after burying left its tombstones in its prefix, and
// its retry, reading them in the last run's, carried tg.3's e and f as
// placeholders tg.tg.e and tg.tg.f, e declared again under another item
// (TestRetriedStartReadsItsTombstonesInItsPrefix).
func (r *Registry) prefixAtLocked(name string, b []byte) string {
	if r.tombAtLocked(name, b) {
		return r.tombs[name].prefix
	}
	return r.lastPrefix
}

// tendTombstonesLocked keeps the tombstones right before a part is
// published, with the lock held from here to the part's snapshot of its
// names (a publication lets the lock go between parts, and names are
// declared meanwhile): one whose name a part of this run now has its file
// at was renamed over, and is gone; one holding a name this run has
// declared in another file since, or a prefix of one, is rewritten
// without it. When that fails, so does the part's publication, retried:
// published, the name would be in two files. The directory's claim lock
// is not needed: the file is at a name of this registry's, and its own
// lock keeps writers apart.
func (r *Registry) tendTombstonesLocked() error {
	if len(r.tombs) == 0 {
		return nil
	}
	for _, p := range r.parts {
		if p.file != nil {
			delete(r.tombs, p.name)
		}
	}
	var errs []error
	for name, t := range r.tombs {
		if slices.ContainsFunc(t.names, func(x string) bool { return !r.nameFreeLocked(x, name) }) {
			errs = append(errs, r.buryLocked(name, ""))
		}
	}
	return errors.Join(errs...)
}

// closeTombstonesLocked takes the tombstones from PCP, at the Close of a
// registry with the Process flag, as its own files (stopPartsLocked):
// they have its flag and pid (bury), and PCP would drop them with it. Each
// is renamed to its closed record (osfile.ClosedName), for the next run
// to carry the PMIDs it keeps, as it does the files'. A file another put
// at a tombstone's name since stays. Under the directory's claim lock, as
// osfile.Dir.RewriteUnheld asks: a run of the registry's name starting in
// this process once the parts' files are let go, which buries the
// tombstones it lists as its own (buryLeftoversLocked), found them renamed
// between its listing and its burials, and never read their records
// (TestClosingTombstonesWaitForStartingRun); tendTombstonesLocked needs
// no lock, as no run of the name starts while this one holds its files.
// Past claimWait, the tombstones stay, with this process's pid and the
// Process flag: PCP drops them when it ends.
func (r *Registry) closeTombstonesLocked() error {
	if len(r.tombs) == 0 {
		return nil
	}
	unlock, err := r.dir.LockClaims(claimWait)
	if err != nil {
		clear(r.tombs)
		return fileError(r.name, "cannot close the tombstones of an earlier run's overflow files", err)
	}
	defer unlock()
	var errs []error
	for name := range r.tombs {
		_, err := r.dir.RewriteUnheldAs(name, osfile.ClosedName(name), maxTombstone, func(b []byte) []byte {
			if r.tombAtLocked(name, b) {
				return nil
			}
			return b
		})
		if err != nil {
			errs = append(errs, fileError(name, "cannot close the tombstone of an earlier run's overflow file", err))
		}
	}
	clear(r.tombs)
	return errors.Join(errs...)
}

// nameFreeLocked reports whether a tombstone at file may keep the metric
// named x: no metric of this run's is named x, or has x as a prefix at a
// dot, or is named as such a prefix of x, in another file than the one
// that will replace the tombstone.
func (r *Registry) nameFreeLocked(x, file string) bool {
	elsewhere := func(m *metric) bool { return m != nil && (m.part == nil || m.part.name != file) }
	if elsewhere(r.named(x)) || elsewhere(r.leafAbove(x)) {
		return false
	}
	return r.prefixes[x] == 0 || !slices.ContainsFunc(r.metrics, func(m *metric) bool {
		return strings.HasPrefix(m.Name, x+".") && elsewhere(m)
	})
}

// bury returns the tombstone of the MMV file b, whose metric names start
// with prefix (ours reports that they all do: a file with a name that
// does not is none of the registry's, and bury leaves it), written with
// the prefix to, the burying run's, so that every file
// a run leaves has its prefix, which its first file's flags say
// (lastOverflowPrefix): a tombstone kept in the prefix of a run before,
// one that set or cleared the NoPrefix flag, was read with the next run's
// (TestRandomRestartsKeepPMIDs); a name that does not fit then (63 bytes
// in a version 1 file, 255) is not kept, and cut has its item
// (reserveCutLocked). Made by a run whose pid
// is owner when it has the Process flag, 0 otherwise: b with the Sentinel flag and every value the reserved one
// that PCP shows as no value (all ones, which is a NaN float too, or an
// empty string), no labels, and only the metrics whose names, without
// prefix, keep says to keep, with those names; the values of the others
// are dead records. (Without value records, PCP's reader failed a fetch
// of a singular metric and its help text as of an unknown metric.) It
// keeps none of a file whose metrics it cannot read. The generation is
// new, so that PCP's reader loads it again. A Process run's tombstone has
// the flag and its pid: PCP drops it with the run's own files.
func bury(b []byte, prefix, to string, owner int32, keep func(name string) bool) (nb []byte, names []string, cut []uint32, ours bool) {
	nb = bytes.Clone(b)
	version, toc, ok := readTOC(nb) // the sections' TOC entries, in nb
	if !ok {
		return nil, nil, nil, true
	}
	records := func(t section, size int) (off, count int, ok bool) {
		if toc[t] == nil {
			return 0, 0, true
		}
		c, o := tocEntry(toc[t])
		return int(o), c, o <= uint64(len(b)) && c <= len(b)/size && int(o)+c*size <= len(b)
	}
	size := recordSize(secMetrics, version)
	off, count, ok := records(secMetrics, size)
	if !ok || count > MaxMetrics {
		return nil, nil, nil, true
	}
	all := make([]string, count) // "" for a name that cannot be read, which is not kept
	read := all[:0]
	for j := range all {
		if name, ok := nameAt(b, uint64(off+j*size), version); ok {
			all[j] = name
			read = append(read, name)
		}
	}
	if !allUnder(read, prefix) {
		return nil, nil, nil, false
	}
	moved := map[uint64]uint64{} // a kept metric's record, from its offset in b to nb's
	at := off
	for j, name := range all {
		rec := b[off+j*size:][:size]
		short := strings.TrimPrefix(name, prefix)
		if name == "" || !keep(short) {
			continue
		}
		copy(nb[at:], rec)
		if prefix != to && !putNameAt(nb, uint64(at), version, to+short) {
			cut = append(cut, ne.Uint32(rec[metricNameLen(version)+metricItemOff:]))
			continue // overwritten by the next kept, or cleared
		}
		moved[uint64(off+j*size)] = uint64(at)
		at += size
		names = append(names, short)
	}
	clear(nb[at : off+count*size])
	if toc[secMetrics] != nil {
		ne.PutUint32(toc[secMetrics][4:], uint32(len(names)))
	}
	voff, vcount, ok := records(secValues, valueSize)
	if !ok {
		return nil, nil, nil, true
	}
	for j := range vcount {
		v := nb[voff+j*valueSize:][:valueSize]
		to, kept := moved[ne.Uint64(v[valueMetricOff:])]
		if !kept {
			clear(v)
			continue
		}
		body := to + uint64(metricNameLen(version))
		ne.PutUint64(v[valueMetricOff:], to)
		ne.PutUint64(v, math.MaxUint64)
		switch Type(ne.Uint32(nb[body+metricTypeOff:])) {
		case String:
			if s := ne.Uint64(v[valueExtraOff:]); s < uint64(len(nb)) {
				nb[s] = 0
			}
		case Elapsed:
			ne.PutUint64(v[valueExtraOff:], 0)
		}
	}
	if toc[secLabels] != nil {
		ne.PutUint32(toc[secLabels][4:], 0)
	}
	flags := ne.Uint32(nb[hdrFlagsOff:]) | uint32(Sentinel)
	if owner != 0 {
		flags |= uint32(Process)
		ne.PutUint32(nb[hdrPidOff:], uint32(owner))
	}
	ne.PutUint32(nb[hdrFlagsOff:], flags)
	ne.PutUint64(nb[hdrGen1Off:], generation(time.Now()))
	return nb, names, cut, true
}
