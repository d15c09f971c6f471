package mmv

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gopcp/mmv/internal/osfile"
	"github.com/gopcp/mmv/internal/pcpconf"
	"github.com/gopcp/mmv/internal/pcpname"
)

// Options are the file-wide settings of a registry.
type Options struct {
	// Cluster is the PMID cluster of the file's metrics, 1..4095 (2047 in
	// a file with indoms). No two live files of a directory share one:
	// Start fails with ErrClusterInUse when another live file of the
	// directory has the cluster given. Zero derives one from the file
	// name, so that PMIDs match across restarts and a fleet and cluster
	// labels work: the first of 1..2047 from the name's hash that no other
	// live file of the directory has, the same on every restart and host
	// while no other program's file takes it first (see the package doc,
	// Clusters). ReaderCluster lets PCP's reader choose instead.
	Cluster uint32
	// Flags are the header flags.
	Flags Flags
	// Version forces file format Version2 or Version3. Zero chooses as
	// libpcp_mmv does: v1, v2 when a metric or instance name is 64 bytes or
	// longer, v3 when there are labels.
	Version int
	// Dir is the directory of the file. Empty means $PCP_TMP_DIR/mmv,
	// resolved as PCP resolves it (see Dir).
	Dir string
	// PublishDelay is how long declarations made after Start may wait to
	// be published together in a new file; zero means 50ms. Their values
	// can be updated at once, and count exactly in their instruments'
	// memory until the file has them. The timer's publication moves
	// them into the file 256 at a time, letting other goroutines in
	// between, so that no first use waits for all of them. Each
	// publication that makes or replaces a file makes PCP's agent
	// rebuild the whole directory's names inside pmcd, so the timer's are
	// paced: after a burst of 8, one a second at most on average, for all
	// the registries of the process that publish into one directory
	// (whatever path names it), which take turns. While publications
	// follow each other (label values churning, a metric declared every
	// 100 ms) a declaration waits up to a second for PCP, not
	// PublishDelay, and a second more for each other registry's turn
	// booked before it. Flush publishes and binds everything without
	// waiting; it, and the publications made at once for values that
	// need storage now (Registry.Value, a low-level declaration past its
	// file's spare room or of a String value), count against the pace,
	// yet never delay a timer's turn. A publication
	// that fails (a full disk) replaces no file and does not count: it is
	// retried every PublishDelay.
	PublishDelay time.Duration
	// MaxIndomInstances caps the instances of one indom, and MaxInstances
	// those of the registry (overflow files included once; the few of its
	// own mmv.dropped and mmv.expired not counted): PCP's reader
	// takes time quadratic in an indom's instances, inside pmcd, where
	// every client of the host waits for it (see docs/design.md, "What a
	// registry costs PCP's reader"). Zero means DefaultMaxIndomInstances
	// and DefaultMaxInstances; a negative value removes the cap. Raise
	// them knowingly: at 16,000 instances in one indom a fetch holds pmcd
	// for half a second, at 32,000 for three.
	MaxIndomInstances, MaxInstances int
	// MaxFileValues is the budget of values of each of the registry's
	// files, and MaxValues caps the values of the registry, every file
	// together: PCP's reader scans a file's values to find each one, so a
	// file of V values costs it about c·V² a fetch. A metric whose values
	// would take a file past its budget goes to another file (an overflow
	// file, as past MaxMetrics) when it is declared; a vector reserves room
	// in its file for its default limit then. An instance that would take
	// a file past its budget, or a declaration past MaxValues (the
	// registry's own mmv.dropped and mmv.expired, a few values declared at
	// the first refusal or expiry, not counted), is refused
	// with an error wrapping ErrTooMany that names the option. Zero means
	// DefaultMaxFileValues and DefaultMaxValues; a negative value removes
	// the budget or the cap. A whole fetch costs about
	// c·MaxValues·MaxFileValues (docs/design.md, "What a registry costs PCP's
	// reader").
	MaxFileValues, MaxValues int
	// MaxRegistryMetrics caps the metrics of the registry, every file
	// together, the registry's own (mmv.dropped, mmv.expired) declared
	// beyond it. PCP's agent pays for a metric more than for a value: it
	// looks names up, and rebuilds its namespace and tables at every
	// request after any file of its directory changed (each publication
	// of a registry changes it), in time growing faster than the
	// directory's metrics: 2,048 cost a rebuild 16 ms and pminfo -f
	// 0.07 s, 16,000 a second and two (docs/design.md, "The caps"). A
	// declaration past it is refused with an error wrapping ErrTooMany
	// that names the option. Zero means DefaultMaxRegistryMetrics; a
	// negative value removes the cap.
	MaxRegistryMetrics int
	// PadValues gives every value 128 bytes of the file (two cache lines)
	// instead of the 32 of its record, the records between being fillers
	// that PCP's reader skips, so that values updated from different cores
	// never share a cache line. The files are then not libpcp_mmv's, their
	// values section is four times as large, and PCP's reader, which scans
	// it to find each value, takes up to four times as long to fetch
	// them (docs/design.md, "Padded values"). Worth it only for values that
	// several cores update at high rates, such as the instances of a hot
	// vector: give those a registry of their own.
	PadValues bool
}

