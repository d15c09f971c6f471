package otelexporter

import (
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
)

// One Exporter serves one reader of one MeterProvider: the reader owns
// it (its Shutdown shuts the exporter down), and the exporter takes each
// of its collections for the whole of the provider's instruments, so
// that the attribute sets and instruments a collection lacks leave PCP.
// Given to two readers (two providers of one service writing one file),
// each reader's export takes the other's instruments out of PCP, which
// shows each provider's half of the time. What can be seen of it is
// named by Err:
//
//   - an export of another resource than the first export's, whose
//     resource the registry's labels are;
//   - a collection whose instrumentation scopes (with points) share none
//     with the collection before: a provider's synchronous instruments are
//     in every collection once they have a point, cumulative as the
//     exporter asks, so only a provider whose instruments are all
//     observable and all stop observing as another scope's appear makes
//     such a collection alone, which Err then names wrongly (and, in the
//     first batches of a collection the SDK splits, until a later batch
//     brings a scope of the collection before).
//
// Two providers of one resource whose exports share a scope (one meter
// name in both) go unseen.

// scopeColls are the last two collections in which a scope had points,
// the later first; 0 for none.
type scopeColls struct{ last, prev uint64 }

// checkResource names an export of resource res, when it is not the
// resource of the first export (the registry's).
func (e *Exporter) checkResource(res *resource.Resource) {
	if res.Equivalent() == e.resource {
		return
	}
	e.drops.add("resource", "reader", 0, fmt.Errorf("otelexporter: an export of resource {%s}, where the first export's, the registry's, was {%s}: another MeterProvider's reader? One Exporter serves one reader of one provider: each export is taken as the whole of a collection, so that each reader's takes the other's instruments out of PCP",
		res.Set().Encoded(attribute.DefaultEncoder()), e.resourceText))
}

// markScopes records that the scopes of the export running, those with
// points, are in the running collection.
func (e *Exporter) markScopes() {
	for _, s := range e.exportScopes {
		c := e.scopes[s]
		if c.last != e.coll {
			c.prev, c.last = c.last, e.coll
			e.scopes[s] = c
		}
	}
	clear(e.exportScopes)
	e.exportScopes = e.exportScopes[:0]
}

// sharedNote names a running collection whose scopes share none with the
// collection before (both with points): nil for one that shares one.
func (e *Exporter) sharedNote() error {
	if e.coll < 2 {
		return nil
	}
	var cur, prev int
	var curName, prevName string
	least := func(name *string, s instrumentation.Scope, n int) {
		if n == 1 || s.Name < *name {
			*name = s.Name
		}
	}
	for s, c := range e.scopes {
		switch {
		case c.last == e.coll && c.prev == e.coll-1:
			return nil
		case c.last == e.coll:
			cur++
			least(&curName, s, cur)
		case c.last == e.coll-1:
			prev++
			least(&prevName, s, prev)
		}
	}
	if cur == 0 || prev == 0 {
		return nil
	}
	return fmt.Errorf("otelexporter: the %d instrumentation scopes of this collection (such as %q) share none with the %d of the collection before (such as %q): another MeterProvider's reader exporting to this Exporter? One Exporter serves one reader of one provider: each export is taken as the whole of a collection, so that each reader's takes the other's instruments out of PCP",
		cur, curName, prev, prevName)
}
