package bp

import "testing"

// setCheckHook installs fn as the stopper check hook for the test.
func setCheckHook(t *testing.T, fn func()) {
	t.Helper()
	testCheckHook = fn
	t.Cleanup(func() { testCheckHook = nil })
}
