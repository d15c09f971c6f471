package mmv

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/gopcp/mmv/internal/canon"
	"github.com/gopcp/mmv/internal/pcpname"
)

// DefaultVecLimit is the number of instances a vector may hold unless
// SetLimit says otherwise: a guard against unbounded cardinality, such as
// a label taken from user input.
const DefaultVecLimit = 1000

// Vec is a vector of instruments of one kind, such as requests by route
// and status: one metric over an instance domain, with one instrument per
// distinct list of label values, as client_golang's vectors have.
//
//	requests := mmv.NewCounterVec(nil, "requests", "Requests", mmv.Count, "route", "status")
//	requests.With("/api", "200").Inc()
//
// Each list of values is one PCP instance, named in a canonical form:
// name=value pairs joined by ',', such as "route=/api,status=200", with
// every space, ',', '=', '%' and control byte of a value written %XX, so
// any two lists of values make two instances that PCP tells apart (PCP
// compares instance names up to their first space, which canonical names
// do not have). A name holds 255 bytes: label names that pass it with
// every value empty are refused at the declaration (ErrTooLong). While
// the file's label budget allows (255 label records
// per file, 32 of them left to the program), each instance also carries
// its values as PCP instance labels, {"route":"/api","status":"200"},
// which pminfo -l and pmseries show; beyond it the name alone carries them,
// and the values first used once deletions or expiry freed the budget
// carry labels again. So a label name the registry has (Registry.AddLabel),
// or PCP itself on every metric (PCPLabelNames: hostname, userid...), is
// refused (ErrDuplicate): PCP would show the registry's value, or its own,
// on the instances without labels.
//
// Instances are made on first use: With on a new list of values adds the
// instance. Its PCP instance id derives from its name, so the same values
// have the same id on every restart and every host, whatever the order
// they come in (see the package doc, "Identities across restarts"), and
// the vector's indom serial from its name. Before Start the new
// instrument counts in memory of its own, carried into the file by Start;
// after Start it is live at once, and PCP sees the instance after the
// registry's next publication (after Options.PublishDelay, within a
// second while publications follow each other, or at Flush).
//
// A vector holds at most DefaultVecLimit instances unless SetLimit says
// otherwise, and the registry's caps on instances hold too (see
// Options.MaxIndomInstances). Beyond them, and for values the vector
// refuses (not one per label, an instance name longer than 255 bytes, or
// a value that is not valid UTF-8), With returns nil, whose methods do
// nothing; nothing is silent all the same: Get and Err say why, and the
// registry counts each refusal in its own metric mmv.<file>.mmv.dropped,
// by reason (limit, refused, cap, closed). A value must be UTF-8, as
// client_golang's vectors want it: PCP's JSON labels and a Prometheus
// scrape (package expose) write other bytes as U+FFFD, so "/caf\xe9" and
// "/caf\xe8" would be two instances but one series.
//
// SetExpiry makes a vector forget the instances whose values stopped
// changing, at no cost to updates (see SetExpiry).
//
// A vector is made by a New function (NewCounterVec...) or DeclareVec. A
// nil *Vec, what DeclareVec returns with its refusal, and a zero Vec,
// declared nowhere, are no vector, and neither panics: With and WithLabels
// return nil, Get nil and an error wrapping ErrUnknown, Delete false, the
// other reads zero values, and the settings (SetLimit, SetExpiry,
// SetInstanceLabels) and Reset do nothing (see the package doc, "Nil,
// errors and panics").
//
// With on an existing instance is a hash of the values and a map lookup,
// lock-free and allocation-free; keep the instrument it returns on hot
// paths all the same. Adding an instance takes the registry's lock;
// goroutines asking for the same new values at once all get the one
// instrument.
type Vec[T any] struct {
	r      door
	metric string   // the metric's name, or the histogram's
	labels []string // the label names
	serial uint32   // the instances' indom
	kind   vecKind[T]
	limit  atomic.Int64
	err    atomic.Pointer[error] // why the last instance was refused

	// Lock-free reads: the instances by the hash of their values (see
	// vecTable), filled in place under the registry's lock and replaced
	// whole when full.
	table atomic.Pointer[vecTable[T]]
	next  spare[vecSlot[T]] // the slots of the table to replace it (under the registry's lock)
	// first is the table of a vector with no instance yet, of one slot,
	// which the first replaces: in the vector's memory, since a table of
	// its own made declaring a vector two allocations more.
	first     vecTable[T]
	firstSlot [1]vecSlot[T]

	// Under the registry's lock (door.enter): the instances in order of
	// first use, and deleted ones until they are most (tidyLocked); how
	// many are live. The table finds them by their values.
	order segList[*vecEntry[T]]
	live  int
	// labelledEnd is past the last entry of order with labels: a vector
	// labels its first instances only, while the file's label budget
	// allows, and a publication derives their labels with the lock held,
	// in a walk that went through every instance (1 ms at 100,000).
	labelledEnd int
	instanceIDs
	undone     bool        // its declaration was undone with its transaction: it declares no instance
	full       labelMark   // the label budget's last refusal of an instance (door.labelInstanceLocked)
	unlabelled atomic.Bool // SetInstanceLabels(false)
	lab        *vecLabels  // the labels they carry, from the first
	expiry     expiry      // SetExpiry (expire.go)
}

