package mmv

// A string slot is 256 bytes: the NUL-terminated text, then zeros. Names
// (v2 and v3), help texts and string values each have one.
const stringSize = MaxStringLen + 1

// putString fills a slot with s, NUL-terminated and zero-padded.
func putString(slot []byte, s string) {
	n := copy(slot[:MaxStringLen], s)
	clear(slot[n:stringSize])
}
