package mmv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/gopcp/mmv/internal/pcpconf"
)

// Options are the file-wide settings of a registry.
type Options struct {
	// Cluster is the PMID cluster of the file's metrics, 0..4095. Zero lets
	// PCP's reader choose one, which cluster labels then never match.
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
	// can be updated at once; Flush publishes without waiting.
	PublishDelay time.Duration
	// MaxIndomInstances caps the instances of one indom, and MaxInstances
	// those of the registry (overflow files included once): PCP's reader
	// takes time quadratic in an indom's instances, inside pmcd, where
	// every client of the host waits for it (see docs/design.md, "What a
	// registry costs PCP's reader"). Zero means DefaultMaxIndomInstances
	// and DefaultMaxInstances; a negative value removes the cap. Raise
	// them knowingly: at 16,000 instances in one indom a fetch holds pmcd
	// for half a second, at 32,000 for three.
	MaxIndomInstances, MaxInstances int
}

// Registry declares the metrics of one MMV file and, once started, owns the
// file and hands out the Value handles that update it.
//
// A registry is declaring until Start, started until Close, then closed:
// Start either makes every file and moves to started, or fails, leaves
// nothing on disk and stays declaring, so it can be called again; Close
// may be called any number of times. Declarations may go on after Start:
// the file grows (see Flush), and a declaration that fails declares
// nothing. A Registry is safe for concurrent use.
type Registry struct {
	mu   sync.Mutex
	name string
	opts Options

	state state
	model
	// parts are the registry's files: parts[0] is the file named after
	// the registry, the others hold metrics beyond MaxMetrics (parts.go).
	parts []*part

	pending *time.Timer // the publication of declarations made after Start
	pubErr  error       // why the last publication failed
	dir     *dir        // where the files are, from Start to Close
	path    string      // the first file's, once started
	waiting []waiter    // instruments waiting for storage (declare.go)
	cells   []*cell     // every instrument's cell, unbound at Close

	strMu     sync.Mutex // serialises string values' writers
	strClosed bool       // under strMu: string updates are dropped

	// Hooks run, in order, at the end of Start and at the start of Close,
	// with mu held (see hook).
	onStart, onClose []func()
}

// state is where a registry is in its life.
type state int

const (
	declaring state = iota
	started
	closed
)

// model is what a registry declares, whichever file each declaration
// lands in.
type model struct {
	indoms   []*indom
	serials  map[uint32]*indom
	metrics  []*metric
	names    map[string]*metric
	prefixes map[string]int // how many metric names have each dot-prefix
	labels   []*label
}

func newModel() model {
	return model{serials: map[uint32]*indom{}, names: map[string]*metric{}, prefixes: map[string]int{}}
}

// NewRegistry returns a registry for the file name, with the given options
// (nil for the defaults). The name is checked by Start.
func NewRegistry(name string, opts *Options) *Registry {
	r := &Registry{name: name, model: newModel()}
	if opts != nil {
		r.opts = *opts
	}
	r.parts = []*part{newPart(r.name, 0)}
	return r
}

// Name returns the file name.
func (r *Registry) Name() string { return r.name }

// Start validates the declarations, writes the files and maps them. A file
// appears complete or not at all: it is written under a temporary name
// starting with '.', which PCP's reader ignores, then renamed into place.
// When any file cannot be made, every file made is removed and the
// registry stays declaring.
func (r *Registry) Start() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch r.state {
	case closed:
		return errorf(ErrClosed, "file "+quote(r.name), "")
	case started:
		return errorf(ErrStarted, "file "+quote(r.name), "")
	}
	if err := r.validateLocked(); err != nil {
		return err
	}
	path := r.opts.Dir
	if path == "" {
		path = Dir()
	}
	d, err := openDir(path)
	if err != nil {
		return fileError(r.name, "cannot start", err)
	}
	r.dir = d
	for _, p := range r.parts {
		if err := r.startPartLocked(p, d); err != nil {
			r.stopPartsLocked(true)
			r.dir.close()
			r.dir = nil
			return err
		}
	}
	r.state = started
	r.path = r.parts[0].file.path
	r.bindLocked()
	for _, f := range r.onStart {
		f()
	}
	return nil
}

