package mmv

import (
	"math"
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
	// than 255 bytes, no NUL, and no leading or trailing space.
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
	instanceNameV1Len = 64
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

func putInstance(b []byte, version int, indomOff uint64, id int32, name string, nameOff uint64) {
	ne.PutUint64(b[instanceIndomOff:], indomOff)
	ne.PutUint32(b[instanceIDOff:], uint32(id))
	if version == Version1 {
		copy(b[instanceNameOff:instanceNameOff+instanceNameV1Len], name)
	} else {
		ne.PutUint64(b[instanceNameOff:], nameOff)
	}
}

// indomTable is the registry's instance domains.
type indomTable struct {
	indoms  []*indom
	serials map[uint32]*indom
	counts  liveCounts // over indoms, kept as they change: the caps are checked at every instance added
}

// liveCounts are the live instances of a registry's indoms, and the sum
// over them of users*(live-1): the values of the metrics over them beyond
// one each (valueCount).
type liveCounts struct{ instances, values int }

// indom is a declared instance domain.
type indom struct {
	Indom
	// ids maps instance ids to indexes (see index); nil while every id is
	// its instance's index, as ids numbered from 0 in order are (the
	// buckets of a single histogram, mmv.dropped's reasons), which then
	// need no map.
	ids     map[int32]int
	names   nameIndex     // indexes by nameKey
	removed []bool        // per instance: removed, its id and name kept until forget
	live    int           // instances not removed
	users   int           // metrics over it
	reserve int           // values a vector's metrics over it reserve room for in their file (budget.go)
	limit   *atomic.Int64 // the vector's limit, which reserve follows down (followLimit)
	per     int           // values per instance of the vector
	counts  *liveCounts   // the registry's, once declared in it
	shares  bool          // made by the registry for instruments: its instance names share string records (newPlan)
	metrics []*metric     // over it, in order of declaration: a part's are found without a scan of its metrics
}

// addLive changes live by d, and the registry's counts with it.
func (in *indom) addLive(d int) {
	in.live += d
	if in.counts != nil {
		in.counts.instances += d
		in.counts.values += d * in.users
	}
}

// addUsers changes users by d, and the registry's counts with it.
func (in *indom) addUsers(d int) {
	in.users += d
	if in.counts != nil {
		in.counts.values += d * (in.live - 1)
	}
}

// AddIndom declares an instance domain and its instances.
func (r *Registry) AddIndom(d Indom) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.awaitPublicationLocked()
	return r.addIndomLocked(d)
}

func (r *Registry) addIndomLocked(d Indom) error {
	if err := r.declarableLocked(); err != nil {
		return err
	}
	subject := "indom " + strconv.FormatUint(uint64(d.Serial), 10)
	if d.Serial == 0 || d.Serial > MaxSerial {
		return errorf(ErrRange, subject, "serial must be 1..%d", MaxSerial)
	}
	if r.serials[d.Serial] != nil {
		return errorf(ErrDuplicate, subject, "serial already declared")
	}
	if err := checkIndomCluster(subject, r.opts.Cluster); err != nil {
		return err
	}
	if err := checkHelp(subject, d.ShortHelp, d.LongHelp); err != nil {
		return err
	}
	if err := checkInstanceCaps(&r.opts, d.Serial, d.ShortHelp, 0, r.instanceCount(), len(d.Instances)); err != nil {
		return err
	}
	if err := checkIndomBudget(&r.opts, subject, len(d.Instances)); err != nil {
		return err
	}
	in := &indom{Indom: d}
	in.names.reserve(len(d.Instances))
	in.Instances, in.removed = make([]Instance, 0, len(d.Instances)), make([]bool, 0, len(d.Instances))
	for _, inst := range d.Instances {
		if err := in.add(inst); err != nil {
			return err
		}
	}
	r.indoms = append(r.indoms, in)
	r.serials[d.Serial] = in
	in.counts = &r.counts
	r.counts.instances += in.live
	// The first file holds every indom, as libpcp_mmv's does; an indom
	// has no value of its own, so nothing needs a growth step now.
	first := r.parts[0]
	first.indoms = append(first.indoms, in)
	return r.changedLocked(undoDeclared, step{kind: stepIndom, in: in}, first)
}

// undeclareIndom undoes addIndomLocked of in, the last indom declared.
func (r *Registry) undeclareIndom(in *indom) {
	r.counts.instances -= in.live
	r.counts.values -= in.users * (in.live - 1)
	in.counts = nil
	r.indoms = r.indoms[:len(r.indoms)-1]
	delete(r.serials, in.Serial)
	first := r.parts[0]
	first.indoms = first.indoms[:len(first.indoms)-1]
}

// AddInstance adds an instance to a declared instance domain. After Start
// the values of the metrics over it are live at once; an instance that
// needs the file to grow and cannot have it is not added.
func (r *Registry) AddInstance(serial uint32, inst Instance) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.awaitPublicationLocked() // its values are live at once, or it is not added
	return r.addInstancesLocked(serial, []Instance{inst}, undoDeclared)
}

