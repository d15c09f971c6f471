package mmv

import (
	"math"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"
)

// The value record: the value itself (PCP's 8-byte pmAtomValue, 32-bit
// types in its first 4 bytes), an extra word (the open interval of an
// Elapsed value, the string record of a String value), and the offsets of the
// metric and instance records it belongs to.
const (
	valueSize        = 32
	valueExtraOff    = 8
	valueMetricOff   = 16
	valueInstanceOff = 24
)

func putValue(b []byte, metricOff, instanceOff, extra uint64) {
	ne.PutUint64(b[valueExtraOff:], extra)
	ne.PutUint64(b[valueMetricOff:], metricOff)
	ne.PutUint64(b[valueInstanceOff:], instanceOff)
}

// Value is a handle on one value of a started registry: a singular metric,
// or one instance of a metric. Get it once with Registry.Value and keep it:
// its numeric updates are single atomic operations on the mapped file,
// safe from any goroutine, with no lock and no allocation. One exception
// keeps values exact: while a publication of declarations made after Start
// rewrites the value's file, from its copy of the values to the merge of
// the updates made meanwhile, a Set (and StartInterval) waits for it
// (adds never do), since the merge adds what changed in the old file to
// what changed in the new.
//
// Numeric methods convert to the metric's type: integers wrap as Go's
// integer conversions do, floats round to the nearest value. Methods that do
// not fit the type (SetString on a number, Add on a string) do nothing.
// After the registry is closed, updates are dropped: the handle keeps its
// last value, and what is made through it alone, in memory of its own
// (shared, an array, with the handles closed with it; a String value's
// its own, with a copy of its text), and one mapping of
// the process (no memory) until it is unreachable (see Registry.Close). A
// nil *Value ignores every update. A zero Value (new(Value), a struct
// field never given a handle) is none: it has no storage, and its updates
// and reads panic, since a check for it would cost every update a branch.
// Only Registry.Value makes a Value.
type Value struct {
	p unsafe.Pointer // the value record in the mapping; read atomically, since Close moves it
	// set records that the value was ever set, not only added to, as
	// the store Set or SetFloat then does inline (a setKind), and a
	// growth step's hold of its Sets (setHeld). One word, so the inlined
	// check is one load.
	set    atomic.Uint32
	typ    uint8 // the Type: a byte, so that a Value is 24 bytes (a cell 48, and a counter's vector entry 128)
	word64 bool  // a 64-bit integer: Add is one atomic add, inlined
	file   *file // whose mapping holds a String value's text, and its writers' lock
}

// init makes v the handle on the value record at p.
func (v *Value) init(p unsafe.Pointer, t Type, f *file) {
	v.p, v.typ, v.word64, v.file = p, uint8(t), t == Uint64 || t == Int64 || t == Elapsed, f
}

// valueRecord is a value record's memory outside any file: where a
// handle detached from its file points (detach).
type valueRecord [valueSize / 8]uint64

// detach points the handle at rec, a record of its own, with a copy of its
// value record: so the file can be unmapped (Close), or its slot serve
// another value (a vector's Delete), while the handle reads its last
// value, and what is made through it alone, never another handle's (a
// record for all of them read another registry's counter's 42 as a
// Double's 2.08e-322).
func (v *Value) detach(rec *valueRecord) {
	if v == nil {
		return
	}
	if v.Type() == String {
		v.detachString()
		return
	}
	v.loadRecord(rec)
	atomic.StorePointer(&v.p, unsafe.Pointer(rec))
}

// loadRecord copies the value's record, word by word, into rec.
func (v *Value) loadRecord(rec *valueRecord) {
	from := (*valueRecord)(v.ptr())
	for i := range rec {
		rec[i] = atomic.LoadUint64(&from[i])
	}
}

// detachedString is a detached String value's record and its text, which
// is in its file's strings section, not its record: rec is first, so the
// handle, pointing at it, keeps the text reachable as long as itself. One
// allocation per String value detached, where a number's record is one of
// the sinks' arrays.
type detachedString struct {
	rec  valueRecord
	text string // under the file's strs.mu
}

