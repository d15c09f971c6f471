package mmv

import (
	"time"
	"unsafe"

	"github.com/gopcp/mmv/internal/osfile"
)

// The registry's side of its files: internal/osfile maps, locks, writes,
// renames and unmaps them, on each system that has a port (Linux, macOS,
// FreeBSD); mmv tells it the format (fileFormat) and turns its errors into
// mmv's (fileError).

// file is a part's MMV file, and the value slots it has room for. Every
// handle on one of its values references it (Value.file), and so its
// osfile.File: a closed file's range is unmapped only once no handle is
// reachable (see osfile's retire).
type file struct {
	os       *osfile.File
	values   unsafe.Pointer // where the values section is mapped, for good
	capacity int            // value slots the file has room for
	strs     *stringLock    // its registry's, which its String values' handles take (Value.file)
	strings  stringRecords  // where its string records are, as laid out (under strs)
	prefix   string         // its metric names' beyond the registry's (part.prefix), which errors leave out (Value.subject)
}

// fileFormat is what the file layer knows of MMV files: a file's writer is
// the pid in its header, and a file is complete once gen2 equals gen1, so
// gen2 is stored last (see encode).
var fileFormat = osfile.Format{
	HeadSize: headerSize,
	Owner: func(b []byte) int {
		h, _ := readHead(b) // pid 0 when not an MMV file's
		return h.pid
	},
	Seal: func(h []byte) { ne.PutUint64(h[hdrGen2Off:], ne.Uint64(h[hdrGen1Off:])) },
}

// claimWait bounds how long a registry waits for another to finish making
// its file (see osfile.Dir.LockClaims): seconds for a file of millions of
// values. Tests shorten it.
var claimWait = 10 * time.Second

// openDir opens the directory of a registry's files.
func openDir(path string) (*osfile.Dir, error) { return osfile.OpenDir(path, fileFormat) }

// prepareFile makes the file of a part at name in d, of size bytes, its
// values section from valuesOff to valuesEnd with room for capacity slots,
// String values written under strs, its metric names starting with prefix
// (part.prefix); fill writes every byte but gen2. The
// file is at a temporary name until its Commit (see osfile.Prepare).
func prepareFile(d *osfile.Dir, name, prefix string, size, valuesOff, valuesEnd int64, capacity int, strs *stringLock, fill func(b []byte)) (*file, error) {
	f, err := osfile.Prepare(d, name, size, valuesOff, valuesEnd, fill)
	if err != nil {
		return nil, err
	}
	return &file{os: f, values: f.Values(), capacity: capacity, strs: strs, prefix: prefix}, nil
}

func (f *file) bytes() []byte           { return f.os.Bytes() }
func (f *file) path() string            { return f.os.Path() }
func (f *file) close(remove bool) error { return f.os.Close(remove) }

// closeAs closes f and renames it to as (osfile.File.CloseAs).
func (f *file) closeAs(as string) error { return f.os.CloseAs(as) }
