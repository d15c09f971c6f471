package mmv

import (
	"iter"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
)

// Indom declares an instance domain: a set of instances, such as request
// methods or disks, over which a metric has one value each.
type Indom struct {
	// Serial identifies the indom within its file, 1..2047.
	Serial uint32
	// ShortHelp and LongHelp describe the indom; each holds at most 255
	// bytes, and an empty text is left out of the file.
	ShortHelp, LongHelp string
	// Instances are the members, in the order they are laid out.
	Instances []Instance
}

// Instance is a member of an instance domain.
type Instance struct {
	// ID is the internal instance identifier, unique in the indom and not
	// negative.
	ID int32
	// Name is the external name readers show, unique in the indom: no more
	// than 255 bytes of UTF-8, no NUL, and no leading or trailing ASCII
	// white space (C's isspace; a Unicode space is bytes to PCP).
	Name string
}

// Indom and instance records. An indom record: serial, instance count,
// offset of its first instance record, offsets of its help texts. An
// instance record: offset of its indom record, id, and the name: inline
// in v1, the offset of a string record in v2 and v3.
const (
	indomSize      = 32
	indomSerialOff = 0
	indomCountOff  = 4
	indomFirstOff  = 8
	indomShortOff  = 16
	indomHelpOff   = 24

	instanceSizeV1    = 80
	instanceSizeV2    = 24
	instanceIndomOff  = 0
	instanceIDOff     = 12
	instanceNameOff   = 16
	instanceNameV1Len = inlineNameLen
)

// singularIndom is the indom field of a metric with no instance domain
// (PCP's PM_INDOM_NULL).
const singularIndom = 0xFFFFFFFF

func putIndom(b []byte, serial, count uint32, firstInstance, shortText, helpText uint64) {
	ne.PutUint32(b[indomSerialOff:], serial)
	ne.PutUint32(b[indomCountOff:], count)
	ne.PutUint64(b[indomFirstOff:], firstInstance)
	ne.PutUint64(b[indomShortOff:], shortText)
	ne.PutUint64(b[indomHelpOff:], helpText)
}

// putInstance writes an instance record: its name inline in v1, else the
// offset of its string record. The name comes in its two parts, not as a
// namedInstance: passed whole, the struct was copied on the stack twice
// per instance in encode's loop, a third of encoding 10,000 instances
// (BenchmarkStartEncode/instances, 0.29-0.32 ms against 0.19-0.23).
func putInstance(b []byte, version int, indomOff uint64, id int32, head, tail string, nameOff uint64) {
	ne.PutUint64(b[instanceIndomOff:], indomOff)
	ne.PutUint32(b[instanceIDOff:], uint32(id))
	if version == Version1 {
		copyName(b[instanceNameOff:instanceNameOff+instanceNameV1Len], head, tail)
	} else {
		ne.PutUint64(b[instanceNameOff:], nameOff)
	}
}

// indomTable is the registry's instance domains.
type indomTable struct {
	indoms  []*indom
	serials map[uint32]*indom
	taken   serialSet  // the serials of indoms, which autoSerial probes
	counts  liveCounts // over indoms, kept as they change: the caps are checked at every instance added
}

// liveCounts are the live instances of a registry's indoms, and the sum
// over them of users*(live-1): the values of the metrics over them beyond
// one each (valueCount); added only grows, by users*n for n instances
// added, and lowered by one at each removal of instances (chargeBound).
type liveCounts struct{ instances, values, added, lowered int }

// vecLink is what the registry knows of the vector over an indom
// (door.linkVecLocked). Its interfaces are what the registry calls: the
// method value v.forgotLocked cost a vector's declaration an allocation.
type vecLink struct {
	labels []string                    // its label names, which Gather and Snapshot show
	group  interface{ unbindLocked() } // its cells (cellGroup), unbound at Close; nil for a histogram's
	vec    linkedVec                   // the vector; nil in a histogram's buckets' indom
	// A histogram vector's buckets' indom forgets its removed instances
	// when its statistics' does, and only then (forgetRemovedLocked):
	// buckets is it, in the statistics' link; follows is set in its own.
	// On its own, with more instances each, it forgot at publications
	// where the statistics' did not, and then kept the buckets of values
	// the statistics' forgot, whose names their values took again.
	buckets *indom
	follows bool
}

