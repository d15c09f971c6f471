package mmv

import "sync"

// A string record is 256 bytes: the NUL-terminated text, then zeros. Names
// (v2 and v3), help texts and string values each have one.
const stringSize = MaxStringLen + 1

// putString fills a string record with s, NUL-terminated and zero-padded.
func putString(rec []byte, s string) {
	n := copy(rec[:MaxStringLen], s)
	clear(rec[n:stringSize])
}

// stringLock serialises the writers of a registry's String values, which
// write a whole record, not one atomic word; closed drops their updates
// once the registry is closed.
type stringLock struct {
	mu     sync.Mutex
	closed bool // under mu
}