// vecTable finds a vector's entries by the hash of their values, for
// readers without a lock: open addressing, probing linearly over a power
// of two of slots, at most three quarters of them filled (tableRoom).
// A slot is filled once, its hash before its entry, and never emptied: a
// deleted instance's entry stays in its slot, dead, and lookups pass it
// by. Writers, holding the registry's lock, fill free slots in place.
// Once its room is filled a table is replaced by one twice as large,
// which takes the old one's live entries a few at every insert
// (moveLocked), not all at once:
// moving 65,536 entries, a cache miss or two each, made one first use
// wait 10 ms. Meanwhile a lookup that misses the new table looks in the
// old one (old). A table is rebuilt whole, with its live entries only,
// once half its entries are dead. A reader still on a replaced table
// misses only the entries added since, and finds them under the lock
// (Vec.add). An addition or a deletion thus costs O(1), and a lookup one
// hash and, mostly, one slot.
type vecTable[T any] struct {
	slots      []vecSlot[T]
	mask       uint64
	used, dead int // slots filled, and how many of their entries were deleted since, replaced or not (deleteLocked); under the registry's lock

	// old is the table this one replaces, while it holds live entries
	// not moved here yet: from its slot moved on (under the lock).
	old   atomic.Pointer[vecTable[T]]
	moved int
}

type vecSlot[T any] struct {
	h atomic.Uint64
	e atomic.Pointer[vecEntry[T]]
}

// vecEntry is one instance of a vector.
type vecEntry[T any] struct {
	t  *T
	id int32 // the instance's, whose name is its indom's (vecKind.nameOfLocked)
	// j is, for a cell, the instance's index in the indom while its
	// instrument waits for storage (cellVec, which renumbers it): kept
	// here, where the hash of the values was, a list of the waiting
	// entries holds pointers alone, and the entry stays in its size
	// class; the tables' slots hold the hash. For a histogram, its
	// histOut's index in its group (histGroup.hs).
	j int32
	// state is whether it was deleted (bit 0), which lookups pass by, and
	// how many label records its values make (vecLabels), in one word: a
	// field more made a counter's entry a size class larger.
	state atomic.Uint32
	// inline holds the values of up to three labels, in the entry's
	// memory, so that a lookup reads one object; many is the first of more
	// than three, in an array of their own. How many there are is the
	// vector's (valuesOf): a slice of them here made a counter's entry a
	// size class larger (160 bytes, 128 now).
	inline [3]string
	many   *string
}

// valuesOf returns e's values, n of them: its vector's number of labels.
func (e *vecEntry[T]) valuesOf(n int) []string {
	if n <= len(e.inline) {
		return e.inline[:n]
	}
	return unsafe.Slice(e.many, n)
}

// valuesOf returns the values of e, one of v's entries.
func (v *Vec[T]) valuesOf(e *vecEntry[T]) []string { return e.valuesOf(len(v.labels)) }

// setValues keeps values, a copy of them, in e.
func (e *vecEntry[T]) setValues(values []string) {
	if len(values) <= len(e.inline) {
		copy(e.inline[:], values)
		return
	}
	e.many = unsafe.SliceData(slices.Clone(values))
}

// newVecTable returns an empty table with room for n entries.
func newVecTable[T any](n int) *vecTable[T] {
	size := vecTableSize(n)
	return &vecTable[T]{slots: make([]vecSlot[T], size), mask: uint64(size - 1)}
}

// vecTableSize is the number of slots of a table with room for n entries.
func vecTableSize(n int) int {
	size := 8
	for tableRoom(size) < n {
		size *= 2
	}
	return size
}

// find returns the live entry of values, whose hash is h, nil when t has
// none, nor the table it replaces.
func (t *vecTable[T]) find(h uint64, values []string) *vecEntry[T] {
	if e := t.findHere(h, values); e != nil {
		return e
	}
	if o := t.old.Load(); o != nil {
		return o.findHere(h, values)
	}
	return nil
}

// findHere is find in t's own slots. values are as many as the vector's
// labels: so are every entry's (valuesOf).
func (t *vecTable[T]) findHere(h uint64, values []string) *vecEntry[T] {
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		e := s.e.Load()
		if e == nil {
			return nil
		}
		if s.h.Load() == h && !e.deleted() && sameValues(e.valuesOf(len(values)), values) {
			return e
		}
	}
}

// holds reports whether e, whose values' hash is h, is in t's own slots.
func (t *vecTable[T]) holds(e *vecEntry[T], h uint64) bool {
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		switch t.slots[i].e.Load() {
		case e:
			return true
		case nil:
			return false
		}
	}
}