// detachString points a String value's handle at a detachedString, its
// record copied and its text read from its file (still mapped: Close
// detaches before unmapping), so that the handle keeps its text, and
// what SetString makes through it alone, never another value's string
// record (a vector's Delete frees it for another instance).
func (v *Value) detachString() {
	v.file.strs.mu.Lock()
	defer v.file.strs.mu.Unlock()
	d := new(detachedString)
	if kept := v.keptString(); kept != nil {
		d.text = kept.text
	} else {
		d.text = cstring(v.file.strings.at(v.file.os.Bytes(), uint64(atomic.LoadInt64(v.extra()))))
	}
	v.loadRecord(&d.rec)
	atomic.StorePointer(&v.p, unsafe.Pointer(&d.rec))
}

// keptString is the detachedString of a detached String value's handle,
// nil while it is on its file: told by where the handle points, in the
// file's mapping or not (a closed file's range stays reserved while a
// handle on it is reachable), never by a word of the record, which the
// file's bytes could hold. Callers hold file.strs.mu, under which no
// growth step changes the file's size.
func (v *Value) keptString() *detachedString {
	p := v.ptr()
	if uintptr(p)-uintptr(v.file.os.Base()) < uintptr(len(v.file.os.Bytes())) {
		return nil
	}
	return (*detachedString)(p)
}

// sinks hands out the records handles detached from a part's file point
// at (Value.detach), from arrays of many: closing 100,000 values makes one
// array, deleting them one by one one every sinkChunk, not an object
// each. An array lives while a handle on one of its records is reachable.
type sinks []valueRecord

// sinkChunk is how many records sinks makes at a time for a few handles.
const sinkChunk = 64

// take returns n records for n handles detached together.
func (k *sinks) take(n int) []valueRecord {
	if len(*k) < n {
		*k = make([]valueRecord, max(n, sinkChunk))
	}
	recs := (*k)[:n:n]
	*k = (*k)[n:]
	return recs
}

// ptr is where the value is. A method that goes through it keeps v live
// until its last access there (runtime.KeepAlive: at most a store of v to
// the stack): a closed file's range stays mapped while any handle on it is
// reachable, and an update preempted between loading the address and
// storing into it holds the handle (retire_linux.go).
func (v *Value) ptr() unsafe.Pointer { return atomic.LoadPointer(&v.p) }
func (v *Value) u64() *uint64        { return (*uint64)(v.ptr()) }
func (v *Value) word32() *uint32     { return (*uint32)(v.ptr()) }
func (v *Value) extra() *int64       { return (*int64)(unsafe.Add(v.ptr(), valueExtraOff)) }

// setKind is what Value.set holds once the value has been set: which
// store Set and SetFloat do inline.
const (
	setNever  = iota
	set64     // Set: Uint64, Int64, Elapsed
	setDouble // SetFloat: Double
	setOther
)

// setHeld, or'd into Value.set, holds the value's Sets while a growth
// step carries the values into a new file (setHold): merge then
// adds each file's change, which is exact only when both are adds, and a
// Set waits for the step's end (awaitSets). Adds are never held.
const setHeld = 1 << 31

// markSet marks the value as set rather than added to; a load first, so a
// value set often stays in every core's cache. A compare-and-swap, so as
// never to clear a hold.
func (v *Value) markSet() {
	if v.set.Load() == setNever {
		k := uint32(setOther)
		switch {
		case v.word64:
			k = set64
		case v.Type() == Double:
			k = setDouble
		}
		v.set.CompareAndSwap(setNever, k)
	}
}

// put stores word, the value's whole word as a Set makes it, and marks the
// value set, once no growth step holds its Sets.
func (v *Value) put(word uint64) {
	for !v.tryPut(word) {
		v.awaitSets()
	}
}

// tryPut is put when no growth step holds the value's Sets; false when
// one does, before the store or once it is done (the store may then have
// landed in either file, and must be made again after the step).
func (v *Value) tryPut(word uint64) bool {
	if v.set.Load()&setHeld != 0 {
		return false
	}
	v.markSet()
	atomic.StoreUint64(v.u64(), word)
	runtime.KeepAlive(v)
	return v.set.Load()&setHeld == 0
}

// awaitSets waits for the growth step that holds the value's Sets.
func (v *Value) awaitSets() {
	for v.set.Load()&setHeld != 0 {
		runtime.Gosched()
	}
}

