package mmv

import (
	"slices"
	"sync"
	"sync/atomic"
)

// A Declarer is where Declare and DeclareVec declare: a *Registry (nil
// for Default), or a *Tx, a transaction on one.
type Declarer interface {
	// lock returns the registry to declare on, its lock held, and the
	// lock to release; or why nothing can be declared there, naming what
	// is declared: the kind ("metric", "vector") and name of a subject,
	// made only for the error.
	lock(kind, name string) (r *Registry, h held, err error)
}

// held is the lock a Declarer's lock took, which release releases: a
// registry's, or none for a transaction's, whose lock Transact holds. A
// value, not a func: the method value r.mu.Unlock cost every
// declaration an allocation.
type held struct{ mu *sync.Mutex }

func (h held) release() {
	if h.mu != nil {
		h.mu.Unlock()
	}
}

// lock is d.lock, Default's for a nil d.
func lock(d Declarer, kind, name string) (*Registry, held, error) {
	if d == nil {
		d = Default
	}
	return d.lock(kind, name)
}

func (r *Registry) lock(string, string) (*Registry, held, error) {
	r = registry(r)
	r.mu.Lock()
	return r, held{&r.mu}, nil
}

// Tx is a transaction of declarations on a registry: see Registry.Transact.
// It is for the goroutine running the transaction only. A nil *Tx, of no
// transaction, declares nothing: its declarations return an error wrapping
// ErrClosed, as those of a Tx used after Transact returned do.
type Tx struct {
	r    *Registry
	over atomic.Bool // Transact returned
}

// lock returns the transaction's registry, whose lock Transact holds.
func (tx *Tx) lock(kind, name string) (*Registry, held, error) {
	if tx == nil {
		return nil, held{}, errorf(ErrClosed, subject(kind, name), "declared on a nil *Tx, of no transaction")
	}
	if tx.over.Load() {
		return nil, held{}, errorf(ErrClosed, inside(subject("file", tx.r.name), kind, name), "declared on a transaction after Transact returned")
	}
	return tx.r, held{}, nil
}

// Transact makes the declarations f makes on tx, with Declare, DeclareVec
// and tx.AddMetric, one transaction on r (Default when nil): all of them
// are declared, or none. When f returns an error, or panics, every
// declaration it made is undone, the registry and its files as they were,
// and Transact returns the error: an instrument it declared counts in
// memory of its own for good, and a vector refuses every value (Get's
// error wraps ErrUnknown). A declaration refused within f declares
// nothing whatever f returns, so f may skip it and go on. The values of
// what f declares get storage when f returns; until then, instruments
// count in memory of their own. This is how a bridge declares the metrics
// of one histogram (buckets, sum and count) together, or not at all.
//
// r's lock is held while f runs, and other goroutines' declarations and
// new vector instances on r wait for Transact to return: f must only
// declare on tx and set up the vectors it declares (SetLimit,
// SetInstanceLabels). f calling r's other methods, or With and Get on new
// values, or a vector's SetExpiry, Delete, Reset and Instances, which
// take r's lock too, waits forever: call them once Transact returned.
func (r *Registry) Transact(f func(tx *Tx) error) error {
	r = registry(r)
	r.mu.Lock()
	defer r.mu.Unlock()
	tx := &Tx{r: r}
	defer tx.over.Store(true)
	return r.declareLocked(func() error { return f(tx) })
}

// A declaration of several steps, such as a vector's indom and then its
// metric, is one transaction, and so are the declarations of a
// Registry.Transact: each step changes what the registry declares and
// leaves its undo in the journal (changedLocked), the files grow once
// every step is taken, and a step that fails undoes those taken before it.
// A refused declaration thus leaves the registry, and its files byte for
// byte, as they were.

// declareLocked runs the steps of one declaration as one transaction:
// when a step fails (or panics), every step it took is undone and its
// error returned; else the parts the steps changed grow, once the
// outermost transaction is done. Within another transaction, such as a
// Registry.Transact, a declaration that fails undoes its own steps only.
// A full disk is no refusal: the new values wait for a later growth step
// (keepDeclared).
func (r *Registry) declareLocked(steps func() error) error {
	j := &r.journal
	outer := !j.open
	j.open = true
	undo, grown := len(j.undo), len(j.grown)
	failed := true
	defer func() {
		if failed {
			for len(j.undo) > undo {
				s := j.undo[len(j.undo)-1]
				j.undo = j.undo[:len(j.undo)-1]
				r.undoLocked(s)
			}
			j.grown = j.grown[:grown]
		}
		if outer {
			clear(j.undo[:cap(j.undo)]) // undone steps too, for the garbage collector
			clear(j.grown[:cap(j.grown)])
			*j = journal{undo: j.undo[:0], grown: j.grown[:0]}
		}
	}()
	if err := steps(); err != nil {
		return err
	}
	failed = false
	if outer && len(j.grown) > 0 {
		r.grewLocked(keepDeclared, j.grown...) // no error
	}
	return nil
}

// changedLocked ends step s, which changed the parts ps: within a
// transaction (declareLocked), it leaves the step to undo
// should a later one fail, and the parts to grow when all are taken;
// alone, the parts grow now (grewLocked, ifFailed as for addMetricLocked), and
// the step is undone when that fails.
func (r *Registry) changedLocked(ifFailed publishFailure, s step, ps ...*part) error {
	if j := &r.journal; j.open {
		j.undo = append(j.undo, s)
		for _, p := range ps {
			if !slices.Contains(j.grown, p) {
				j.grown = append(j.grown, p)
			}
		}
		return nil
	}
	if err := r.grewLocked(ifFailed, ps...); err != nil {
		r.undoLocked(s)
		return err
	}
	return nil
}

// undoLocked undoes step s, the last one taken that is not undone.
func (r *Registry) undoLocked(s step) { s.undo(r, s) }
