package mmv

// A string record is 256 bytes: the NUL-terminated text, then zeros. Names
// (v2 and v3), help texts and string values each have one.
const stringSize = MaxStringLen + 1

// putString fills a string record with s, NUL-terminated and zero-padded.
func putString(rec []byte, s string) {
	n := copy(rec[:MaxStringLen], s)
	clear(rec[n:stringSize])
}
