//go:build ferrytest

package engine

// Unpoison clears the poison flag, so tests that inject panics (the fuzz harness judges each
// input alone) can go on. It exists only in ferrytest builds.
func Unpoison() { poison.Store(nil) }