// Value returns the handle on a value: the metric's only value when
// instance is "", else the value of the named instance. Look it up once and
// keep it; the lookup itself is a map access.
func (r *Registry) Value(metric, instance string) (*Value, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch r.state {
	case declaring:
		return nil, errorf(ErrNotStarted, "metric "+quote(metric), "")
	case closed:
		return nil, errorf(ErrClosed, "metric "+quote(metric), "")
	}
	m, i, err := r.valueOf(metric, instance)
	if err != nil {
		return nil, err
	}
	if m.values[i] == nil {
		return nil, fmt.Errorf("mmv: metric %q: not in the file yet: %w", metric, r.pubErr)
	}
	return m.values[i], nil
}

// Path returns the path of the file once started, "" before; after Close
// it still names where the file was.
func (r *Registry) Path() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.path
}

// Close unmaps the files, and removes them when the Process flag is set;
// without that flag the files stay with their last values, which PCP goes
// on reading. Values updated after Close are dropped, not written: every
// handle is pointed away from the files first. Closing a registry that was
// never started only stops further declarations; closing it again does
// nothing.
func (r *Registry) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state == closed {
		return nil
	}
	wasStarted := r.state == started
	var err error
	if wasStarted && r.opts.Flags&Process == 0 {
		// The files outlive the process: publish what they lack.
		err = r.publishLocked()
	}
	if r.pending != nil {
		r.pending.Stop()
		r.pending = nil
	}
	r.state = closed
	if !wasStarted {
		return nil
	}
	for _, f := range r.onClose {
		f()
	}
	r.unbindCellsLocked()
	r.strMu.Lock()
	r.strClosed = true
	r.strMu.Unlock()
	err = errors.Join(err, r.stopPartsLocked(r.opts.Flags&Process != 0))
	r.dir.close()
	return err
}

// Dir returns the directory where registries write their files by default:
// $PCP_TMP_DIR/mmv. PCP_TMP_DIR is taken from the environment, else from
// the first pcp.conf found ($PCP_CONF, $PCP_DIR/etc/pcp.conf, /etc/pcp.conf,
// /usr/local/etc/pcp.conf), as libpcp finds it. On a machine with no
// pcp.conf at all it is os.TempDir(), so programs run without PCP.
func Dir() string {
	return dirFrom(os.Getenv, pcpconf.Files)
}

// dirFrom is Dir with the environment and the default pcp.conf paths given.
func dirFrom(getenv func(string) string, files []string) string {
	if d := pcpconf.Get(getenv, "PCP_TMP_DIR", files); d != "" {
		return filepath.Join(d, "mmv")
	}
	return filepath.Join(os.TempDir(), "mmv")
}

// validateLocked checks the registry as a whole: what no single
// declaration shows.
func (r *Registry) validateLocked() error {
	if err := checkFileName(r.name, r.opts.Flags); err != nil {
		return err
	}
	subject := "file " + quote(r.name)
	if r.opts.Cluster > MaxCluster {
		return errorf(ErrRange, subject, "cluster %d is more than %d", r.opts.Cluster, MaxCluster)
	}
	if r.opts.Flags&^allFlags != 0 {
		return errorf(ErrRange, subject, "unknown flags %#x", uint32(r.opts.Flags&^allFlags))
	}
	for _, p := range r.parts {
		if _, err := r.version(p); err != nil {
			return err
		}
	}
	return nil
}

// declarableLocked refuses declarations on a closed registry.
func (r *Registry) declarableLocked() error {
	if r.state == closed {
		return errorf(ErrClosed, "file "+quote(r.name), "")
	}
	return nil
}

// version chooses the format version of a file as libpcp_mmv does, or
// checks the forced one.
func (r *Registry) version(p *part) (int, error) {
	need := Version1
	for _, m := range p.metrics {
		if len(p.metricName(r, m)) > maxV1Name {
			need = Version2
		}
	}
	for _, in := range p.indoms {
		for _, inst := range in.Instances {
			if len(inst.Name) > maxV1Name {
				need = Version2
			}
		}
	}
	if len(r.labelsOf(p)) > 0 {
		need = Version3
	}
	subject := "file " + quote(p.name)
	switch v := r.opts.Version; {
	case v == 0:
		return need, nil
	case v != Version2 && v != Version3:
		return 0, errorf(ErrRange, subject, "version %d: only 2 or 3 can be forced", v)
	case v < need:
		return 0, errorf(ErrRange, subject, "version %d is forced but labels need version 3", v)
	default:
		return v, nil
	}
}

// generation returns a generation number as libpcp makes them: seconds in
// the high 32 bits, microseconds in the low.
func generation(t time.Time) uint64 {
	return uint64(t.Unix())<<32 | uint64(t.Nanosecond()/1000)
}
