// Package javahash reproduces the iteration order of java.util.HashMap (JDK 17), which decides
// the order Flink's bundle operators finish their keys in: operators that must emit what Flink
// emits, in Flink's order, compute it here from the keys' hashCodes.
package javahash

import "slices"

// Java's HashMap constants (java.util.HashMap).
const (
	hashMapInitialTable = 16 // the table a first put allocates
	hashMapTreeifyChain = 8  // a chain longer than this is treeified, or the table resized
	hashMapMinTreeTable = 64 // below this table length a long chain resizes the table instead
)

// Order appends to order the iteration order of a java.util.HashMap into which keys with
// these hashCodes are put in this order, starting from a table of *tableLen buckets (0: none yet),
// and updates *tableLen. HashMap keeps insertion order within a bucket, across resizes too; it
// doubles the table when its size exceeds three quarters of it, or when a chain grows past 8
// entries while the table is shorter than 64. A chain past 8 in a longer table becomes a tree
// whose order depends on identity hash codes (not deterministic in Flink either); insertion
// order is kept there. buckets is scratch, returned for reuse.
func Order(hashes []int32, tableLen *int, order, buckets []int32) ([]int32, []int32) {
	n := *tableLen
	if n == 0 && len(hashes) > 0 {
		n = hashMapInitialTable
	}
	bucket := func(h int32, n int) int {
		u := uint32(h)
		return int(u^u>>16) & (n - 1)
	}
	recount := func(upto int) {
		buckets = resize(buckets, n)
		clear(buckets)
		for _, h := range hashes[:upto] {
			buckets[bucket(h, n)]++
		}
	}
	recount(0)
	for i, h := range hashes {
		bi := bucket(h, n)
		long := buckets[bi] >= hashMapTreeifyChain
		buckets[bi]++
		if long && n < hashMapMinTreeTable {
			n *= 2
			recount(i + 1)
		}
		if i+1 > n/4*3 {
			n *= 2
			recount(i + 1)
		}
	}
	*tableLen = n
	for i := range hashes {
		order = append(order, int32(i))
	}
	slices.SortStableFunc(order, func(a, b int32) int { return bucket(hashes[a], n) - bucket(hashes[b], n) })
	return order, buckets
}

// ComputeIfAbsentOrder appends to order the iteration order of a new java.util.HashMap on which
// computeIfAbsent is called for the keys calls names, in order: calls[j] indexes hashes, the
// hashCodes of the distinct keys numbered by first call (buckets is scratch, returned for
// reuse). Unlike put, computeIfAbsent resizes before it looks the key up, on every call once the
// size exceeds three quarters of the table (also for a key already present), links a new key at
// the head of its bin, and turns a bin that already held 7 keys into a tree (in a table shorter
// than 64: resizes instead). Each resize splits a bin keeping its order. A tree bin's order
// depends on identity hash codes (not deterministic in Flink either): list order is kept there.
func ComputeIfAbsentOrder(hashes, calls []int32, order, buckets []int32) ([]int32, []int32) {
	if len(hashes) == 0 {
		return order, buckets
	}
	spread := func(h int32) uint32 { u := uint32(h); return u ^ u>>16 }
	n := hashMapInitialTable
	// Bins as singly linked lists over key indices: head per bin, next per key.
	head := make([]int32, n)
	for i := range head {
		head[i] = -1
	}
	next := resize(buckets, len(hashes))
	count := make([]int, n)
	grow := func() {
		h2 := make([]int32, 2*n)
		c2 := make([]int, 2*n)
		for b := range n {
			var loH, loT, hiH, hiT int32 = -1, -1, -1, -1
			for e := head[b]; e >= 0; e = next[e] {
				if spread(hashes[e])&uint32(n) == 0 {
					if loT < 0 {
						loH = e
					} else {
						next[loT] = e
					}
					loT = e
					c2[b]++
				} else {
					if hiT < 0 {
						hiH = e
					} else {
						next[hiT] = e
					}
					hiT = e
					c2[b+n]++
				}
			}
			if loT >= 0 {
				next[loT] = -1
			}
			if hiT >= 0 {
				next[hiT] = -1
			}
			h2[b], h2[b+n] = loH, hiH
		}
		head, count, n = h2, c2, 2*n
	}
	size := 0
	for _, c := range calls {
		if size > n/4*3 {
			grow()
		}
		if int(c) < size {
			continue // present: the call changes nothing else
		}
		i, h := c, hashes[c]
		size++
		b := int(spread(h)) & (n - 1)
		existing := count[b]
		next[i], head[b] = head[b], i
		count[b]++
		if existing >= hashMapTreeifyChain-1 && n < hashMapMinTreeTable {
			grow()
		}
	}
	for b := range n {
		for e := head[b]; e >= 0; e = next[e] {
			order = append(order, e)
		}
	}
	return order, next
}

// resize returns s with length n, reusing its memory when it is large enough.
func resize[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]T, n, n+n/4)
}