// linkedVec is what the registry tells a vector over an indom.
type linkedVec interface {
	forgotLocked(Instance) // an instance its indom forgets, as it forgets it
	undoneLocked()         // its declaration was undone with its transaction (unlinkVecLocked)
	what() string          // names it in an error
}

// indom is a declared instance domain.
type indom struct {
	Serial              uint32
	ShortHelp, LongHelp string
	// insts are the instances, in the order they are laid out; removed
	// says of each whether it was removed, its id and name kept until
	// forget (a byte each: grown as a slice, it copies 24 times less than
	// the instances).
	insts   segList[Instance]
	removed []bool
	// ids finds instances by id (see index) once sparse: until then every
	// id is its instance's index, as ids numbered from 0 in order are (a
	// program's indom so declared), which then need no index. The
	// registry's own fixed indoms (a single histogram's buckets,
	// mmv.dropped's reasons) derive theirs from their names
	// (fixedInstances), sparse.
	ids    idIndex
	sparse bool
	// tails, when set, say the instances come in runs of len(tails) (its
	// width), consecutive ids from a multiple of it at consecutive
	// indexes, added, removed, revived and forgotten together, derived
	// from the run's first: insts holds that one alone, named as the run,
	// and instance k of the run has its id plus k and its name followed
	// by tails[k] (a histogram vector's buckets, door.runsLocked). Storing
	// each, named, was 40% of a new label value's time and 45% of its
	// bytes; ids indexes each run's first alone, where a vector of 10,000
	// label values and 19 buckets indexed 190,000 ids, 17% of a first
	// use's time.
	tails []string
	// names indexes by nameKey the first named instances, and the others
	// once a lookup by name needs them (indexNames): a vector's, which it
	// tells apart by their values, are added unindexed (addFresh).
	names   nameIndex
	named   int
	live    int           // instances not removed
	users   int           // metrics over it
	reserve int           // values a vector's metrics over it reserve room for in their file (budget.go)
	limit   *atomic.Int64 // the vector's limit, which reserve follows down (followLimit)
	per     int           // values per instance of the vector
	counts  *liveCounts   // the registry's, once declared in it
	vec     vecLink       // the vector over it, if any (door.linkVecLocked): a map by indom cost a vector's declaration a twentieth
	labels  int           // the label records of its vector's live instances (door.labelInstanceLocked)
	over    []int         // the overflow parts holding it, by index, ascending (part.holdIndom)
	// auto says the registry made it for an instrument (addAutoIndomLocked):
	// its instances are the instrument's, which AddInstance refuses to add
	// to, and their names share string records (newPlan). own says it is
	// one of the registry's own metrics' (mmv.dropped), declared beyond the
	// caps on instances.
	auto, own bool
	// buckets says it is a histogram's buckets' (door.bucketsLocked):
	// their bound is label le in their names, not an instance label,
	// and a label le added by hand would show on them
	// (checkLabelFreeLocked).
	buckets bool
}

// addLive changes live by d, and the registry's counts with it.
func (in *indom) addLive(d int) {
	in.live += d
	if in.counts != nil {
		in.counts.instances += d
		in.counts.values += d * in.users
		in.counts.added += max(d, 0) * in.users
		if d < 0 {
			in.counts.lowered++
		}
	}
}

// addUsers changes users by d, and the registry's counts with it.
func (in *indom) addUsers(d int) {
	in.users += d
	if in.counts != nil {
		in.counts.values += d * (in.live - 1)
	}
}

// add adds an instance, or says why PCP could not tell it apart. That of
// an indom that derives them (tails) is the first of its run, whose id
// is the only one to check: the names follow from the vector's values.
func (in *indom) add(inst Instance) error {
	if in.tails != nil {
		if _, dup := in.index(inst.ID); dup {
			return errorf(ErrDuplicate, in.instanceSubject(inst.Name), "id %d already declared", inst.ID)
		}
		return in.addFresh(inst)
	}
	in.indexNames()
	key, ok := instanceNameKey(inst.Name)
	in.names.reserve(1)
	if err := in.admit(inst, in.count(), key, ok, in.names.hash(key)); err != nil {
		return err
	}
	in.push(inst)
	return nil
}