// Type returns the type of the value's metric.
func (v *Value) Type() Type {
	if v == nil {
		return 0
	}
	return Type(v.typ)
}

// Add adds n to the value.
func (v *Value) Add(n int64) {
	if v != nil && v.word64 {
		atomic.AddUint64(v.u64(), uint64(n))
		runtime.KeepAlive(v)
		return
	}
	v.add(n)
}

// add is Add for the types that are not 64-bit integers.
func (v *Value) add(n int64) {
	if v == nil {
		return
	}
	switch v.Type() {
	case Uint32, Int32:
		atomic.AddUint32(v.word32(), uint32(n))
	case Double, Float:
		v.AddFloat(float64(n))
	}
	runtime.KeepAlive(v)
}

// Inc adds one to the value.
func (v *Value) Inc() { v.Add(1) }

// Set stores n. For a Uint64 value the bits of n are stored, so
// Set(int64(u)) stores any uint64 u.
func (v *Value) Set(n int64) {
	if v == nil || !v.storeWord(uint64(n), set64) {
		v.setInt(n)
	}
}

// storeWord is the fast path of Set and SetFloat, inlined: one atomic
// store of the value's word when the value is already marked set as state
// (set64, setDouble) says and no growth step holds its Sets, else false
// (after the store when a hold began meanwhile: see tryPut).
func (v *Value) storeWord(bits uint64, state uint32) bool {
	if v.set.Load() != state {
		return false
	}
	atomic.StoreUint64(v.u64(), bits)
	runtime.KeepAlive(v)
	return v.set.Load() == state
}

// setInt is Set for the first call, the types that are not 64-bit
// integers, and a Set that a growth step holds.
func (v *Value) setInt(n int64) {
	if v == nil {
		return
	}
	switch v.Type() {
	case Uint64, Int64, Elapsed:
		v.put(uint64(n))
	case Uint32, Int32:
		// The whole 8-byte word, its second half zero: PCP's sentinel test
		// compares all 8 bytes with all ones, so the second half of a
		// value once marked missing must not stay all ones, or Set(-1)
		// would still read as no value.
		v.put(uint64(uint32(n)) << firstHalfShift)
	case Double, Float:
		v.SetFloat(float64(n))
	}
}

// firstHalfShift places a 32-bit value in the first 4 bytes of a uint64
// stored in host byte order: the low half on little-endian hosts.
var firstHalfShift = func() uint {
	var x uint64 = 1
	if *(*byte)(unsafe.Pointer(&x)) == 1 {
		return 0
	}
	return 32
}()

// SetFloat stores f; integer values store f converted to an integer.
func (v *Value) SetFloat(f float64) {
	if v == nil || !v.storeWord(math.Float64bits(f), setDouble) {
		v.setFloat(f)
	}
}

// setFloat is SetFloat for the first call, the types that are not
// Double, and a Set that a growth step holds.
func (v *Value) setFloat(f float64) {
	if v == nil {
		return
	}
	switch v.Type() {
	case Double:
		v.put(math.Float64bits(f))
	case Float:
		v.put(uint64(math.Float32bits(float32(f))) << firstHalfShift) // the second half zero, as setInt's
	case String:
	default:
		v.Set(intOf(f, v.Type()))
	}
}

// intOf is f converted to an integer of type t, as the word Set and Add
// take: a Uint64 from 2^63 up converted as one, where int64(f) gave 2^63
// for every value past it.
func intOf(f float64, t Type) int64 {
	if t == Uint64 && f >= 1<<63 {
		return int64(uint64(f))
	}
	return int64(f)
}

// AddFloat adds f; integer values add f converted to an integer.
func (v *Value) AddFloat(f float64) {
	if v == nil {
		return
	}
	switch v.Type() {
	case Double:
		p := v.u64()
		for old := atomic.LoadUint64(p); !atomic.CompareAndSwapUint64(p, old, math.Float64bits(math.Float64frombits(old)+f)); {
			old = atomic.LoadUint64(p)
		}
	case Float:
		p := v.word32()
		for old := atomic.LoadUint32(p); !atomic.CompareAndSwapUint32(p, old, math.Float32bits(math.Float32frombits(old)+float32(f))); {
			old = atomic.LoadUint32(p)
		}
	case String:
	default:
		v.Add(intOf(f, v.Type()))
	}
	runtime.KeepAlive(v)
}

