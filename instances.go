package mmv

import "math"

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

// Indom and instance records. A v1 instance holds its name inline; v2 and
// v3 point at a string slot.
const (
	indomSize      = 32
	instanceSizeV1 = 80
	instanceSizeV2 = 24
)

// singularIndom is the indom field of a metric with no instance domain
// (PCP's PM_INDOM_NULL).
const singularIndom = 0xFFFFFFFF

func putIndom(b []byte, serial, count uint32, firstInstance, shortText, helpText uint64) {
	ne.PutUint32(b[0:], serial)
	ne.PutUint32(b[4:], count)
	ne.PutUint64(b[8:], firstInstance)
	ne.PutUint64(b[16:], shortText)
	ne.PutUint64(b[24:], helpText)
}

func putInstance(b []byte, version int, indomOff uint64, id int32, name string, nameOff uint64) {
	ne.PutUint64(b[0:], indomOff)
	ne.PutUint32(b[12:], uint32(id))
	if version == Version1 {
		copy(b[16:80], name)
	} else {
		ne.PutUint64(b[16:], nameOff)
	}
}

// Default caps on instances (see Options.MaxIndomInstances): an indom at
// its cap costs PCP's reader about 0.06 s a fetch, and a registry at its
// cap, spread over indoms at theirs, about a quarter of a second.
const (
	DefaultMaxIndomInstances = 4096
	DefaultMaxInstances      = 16384
)

// checkInstanceCaps returns an error wrapping ErrTooMany when adding n
// instances to the indom subject (help: its short help, to name it), which
// holds inIndom, in a registry holding inRegistry, would pass a cap of o.
func checkInstanceCaps(o *Options, subject, help string, inIndom, inRegistry, n int) error {
	if help != "" {
		subject += " (" + quote(help) + ")"
	}
	if c := capOf(o.MaxIndomInstances, DefaultMaxIndomInstances); inIndom+n > c {
		return errorf(ErrTooMany, subject, "%d instances would pass the cap of %d per indom (Options.MaxIndomInstances): PCP's reader takes time quadratic in an indom's instances", inIndom+n, c)
	}
	if c := capOf(o.MaxInstances, DefaultMaxInstances); inRegistry+n > c {
		return errorf(ErrTooMany, subject, "%d instances in the registry would pass its cap of %d (Options.MaxInstances)", inRegistry+n, c)
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

// instanceCount is the number of instances the registry's indoms hold.
func (r *Registry) instanceCount() int {
	n := 0
	for _, in := range r.indoms {
		n += len(in.Instances)
	}
	return n
}