// moveLocked moves the live entries of n more of the old table's slots
// into t, and lets the old table go once they are all moved.
func (t *vecTable[T]) moveLocked(n int) {
	o := t.old.Load()
	if o == nil {
		return
	}
	// Whether an entry was deleted is read only when one of o's was:
	// reading it of every entry missed the cache, a tenth of a first use
	// at 10,000 values.
	check := o.dead > 0
	for end := min(t.moved+n, len(o.slots)); t.moved < end; t.moved++ {
		s := &o.slots[t.moved]
		if e := s.e.Load(); e != nil && (!check || !e.deleted()) {
			t.putLocked(e, s.h.Load())
		}
	}
	if t.moved == len(o.slots) {
		t.old.Store(nil)
	}
}

// sameValues is slices.Equal of two lists of values, but a value whose
// bytes are the very bytes of the other (a constant, a route pattern) is
// equal without a call to compare them.
func sameValues(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i, x := range a {
		if y := b[i]; len(x) != len(y) || unsafe.StringData(x) != unsafe.StringData(y) && x != y {
			return false
		}
	}
	return true
}

// putLocked fills a free slot with e, whose values' hash is h, which t
// has room for.
func (t *vecTable[T]) putLocked(e *vecEntry[T], h uint64) {
	i := h & t.mask
	for t.slots[i].e.Load() != nil {
		i = (i + 1) & t.mask
	}
	t.slots[i].h.Store(h)
	t.slots[i].e.Store(e)
	t.used++
}

// vecKind is what a vector of one kind of instrument does, with the
// registry's lock held.
type vecKind[T any] interface {
	// declareLocked adds what instance id needs to the registry, skipping
	// what a previous call added, in one transaction: values refused
	// declare nothing. added reports whether the instance is now in the
	// vector's instance domain, even when err is not nil, and j its index
	// there (a histogram's statistics') when err is nil. fresh says the
	// indom has no instance of the name nor of the id (idLocked).
	declareLocked(name string, id int32, fresh bool) (j int, added bool, err error)
	// makeLocked returns the entry of the instance declareLocked just
	// declared, its id and instrument set, the instrument bound to its
	// values as soon as they have storage; j is the index declareLocked
	// reported.
	makeLocked(name string, id int32, j int) *vecEntry[T]
	// removeLocked removes the instance of e and unbinds its instrument.
	removeLocked(e *vecEntry[T])
	// idOfLocked and nameOfLocked return the id of the instance named
	// name, and the name of instance id, in the vector's indom (a
	// histogram's statistics'), live or removed, if it has them.
	idOfLocked(name string) (int32, bool)
	nameOfLocked(id int32) (string, bool)
	// idSpace is the number of ids the vector's instances may have, from
	// 0 (see instanceIDs.idLocked).
	idSpace() int64
	// stateLocked is what an expiry sweep compares of the instrument t of
	// instance id; watchLocked reads it, still after t's removal
	// (expire.go).
	stateLocked(id int32, t *T) uint64
	watchLocked(id int32, t *T) func() uint64
}

// checkVecLabels checks the label names of the vector of metric, whose
// instances' names may carry one label more, bucket, and tail bytes more
// (a histogram vector's buckets': bucketLabel, and ",le=" and a bound; ""
// and 0 for other vectors): a label of the vector's own named bucket
// would be in a bucket's name twice, and names that pass canon.MaxLen
// with every value empty leave room for no value. It is where every
// vector's label names are checked, DeclareVec's and the New functions'.
func checkVecLabels(metric string, labels []string, bucket string, tail int) error {
	what := func() string { return subject("vector", metric) } // made only on failure
	if len(labels) == 0 {
		return errorf(ErrLabel, what(), "a vector needs at least one label name")
	}
	for i, l := range labels {
		if !validLabelName(l) {
			return errorf(ErrName, inside(what(), "label", l), "a label name starts with a letter, then letters, digits and '_'")
		}
		if slices.Contains(labels[:i], l) {
			return errorf(ErrDuplicate, inside(what(), "label", l), "label name given twice")
		}
		if l == bucket {
			return errorf(ErrName, inside(what(), "label", l), "%s is a histogram vector's buckets' label, their upper bound "+
				"(\"route=/api,%s=0.25\", as Prometheus's): not one of its own", bucket, bucket)
		}
		if pcpname.IsOwn(l) {
			return errorf(ErrDuplicate, inside(what(), "label", l), "PCP labels every metric with %s itself (PCPLabelNames): %s", l, onUnlabelled)
		}
	}
	shortest := len(labels) - 1 // the ','s
	for _, l := range labels {
		shortest += len(l) + len("=")
	}
	if shortest+tail > canon.MaxLen {
		buckets := ""
		if tail > 0 {
			buckets = fmt.Sprintf(", its buckets' %d more", tail)
		}
		return errorf(ErrTooLong, what(), "its label names make instance names of %d bytes with every value empty%s: "+
			"room for no value, where PCP keeps %d", shortest, buckets, canon.MaxLen)
	}
	return nil
}

