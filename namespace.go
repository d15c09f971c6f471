package mmv

import (
	"io"
	"math"
	"slices"
	"strings"

	"github.com/gopcp/mmv/internal/osfile"
)

// One namespace across the directory's files: PCP's reader builds one
// from every MMV file it reads (docs/reader.md), so a full name in two
// files shows only one of them, and a leaf in one file that is a prefix
// at a dot in another makes its namespace fail whole or drop one of them,
// whichever file it reads first. Within a registry the declarations
// refuse such names (checkMetricLocked); across files Start refuses them,
// against the files of the directory as they are when it starts, under
// the directory's claim lock, and a metric declared after Start, against
// the files as they are then (checkNameAfterStartLocked).

// checkNamespaceLocked refuses, with ErrNamespace, a registry about to
// start whose full names, as PCP names them (mmv.<file>.<name>, or
// mmv.<name> with NoPrefix), clash with those of another file of d that
// the reader shows (shown, from the claims' scan): the same full name, or
// one a leaf where the other is a prefix at a dot. The files at the
// registry's own names, its first and overflow files, which it replaces
// or buries (buryLeftoversLocked), do not count. It reads the names only
// of the files that may clash: every NoPrefix file, whose names may be
// anything, and a file with a prefix that relates to one of the
// registry's full names at a dot; of those, the header, the TOC and the
// metrics' names alone (metricNames).
func (r *Registry) checkNamespaceLocked(d *osfile.Dir, shown []shownFile) error {
	for _, f := range shown {
		if f.name == r.name {
			continue
		}
		names, own := r.earlierOverflow(d, f)
		if own {
			continue
		}
		prefix := ""
		if f.flags&NoPrefix == 0 {
			if r.clashLocked(f.name) == nil {
				continue // nothing of the registry's is f's name, under it, or above it
			}
			prefix = f.name + "."
		}
		if names == nil {
			names = metricNames(d, f.name)
		}
		for _, n := range names {
			if m := r.clashLocked(prefix + n); m != nil {
				return r.clashError(m, d, f.name, n, prefix+n)
			}
		}
	}
	return nil
}

// earlierOverflow reports whether f, a file of d the reader shows, is an
// overflow file of an earlier run of the registry, which Start replaces
// or buries (bury): at one of its overflow names, NoPrefix, held by no
// registry, every name of it under the registry's prefix (held, or with
// other names, it is a registry's named so). names are f's when read.
func (r *Registry) earlierOverflow(d *osfile.Dir, f shownFile) (names []string, own bool) {
	if _, own := overflowIndex(r.name, f.name); !own || f.flags&NoPrefix == 0 || d.Held(f.name) {
		return nil, false
	}
	names = metricNames(d, f.name)
	var b [headerSize]byte
	return names, allUnder(names, r.prefixAtLocked(f.name, b[:d.ReadHead(f.name, b[:])]))
}

// clashesWithShown returns a function that reports whether a metric of
// the registry named name clashes with a full name of another file of d
// that the reader shows (shown), as checkNamespaceLocked finds them: the
// same, or one a prefix of the other at a dot. The files are read once,
// at the first name that may clash with theirs. For carryLocked: a
// placeholder is checked there, after the registry's declarations.
func (r *Registry) clashesWithShown(d *osfile.Dir, shown []shownFile) func(name string) bool {
	read := map[string][]string{}
	return func(name string) bool {
		x := overflowPrefix(r.name, r.opts.Flags) + name
		for _, f := range shown {
			if slices.ContainsFunc(r.parts, func(p *part) bool { return p.name == f.name }) {
				continue // the registry's own files: nameFreeLocked and the parts' placeholders decide
			}
			prefix := ""
			if f.flags&NoPrefix == 0 {
				if !related(x, f.name) {
					continue
				}
				prefix = f.name + "."
			}
			names, ok := read[f.name]
			if !ok {
				var own bool
				if names, own = r.earlierOverflow(d, f); own {
					names = []string{}
				} else if names == nil {
					names = metricNames(d, f.name)
				}
				read[f.name] = names
			}
			if slices.ContainsFunc(names, func(n string) bool { return related(x, prefix+n) }) {
				return true
			}
		}
		return false
	}
}

