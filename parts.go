package mmv

import (
	"fmt"
	"slices"
)

// A file holds at most MaxMetrics metrics. A registry with more spreads them
// over overflow files, each an ordinary registry of its own with the NoPrefix
// flag, whose metric names carry the first file's name: PCP shows every
// metric as mmv.<file>.<metric> (or mmv.<metric> under NoPrefix) whichever
// file holds it. The overflow files are named <file>.2, <file>.3 and so on,
// and take the clusters after Options.Cluster (wrapping past 2047 to 1, as
// a file with indoms allows no more); on cluster 0 PCP's reader picks
// theirs too. Indoms are copied into each file
// with a metric over them, with their labels; cluster labels go to every
// file.

// partName is the name a metric has in an overflow file.
func (r *Registry) partName(metric string) string {
	if r.opts.Flags&NoPrefix != 0 {
		return metric
	}
	return r.name + "." + metric
}

// addElsewhere declares m in an overflow file with room for it.
func (r *Registry) addElsewhere(m Metric) error {
	p, err := r.partWithRoom()
	if err != nil {
		return err
	}
	if m.Indom != 0 {
		if err := r.copyIndom(p, m.Indom); err != nil {
			return err
		}
	}
	name := m.Name
	m.Name = r.partName(name)
	if err := p.AddMetric(m); err != nil {
		return err
	}
	r.elsewhere[name] = p
	return nil
}

// partWithRoom returns the last overflow file, or a new one when it is full.
func (r *Registry) partWithRoom() (*Registry, error) {
	if n := len(r.parts); n > 0 && len(r.parts[n-1].metrics) < MaxMetrics {
		return r.parts[n-1], nil
	}
	opts := r.opts
	opts.Flags |= NoPrefix
	if c := r.opts.Cluster; c != 0 {
		opts.Cluster = (c-1+uint32(len(r.parts)+1))%maxIndomCluster + 1
	}
	p := NewRegistry(fmt.Sprintf("%s.%d", r.name, len(r.parts)+2), &opts)
	for _, l := range r.labels {
		if l.kind == labelCluster {
			if err := p.AddLabel(l.Label); err != nil {
				return nil, err
			}
		}
	}
	if r.state == started {
		if err := p.Start(); err != nil {
			return nil, err
		}
	}
	r.parts = append(r.parts, p)
	return p, nil
}

// copyIndom declares the indom serial in the overflow file p, with its
// instances and labels, unless p has it.
func (r *Registry) copyIndom(p *Registry, serial uint32) error {
	if p.serials[serial] != nil {
		return nil
	}
	d := r.serials[serial].Indom
	d.Instances = slices.Clone(d.Instances)
	if err := p.AddIndom(d); err != nil {
		return err
	}
	for _, l := range r.labels {
		if l.serial == serial && (l.kind == labelIndom || l.kind == labelInstances) {
			if err := p.addLabel(&label{Label: l.Label, kind: l.kind, serial: serial, instance: l.instance}, fmt.Sprintf("indom %d", serial)); err != nil {
				return err
			}
		}
	}
	return nil
}

// forParts runs f on every overflow file, or on those holding the indom
// serial when it is not zero, and returns the first error.
func (r *Registry) forParts(serial uint32, f func(p *Registry) error) error {
	for _, p := range r.parts {
		if serial != 0 && p.serials[serial] == nil {
			continue
		}
		if err := f(p); err != nil {
			return err
		}
	}
	return nil
}