// addInstancesLocked adds instances to a declared instance domain, all of
// them or, when one is refused, none. ifFailed is as for addMetricLocked.
func (r *Registry) addInstancesLocked(serial uint32, insts []Instance, ifFailed publishFailure) error {
	if err := r.declarableLocked(); err != nil {
		return err
	}
	in, err := r.indomLocked(serial)
	if err != nil {
		return err
	}
	first := len(in.Instances)
	if err := checkInstanceCaps(&r.opts, serial, in.ShortHelp, in.live, r.instanceCount(), len(insts)); err != nil {
		return err
	}
	if err := r.checkGrowthLocked(in, len(insts)); err != nil {
		return err
	}
	for _, inst := range insts {
		if err := in.add(inst); err != nil {
			in.truncate(first)
			return err
		}
	}
	var grown []*part
	for _, p := range r.parts {
		if !p.hasIndom(in) {
			continue
		}
		grown = append(grown, p)
		if p.file == nil {
			continue
		}
		p.newInstanceSlots(in, first, -1)
	}
	return r.changedLocked(ifFailed, step{kind: stepInstances, in: in, at: first}, grown...)
}

// removeNewInstancesLocked undoes addInstancesLocked of the instances of
// in from index first on, the last added.
func (r *Registry) removeNewInstancesLocked(in *indom, first int) {
	for _, p := range r.parts {
		if p.hasIndom(in) && p.file != nil {
			p.releaseInstanceSlots(in, first)
		}
	}
	in.truncate(first)
}

func (r *Registry) indomLocked(serial uint32) (*indom, error) {
	if in := r.serials[serial]; in != nil {
		return in, nil
	}
	return nil, errorf(ErrUnknown, "indom "+strconv.FormatUint(uint64(serial), 10), "")
}

// add adds an instance, or says why PCP could not tell it apart.
func (in *indom) add(inst Instance) error {
	if inst.ID < 0 {
		return errorf(ErrRange, in.instanceSubject(inst.Name), "id %d is negative", inst.ID)
	}
	if checkInstanceName("", inst.Name) != nil {
		return checkInstanceName(in.instanceSubject(inst.Name), inst.Name)
	}
	if _, dup := in.index(inst.ID); dup {
		return errorf(ErrDuplicate, in.instanceSubject(inst.Name), "id %d already declared", inst.ID)
	}
	i := len(in.Instances)
	if j, added := in.names.add(nameKey(inst.Name), i, in.instanceKey); !added {
		return errorf(ErrDuplicate, in.instanceSubject(inst.Name), "same name up to the first space as instance %q", in.Instances[j].Name)
	}
	in.track(i, inst.ID)
	in.Instances = append(in.Instances, inst)
	in.removed = append(in.removed, false)
	in.addLive(1)
	return nil
}

// track makes instance i found by its id.
func (in *indom) track(i int, id int32) {
	if in.ids == nil && int(id) != i {
		// The first id that is not its index: a map from now on.
		in.ids = make(map[int32]int, cap(in.Instances))
		for j := range i {
			in.ids[int32(j)] = j
		}
	}
	if in.ids != nil {
		in.ids[id] = i
	}
}

// forgetsRemoved reports whether in keeps enough removed instances to
// forget them (forget): more than it has live ones, and 64.
func (in *indom) forgetsRemoved() bool { return len(in.Instances)-in.live > max(in.live, 64) }

// forget drops the removed instances: their ids and names are free again,
// and a later instance of either is new, its values from zero, as a
// revived one's would be. The others move to lower indexes, in order; the
// returned slice maps each old index to the new, -1 for one forgotten.
// Without it an indom would keep every instance it ever had, and every
// growth step would plan them all: a vector churning label values grew
// without bound, in memory and in the time of a step.
func (in *indom) forget() []int {
	to := make([]int, len(in.Instances))
	kept := 0
	for j, inst := range in.Instances {
		to[j] = -1
		if !in.removed[j] {
			to[j] = kept
			in.Instances[kept] = inst
			kept++
		}
	}
	clear(in.Instances[kept:]) // the names, for the garbage collector
	in.Instances, in.removed = in.Instances[:kept], in.removed[:kept]
	clear(in.removed)
	in.ids, in.names = nil, nameIndex{}
	in.names.reserve(kept)
	for j, inst := range in.Instances {
		in.track(j, inst.ID)
		in.names.add(nameKey(inst.Name), j, in.instanceKey)
	}
	return to
}

// nameKey is what PCP tells instance names apart by: the name up to its
// first space.
func nameKey(name string) string {
	key, _, _ := strings.Cut(name, " ")
	return key
}

// instanceKey is the nameKey of instance i.
func (in *indom) instanceKey(i int) string { return nameKey(in.Instances[i].Name) }

// index returns the index of the instance of id, and whether there is one.
func (in *indom) index(id int32) (int, bool) {
	if in.ids == nil {
		return int(id), id >= 0 && int(id) < len(in.Instances)
	}
	i, ok := in.ids[id]
	return i, ok
}

// instanceSubject names an instance in an error; made only on failure,
// since it costs more than adding an instance.
func (in *indom) instanceSubject(name string) string {
	return inside("indom "+strconv.FormatUint(uint64(in.Serial), 10), "instance", name)
}