// addBatch is how many instances addAll admits at a time.
const addBatch = 16

// addAll adds insts, the first instances of in, which has none: as add
// adds each, but copied in at once, where pushing each one, with the
// collector's write barrier for its name, was a fifth of declaring
// 10,000. It admits them addBatch at a time: their names' keys and
// hashes, then a touch of the slot of the name index each probes first
// (keyIndex.touch), then each. Admitted one at a time, each waited for
// its slot's cache miss, half of the index's time; declaring 10,000
// instances took 421 µs where it takes 373 (medians of 8 alternating
// rounds of BenchmarkBuildStart/instances/declare). Touching each slot
// right after its hash overlapped little: a name's hashing fills the
// processor's window of instructions in flight, so the touches go in a
// loop of their own.
func (in *indom) addAll(insts []Instance) error {
	in.insts = segListOf(slices.Clone(insts))
	in.names.reserve(len(insts))
	var keys [addBatch]string
	var oks [addBatch]bool
	var hashes [addBatch]uint32
	for first := 0; first < len(insts); first += addBatch {
		batch := insts[first:min(first+addBatch, len(insts))]
		for j, inst := range batch {
			keys[j], oks[j] = instanceNameKey(inst.Name)
			hashes[j] = in.names.hash(keys[j])
		}
		for _, h := range hashes[:len(batch)] {
			in.names.touch(h)
		}
		for j, inst := range batch {
			if err := in.admit(inst, first+j, keys[j], oks[j], hashes[j]); err != nil {
				return err
			}
		}
	}
	in.removed = make([]bool, len(insts))
	in.addLive(len(insts))
	return nil
}

// admit checks inst, to be instance i, against the instances below i,
// and makes it found by its name and id. key and ok are instanceNameKey's
// of its name, h the hash of key, for which the name index has room. It
// refuses one with the name or id of another, adding neither.
func (in *indom) admit(inst Instance, i int, key string, ok bool, h uint32) error {
	if err := in.refusal(inst, ok); err != nil {
		return err
	}
	if _, dup := in.indexBelow(inst.ID, i); dup {
		return errorf(ErrDuplicate, in.instanceSubject(inst.Name), "id %d already declared", inst.ID)
	}
	if j, added := in.names.addHashed(key, h, i, in.instanceKey); !added {
		return errorf(ErrDuplicate, in.instanceSubject(inst.Name), "same name up to the first space as instance %q", in.instance(j).Name)
	}
	in.named = i + 1
	in.track(inst.ID, i)
	return nil
}

// addFresh adds inst, whose name and id in has none of, as a vector knows
// of its new values (instanceIDs.idLocked): with no lookup of either, and
// its name not indexed until one by name needs it. The first use of a
// vector's value probed the name index, a cache miss each at 10,000
// values, for a name the vector's table had told apart. That of an indom
// that derives them (tails) is the first of its run, adding the run.
func (in *indom) addFresh(inst Instance) error {
	if _, err := in.checkInstance(inst); err != nil {
		return err
	}
	n, w := in.count(), in.width()
	in.insts.push(inst)
	in.removed = growBy(in.removed, w)
	in.track(inst.ID, n)
	in.addLive(w)
	return nil
}

// width is the number of instances an element of insts stands for: a
// run's, when in derives them (tails), else one.
func (in *indom) width() int { return max(len(in.tails), 1) }

// checkInstance checks inst's id and name, and returns its name's key.
func (in *indom) checkInstance(inst Instance) (string, error) {
	key, ok := instanceNameKey(inst.Name)
	return key, in.refusal(inst, ok)
}

// refusal says why inst cannot be an instance, nil when it can: ok is
// instanceNameKey's of its name.
func (in *indom) refusal(inst Instance, ok bool) error {
	switch {
	case inst.ID < 0:
		return errorf(ErrRange, in.instanceSubject(inst.Name), "id %d is negative", inst.ID)
	case !ok:
		return checkInstanceName(in.instanceSubject(inst.Name), inst.Name)
	}
	return nil
}

