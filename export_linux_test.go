package mmv

import "github.com/gopcp/mmv/internal/osfile"

// SetLockHeldHook has f called each time a registry finds the lock of its
// file's name held, before it tries again, until the test ends.
func SetLockHeldHook(t interface{ Cleanup(func()) }, f func()) {
	osfile.LockHeldHook = f
	t.Cleanup(func() { osfile.LockHeldHook = nil })
}
