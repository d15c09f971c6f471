package mmv

// Callback metrics hold a value kept elsewhere, as client_golang's
// CounterFunc and GaugeFunc do: the registry calls the function at Start,
// every DefaultInterval while started, and at Close, and stores what it
// returns. The calls run on the registry's goroutines, so no other
// instrument's update pays for them. Start, and Gather and Snapshot
// before it, run them with the registry's polls, and Close and Snapshot
// after Start after a call in progress, each on a goroutine of its own,
// and wait for them up to a second in all, however many are stuck (each
// stuck in turn after another held Close a second): a call past it goes
// on, its value stored where its metric then is (not in the file after
// Close), and the caller returns (TestStuckCallbacksHoldCloseASecond).
// No poll's call begins once Close has returned. A function may call
// Snapshot: that Snapshot waits for no call in progress, its own among
// them (TestCallbackSnapshotWaitsNotForItself).

// NewCounterFunc declares on r (Default when nil) a counter whose total f
// returns, such as a count a library keeps: a Uint64 metric with counter
// semantics, as NewCounter's. f is called at Start, every DefaultInterval
// until Close, at Close, by each Registry.Snapshot, started or not, and
// by each Registry.Gather before Start, one call at a time, never with
// r's lock held; it must be safe to call from any goroutine, and may read
// r and its instruments (a vector's Instances, which takes r's lock: run
// holding it, it made Close and Snapshot wait for ever). A total that
// goes down reads in PCP as a counter wrap. A panic of f goes on to its
// caller: within the second they wait, to the caller of Start, Gather,
// Snapshot or Close, which panics with f's value (Close once the registry
// is closed all the same: its files unmapped, removed with the Process
// flag, every poll stopped; Start with the registry still declaring);
// on the registry's goroutine, or past that second, where no caller is
// left to recover it, it ends the program, with f's own stack. An f that
// ends its goroutine (runtime.Goexit, as testing's FailNow does) ends the
// caller's the same way, where one waits for it, and else its call alone.
// It panics if f is nil (ErrType) or if the registry refuses the
// declaration, as NewCounter does.
func NewCounterFunc(r *Registry, name, help string, units Units, f func() uint64) {
	c := new(Counter)
	must(r, name, c, declareFunc(door{registry(r)}, &c.cell, counterKind, name, help, units, f, c.Set))
}

// NewGaugeFunc declares on r (Default when nil) a float64 gauge whose
// level f returns: a Double metric with instant semantics, as NewGauge's.
// f is called as NewCounterFunc's, with the same constraints.
// It panics if f is nil (ErrType) or if the registry refuses the
// declaration, as NewGauge does.
func NewGaugeFunc(r *Registry, name, help string, units Units, f func() float64) {
	g := new(Gauge)
	must(r, name, g, declareFunc(door{registry(r)}, &g.cell, gaugeKind, name, help, units, f, g.Set))
}

// NewIntGaugeFunc declares on r (Default when nil) an integer gauge whose
// level f returns, such as a pool's open connections: an Int64 metric
// with instant semantics, as NewIntGauge's. f is called as
// NewCounterFunc's, with the same constraints.
// It panics if f is nil (ErrType) or if the registry refuses the
// declaration, as NewIntGauge does.
func NewIntGaugeFunc(r *Registry, name, help string, units Units, f func() int64) {
	g := new(IntGauge)
	must(r, name, g, declareFunc(door{registry(r)}, &g.cell, intGaugeKind, name, help, units, f, g.Set))
}

// declareFunc declares on r the instrument of kind k whose cell is c, and
// has set store f's result at Start, on every poll, and at Close, before c
// leaves the file; or returns the registry's refusal.
func declareFunc[T uint64 | int64 | float64](r door, c *cell, k cellKind, name, help string, units Units, f func() T, set func(T)) error {
	c.init(k.typ)
	m, err := k.metric(name, help, units)
	if err != nil {
		return err
	}
	if f == nil {
		return errorf(ErrType, subject("metric", m.Name), "a callback metric needs a function, not nil")
	}
	return r.declarePolledCell(m, c, func() { set(f()) })
}