// push appends inst, admitted (admit) or fresh and found by its id
// (track).
func (in *indom) push(inst Instance) {
	in.insts.push(inst)
	in.removed = appendGrown(in.removed, false)
	in.addLive(1)
}

// indexNames indexes the names of the instances added unindexed
// (addFresh), for a lookup by name. Their names are distinct, as their
// vector's values are.
func (in *indom) indexNames() {
	if in.named == in.count() {
		return
	}
	in.names.reserve(in.count() - in.named)
	for ; in.named < in.count(); in.named++ {
		in.names.add(in.instanceKey(in.named), in.named, in.instanceKey)
	}
}

// track makes instance i, of id, found by its id, which no other instance
// of in has: admit checks it, a vector's are its values' (idLocked).
func (in *indom) track(id int32, i int) {
	if !in.sparse && int(id) != i {
		// The first id that is not its index: indexed from now on.
		in.sparse = true
		in.ids.reserve(i + 1)
		for j := range i {
			if in.heads(int32(j)) {
				in.ids.insert(int32(j), j)
			}
		}
	}
	if in.sparse && in.heads(id) {
		in.ids.insert(id, i)
	}
}

// heads reports whether id is the first of its run (tails), the ids
// indexes.
func (in *indom) heads(id int32) bool { return id%int32(in.width()) == 0 }

// forgetsRemoved reports whether in keeps enough removed instances to
// forget them (forget): more than it has live ones, and 64.
func (in *indom) forgetsRemoved() bool { return in.count()-in.live > max(in.live, 64) }

// forget drops the removed instances: their ids and names are free again,
// and a later instance of either is new, its values from zero, as a
// revived one's would be. The others move to lower indexes, in order; the
// returned slice maps each old index to the new, -1 for one forgotten.
// Without it an indom would keep every instance it ever had, and every
// growth step would plan them all: a vector churning label values grew
// without bound, in memory and in the time of a step.
//
// The kept instances go to a new array, so that no publication sharing the
// old one (part.snapshotLocked) sees it change.
func (in *indom) forget() []int {
	to := make([]int, in.count())
	var kept segList[Instance]
	w := in.width() // a run's instances are removed together
	for k, inst := range in.insts.all() {
		for j := k * w; j < (k+1)*w; j++ {
			to[j] = -1
			if !in.isRemoved(j) {
				to[j] = kept.len()*w + j - k*w
			}
		}
		if !in.isRemoved(k * w) {
			kept.push(inst)
		}
	}
	in.insts, in.removed = kept, make([]bool, kept.len()*w)
	in.ids, in.sparse, in.names, in.named = idIndex{}, false, nameIndex{}, 0 // names indexed again when looked up
	for k, inst := range kept.all() {
		in.track(inst.ID, k*w)
	}
	return to
}

// nameKey is what PCP tells instance names apart by: the name up to its
// first space.
func nameKey(name string) string {
	key, _, _ := strings.Cut(name, " ")
	return key
}

// instanceKey is the nameKey of instance i, instanceID its id.
func (in *indom) instanceKey(i int) string { return nameKey(in.instance(i).Name) }
func (in *indom) instanceID(i int) int32 {
	id, _, _ := in.instanceAt(i)
	return id
}

// count is the number of instances, removed ones included; instance and
// isRemoved return instance i, and whether it was removed.
func (in *indom) count() int           { return in.insts.len() * in.width() }
func (in *indom) isRemoved(i int) bool { return in.removed[i] }
func (in *indom) instance(i int) Instance {
	id, head, tail := in.instanceAt(i)
	return Instance{ID: id, Name: head + tail} // head itself when tail is empty
}

// instanceAt returns the id of instance i and its name in two parts, the
// second empty unless in derives it (tails): the file's writer copies
// them, where a name made whole would be an allocation per instance at
// each publication.
func (in *indom) instanceAt(i int) (id int32, head, tail string) {
	if in.tails == nil {
		inst := in.insts.at(i)
		return inst.ID, inst.Name, ""
	}
	w := len(in.tails)
	run := in.insts.at(i / w)
	return run.ID + int32(i%w), run.Name, in.tails[i%w]
}

