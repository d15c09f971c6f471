package mmv

import "strconv"

// Configure sets the registry's file name (name "" keeps it) and options
// before Start. o replaces every option: start from Options to change one
// and keep the others, such as Default's Process flag. It is how a program configures Default, whose instruments
// package-level variables may have declared already: the registry stays
// the same, so every instrument declared on it is published in the
// configured file. The name and options are checked, as Start would, and
// against the declarations made so far (indoms need a cluster of at most
// 2047, cluster labels one of the file's own, the instances must fit the
// caps); when they break a rule, Configure changes nothing and returns an
// error saying which. It returns ErrStarted once the registry is started
// and ErrClosed once closed.
func (r *Registry) Configure(name string, o Options) error {
	r = registry(r)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.declaringLocked(); err != nil {
		return err
	}
	if name == "" {
		name = r.name
	}
	oldName, old := r.name, r.opts
	r.setLocked(name, o)
	if err := r.checkConfiguredLocked(); err != nil {
		r.setLocked(oldName, old)
		return err
	}
	r.startErr = nil // a Start under other options failed
	return nil
}

// Options returns the registry's options, as given to NewRegistry or
// Configure.
func (r *Registry) Options() Options {
	r = registry(r)
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.opts
}

// setLocked gives the registry and its parts a name and options.
func (r *Registry) setLocked(name string, o Options) {
	r.name, r.opts = name, o
	for _, p := range r.parts {
		p.configure(name, o.Flags)
	}
}

// checkConfiguredLocked checks the registry's name and options against
// what it declares: the rules a declaration met under the options it was
// made with, and Start's.
func (r *Registry) checkConfiguredLocked() error {
	if err := r.validateLocked(); err != nil {
		return err
	}
	for _, p := range r.parts[1:] {
		if err := checkFileName(p.name, p.flags); err != nil {
			return err
		}
	}
	for _, m := range r.metrics {
		if err := checkMetricName(subject("metric", m.Name), m.Name, r.opts.Flags); err != nil {
			return err
		}
	}
	// The caps on instances hold the program's indoms, without the
	// registry's own, declared beyond them (checkIndomLocked,
	// instanceCount): with them, a registry at its cap refused every
	// Configure after its first refusal, which declared mmv.dropped.
	total := r.instanceCount()
	for _, in := range r.indoms {
		subject := "indom " + strconv.FormatUint(uint64(in.Serial), 10)
		if err := checkIndomCluster(subject, r.opts.Cluster); err != nil {
			return err
		}
		if in.own {
			continue
		}
		n := in.live
		if err := checkInstanceCaps(&r.opts, in.Serial, in.ShortHelp, 0, total-n, n); err != nil {
			return err
		}
	}
	// Laid out anew, as Start lays them out, before the budgets are
	// checked: a lower budget (MaxFileValues) spreads the metrics over
	// more files, as it spreads those declared after it, where checked
	// as laid out under the budget of before it refused them; and a
	// longer name can leave a metric's name room in the first file only.
	if err := r.placeLocked(); err != nil {
		return err
	}
	if err := r.checkBudgetsLocked(); err != nil {
		return err
	}
	if err := r.checkPlacedLabelsLocked(); err != nil {
		return err
	}
	for _, l := range r.labels {
		if l.kind == labelCluster {
			if err := checkClusterLabel(subject("registry label", l.Name), r.opts.Cluster); err != nil {
				return err
			}
		}
	}
	return nil
}