// Registry declares the metrics of one MMV file and, once started, owns the
// file and hands out the Value handles that update it.
//
// A registry is declaring until Start, started until Close, then closed:
// Start either makes every file and moves to started, or fails, leaves
// nothing on disk and stays declaring, so it can be called again; Close
// may be called any number of times. Declarations may go on after Start:
// the file grows (see Flush), and a declaration that fails declares
// nothing. A Registry is safe for concurrent use. A nil *Registry is
// [Default], as a receiver as well as an argument. A zero Registry is one
// of no name and no options, as NewRegistry("", nil) makes: it declares,
// and Start refuses its empty name (ErrName) until Configure names it.
type Registry struct {
	mu   sync.Mutex
	made atomic.Bool // parts[0] is made: by NewRegistry, or a zero Registry's first use (registry)
	name string
	opts Options

	state state
	model
	// parts are the registry's files: parts[0] is the file named after
	// the registry, the others hold metrics beyond MaxMetrics (parts.go).
	parts []*part

	timer *publishTimer // made at Start
	// inFlight, while a publication runs without the lock (growth.go,
	// publishPartUnlocking), is closed when it is done.
	inFlight chan struct{}
	// rebound are the cells bound to storage after their instruments were
	// handed out, lately: an update racing the binding may land in the
	// cell's own memory; they keep the timer armed, whose publications
	// carry it even when nothing else is declared, as Snapshot and Gather
	// do before they read (rebound.go).
	rebound       rebound
	pubErr        error                // why the last publication failed, until every part is in its file (scheduleLocked)
	startErr      error                // why the last Start failed, until Configure (Err)
	claimBusy     time.Time            // since when the timer's publications found the directory's lock held (tryClaimsLocked)
	tombs         map[string]tombstone // an earlier run's overflow files this run has not made again, by name (tombstone.go)
	homes         map[string]int       // the part of each name in the last run's files, by index, read at Start (lastHomes), forgotten when it fails: placement keeps it
	lastPrefix    string               // the prefix of the names of the last run's overflow files, and of the tombstones of them (lastOverflowPrefix)
	cut           map[string]cutItems  // the items of the names the tombstones could not keep, by file name (reserveCutLocked)
	others        *otherFiles          // the directory's other files, for declarations after Start (namespace.go)
	ownErr        error                // why a metric of the registry's own is not declared (declareOwnLocked)
	own           ownCounts            // the registry's own metrics, beyond the caps (declareOwnLocked)
	liveErr       error                // why its files lack the Process flag it was given (checkLivenessLocked)
	withheld      Flags                // the flags of its options its files lack, from Start (checkLivenessLocked)
	refused       map[string]error     // the New functions' declarations another program's file or a cap refused, by metric, until declared, maxRefused at most (must)
	refusedPast   int                  // the refusals past those, counted (refuseLocked)
	refusedLast   error                // the last of them
	dir           *osfile.Dir          // where the files are, from Start to Close
	path          string               // the first file's, once started
	waiting       []waiter             // instruments waiting for storage (growth.go)
	cells         map[*cell]struct{}   // every instrument's cell, unbound at Close, but a vector's
	waitingGroups []cellGroup          // the groups of cells waiting for storage (growth.go)
	wakeRest      bool                 // a wake stopped at its chunk, the rest to bind (wakeLocked)
	closedRecords []string             // the closed records a Start is carrying (carryLocked, buryLocked), removed if it succeeds
	// entering counts the instruments waiting for the lock (door.enter),
	// whom the timer lets in between the chunks it binds.
	entering atomic.Int32
	// limitsSet counts the vectors' limits set (door.limitSet), which a
	// file found full is summed again after (chargeBound).
	limitsSet atomic.Uint64

	drops        []cell // refusals counted by reason, once there was one (drops.go)
	expired      []cell // vectors' instances expired, and late updates (expire.go)
	declaringOwn bool   // the registry declares a metric of its own, beyond the caps

	journal  journal // the transaction in progress, when open (transaction.go)
	gathered         // what Gather needs beyond the model (gather.go)

	strs stringLock // String values' writers

	// Hooks run, in order, at the end of Start and at the start of Close,
	// with mu held (door.hookLocked).
	onStart, onClose []func()
	// pollers are every poll not stopped (Poll's, callback metrics',
	// histograms' refreshes): Start starts their goroutines, Close halts
	// them, and Poll's stop takes its poll out. Kept among the hooks, a
	// stopped poll's start and halt stayed for the registry's life
	// (TestStoppedPollKeepsNothing).
	pollers []*poller
	// onRead hooks run at each Snapshot, with mu held: histograms hand
	// over their values, by instance id (callback metrics' functions run
	// before, without mu: runCallbacks).
	onRead []func(put func(m *metric, id int32, v any))
	// polls are the functions Poll runs, which Gather and Snapshot run
	// before Start, when no poll goroutine does (pollUnstarted).
	polls []*poller
	// callbacks are the callback metrics' polls, among polls, which Close
	// and Snapshot run once started, without mu (runCallbacks).
	callbacks []*poller
}

