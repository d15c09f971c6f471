package prombridge

import (
	"errors"
	"sync"
	"weak"

	"github.com/gopcp/mmv"
)

// A closed bridge's metrics stay declared in its registry: mmv never
// undeclares a metric. Close hands them over, and Register gives them to
// the next bridge of the same registry and prefix, so that the prefix is
// not refused for as long as the registry lives (its prombridge.dropped
// was declared already) and a family declared again alike reuses its
// metrics, where mmv refuses to declare them twice.

// leftovers are what a closed bridge hands over: its metrics, every
// series out of PCP.
type leftovers struct {
	dropped  *mmv.Vec[mmv.Counter] // prombridge.dropped
	families map[string]*family    // declared, by PCP name
}

// handoverKey is a registry, weakly, and a prefix.
type handoverKey struct {
	r      weak.Pointer[mmv.Registry]
	prefix string
}

// handovers holds, by registry and prefix, the closed bridge whose
// leftovers the next Register of that prefix takes. Weakly: the
// registry's Poll holds the closed bridge until that Register stops the
// poll, and once the registry is gone nothing is left to take over. Held
// here strongly, the leftovers' vectors kept their registry for good.
// Entries of bridges or registries gone are dropped at each hand-over
// and take-over.
var handovers struct {
	sync.Mutex
	m map[handoverKey]weak.Pointer[Bridge]
}

// handOver makes b, closed with its leftovers in b.left, the bridge the
// next Register of its registry and prefix takes over from.
func handOver(b *Bridge) {
	handovers.Lock()
	defer handovers.Unlock()
	pruneLocked()
	if handovers.m == nil {
		handovers.m = map[handoverKey]weak.Pointer[Bridge]{}
	}
	handovers.m[handoverKey{weak.Make(b.r), b.opts.Prefix}] = weak.Make(b)
}

// takeOver returns the leftovers of the bridge of r and prefix closed
// last, nil when there is none or r is closed (a new bridge is refused
// there anyway), and forgets them: one bridge takes them.
func takeOver(r *mmv.Registry, prefix string) *leftovers {
	if errors.Is(r.Err(), mmv.ErrClosed) {
		return nil
	}
	handovers.Lock()
	defer handovers.Unlock()
	pruneLocked()
	k := handoverKey{weak.Make(r), prefix}
	old, ok := handovers.m[k]
	if !ok {
		return nil
	}
	delete(handovers.m, k)
	if b := old.Value(); b != nil {
		// Its poll, which held it, ends: each closed bridge's ticked on
		// for the registry's life, a goroutine for each Gatherer a service
		// swapped (TestSwappedBridgesLeaveOnePoll). The taker forgets each
		// family as it adopts it.
		b.stopPoll()
		left := b.left
		b.left = nil
		return left
	}
	return nil
}

// pruneLocked forgets the entries whose registry or bridge is gone.
func pruneLocked() {
	for k, b := range handovers.m {
		if k.r.Value() == nil || b.Value() == nil {
			delete(handovers.m, k)
		}
	}
}