// related reports whether full names a and b clash in PCP's namespace:
// the same, or one a prefix of the other at a dot.
func related(a, b string) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	return a == b || len(b) > len(a) && b[len(a)] == '.' && b[:len(a)] == a
}

// clashLocked returns a metric of the registry whose full name (its name
// after overflowPrefix) clashes with x, a full name of another file's:
// that is x, is a prefix of x at a dot, or has x as one; nil when none
// does.
func (r *Registry) clashLocked(x string) *metric {
	n, ours := strings.CutPrefix(x, overflowPrefix(r.name, r.opts.Flags))
	switch {
	case !ours && (x == r.name || strings.HasPrefix(r.name, x+".")) && len(r.metrics) > 0:
		return r.metrics[0] // every name of the registry's is under x
	case !ours:
		return nil
	}
	if m := r.named(n); m != nil {
		return m
	}
	if m := r.leafAbove(n); m != nil {
		return m
	}
	if r.prefixes[n] > 0 {
		return r.metrics[slices.IndexFunc(r.metrics, func(m *metric) bool { return strings.HasPrefix(m.Name, n+".") })]
	}
	return nil
}

// clashError is the refusal of the registry's metric m, whose full name
// clashes with x, the full name of metric name of the file other in d.
func (r *Registry) clashError(m *metric, d *osfile.Dir, other, name, x string) error {
	return r.nameClashError(m.part.name, m.Name, d, other, name, x)
}

// nameClashError is clashError of a metric named mname, in the
// registry's file file.
func (r *Registry) nameClashError(file, mname string, d *osfile.Dir, other, name, x string) error {
	ours := overflowPrefix(r.name, r.opts.Flags) + mname
	why := "PCP would show only one of them"
	if ours != x {
		why = "one is a prefix of the other, which makes PCP drop every MMV metric on the host, or one of the two"
	}
	return errorf(ErrNamespace, inside(subject("file", file), "metric", mname),
		"its name in PCP, mmv.%s, clashes with mmv.%s, metric %s of file %s in %s: %s", ours, x, quote(name), quote(other), d.Path(), why)
}

// checkNameAfterStartLocked refuses, with ErrNamespace, a metric named
// name declared after Start whose full name clashes with one of another
// live file's, as Start refuses the registry's (checkNamespaceLocked),
// against the files of the directory as they are now: a bridge's family
// named as another registry's file made PCP drop every MMV metric on the
// host, no one told. The registry's own files and tombstones do not count.
// It reads the heads of the directory's files, and the names of those
// that may clash, as Start does.
func (r *Registry) checkNameAfterStartLocked(name string) error {
	x := overflowPrefix(r.name, r.opts.Flags) + name
	ns := r.namespaceLocked()
	for _, f := range ns.shown {
		prefix := ""
		if f.flags&NoPrefix == 0 {
			if !related(x, f.name) {
				continue
			}
			prefix = f.name + "."
		}
		names, read := ns.names[f.name]
		if !read {
			names = metricNames(r.dir, f.name)
			ns.names[f.name] = names
		}
		for _, n := range names {
			if related(x, prefix+n) {
				return otherFileError{r.nameClashError(r.name, name, r.dir, f.name, n, prefix+n), r, name}
			}
		}
	}
	return nil
}