// what names the vector in errors.
func (v *Vec[T]) what() string { return subject("vector", v.metric) }

// declared reports whether v is a vector a New function or DeclareVec
// made (newVec): not nil, nor a zero Vec, which has no registry nor kind
// and acts as a nil one.
func (v *Vec[T]) declared() bool { return v != nil && v.kind != nil }

// errNoVector is what Get returns on a nil or zero Vec.
func errNoVector() error { return errorf(ErrUnknown, "vector", "nil or zero vector: declared nowhere") }

// newVec returns the vector of metric over the indom serial, with label
// names labels, checked by checkVecLabels.
func newVec[T any](r door, metric string, labels []string, serial uint32, kind vecKind[T]) *Vec[T] {
	v := &Vec[T]{r: r, metric: metric, labels: slices.Clone(labels), serial: serial, kind: kind}
	v.limit.Store(DefaultVecLimit)
	v.first.slots = v.firstSlot[:]
	v.table.Store(&v.first)
	return v
}

// known returns the instrument of values already made, lock-free, and
// the hash of the values, which add takes. It looks in the table's own
// slots only: add looks in the table it replaces, if any, off the path of
// the values that are found.
func (v *Vec[T]) known(values []string) (*T, uint64) {
	h := canon.Hash(values)
	if len(values) != len(v.labels) {
		return nil, h // refused by add
	}
	t := v.table.Load()
	if t == nil { // a zero Vec's, refused by add
		return nil, h
	}
	if e := t.findHere(h, values); e != nil {
		return e.t, h
	}
	return nil, h
}

// With returns the instrument of the label values, one per label name in
// order, adding the instance on first use; nil when the vector refuses
// them (see Err for why).
func (v *Vec[T]) With(values ...string) *T {
	if v == nil {
		return nil
	}
	t, h := v.known(values)
	if t == nil {
		t, _ = v.add(values, h)
	}
	return t
}

// WithLabels is With with the values given by label name; a name missing
// or not the vector's is refused.
func (v *Vec[T]) WithLabels(labels map[string]string) *T {
	if !v.declared() {
		return nil
	}
	var buf [8]string
	values := buf[:0]
	for _, l := range v.labels {
		val, ok := labels[l]
		if !ok {
			values = nil
			break
		}
		values = append(values, val)
	}
	if values == nil || len(labels) != len(v.labels) {
		v.refuse(dropRefused, errorf(ErrLabel, v.what(), "labels %q: need exactly %q", keys(labels), v.labels))
		return nil
	}
	return v.With(values...)
}

// Get returns the instrument of the label values, adding the instance on
// first use, or the error that refuses them: one wrapping ErrTooMany at
// the vector's limit or the registry's caps, ErrLabel for a wrong number
// of values or a value not valid UTF-8, ErrTooLong for a name beyond 255
// bytes, ErrClosed...
func (v *Vec[T]) Get(values ...string) (*T, error) {
	if v == nil {
		return nil, errNoVector()
	}
	t, h := v.known(values)
	if t != nil {
		return t, nil
	}
	return v.add(values, h)
}

// tooLong is the refusal of values whose instance name would pass
// canon.MaxLen: it names the label of the value longest in the name, as
// escaped there (a ',' takes 3 bytes), that value cut to be read, and
// every value's length in the name.
func (v *Vec[T]) tooLong(values []string) error {
	longest, longestLen := 0, -1
	var lengths strings.Builder
	for i, val := range values {
		n := canon.Len(val)
		if n > longestLen {
			longest, longestLen = i, n
		}
		if i > 0 {
			lengths.WriteString(", ")
		}
		fmt.Fprintf(&lengths, "%s %d", v.labels[i], n)
	}
	val := values[longest]
	const show = 32 // bytes of the value the error shows
	cut := len(val)
	if cut > show {
		for cut = show; cut > 0 && !utf8.RuneStart(val[cut]); cut-- { // not within a character
		}
	}
	shown := quote(val[:cut])
	if cut < len(val) {
		shown += "..."
	}
	return errorf(ErrTooLong, inside(v.what(), "label", v.labels[longest]),
		"its value %s (%d bytes escaped) makes the instance name longer than %d bytes (escaped lengths: %s)", shown, longestLen, canon.MaxLen, lengths.String())
}

// Err returns why the vector last refused label values, nil if it never
// did.
func (v *Vec[T]) Err() error {
	if v == nil {
		return nil
	}
	if e := v.err.Load(); e != nil {
		return *e
	}
	return nil
}