// ownCounts count the registry's own metrics (mmv.dropped, mmv.expired),
// their values and instances, which the caps leave out
// (programMetrics, programValues, instanceCount): declared beyond the
// caps at the first refusal or expiry, to count what they refuse, and
// counted after, they took from the program for good (a registry of a
// cap of 3 values refused every new value once its vector's were
// deleted).
type ownCounts struct{ metrics, values, instances int }

// publishTimer is a registry's timer of the publications scheduleLocked
// arms: one from Start on, armed again with Reset for each burst of
// declarations (a new timer each time cost a first use after Start 12%
// more), its state the registry's, under its lock.
type publishTimer struct {
	*time.Timer
	armed bool
	due   time.Time // of the arming in force
	pace  *pace     // of the publications that replace files, the directory's (growth.go)
	took  bool      // the publication running, or the turn armed for, spent the pace's credit already (publishDue)
	// replaced counts the files publications made or replaced, with
	// the registry's lock held (pacedLocked).
	replaced uint64
}

// state is where a registry is in its life.
type state int

const (
	declaring state = iota
	started
	closed
)

// NewRegistry returns a registry for the file name, with the given options
// (nil for the defaults). The name is checked by Start.
func NewRegistry(name string, opts *Options) *Registry {
	r := &Registry{name: name}
	if opts != nil {
		r.opts = *opts
	}
	r.parts = []*part{newPart(0, r.name, r.opts.Flags)}
	r.made.Store(true)
	return r
}

// Default is the registry the package-level convenience uses: the New
// functions declare on it when given a nil registry. Its file is named after
// the program: the base name of os.Args[0], with every character PCP does
// not accept in a file name turned into '_' (and "go_" put before a name
// that does not start with a letter), so a program built as "my-server"
// writes $PCP_TMP_DIR/mmv/my_server, read as mmv.my_server.* in PCP.
// It has the Process flag, so PCP stops showing the metrics of a program
// that has died, however it died, and the cluster derived from its name
// (see Options.Cluster), so its PMIDs are the same on every restart and
// every host and cluster labels work. Registry.Configure changes the name
// or options before Start, instruments already declared included.
// The program calls Default.Start once its instruments are declared, and
// Default.Close on exit.
var Default = NewRegistry(programName(os.Args), &Options{Flags: Process})

// registry is r, or Default when r is nil; a zero Registry is made as
// NewRegistry("", nil) makes one, at its first use (every exported method
// calls registry first).
func registry(r *Registry) *Registry {
	if r == nil {
		return Default
	}
	if !r.made.Load() {
		r.make()
	}
	return r
}

// make gives a zero Registry the first file's part NewRegistry gives it.
func (r *Registry) make() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.parts == nil {
		r.parts = []*part{newPart(0, r.name, r.opts.Flags)}
	}
	r.made.Store(true)
}

