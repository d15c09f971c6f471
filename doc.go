// Package mmv publishes a Go program's metrics to Performance Co-Pilot (PCP)
// through an MMV file, the memory-mapped format of mmv(5).
//
// The program writes its metrics into a file under $PCP_TMP_DIR/mmv that it
// keeps mapped; PCP's MMV agent (pmdammv, inside pmcd) reads the values
// straight from that mapping on every fetch, so an update is one atomic
// operation on shared memory, with no lock, no allocation and nothing sent.
// The metrics appear as mmv.<file>.<metric> in pminfo, pmrep, pmlogger,
// pmproxy and Grafana.
//
// # Instruments
//
// Most programs need only the instruments, in the idiom of
// prometheus/client_golang: [Counter], [Gauge], [IntGauge], [Timer] and
// [Histogram], and vectors of them by label values ([Vec], made by
// [NewCounterVec] and the others). Each is declared in one call with a
// name, a help text and units (their lengths: see Limits), and a vector
// with its label names:
//
//	requests := mmv.NewCounterVec(nil, "requests", "Requests served", mmv.Count, "route", "status")
//	latency := mmv.NewHistogram(nil, "latency", "Request latency", mmv.Second, nil)
//	if err := mmv.Default.Start(); err != nil { ... }
//	defer mmv.Default.Close()
//	...
//	requests.With("/api", "200").Inc()
//	latency.ObserveDuration(time.Since(start))
//
// [NewCounterFunc], [NewGaugeFunc] and [NewIntGaugeFunc] publish a value
// kept elsewhere: the registry calls their function at Start, every
// [DefaultInterval] and at Close.
//
// A nil registry, as an argument or as a method's receiver, means
// [Default], whose file is named after the program, with the [Process]
// flag (PCP stops showing a program that died) and a
// cluster derived from its name (the same PMIDs on every restart and host,
// while no other file of the directory has that cluster: see Clusters).
// [Registry.Configure] changes its name or options before Start, keeping
// the instruments package-level variables declared on it.
//
// A vector's instances may expire ([Vec.SetExpiry]): those whose values
// have not changed for a chosen duration are deleted, found by a sweep
// every quarter of it that compares values, so updates pay nothing; each
// sweep holds the registry's lock 0.1 to 0.15 µs per instance.
//
// # Start
//
// A registry is declaring until [Registry.Start], started until
// [Registry.Close], then closed. Start writes the files and maps them.
// When it fails the registry stays declaring, so that Start can be called
// again, and every file at its name is as it was, but for two things
// (see Registry.Start): a file Start had already renamed into place when a
// later rename failed (another owner took a name between Start's check
// and its rename) stays at its name, and an earlier run's overflow files
// it had already made tombstones of (their metrics showing no value) stay
// so.
//
// PCP builds one namespace from every file of the directory: Start refuses
// with ErrNamespace, naming the other file and both metrics, a registry
// whose full names (mmv.<file>.<name>, or mmv.<name> with NoPrefix) clash
// with another live file's, the same name or one a leaf where the other is
// a prefix at a dot; a metric declared after Start is refused alike,
// against the files as they are then (two registries declaring clashing
// names after Start, neither published yet, both pass: each checks the
// files on disk, which hold neither name).
//
// # Updates
//
// Updates made before Start are not lost: an instrument counts into
// memory of its own until its value has storage in the file, then its
// count is carried there.
//
// Instruments may be declared before Start or after it. Declarations after
// Start have their values live at once, and PCP sees them after the next
// publication: [Options.PublishDelay] after them, within a second while
// publications follow each other (the timer's are paced, and the
// registries publishing into one directory take turns, see
// Options.PublishDelay), or at [Registry.Flush]. Published
// identities never change: a metric keeps its PMID, an indom its id, an
// instance its id, while the registry lives (see Identities across
// restarts). A declaration that fails declares nothing (see Nil, errors
// and panics). A declaration after Start that needs the file to grow while
// the disk is full is no refusal for an instrument: it counts in memory
// and is published once space returns. A publication that failed,
// whatever made it (the timer, a declaration, a Flush), is retried every
// PublishDelay until every count is in the file; Registry.Err reports its
// error meanwhile.
//
// # Close
//
// Close may be called any number of times. It points every handle and
// instrument away from the files, then unmaps them; with the [Process]
// flag it takes them from PCP's view, so PCP stops showing a program that
// has ended: each file renamed to a record PCP ignores (.<file>.closed,
// .<file>.N.closed for an overflow file), which the next run of the name
// reads to keep its metrics' identities (see Registry.Close).
// After Close an instrument goes on counting in its own memory (its Get,
// and Stats for a histogram, read its updates), but nothing more is
// written to the files; a [Value] handle's updates are dropped.
//
// # Nil, errors and panics
//
// A nil *Value, *Counter, *Gauge, *IntGauge, *Timer or *Histogram ignores
// updates and reads as zero (its Type is the zero Type); a nil *Vec, which
// DeclareVec returns with its refusal, returns nil from With, zero values
// from its other reads, and ignores its settings (SetLimit, SetExpiry,
// SetInstanceLabels). Update methods never lock, allocate or panic. An
// instrument is one its New function, Declare or a vector's With made: the
// zero value of each instrument type (Counter{}, Gauge{}, IntGauge{},
// Timer{}, Histogram{}, Vec{}), declared nowhere, acts as a nil one, in
// every method. A Value is one Registry.Value returned (a zero Value
// panics at its first update or read). A zero Registry is one NewRegistry("", nil)
// makes, and a nil *Tx's declarations return an error wrapping ErrClosed. Label
// values a vector refuses are never silent: Vec.Err says why, and the
// registry counts them in mmv.<file>.mmv.dropped. Registry.Err says why a
// registry's metrics are not in PCP: never started, closed, or a
// publication that failed. Package middleware measures an HTTP server with
// these instruments.
//
// Every error the registry returns wraps one of the package's sentinels,
// for errors.Is: ErrName, ErrDuplicate, ErrRange, ErrTooLong, ErrTooMany,
// ErrNamespace, ErrUnknown, ErrLabel and ErrType for what PCP would not
// accept, ErrStarted, ErrNotStarted and ErrClosed for the lifecycle,
// ErrInUse and ErrClusterInUse for a name or cluster another file has, and
// ErrFile for the file system, with the system's own error (such as
// syscall.ENOSPC) wrapped too. Messages name the file, metric, indom,
// instance or label at fault and the rule broken.
//
// The New functions (NewCounter, NewCounterVec, NewHistogram...) panic when
// the registry refuses the declaration as a programming error (an invalid
// or duplicate name, a cap reached before Start, an instrument larger than
// a whole file's values budget, Options.MaxFileValues, before Start or
// after), as regexp.MustCompile and
// promauto do: a refusal that no caller handles better than a crash at
// startup. The panic value is an error wrapping the sentinel. What the
// running program meets is no programming error: a name another program's
// live file holds, met after Start, a cap reached after Start
// (ErrTooMany), a closed registry (ErrClosed: a first use during a
// graceful shutdown). The New function then returns its instrument
// counting in memory of its own, never in PCP nor in Gather (package
// expose's scrape; a nil vector or histogram, which ignore updates), and
// Registry.Err says why (by name, 32 of them, then how many more). Nothing
// else in the package panics. A program that declares what it learns at run
// time, such as a bridge from another metrics library, calls [Declare] and
// [DeclareVec] instead, which return the refusal as an error, and
// [Registry.Transact] to declare several metrics together or not at all.
//
// Every declaration is one transaction, whether it panics or returns its
// error: a vector's metric and indom, a histogram's metrics and indoms,
// are all declared or none, and a refused declaration leaves the registry
// and its files as they were, its names free.
//
// # Seeing the metrics in PCP
//
// PCP shows a registry's metrics as mmv.<file>.<metric> (mmv.<metric> with
// the [NoPrefix] flag) once its MMV agent, pmdammv, is installed in pmcd,
// and while the file is at its name. The service's user must be able to
// write $PCP_TMP_DIR/mmv, which belongs to PCP's group (pcp):
//
//	cd /var/lib/pcp/pmdas/mmv && sudo ./Install   # once per host
//	pminfo -f mmv.<file>                          # the values
//	pmval -t 1 mmv.<file>.<metric>                # sampled every second
//	go run ./cmd/mmvdump FILE                     # a file, with no PCP (in a clone of the module)
//
// [Registry.Snapshot] reads every metric's current values by name,
// started or not, for tests and diagnostics; package mmvtest builds a
// service's unit-test helpers on it (read a value by label values,
// compare with an expected listing, a registry per test), with no PCP.
//
// # Prometheus
//
// Package expose serves a registry to a Prometheus scrape, in the text
// format or OpenMetrics, from the values [Registry.Gather] reads: updates
// pay nothing for it, and a registry never started serves its
// instruments, so one instrumentation serves PCP and Prometheus, on hosts
// without PCP too. A scrape of 10,000 series takes a few milliseconds and
// about 100 allocations, holding the registry's lock meanwhile.
//
// # Registries and values
//
// Under the instruments is the [Registry]: it declares instance domains
// ([Registry.AddIndom]), metrics ([Registry.AddMetric]) and labels, with
// PCP's own identifiers (items, indom serials, instance ids), and hands out
// [Value] handles ([Registry.Value]) that update one value each. Every
// declaration is checked against the rules of PCP's reader, so a file the
// registry writes is loaded whole, and the first file is laid out exactly
// as PCP's C library, libpcp_mmv, lays out the same declarations.
//
// Neighbouring values, such as the instances of a vector, share CPU cache
// lines in that layout, so cores updating them at once slow each other
// down. [Options.PadValues] gives every value of a registry 128 bytes of
// its own, for hot values updated from several cores, and gives up the
// byte-identity with libpcp_mmv: its values take four times the room, and
// PCP's reader takes up to four times as long to fetch them.
//
// # Identities across restarts
//
// PCP's tools keep identifiers: pmval and pmlogger fetch by PMID, archives
// and pmseries name instances by id. The identifiers the registry chooses
// derive from names, so a restarted program, or the same program on
// another host, publishes the same ones whatever the order its
// declarations and label values arrive in (FNV-1a each time):
//   - a metric's item from its name, 1..1023, unless [Metric.Item] gives
//     one, and the file's cluster from the file's name, unless
//     [Options.Cluster] gives one;
//   - an instrument's indom serial from its name, 1024..2047: give the
//     indoms you declare yourself serials below 1024;
//   - a vector's instance id from the instance's name, such as
//     "route=/api,status=200": 0..2^30-1, or for a histogram vector, whose
//     buckets share the ids (see [NewHistogramVec]), half of its ids.
//
// A derived identity already taken moves to the next free one: the name
// that came first keeps it and the later one moves, so two names whose
// derived identities collide swap them on a restart where they arrive in
// the other order. Items given at Start are assigned in the order of their
// names, so the same set of names gets the same items whatever the order.
// While a registry lives, an identity never moves and never names two
// names: a vector gives a value it forgot (see [Vec.Delete]) its id back,
// and keeps that id from other values; a vector that has forgotten more
// values than its limit, and 64, numbers the values new to it in order
// from 2^30 instead (half of its ids for a histogram vector), so that
// what it keeps stays bounded: values that churn (a request id, a client)
// have ids that a restart does not find again.
//
// # Clusters
//
// PCP names a file's metrics by PMID, 70.<cluster>.<item>, and two files
// of a directory on one cluster make it show one file's values under the
// other's names. So no file a registry starts shares its cluster with
// another live file of its directory (one PCP's reader shows: not a
// Process file whose writer died), whatever chose the cluster:
//   - [Options.Cluster] given: Start fails with [ErrClusterInUse], naming
//     the cluster, the file that has it and its writer's pid, when another
//     live file has it;
//   - zero: the cluster is derived from the file name, or is the next free
//     one after it when another live file has that one;
//   - an overflow file (past [MaxMetrics] metrics) takes the first free
//     cluster after its first file's.
//
// A derived cluster that had to move is where a restart and another host
// differ: the program restarted while the file that took its cluster is
// live gets the same moved cluster again, but restarted after that file
// went, or run on a host without it, it gets its own, so the same metric
// names have other PMIDs there (pmlogger, pmval and pmrep fetch by the
// PMID they looked up once, and archives of two hosts disagree). Programs
// whose PMIDs must never move give Options.Cluster, and then learn of a
// collision at Start instead. Registries that start at the same moment,
// in one process or several, never take one cluster: each claims its
// cluster under an flock on the directory, held until its file is at its
// name. Writers of other libraries (libpcp_mmv and others) take no such
// lock and check no cluster: a file of theirs is seen only once complete
// at its name, and one on cluster 0, for which PCP's reader picks a
// cluster, may land on any (docs/design.md, "Clusters").
//
// # Limits
//
// Help texts: the first line is the metric's short help, the rest its long
// help, each at most 255 bytes. A name holds up to 255 bytes for every
// instrument, vectors included (a histogram's, with its parts: see
// Histogram); the help texts the package makes up from a name, such as a
// vector's indom's, are cut to fit, never refusing the name. A name
// longer than 254 bytes less the file name's fits only the registry's
// first file (an overflow file's names carry the file name): it is placed
// there, and refused with ErrTooLong when the first file has no room.
//
// # From libpcp_mmv
//
//	mmv_stats_registry        NewRegistry
//	mmv_stats_add_metric      Registry.AddMetric
//	mmv_stats_add_indom       Registry.AddIndom
//	mmv_stats_add_instance    Registry.AddInstance
//	mmv_stats_add_*label      Registry.AddLabel, AddMetricLabel, AddIndomLabel, AddInstanceLabel
//	mmv_stats_start           Registry.Start
//	mmv_stats_stop            Registry.Close
//	mmv_lookup_value_desc     Registry.Value
//	mmv_inc_value             Value.Add, Value.AddFloat
//	mmv_set_value             Value.Set, Value.SetFloat
//	mmv_set_string            Value.SetString
//	mmv_stats_interval_start  Value.StartInterval
//	mmv_stats_interval_end    Value.EndInterval
//
// Unlike libpcp_mmv, a started registry can grow, and a name is owned by one
// started registry at a time.
package mmv