// add makes the instrument of new label values, whose hash is h.
func (v *Vec[T]) add(values []string, h uint64) (*T, error) {
	if !v.declared() {
		return nil, errNoVector()
	}
	if o := v.table.Load().old.Load(); o != nil && len(values) == len(v.labels) { // not moved yet from the old table (known looked in the new one)
		if e := o.findHere(h, values); e != nil {
			return e.t, nil
		}
	}
	r := v.r
	r.enter()
	defer r.leave()
	if v.undone {
		return nil, v.refuseLocked(dropRefused, errorf(ErrUnknown, v.what(), "its declaration was undone with its transaction (Registry.Transact)"))
	}
	if r.closedLocked() { // before the limit, which a closed registry's vector may hold
		return nil, v.refuseLocked(dropClosed, errorf(ErrClosed, v.what(), "its registry is closed"))
	}
	if len(values) != len(v.labels) {
		return nil, v.refuseLocked(dropRefused, errorf(ErrLabel, v.what(), "%d values for the labels %q", len(values), v.labels))
	}
	for i, val := range values {
		if !utf8.ValidString(val) {
			return nil, v.refuseLocked(dropRefused, errorf(ErrLabel, inside(v.what(), "label", v.labels[i]),
				"its value %s is not UTF-8: PCP's JSON labels and a Prometheus scrape would show it as another value with the same bytes replaced", quote(val)))
		}
	}
	name, ok := canon.Name(v.labels, values)
	if !ok {
		return nil, v.refuseLocked(dropRefused, v.tooLong(values))
	}
	// Before the lookup below: it may let the lock go.
	r.roomLocked(v.serial)
	if e := v.table.Load().find(h, values); e != nil { // made by another goroutine meanwhile
		return e.t, nil
	}
	if limit := v.limit.Load(); int64(v.live) >= limit {
		return nil, v.refuseLocked(dropLimit, errorf(ErrTooMany, inside(v.what(), "instance", name), "the vector holds its limit of %d instances (see SetLimit)", limit))
	}
	var id int32
	seen := false
	if v.counting { // a counted id is found by name only (idLocked)
		id, seen = v.kind.idOfLocked(name)
	}
	if !seen {
		if id, seen, ok = v.idLocked(name, v.kind.idSpace(), v.kind.nameOfLocked); !ok {
			return nil, v.refuseLocked(dropCap, idsExhausted(v.what(), name, v.kind.idSpace()))
		}
	}
	j, added, err := v.kind.declareLocked(name, id, !seen)
	if added && err == nil && !seen {
		v.gaveLocked(id, v.kind.idSpace())
	}
	if err != nil {
		reason := dropRefused
		switch {
		case errors.Is(err, ErrTooMany):
			reason = dropCap
		case errors.Is(err, ErrClosed):
			reason = dropClosed
		}
		return nil, v.refuseLocked(reason, err)
	}
	e := v.kind.makeLocked(name, id, j)
	e.setValues(values)
	v.order.push(e)
	v.live++
	v.labelLocked(e)
	v.insertLocked(e, h)
	return e.t, nil
}

// undoneLocked refuses every new value from now on: the vector's
// declaration was undone with its transaction, its indom and metric with
// it (unlinkVecLocked).
func (v *Vec[T]) undoneLocked() { v.undone = true }

// forgotLocked records that the vector's indom forgot inst (see
// instanceIDs.forgotLocked).
func (v *Vec[T]) forgotLocked(inst Instance) {
	v.instanceIDs.forgotLocked(inst, min(int(v.limit.Load()), v.r.instanceCapLocked()))
}

// insertLocked makes e, new in v.order, its values' hash h, visible to
// lock-free readers: in a free slot of the table, or of the table that
// replaces it when full.
func (v *Vec[T]) insertLocked(e *vecEntry[T], h uint64) {
	t := v.table.Load()
	// Not when the vector's limit keeps its live entries short of the
	// growth: a vector at the default limit, 1,000 values in 2,048
	// slots, kept a table of 8,192 (128 kB) made ahead for good. Dead
	// entries may still fill it; that growth allocates its own.
	room := tableRoom(len(t.slots))
	if nearGrowth(t.used+1, len(t.slots)) && int64(room) < v.limit.Load() {
		// The size below when no entry is deleted meanwhile: v.live
		// is then used+1, and used the room.
		v.next.ask(grownTableSize(room + 1))
	}
	if t.used+1 > room {
		// The old table's entries are moved at 4 slots an insert, all
		// of them before this one's room is filled.
		t.moveLocked(len(t.slots)) // what is left of the last growth
		size := grownTableSize(v.live)
		n := &vecTable[T]{slots: v.next.take(size), mask: uint64(size - 1)}
		n.old.Store(t)
		v.table.Store(n)
		t = n
	}
	t.putLocked(e, h)
	t.moveLocked(4)
}

// grownTableSize is the size of the table that replaces a full one,
// live entries live, the one to insert included: room for twice the
// others (twice the slots when none is deleted). Four times the slots
// made a table of 65,537 values 8 MB, one eighth full.
func grownTableSize(live int) int { return vecTableSize(2 * (live - 1)) }

// rebuildLocked replaces the table with one of the live entries, with as
// many free slots again.
func (v *Vec[T]) rebuildLocked() {
	t := newVecTable[T](2 * v.live)
	for _, e := range v.order.all() {
		if !e.deleted() {
			t.putLocked(e, canon.Hash(v.valuesOf(e))) // rare: after many deletions
		}
	}
	v.table.Store(t)
}

