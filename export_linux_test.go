package mmv

// SetLockHeldHook has f called each time a registry finds the lock of its
// file's name held, before it tries again, until the test ends.
func SetLockHeldHook(t interface{ Cleanup(func()) }, f func()) {
	lockHeldHook = f
	t.Cleanup(func() { lockHeldHook = nil })
}