// AddDuration adds d, in whole microseconds, to an Elapsed value (or to
// any numeric value). It is safe from many goroutines at once.
func (v *Value) AddDuration(d time.Duration) { v.Add(d.Microseconds()) }

// StartInterval opens a timed interval on an Elapsed value, as libpcp's
// mmv_stats_interval_start does: PCP's reader counts the open interval as
// elapsed time until EndInterval closes it. An Elapsed value has one
// interval at a time, so StartInterval and EndInterval are for a single
// owner; use AddDuration from many goroutines.
func (v *Value) StartInterval() {
	if v == nil || v.Type() != Elapsed {
		return
	}
	// A store into the record, as a Set's, that a growth step holds (see
	// put): merged as a delta, an open made in the new file before the
	// merge would not be one.
	start := -time.Now().UnixMicro()
	for {
		v.awaitSets()
		atomic.StoreInt64(v.extra(), start)
		runtime.KeepAlive(v)
		if v.set.Load()&setHeld == 0 {
			return
		}
	}
}

// EndInterval closes the interval StartInterval opened, adding its length
// to the value.
func (v *Value) EndInterval() {
	if v == nil || v.Type() != Elapsed {
		return
	}
	if start := atomic.SwapInt64(v.extra(), 0); start < 0 {
		atomic.AddInt64((*int64)(v.ptr()), time.Now().UnixMicro()+start)
	}
	runtime.KeepAlive(v)
}

// SetString stores s in a String value. It returns an error wrapping
// ErrTooLong beyond 255 bytes (libpcp silently drops such a string),
// ErrName for a NUL, which ends the text for every reader (PCP's
// included), and ErrType for other types. Concurrent callers are
// serialised.
func (v *Value) SetString(s string) error {
	if v == nil {
		return errorf(ErrType, "value", "SetString on a nil *Value")
	}
	if v.Type() != String {
		return errorf(ErrType, v.subject(), "SetString on a value of type %v, not String", v.Type())
	}
	if len(s) > MaxStringLen {
		return errorf(ErrTooLong, v.subject(), "string value of %d bytes; at most %d fit", len(s), MaxStringLen)
	}
	if strings.IndexByte(s, 0) >= 0 {
		return errorf(ErrName, v.subject(), "a string value cannot contain NUL")
	}
	v.file.strs.mu.Lock()
	defer v.file.strs.mu.Unlock()
	if d := v.keptString(); d != nil {
		d.text = s
		atomic.StoreUint32(v.word32(), uint32(len(s)))
	} else if rec := v.stringRecord(); rec != nil {
		putString(rec, s)
		// libpcp keeps the length in the value itself; so do we, for
		// files that stay byte-identical to its own.
		atomic.StoreUint32(v.word32(), uint32(len(s)))
	}
	return nil
}

// subject names v in an error, its metric as declared and its instance,
// read from its file on the error path only: a Value holds no name, to
// stay 24 bytes. "value" once its registry is closed.
func (v *Value) subject() string {
	v.file.strs.mu.Lock() // no growth step moves the file meanwhile
	defer v.file.strs.mu.Unlock()
	if v.file.strs.closed {
		return "value"
	}
	b := v.file.os.Bytes()
	rec := uint64(uintptr(atomic.LoadPointer(&v.p)) - uintptr(v.file.os.Base()))
	if rec > uint64(len(b)) || uint64(len(b))-rec < valueSize || len(b) < headerSize {
		return "value"
	}
	version := int(ne.Uint32(b[hdrVersionOff:]))
	name, ok := nameAt(b, ne.Uint64(b[rec+valueMetricOff:]), version)
	if !ok {
		return "value"
	}
	what := subject("metric", strings.TrimPrefix(name, v.file.prefix))
	if inst := ne.Uint64(b[rec+valueInstanceOff:]); inst != 0 {
		if name, ok := nameAt(b, inst+instanceNameOff, version); ok {
			what = inside(what, "instance", name)
		}
	}
	return what
}