// labelLocked gives the instance of e, new, its values as PCP instance
// labels, while the file's label budget keeps room for the program's own
// (door.labelInstanceLocked): a value new after deletions freed the
// budget is labelled again.
func (v *Vec[T]) labelLocked(e *vecEntry[T]) {
	if v.unlabelled.Load() {
		return
	}
	records := v.r.labelInstanceLocked(&v.lab, v, v.valuesOf(e), &v.full)
	e.state.Store(uint32(records) << 1)
	if records > 0 {
		v.labelledEnd = v.order.len()
	}
}

func (v *Vec[T]) labelNames() (uint32, []string) { return v.serial, v.labels }

func (v *Vec[T]) eachLabelledLocked(f func(id int32, values []string)) {
	for i := range v.labelledEnd {
		if e := *v.order.at(i); e.labelRecords() > 0 && !e.deleted() {
			f(e.id, v.valuesOf(e))
		}
	}
}

// refuseLocked records why values were refused and counts the refusal.
func (v *Vec[T]) refuseLocked(reason dropReason, err error) error {
	v.err.Store(&err)
	v.r.dropLocked(reason)
	return err
}

// refuse is refuseLocked for a caller without the registry's lock.
func (v *Vec[T]) refuse(reason dropReason, err error) {
	v.r.enter()
	defer v.r.leave()
	v.refuseLocked(reason, err)
}

// Delete removes the instance of the label values, reporting whether the
// vector had it: PCP no longer shows it after the registry's next
// publication. An instrument of it kept by the program still counts, in
// memory of its own, and is published no more; With on the same values
// later makes a new instrument, from zero, with the instance's id of
// before, so PCP sees the same instance again, with its values' labels
// alone (a label added by hand, AddInstanceLabel, went with it). Deleted instances are
// remembered until they outnumber the live ones, and 64: the next
// publication then forgets them. A vector whose label values churn thus
// keeps memory, and costs growth steps, in proportion to the instances it
// holds, not to every one it ever had. Values it forgot, used again, get
// their ids of before, and no other value gets them, until it has
// forgotten more values than its limit, and 64: values new to it then get
// ids in order (see the package doc, "Identities across restarts").
func (v *Vec[T]) Delete(values ...string) bool {
	if !v.declared() || len(values) != len(v.labels) {
		return false
	}
	v.r.enter()
	defer v.r.leave()
	e := v.table.Load().find(canon.Hash(values), values)
	if e == nil {
		return false
	}
	v.deleteLocked(e)
	v.tidyLocked()
	return true
}

// Reset removes every instance of the vector, as Delete does.
func (v *Vec[T]) Reset() {
	if !v.declared() {
		return
	}
	v.r.enter()
	defer v.r.leave()
	for _, e := range v.order.all() {
		if !e.deleted() {
			v.deleteLocked(e)
		}
	}
	v.tidyLocked()
}

// deleteLocked removes the instance of e, live, and marks e dead: lookups
// pass it by, in the table until it is rebuilt, in v.order until it is
// compacted (tidyLocked).
func (v *Vec[T]) deleteLocked(e *vecEntry[T]) {
	v.kind.removeLocked(e)
	delete(v.expiry.seen, e.id)
	if n := e.labelRecords(); n > 0 {
		v.r.unlabelInstanceLocked(v.lab, n)
	}
	e.state.Or(1)
	v.live--
	// One not moved yet from the old table stays there, counted dead
	// there, and is not moved.
	t := v.table.Load()
	if o := t.old.Load(); o == nil || t.holds(e, canon.Hash(v.valuesOf(e))) {
		t.dead++
	} else {
		o.dead++
	}
}

// tidyLocked drops the dead entries after deletions: from v.order once
// they are most of it, and 64, from the table once they are half its
// entries, so that a deletion costs O(1) amortised.
func (v *Vec[T]) tidyLocked() {
	if v.order.len() > 2*v.live+64 {
		var kept segList[*vecEntry[T]]
		end := 0
		for i, e := range v.order.all() {
			if !e.deleted() {
				kept.push(e)
			}
			if i < v.labelledEnd {
				end = kept.len()
			}
		}
		v.order, v.labelledEnd = kept, end
	}
	if t := v.table.Load(); 2*t.dead >= t.used {
		v.rebuildLocked()
	}
}

func (e *vecEntry[T]) deleted() bool { return e.state.Load()&1 != 0 }

// labelRecords is how many label records the values of e make.
func (e *vecEntry[T]) labelRecords() uint8 { return uint8(e.state.Load() >> 1) }

// SetInstanceLabels says whether instances made from now on carry their
// values as PCP instance labels: by default they do, while the file's
// label budget allows. Turn it off for a vector of many instances whose
// names say enough, such as buckets, to leave the budget to others.
func (v *Vec[T]) SetInstanceLabels(on bool) {
	if v.declared() {
		v.unlabelled.Store(!on)
	}
}