// programName turns a program's path into a valid file name.
func programName(args []string) string {
	name := "go"
	if len(args) > 0 && args[0] != "" {
		name = filepath.Base(args[0])
	}
	name = pcpname.Part(strings.TrimSuffix(name, ".exe"), "go_")
	return name[:min(len(name), 64)]
}

// Name returns the file name.
func (r *Registry) Name() string {
	r = registry(r)
	r.mu.Lock() // Configure may change it
	defer r.mu.Unlock()
	return r.name
}

// Path returns the path of the file once started, "" before; after Close
// it still names where the file was.
func (r *Registry) Path() string {
	r = registry(r)
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.path
}

// Dir returns the directory where registries write their files by default:
// $PCP_TMP_DIR/mmv. PCP_TMP_DIR is taken from the environment, else from
// the first pcp.conf found ($PCP_CONF, $PCP_DIR/etc/pcp.conf, /etc/pcp.conf,
// /usr/local/etc/pcp.conf), as libpcp finds it. On a machine with no
// pcp.conf at all it is a directory of the user's in os.TempDir(),
// mmv-<uid>, so programs run without PCP.
func Dir() string {
	return dirFrom(os.Getenv, pcpconf.Files)
}

// dirFrom is Dir with the environment and the default pcp.conf paths given.
func dirFrom(getenv func(string) string, files []string) string {
	if d := pcpconf.Get(getenv, "PCP_TMP_DIR", files); d != "" {
		return filepath.Join(d, "mmv")
	}
	// A directory per user: one shared, made by its first user with mode
	// 0755, refused every other user's files.
	if uid := os.Getuid(); uid >= 0 {
		return filepath.Join(os.TempDir(), "mmv-"+strconv.Itoa(uid))
	}
	return filepath.Join(os.TempDir(), "mmv")
}

// declarableLocked refuses declarations on a closed registry.
func (r *Registry) declarableLocked() error {
	if r.state == closed {
		return errorf(ErrClosed, subject("file", r.name), "")
	}
	return nil
}

// The types of the registry's state below are its own: they live here,
// with the Registry, so that the files that act on them (growth.go,
// transaction.go, gather.go) use this one and this one none of them.

// gathered is what Gather needs that the model does not say: the
// instruments it reads itself (histograms).
type gathered struct {
	readers []valueReader
}

// poller is a function Poll runs, one run at a time, from its goroutine
// or, before Start, from Gather and Snapshot.
type poller struct {
	mu       sync.Mutex
	f        atomic.Pointer[func()] // nil once stopped (Poll's stop)
	interval time.Duration
	// stop, closed, ends the poll's goroutine; nil while none runs. Under
	// the registry's lock.
	stop chan struct{}
}

// run runs the poll's function, unless stopped.
func (p *poller) run() {
	if f := p.f.Load(); f != nil {
		(*f)()
	}
}

// haltLocked ends p's goroutine, if one runs; called with the registry's
// lock held (at Close, and by Poll's stop).
func (p *poller) haltLocked() {
	if p.stop != nil {
		close(p.stop)
		p.stop = nil
	}
}

// runUnless runs f, unless stop is closed by the time the run in
// progress ends: a poll that came due while Close's run of a callback
// held it ran the function once more after Close returned, on a closed
// registry (a pool read after its shutdown).
func (p *poller) runUnless(stop chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-stop:
		return
	default:
	}
	p.run()
}

// tombstone is an earlier run's overflow file this run rewrote (bury): the
// names of its metrics, and its generation, which tells it from a file
// another put at its name since.
type tombstone struct {
	names  []string
	gen    uint64
	prefix string // of its names, the run's that made it (bury)
}

// cutItems are the items of the metrics of an earlier run's overflow
// file, on cluster, that its tombstone could not keep (bury).
type cutItems struct {
	cluster uint32
	items   []uint32
}

// otherFiles is the directory's other files as checkNameAfterStartLocked
// read them: those PCP shows and the metric names of those it looked in.
// Kept while the directory's stamp is the same, when read once that stamp
// was settled (osfile.Dir.Stamp), so that a bridge's families declared
// one after another read the directory once: a counter declared after
// Start took 280 µs, not 1.3, with 50 other files, reading each one's
// head.
type otherFiles struct {
	stamp int64
	shown []shownFile
	names map[string][]string
}

