package mmv

import "time"

// Timer accumulates time spent, such as time in database queries: a
// Uint64 counter of nanoseconds, so its rate is the time spent per second
// of wall clock, the average concurrency of the timed code, and many short
// durations add up exactly. An observation is one atomic add. Its methods
// are safe from any goroutine, lock-free and allocation-free, and never
// panic. A nil *Timer, and a zero Timer (a Timer{} no New function or
// Declare made, declared nowhere), ignore observations and read 0.
//
// A Timer is not libpcp_mmv's Elapsed type, which PCP exports in
// microseconds whatever the file declares: summing nanoseconds in
// microseconds would take a second atomic, or lose the fractions. For an
// Elapsed value with libpcp's open intervals, use the Value layer
// (Value.StartInterval). The counter wraps after 584 years of time spent,
// that is after 584/c years of a program that spends c seconds per second.
type Timer struct{ cell cell }

// timerKind is a Timer's metric: a Uint64 counter of nanoseconds.
var timerKind = cellKind{typ: Uint64, sem: SemCounter, check: func(m Metric) error {
	if m.Units != Nanosecond {
		return errorf(ErrRange, subject("metric", m.Name), "a Timer counts nanoseconds: its units must be Nanosecond")
	}
	return nil
}}

// NewTimer declares a timer on r (Default when nil).
// It panics if the registry refuses the declaration as a programming
// error: an invalid or duplicate name, a cap reached before Start (the
// panic value wraps the sentinel, such as ErrName). A cap reached after
// Start, a closed registry and a full disk are no panic: the timer counts
// in its own memory, and Registry.Err says why (see the package doc).
// Declare[Timer] returns the refusal instead.
func NewTimer(r *Registry, name, help string) *Timer {
	t := new(Timer)
	return must(r, name, t, declareCell(r, &t.cell, timerKind, name, help, Nanosecond))
}

// Observe adds d; a negative d is ignored.
func (t *Timer) Observe(d time.Duration) {
	if t == nil || d <= 0 {
		return
	}
	t.cell.add(uint64(d))
}

// Time calls f and adds the time it took.
func (t *Timer) Time(f func()) {
	defer t.Start().Stop()
	f()
}

// Start starts timing one piece of work: Stop on the Timing it returns adds
// the time since. Any number of goroutines may time work at once.
//
//	defer t.Start().Stop()
func (t *Timer) Start() Timing { return Timing{t, time.Now()} }

// Get returns the total time observed.
func (t *Timer) Get() time.Duration {
	if t == nil {
		return 0
	}
	return time.Duration(t.cell.total())
}

// Timing is one piece of work being timed, from Timer.Start to Stop. It is
// a value: copy it freely, but Stop it once.
type Timing struct {
	t     *Timer
	start time.Time
}

// Stop adds the time since Start to the timer, and returns it.
func (w Timing) Stop() time.Duration {
	d := time.Since(w.start)
	w.t.Observe(d)
	return d
}

// NewTimerVec declares a vector of timers on r (Default when nil), one per
// list of values of the label names labels, made on first use (see Vec).
// It panics if the registry refuses the declaration as a programming
// error: an invalid or duplicate name or label name, a cap reached before
// Start (the panic value wraps the sentinel, such as ErrName); after Start
// a cap, and a closed registry, return a nil vector, which ignores
// updates, and Registry.Err says why. DeclareVec[Timer] returns the
// refusal instead.
func NewTimerVec(r *Registry, name, help string, labels ...string) *Vec[Timer] {
	v, err := declareCellVec(r, timerKind, name, help, Nanosecond, labels, func(t *Timer) *cell { return &t.cell })
	return must(r, name, v, err)
}