// SetLimit sets the number of instances the vector may hold
// (DefaultVecLimit until then). A limit below the instances it holds keeps
// them and adds no more. The vector reserved room in its file for its
// instances when declared (Options.MaxFileValues; declared after Start
// in the file of the last run's that held it, the room of one instance
// when that file has no more: docs/design.md, "A values budget per
// file"): a lower limit frees
// that room for the metrics declared after it, for good; a higher one
// reserves no more, and instances past the room reserved may be refused
// for the file's budget, or for the registry's caps on an indom
// (Options.MaxIndomInstances: a histogram vector's value is an instance
// of its buckets' indom per bucket), which Limit does not report: Err
// names the cap that refused one.
func (v *Vec[T]) SetLimit(n int) {
	if !v.declared() {
		return
	}
	v.limit.Store(int64(n))
	v.r.limitSet()
}

// Limit returns the number of instances the vector may hold, 0 for a
// nil vector.
func (v *Vec[T]) Limit() int {
	if v == nil {
		return 0
	}
	return int(v.limit.Load())
}

// Instances returns the instance names, in the order they were first used.
func (v *Vec[T]) Instances() []string {
	if !v.declared() {
		return nil
	}
	v.r.enter()
	defer v.r.leave()
	names := make([]string, 0, v.live)
	for _, e := range v.order.all() {
		if !e.deleted() {
			name, _ := v.kind.nameOfLocked(e.id)
			names = append(names, name)
		}
	}
	return names
}

// Metric returns the vector's metric name below mmv.<file> (for a
// histogram vector, the prefix of its metrics), for those who add labels
// of their own with the registry's methods.
func (v *Vec[T]) Metric() string {
	if v == nil {
		return ""
	}
	return v.metric
}

// Indom returns the serial of the instance domain of the vector's
// instances, for labels (Registry.AddIndomLabel, AddInstanceLabel, which
// refuse a label named as one of the vector's, as AddMetricLabel does on
// its metric: ErrDuplicate): the
// vector adds and removes its instances, and AddInstance, AddMetric and
// Registry.Value refuse it (ErrInUse).
func (v *Vec[T]) Indom() uint32 {
	if v == nil {
		return 0
	}
	return v.serial
}

// Labels returns the vector's label names.
func (v *Vec[T]) Labels() []string {
	if v == nil {
		return nil
	}
	return slices.Clone(v.labels)
}

// cellVec is the vecKind of the instruments with one value each:
// counters, gauges and timers. It is its instruments' cellGroup: the
// registry binds, shows and unbinds their cells through it, and keeps
// nothing per instrument.
type cellVec[T any] struct {
	r      door
	m      *metric
	in     *indom // m's
	typ    Type
	cellOf func(*T) *cell // the instrument's cell: no map by id to keep per instance
	v      *Vec[T]        // whose entries these are
	// waiting are the entries made whose values have no storage yet
	// (dead ones are dropped at the next wake), each with its instance's
	// index in the indom (vecEntry.j, which renumberLocked keeps), for
	// the timer to find their storage with no lookup by id, and its
	// value's slot, for a publication to list those its file shows
	// (shownLocked). The registry wakes the group while it has any.
	waiting segQueue[waitingEntry[T]]
}

// waitingEntry is an entry whose value waits for storage, and the value's
// slot (-1 while its part has no file; reslotLocked gives it once the
// part's slots are made): what a publication compares to list the values
// it shows, without reading the entries (shownLocked). A value keeps its
// slot while its entry lives: a slot changes hands only through a
// publication that writes it dead, after which the files have room for
// it, and a listing shows only the slots no file had room for
// (waitingSlotsLocked), but at Start, whose slots are all new. So a
// deleted entry's slot is its own still, and the dead record there,
// which PCP skips, the only one it shows into.
type waitingEntry[T any] struct {
	o    *cellEntry[T]
	slot int32
}

// cellEntry is an entry and its instrument, in one allocation.
type cellEntry[T any] struct {
	vecEntry[T]
	own T
}

// declareLocked is one step, one transaction.
func (k *cellVec[T]) declareLocked(name string, id int32, fresh bool) (int, bool, error) {
	return k.r.declareInstanceLocked(k.in, fresh, Instance{ID: id, Name: name})
}

func (k *cellVec[T]) makeLocked(_ string, id int32, j int) *vecEntry[T] {
	o := new(cellEntry[T])
	o.vecEntry = vecEntry[T]{t: &o.own, id: id, j: int32(j)}
	c := k.cellOf(o.t)
	c.init(k.typ)
	if v := k.r.handleLocked(k.m, j); v != nil {
		c.bind(v)
	} else {
		if k.waiting.len() == 0 {
			k.r.waitGroupLocked(k)
		}
		k.waiting.push(waitingEntry[T]{o, k.r.slotLocked(k.m, j)})
	}
	return &o.vecEntry
}

