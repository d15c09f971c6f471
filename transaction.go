package mmv

import "sync/atomic"

// A Declarer is where Declare and DeclareVec declare: a *Registry (nil
// for Default), or a *Tx, a transaction on one.
type Declarer interface {
	// lock returns the door of the registry to declare on, its lock
	// held, and the function that releases it; or why nothing can be
	// declared there.
	lock() (r door, unlock func(), err error)
}

// lock is d.lock, Default's for a nil d.
func lock(d Declarer) (door, func(), error) {
	if d == nil {
		d = Default
	}
	return d.lock()
}

func (r *Registry) lock() (door, func(), error) {
	r = registry(r)
	r.mu.Lock()
	return r, r.mu.Unlock, nil
}

// Tx is a transaction of declarations on a registry: see Registry.Transact.
// It is for the goroutine running the transaction only.
type Tx struct {
	r    *Registry
	over atomic.Bool // Transact returned
}

// lock returns the transaction's registry, whose lock Transact holds.
func (tx *Tx) lock() (door, func(), error) {
	if tx.over.Load() {
		return nil, nil, errorf(ErrClosed, subject("file", tx.r.name), "a transaction used after Transact returned")
	}
	return tx.r, func() {}, nil
}

// AddMetric declares a metric in the transaction, as Registry.AddMetric
// does, but a full disk is no refusal: the metric's values get storage
// from a later growth step, retried after Options.PublishDelay, as an
// instrument's do.
func (tx *Tx) AddMetric(m Metric) error {
	r, unlock, err := tx.lock()
	if err != nil {
		return err
	}
	defer unlock()
	_, err = r.addMetricLocked(m, keepDeclared)
	return err
}

// Transact makes the declarations f makes on tx, with Declare, DeclareVec
// and tx.AddMetric, one transaction on r (Default when nil): all of them
// are declared, or none. When f returns an error, or panics, every
// declaration it made is undone, the registry and its files as they were,
// and Transact returns the error. A declaration refused within f declares
// nothing whatever f returns, so f may skip it and go on. The values of
// what f declares get storage when f returns; until then, instruments
// count in memory of their own. This is how a bridge declares the metrics
// of one histogram (buckets, sum and count) together, or not at all.
//
// r's lock is held while f runs, and other goroutines' declarations and
// new vector instances on r wait for Transact to return: f must only
// declare on tx and set up the vectors it declares (SetLimit,
// SetInstanceLabels). f calling r's other methods, or With and Get on new
// values, waits forever.
func (r *Registry) Transact(f func(tx *Tx) error) error {
	r = registry(r)
	r.mu.Lock()
	defer r.mu.Unlock()
	tx := &Tx{r: r}
	defer tx.over.Store(true)
	return r.declareLocked(func() error { return f(tx) })
}