// truncate forgets the instances from index n on.
func (in *indom) truncate(n int) {
	for _, inst := range in.Instances[n:] {
		delete(in.ids, inst.ID)
		in.names.remove(nameKey(inst.Name), in.instanceKey)
	}
	in.Instances, in.removed = in.Instances[:n], in.removed[:n]
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
	i, ok := in.names.find(nameKey(name), in.instanceKey)
	return i, ok && in.Instances[i].Name == name && !in.removed[i]
}

// removeInstanceLocked removes instance j of in: PCP no longer shows it
// from the next publication on, and its values' slots serve others after
// that. Its id and name stay its own, for reviveInstanceLocked, until the
// indom forgets its removed instances (forgetRemovedLocked). Its labels
// are the caller's to remove (removeInstanceLabelsLocked).
func (r *Registry) removeInstanceLocked(in *indom, j int) {
	if in.removed[j] {
		return
	}
	in.removed[j] = true
	in.addLive(-1)
	var grown []*part
	for _, p := range r.parts {
		if p.hasIndom(in) {
			p.remove(in, j)
			grown = append(grown, p)
		}
	}
	r.grewLocked(keepDeclared, grown...) // nothing needs storage: no error
}

// forgetRemovedLocked makes the indoms that keep many removed instances
// forget them (indom.forget), moving the values of the others to their
// new indexes.
func (r *Registry) forgetRemovedLocked() {
	for _, in := range r.indoms {
		if !in.forgetsRemoved() {
			continue
		}
		to := in.forget()
		for _, p := range r.parts {
			if p.hasIndom(in) {
				p.renumber(in, to)
			}
		}
		r.renumberWaitersLocked(in, to)
	}
}

// reviveInstanceLocked gives removed instance j of in its place back, with
// values of its metrics starting from zero. A full disk is no refusal, as
// for addInstancesLocked with keepDeclared.
func (r *Registry) reviveInstanceLocked(in *indom, j int) error {
	if !in.removed[j] {
		return nil
	}
	if err := checkInstanceCaps(&r.opts, in.Serial, in.ShortHelp, in.live, r.instanceCount(), 1); err != nil {
		return err
	}
	if err := r.checkGrowthLocked(in, 1); err != nil {
		return err
	}
	in.removed[j] = false
	in.addLive(1)
	var grown []*part
	for _, p := range r.parts {
		if p.hasIndom(in) {
			if p.file != nil {
				p.newInstanceSlots(in, len(in.Instances), j)
			}
			grown = append(grown, p)
		}
	}
	return r.changedLocked(keepDeclared, step{kind: stepRevive, in: in, at: j}, grown...)
}

// unreviveInstanceLocked undoes reviveInstanceLocked of instance j of in.
func (r *Registry) unreviveInstanceLocked(in *indom, j int) {
	for _, p := range r.parts {
		if p.hasIndom(in) && p.file != nil {
			for _, m := range slices.Backward(p.metrics) { // newest slot first
				if m.indom == in {
					p.release(m, j)
				}
			}
		}
	}
	in.removed[j] = true
	in.addLive(-1)
}

// Default caps on instances (see Options.MaxIndomInstances): a metric over
// an indom at its cap fills a file's values budget (DefaultMaxFileValues),
// and a registry at its cap, spread over indoms at theirs, costs PCP's
// reader a few hundredths of a second a fetch.
const (
	DefaultMaxIndomInstances = DefaultMaxFileValues
	DefaultMaxInstances      = 16384
)

// checkInstanceCaps returns an error wrapping ErrTooMany when adding n
// instances to the indom of serial (help: its short help, to name it),
// which holds inIndom, in a registry holding inRegistry, would pass a cap
// of o.
func checkInstanceCaps(o *Options, serial uint32, help string, inIndom, inRegistry, n int) error {
	// Named only on failure: on the path of every instance added.
	subject := func() string {
		s := "indom " + strconv.FormatUint(uint64(serial), 10)
		if help != "" {
			s += " (" + quote(help) + ")"
		}
		return s
	}
	if c := capOf(o.MaxIndomInstances, DefaultMaxIndomInstances); inIndom+n > c {
		return errorf(ErrTooMany, subject(), "%d instances would pass the cap of %d per indom (Options.MaxIndomInstances): PCP's reader takes time quadratic in an indom's instances", inIndom+n, c)
	}
	if c := capOf(o.MaxInstances, DefaultMaxInstances); inRegistry+n > c {
		return errorf(ErrTooMany, subject(), "%d instances in the registry would pass its cap of %d (Options.MaxInstances)", inRegistry+n, c)
	}
	return nil
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

// capOf is a cap as Options gives it: def when zero, none when negative.
func capOf(c, def int) int {
	switch {
	case c == 0:
		return def
	case c < 0:
		return math.MaxInt
	}
	return c
}

// instanceCount is the number of instances the registry's indoms hold,
// removed ones not counted, each counted once whichever files hold it.
func (r *Registry) instanceCount() int { return r.counts.instances }
