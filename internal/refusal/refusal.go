// Package refusal turns the panic of an mmv New function back into the
// error it carries, for the bridges that declare what they gather and
// must refuse, not crash, when mmv refuses a declaration.
package refusal

import "runtime"

// Recover, deferred, stores in *err the error a New function panicked
// with. Any other panic, a runtime error included, goes on.
func Recover(err *error) {
	p := recover()
	if p == nil {
		return
	}
	e, ok := p.(error)
	if _, rt := p.(runtime.Error); !ok || rt {
		panic(p)
	}
	*err = e
}