// waiter is an instrument's cell waiting for its value to have storage
// (a histogram's values wait in its group: histGroup.bindLocked).
type waiter struct {
	m    *metric
	inst int
	c    *cell // the instrument's own memory, bound by c.bind: as a func it cost an allocation a value
}

// cellGroup is the cells of a vector's instruments, which the registry
// binds, shows while they wait for storage, and unbinds, as one: a first
// use of label values then costs the registry nothing of its own per
// value (cellVec).
type cellGroup interface {
	// wakeLocked binds the waiting cells whose values value now gives,
	// as many as budget says, which it counts down (a negative one never
	// reaches 0), appends them to rebound, and reports whether any still
	// waits.
	wakeLocked(value func(*metric, int) *Value, rebound *[]*cell, budget *int) bool
	// waitingLocked calls f with each waiting cell, its metric and
	// instance index.
	waitingLocked(f func(*metric, int, *cell))
	// shownLocked returns the listing of the waiting cells whose slot is
	// past(m) or after, m their metric (nil when none can be: past(m)
	// is math.MaxInt32), for the file that gives them storage
	// (showWaiting). The listing reads the cells waiting now, from a
	// copy of the group's queue, and nothing else of the group's: a
	// publication runs it without the lock, before its write, and meanwhile
	// first uses only add to the queue (no wake or renumbering runs while
	// a publication is in progress). With the lock held, the list of
	// 50,000 took 1.2-1.6 ms through waitingLocked, and of 100,000
	// 0.72-0.80 ms reading each entry for its instance's slot, 0.4 from
	// the slots kept in the queue (BenchmarkPublicationListing); in a
	// program, 80,000 took 0.8-1 ms, every first use meanwhile waiting.
	shownLocked(past func(*metric) int32) shownList
	// reslotLocked gives the waiting cells their values' slots, the
	// part's of their metric made anew (part.makeSlots): slot returns
	// them, and false for a metric of another part.
	reslotLocked(slot func(m *metric, j int) (int32, bool))
	// renumberLocked gives the waiting cells of instances of in their
	// new indexes (see part.renumber), and drops those of the forgotten.
	renumberLocked(in *indom, to []int)
	// unbindLocked unbinds every cell of the group, at Close.
	unbindLocked()
}

// journal is the transaction in progress, when open; its slices are kept
// from one transaction to the next.
type journal struct {
	open  bool
	undo  []step  // the steps taken, in order
	grown []*part // the parts they changed
}

// step is a declaration step to undo, by undo: a method expression of
// the file that takes the step (declarations.go, declare.go), so that
// the transaction (transaction.go) needs to know none of them.
type step struct {
	undo     func(r *Registry, s step)
	p        *part
	m        *metric
	c        *cell // a cell bound to m
	in       *indom
	at       int   // instances added to in from at on, or instance at revived
	newIndom bool  // m declared in p, which took m's indom with it
	newParts int   // the last parts, p among them, were made for m
	refusal  error // a New function's refusal of m's name, forgotten (forgetRefusedLocked)
}

// A valueReader is an instrument whose values Gather and Snapshot read
// from it, not from the file: a histogram, whose statistics are computed
// off the hot path (door.readerLocked).
type valueReader interface {
	// snapshot hands put the values as the instrument would store them,
	// by metric and instance id (0 when singular).
	snapshot(put func(m *metric, id int32, v any))
	// waitingLocked is snapshot of the instruments some of whose values
	// have no storage yet, for the file that gives it to show them
	// (showWaiting); the registry's lock is held.
	waitingLocked(put func(m *metric, id int32, v any))
	// bindLocked hands the instruments the handles of their values that
	// now have storage, given by handle by metric and instance id, and
	// the index where the instance likely is (nil while none), at each
	// wake (wakeLocked); the registry's lock is held.
	bindLocked(handle func(m *metric, id int32, at int) *Value)
	// family is the metric Gather shows as the instrument's one Family,
	// and those it then leaves out; gather fills that Family, reset for
	// the metric shown.
	family() (shown *metric, hidden []*metric)
	gather(f *Family)
}

// fileFlagsLocked returns the flags the registry's files have: its
// options', less those Start withheld (checkLivenessLocked).
func (r *Registry) fileFlagsLocked() Flags { return r.opts.Flags &^ r.withheld }
