package prombridge

// SetLabelsReadHook makes f run after a family's declaration reads its
// registry's labels, before its transaction; it returns the undo.
func SetLabelsReadHook(f func()) (undo func()) {
	old := labelsReadHook
	labelsReadHook = f
	return func() { labelsReadHook = old }
}