// stringRecord is the string record a String value's extra word points
// at, nil once the registry is closed, or when the word points at none of
// the file's: a value is handed out only once its file has its record
// (part.unstrung), and a write through any other offset would land on
// the header or another record, where it is dropped instead. Callers hold
// file.strs.mu, which no growth step moves the file under.
func (v *Value) stringRecord() []byte {
	if v.file.strs.closed {
		return nil
	}
	return v.file.strings.at(v.file.os.Bytes(), uint64(atomic.LoadInt64(v.extra())))
}

// SetNoValue marks the value as missing, for a registry with the Sentinel
// flag: PCP's reader then shows "no value" for it. Integers and Elapsed
// store all ones in all 8 bytes of the slot (PCP compares the 8 bytes,
// also for 32-bit types), floats NaN, strings the empty string. Set gives
// the value back; Add counts on from -1, as the all-ones word reads.
// Without the Sentinel flag these are ordinary values.
//
// PCP 6.0.3's reader never recognises the NaN (it compares NaN with NaN,
// which is false) and shows "nan"; 7.2's shows no value, as for the other
// types (TestSentinelNoValue, run against both). With the flag, an Int64 or Elapsed value of -1 and a Uint64 value
// of 1<<64-1 are missing too, and so is a String value never set.
func (v *Value) SetNoValue() {
	if v == nil {
		return
	}
	switch v.Type() {
	case Double, Float:
		v.SetFloat(math.NaN())
	case String:
		v.SetString("")
	default:
		v.put(math.MaxUint64)
	}
}

// Int returns the value as an integer: floats are truncated, strings are
// 0, and an Elapsed value is read as PCP reads it, with its interval open
// since StartInterval, if any, up to now.
func (v *Value) Int() int64 {
	if v == nil {
		return 0
	}
	var n int64
	switch v.Type() {
	case Int32:
		n = int64(int32(atomic.LoadUint32(v.word32())))
	case Uint32:
		n = int64(atomic.LoadUint32(v.word32()))
	case Uint64, Int64:
		n = int64(atomic.LoadUint64(v.u64()))
	case Elapsed:
		n = int64(atomic.LoadUint64(v.u64()))
		if start := atomic.LoadInt64(v.extra()); start < 0 {
			n += time.Now().UnixMicro() + start
		}
	case Float, Double:
		n = int64(v.Float())
	}
	runtime.KeepAlive(v)
	return n
}

// Float returns the value as a float64; strings are 0.
func (v *Value) Float() float64 {
	if v == nil {
		return 0
	}
	var f float64
	switch v.Type() {
	case Double:
		f = math.Float64frombits(atomic.LoadUint64(v.u64()))
	case Float:
		f = float64(math.Float32frombits(atomic.LoadUint32(v.word32())))
	case Uint64:
		f = float64(atomic.LoadUint64(v.u64()))
	case String:
	default:
		f = float64(v.Int())
	}
	runtime.KeepAlive(v)
	return f
}

// String returns the value as text: a String value's text, or the number.
func (v *Value) String() string {
	if v == nil {
		return ""
	}
	switch v.Type() {
	case String:
		v.file.strs.mu.Lock()
		defer v.file.strs.mu.Unlock()
		if d := v.keptString(); d != nil {
			return d.text
		}
		return cstring(v.stringRecord())
	case Float, Double:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case Uint64:
		n := atomic.LoadUint64(v.u64())
		runtime.KeepAlive(v)
		return strconv.FormatUint(n, 10)
	}
	return strconv.FormatInt(v.Int(), 10)
}

func cstring(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// valueStride is the distance between the value records of two
// consecutive slots: valueSize, packed as libpcp_mmv packs them, or
// paddedStride with Options.PadValues, the records between being fillers.
type valueStride int64

// paddedStride keeps every value alone on two 64-byte cache lines: the pair
// some processors fetch together (Intel's adjacent-line prefetch), so that
// neighbouring values updated from different cores do not share one.
const paddedStride valueStride = 128

// at is the offset of slot s's record from the values section's start: the
// one place a slot becomes a place in the file or the mapping.
func (st valueStride) at(s int) int64 { return int64(s) * int64(st) }

// covering is the least number of slots whose records span n bytes.
func (st valueStride) covering(n int64) int { return int((n + int64(st) - 1) / int64(st)) }
