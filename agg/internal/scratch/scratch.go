// Package scratch holds the slice helpers and the allocator through which the aggregate
// packages reuse memory from batch to batch.
package scratch

// Resize returns s with length n, reusing its array when it is large enough. Contents are not
// cleared.
func Resize[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]T, n, n+n/4)
}

// Extend grows per-group state s to n entries; new entries are zero.
func Extend[T any](s []T, n int) []T {
	for len(s) < n {
		var zero T
		s = append(s, zero)
	}
	return s
}

// Allocator is an engine.Allocator over one reused Go buffer: each Alloc invalidates the
// previous one. Operators write rows they read back themselves with it (partial rows merged in
// Go, frames encoded from a bundle's rows).
type Allocator struct{ buf []byte }

// Alloc returns n zeroed bytes, reusing the buffer.
func (a *Allocator) Alloc(n int) []byte {
	if cap(a.buf) < n {
		a.buf = make([]byte, n, n+n/4)
	}
	b := a.buf[:n]
	clear(b)
	return b
}