// all yields the instances with their indexes, in order, named in two
// parts as instanceAt names them. An indom that derives none yields each
// directly: one loop over noTails, a tail of "", for both made a growth
// step of 10,000 instances 1.4% slower (perf, encode and newPlan).
func (in *indom) all() iter.Seq2[int, namedInstance] {
	return func(yield func(int, namedInstance) bool) {
		w := in.width()
		for k, inst := range in.insts.all() {
			if in.tails == nil {
				if !yield(k, namedInstance{inst.ID, inst.Name, ""}) {
					return
				}
				continue
			}
			for t, tail := range in.tails {
				if !yield(k*w+t, namedInstance{inst.ID + int32(t), inst.Name, tail}) {
					return
				}
			}
		}
	}
}

// namedInstance is an instance with its name in two parts (indom.instanceAt).
type namedInstance struct {
	id         int32
	head, tail string
}

// copyName copies an instance's name, in its two parts, into b, as much
// as fits.
func copyName(b []byte, head, tail string) { copy(b[copy(b, head):], tail) }

// index returns the index of the instance of id, and whether there is one.
func (in *indom) index(id int32) (int, bool) { return in.indexBelow(id, in.count()) }

// indexBelow is index among the instances below n, the first n of those
// tracked (track).
func (in *indom) indexBelow(id int32, n int) (int, bool) {
	if !in.sparse {
		return int(id), id >= 0 && int(id) < n
	}
	w := int32(in.width())
	if w == 1 {
		return in.ids.find(id, in.instanceID)
	}
	if id < 0 {
		return 0, false
	}
	k := id % w
	j, ok := in.ids.find(id-k, in.instanceID)
	if j += int(k); !ok || j >= n { // in a run being added
		return 0, false
	}
	return j, true
}

// instanceSubject names an instance in an error; made only on failure,
// since it costs more than adding an instance.
func (in *indom) instanceSubject(name string) string {
	return inside("indom "+strconv.FormatUint(uint64(in.Serial), 10), "instance", name)
}

// truncate forgets the instances from index n on, a multiple of width:
// a derived indom's runs are added and undone whole.
func (in *indom) truncate(n int) {
	for j := n; j < in.count(); j++ {
		if id := in.instanceID(j); in.heads(id) {
			in.ids.remove(id, in.instanceID)
		}
		if j < in.named {
			in.names.remove(in.instanceKey(j), in.instanceKey)
		}
	}
	in.named = min(in.named, n)
	in.insts.truncate(n / in.width())
	in.removed = in.removed[:n]
	live := 0
	for _, r := range in.removed {
		if !r {
			live++
		}
	}
	in.addLive(live - in.live)
}

// lookup returns the index of the instance named exactly name, unless
// removed.
func (in *indom) lookup(name string) (int, bool) {
	i, ok := in.byName(name)
	return i, ok && !in.isRemoved(i)
}

// byName returns the index of the instance named exactly name, removed
// or not.
func (in *indom) byName(name string) (int, bool) {
	in.indexNames()
	i, ok := in.names.find(nameKey(name), in.instanceKey)
	return i, ok && in.instance(i).Name == name
}

// checkIndomCluster refuses an indom in a file on cluster c when PCP would
// alias its id.
func checkIndomCluster(subject string, c uint32) error {
	if c > maxIndomCluster && c != ReaderCluster {
		return errorf(ErrRange, subject, "cluster %d is more than %d: PCP keeps %d bits of an indom's cluster<<11|serial, so its id would be cluster %d's and its labels lost",
			c, maxIndomCluster, indomIDBits, c&maxIndomCluster)
	}
	return nil
}

// serialSet is a set of indom serials, 0..MaxSerial, a bit each: autoSerial
// probes it, where a probe of the map by serial cost a vector's
// declaration 9 µs once the derived half was taken (2,000 vectors).
type serialSet [(MaxSerial + 64) / 64]uint64

func (s *serialSet) has(n uint32) bool { return s[n/64]&(1<<(n%64)) != 0 }
func (s *serialSet) add(n uint32)      { s[n/64] |= 1 << (n % 64) }
func (s *serialSet) remove(n uint32)   { s[n/64] &^= 1 << (n % 64) }