// namespaceLocked returns the directory's other files, as kept or read
// now (liveClusters), the registry's own files and tombstones left out.
func (r *Registry) namespaceLocked() *otherFiles {
	stamp, settled := r.dir.Stamp()
	if ns := r.others; ns != nil && ns.stamp == stamp && !slices.ContainsFunc(ns.shown, gone) {
		return ns
	}
	_, shown := liveClusters(r.dir, func(f string) bool {
		// A part's file first: renamed over a tombstone, it is there
		// before tendTombstonesLocked forgets the tombstone, its
		// placeholders among its names (carry.go).
		if slices.ContainsFunc(r.parts, func(p *part) bool { return p.name == f && p.file != nil }) {
			return true
		}
		if _, tomb := r.tombs[f]; tomb {
			var b [headerSize]byte
			return r.tombAtLocked(f, b[:r.dir.ReadHead(f, b[:])])
		}
		return false
	})
	ns := &otherFiles{stamp: stamp, shown: shown, names: map[string][]string{}}
	r.others = nil
	if settled {
		r.others = ns
	}
	return ns
}

// gone reports whether f is a Process file whose writer is gone, which
// PCP's reader no longer shows: a death changes nothing in the directory.
func gone(f shownFile) bool { return f.flags&Process != 0 && osfile.ProcessGone(f.pid) }

// metricNames returns the names of the metrics of the MMV file name of d
// as the file holds them (PCP prefixes them with mmv.<file>. or mmv.),
// reading its header and TOC, its metrics section and their names, no
// more: for another registry's file, whose values may be megabytes. It
// returns none for a file whose metrics PCP's reader drops (more than
// MaxMetrics, or a section past the end of the file) or that it cannot
// read; the names of records it cannot read are left out.
func metricNames(d *osfile.Dir, name string) []string {
	f := d.OpenRead(name)
	if f == nil {
		return nil
	}
	defer f.Close()
	var hb [headerSize + maxTocs*tocSize]byte
	version, toc, ok := readTOC(hb[:readAt(f, hb[:], 0)])
	if !ok || toc[secMetrics] == nil {
		return nil
	}
	count, uoff := tocEntry(toc[secMetrics])
	off := int64(uoff)
	size := recordSize(secMetrics, version)
	if count == 0 || count > MaxMetrics || off < 0 {
		return nil
	}
	recs := make([]byte, count*size)
	if readAt(f, recs, off) < len(recs) {
		return nil
	}
	var names []string
	if version == Version1 {
		for j := range count {
			if n, ok := cString(recs[j*size:][:inlineNameLen]); ok && n != "" {
				names = append(names, n)
			}
		}
		return names
	}
	at := make([]int64, 0, count) // the names' string records
	for j := range count {
		if o := ne.Uint64(recs[j*size:]); o <= math.MaxInt64-stringSize {
			at = append(at, int64(o))
		}
	}
	slices.Sort(at)
	at = slices.Compact(at)
	// A read for each run of records close to each other: a writer puts
	// the names together (mmv does), or among the help texts.
	var span []byte
	for i := 0; i < len(at); {
		j := i + 1
		for j < len(at) && at[j]-at[j-1] <= 4*stringSize && at[j]-at[i] < 1<<20 {
			j++
		}
		span = slices.Grow(span[:0], int(at[j-1]-at[i])+stringSize)[:int(at[j-1]-at[i])+stringSize]
		span = span[:readAt(f, span, at[i])]
		for _, o := range at[i:j] {
			if rel := o - at[i]; rel+stringSize <= int64(len(span)) {
				if n, ok := cString(span[rel:][:stringSize]); ok && n != "" {
					names = append(names, n)
				}
			}
		}
		i = j
	}
	return names
}

// readAt reads b at off of f, returning how many bytes it read: fewer at
// the end of the file, none past it, or at a negative offset.
func readAt(f io.ReaderAt, b []byte, off int64) int {
	if off < 0 {
		return 0
	}
	n, _ := f.ReadAt(b, off)
	return n
}

// otherFileError is a refusal of a name another program's live file holds,
// found after Start (checkNameAfterStartLocked): the environment's, not
// the program's, so the New functions do not panic on it (must).
type otherFileError struct {
	error
	r    *Registry // the registry refusing, whose Err says it then
	name string    // the metric refused
}

func (e otherFileError) Unwrap() error { return e.error }
