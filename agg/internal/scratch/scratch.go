package scratch

// resize returns s with length n, reusing its array when it is large enough. Contents are not
// cleared.
func Resize[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]T, n, n+n/4)
}

// extend grows per-group state s to n entries; new entries are zero.
func Extend[T any](s []T, n int) []T {
	for len(s) < n {
		var zero T
		s = append(s, zero)
	}
	return s
}

// scratchAlloc is an engine.Allocator over one reused Go buffer: each Alloc invalidates the
// previous one.
type Alloc struct{ buf []byte }

func (a *Alloc) Alloc(n int) []byte {
	if cap(a.buf) < n {
		a.buf = make([]byte, n, n+n/4)
	}
	b := a.buf[:n]
	clear(b)
	return b
}