func (k *cellVec[T]) wakeLocked(value func(*metric, int) *Value, rebound *[]*cell, budget *int) bool {
	k.waiting.retain(func(w waitingEntry[T]) (keep, stop bool) {
		if *budget == 0 {
			return true, true
		}
		o := w.o
		if o.deleted() {
			return false, false
		}
		v := value(k.m, int(o.j))
		if v == nil {
			return true, false
		}
		c := k.cellOf(&o.own)
		c.bind(v)
		*rebound = append(*rebound, c)
		*budget--
		return false, false
	})
	return k.waiting.len() > 0
}

func (k *cellVec[T]) waitingLocked(f func(*metric, int, *cell)) {
	for w := range k.waiting.all() {
		if !w.o.deleted() {
			f(k.m, int(w.o.j), k.cellOf(&w.o.own))
		}
	}
}

func (k *cellVec[T]) shownLocked(past func(*metric) int32) shownList {
	from, q, cellOf := past(k.m), k.waiting, k.cellOf // q: a copy, which pushes leave as it is (see segList)
	if from == math.MaxInt32 {
		return nil
	}
	return func(ws []waitingValue) []waitingValue {
		for run := range q.runs() {
			for _, w := range run {
				if w.slot >= from {
					ws = append(ws, waitingValue{slot: int(w.slot), c: cellOf(&w.o.own)})
				}
			}
		}
		return ws
	}
}

func (k *cellVec[T]) reslotLocked(slot func(*metric, int) (int32, bool)) {
	for i := range k.waiting.len() {
		w := k.waiting.at(i)
		s, ok := slot(k.m, int(w.o.j))
		if !ok {
			return
		}
		w.slot = s
	}
}

func (k *cellVec[T]) renumberLocked(in *indom, to []int) {
	if in != k.in {
		return
	}
	k.waiting.retain(func(w waitingEntry[T]) (keep, stop bool) {
		o := w.o
		if to[o.j] < 0 {
			return false, false
		}
		o.j = int32(to[o.j])
		return true, false
	})
}

func (k *cellVec[T]) unbindLocked() {
	for _, e := range k.v.order.all() {
		if !e.deleted() {
			k.cellOf(e.t).unbind()
		}
	}
}

func (k *cellVec[T]) idOfLocked(name string) (int32, bool) { return k.r.instanceIDLocked(k.in, name) }
func (k *cellVec[T]) nameOfLocked(id int32) (string, bool) { return k.r.instanceNameLocked(k.in, id) }

func (k *cellVec[T]) idSpace() int64 { return vecIDSpace }

func (k *cellVec[T]) removeLocked(e *vecEntry[T]) {
	k.cellOf(e.t).unbind()
	k.r.removeInstrumentLocked(k.in, e.id)
}

// declareCellVec declares on d, as one transaction, metric name over an
// indom of its own and the vector of its instruments of kind k, whose
// cells cellOf returns, with label names labels.
func declareCellVec[T any](d Declarer, k cellKind, name, help string, units Units, labels []string, cellOf func(*T) *cell) (*Vec[T], error) {
	m, err := k.metric(name, help, units)
	if err != nil {
		return nil, err
	}
	if err := checkVecLabels(m.Name, labels, "", 0); err != nil {
		return nil, err
	}
	r, h, err := doorOf(d, "vector", m.Name)
	if err != nil {
		return nil, err
	}
	defer h.release()
	var mt *metric
	var in *indom
	err = r.declareLocked(func() (err error) {
		if in, m.Indom, err = r.addVecIndomLocked(m.Name, "Instances of "+m.Name, labels, m.Name); err != nil {
			return err
		}
		r.reserveLocked(in, 1, DefaultVecLimit)
		mt, err = r.addMetricLocked(m)
		return err
	})
	if err != nil {
		return nil, err
	}
	cv := &cellVec[T]{r: r, m: mt, in: in, typ: k.typ, cellOf: cellOf}
	v := newVec(r, m.Name, labels, m.Indom, vecKind[T](cv))
	cv.v = v
	r.linkVecLocked(in, vecLink{labels: v.labels, group: cv, vec: v})
	r.followLimitLocked(in, &v.limit, 1)
	return v, nil
}

// keys returns the keys of m, sorted.
func keys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// expiry is a vector's expiry and its sweeps' state, under the
// registry's lock but for d.
type expiry struct {
	d       atomic.Int64 // nanoseconds; 0: no expiry
	hooked  bool         // the sweeps are in the registry's start and close hooks
	timer   *time.Timer  // the next sweep, nil when none is scheduled
	sweeps  uint64       // sweeps scheduled or stopped: a sweep runs only if none was since its own
	expired []watched    // instruments expired at the last sweep, watched for late updates
	// seen is, by live instance id, the state the last sweep saw and
	// when a sweep first saw it (Unix ns): kept only while sweeps run.
	seen map[int32]swept
}

type swept struct {
	state uint64
	at    int64
}

// watched is an expired instrument's state, read, and as it was at its
// expiry.
type watched struct {
	read  func() uint64
	state uint64
}
