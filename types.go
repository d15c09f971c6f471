package mmv

import "strconv"

// Type is the type of a metric's values, numbered as PCP numbers them.
type Type int32

// The value types an MMV file can hold.
const (
	Int32   Type = 0 // 32-bit signed integer
	Uint32  Type = 1 // 32-bit unsigned integer
	Int64   Type = 2 // 64-bit signed integer
	Uint64  Type = 3 // 64-bit unsigned integer
	Float   Type = 4 // 32-bit IEEE float
	Double  Type = 5 // 64-bit IEEE float
	String  Type = 6 // string of at most 255 bytes
	Elapsed Type = 9 // microseconds accumulated over intervals; PCP reads a 64-bit counter
)

// typeNames names the types; "" marks a number that is none. An array,
// not a map: valid is checked at every declaration.
var typeNames = [...]string{
	Int32: "32-bit int", Uint32: "32-bit unsigned int", Int64: "64-bit int", Uint64: "64-bit unsigned int",
	Float: "float", Double: "double", String: "string", Elapsed: "elapsed",
}

func (t Type) valid() bool { return t >= 0 && int(t) < len(typeNames) && typeNames[t] != "" }

// String returns the type's name as PCP's mmvdump prints it.
func (t Type) String() string {
	if t.valid() {
		return typeNames[t]
	}
	return "Type(" + strconv.Itoa(int(t)) + ")"
}

// Semantics says how a reader should interpret successive values of a metric.
type Semantics int32

// The semantics an MMV file can declare.
const (
	SemCounter  Semantics = 1 // a total that only grows; readers graph its rate
	SemInstant  Semantics = 3 // a level sampled now, such as a queue length
	SemDiscrete Semantics = 4 // a value that rarely changes, such as a version
)

// semNames names the semantics, as typeNames does the types.
var semNames = [...]string{SemCounter: "counter", SemInstant: "instant", SemDiscrete: "discrete"}

func (s Semantics) valid() bool { return s >= 0 && int(s) < len(semNames) && semNames[s] != "" }

// String returns the semantics' name as PCP prints it.
func (s Semantics) String() string {
	if s.valid() {
		return semNames[s]
	}
	return "Semantics(" + strconv.Itoa(int(s)) + ")"
}
