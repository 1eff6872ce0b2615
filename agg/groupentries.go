package agg

// groupEntries is the bookkeeping the per-group multisets share (valueCounts, decCounts,
// strCounts: the MapViews of Flink's Min/MaxWithRetractAggFunction for every group of an
// operator). Entries live in flat slices indexed by entry id, chained per group through
// next/prev, recycled through a free list, and found through an open-addressing index of entry
// ids (linear probing, backward-shift deletion, no tombstones). The owner keeps each entry's key
// and count in slices parallel to group, probes the index itself (find), and supplies entry
// hashes: hash(e) must be the hash the entry was placed with.
type groupEntries struct {
	group []int32 // owning group; -1 for free entries
	next  []int32 // next entry of the same group, or of the free list; -1 ends
	prev  []int32 // previous entry of the same group; -1 at the head
	head  []int32 // per group: first entry, -1 when empty
	free  int32   // head of the free-entry list, -1 when empty
	slots []int32 // entry+1, 0 empty; len is a power of two
	used  int     // live entries (= occupied slots)
}

func newGroupEntries() groupEntries { return groupEntries{free: -1} }

func (x *groupEntries) growGroups(n int) {
	for len(x.head) < n {
		x.head = append(x.head, -1)
	}
}

// add links a new entry of group g at the head of its chain and places it in the index under
// hash h. It returns the entry and whether it is a new id (the owner appends to its parallel
// slices) rather than a recycled one (the owner overwrites at e).
func (x *groupEntries) add(g int32, h uint64, hash func(e int32) uint64) (e int32, appended bool) {
	if (x.used+1)*4 > len(x.slots)*3 {
		x.rehash(hash) // before e is linked: hash covers the existing entries only
	}
	if x.free >= 0 {
		e = x.free
		x.free = x.next[e]
		x.group[e] = g
	} else {
		e, appended = int32(len(x.group)), true
		x.group = append(x.group, g)
		x.next = append(x.next, -1)
		x.prev = append(x.prev, -1)
	}
	hd := x.head[g]
	x.next[e], x.prev[e] = hd, -1
	if hd >= 0 {
		x.prev[hd] = e
	}
	x.head[g] = e
	mask := len(x.slots) - 1
	i := int(h) & mask
	for x.slots[i] != 0 {
		i = (i + 1) & mask
	}
	x.slots[i] = e + 1
	x.used++
	return e, appended
}

// remove unlinks entry e from its group and the index and frees it.
func (x *groupEntries) remove(e int32, hash func(e int32) uint64) {
	g := x.group[e]
	if p := x.prev[e]; p >= 0 {
		x.next[p] = x.next[e]
	} else {
		x.head[g] = x.next[e]
	}
	if n := x.next[e]; n >= 0 {
		x.prev[n] = x.prev[e]
	}
	mask := len(x.slots) - 1
	i := int(hash(e)) & mask
	for x.slots[i] != e+1 {
		i = (i + 1) & mask
	}
	for { // backward-shift deletion
		x.slots[i] = 0
		j := i
		for {
			j = (j + 1) & mask
			s := x.slots[j]
			if s == 0 {
				x.used--
				x.group[e] = -1
				x.next[e] = x.free
				x.free = e
				return
			}
			// Move s into the hole at i unless its home lies cyclically in (i, j].
			home := int(hash(s-1)) & mask
			if (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j) {
				x.slots[i] = s
				i = j
				break
			}
		}
	}
}

// rehash rebuilds the index over the live entries, sized to stay at most 3/8 full after the
// next add.
func (x *groupEntries) rehash(hash func(e int32) uint64) {
	n := 16
	for n*3 < (x.used+1)*4*2 {
		n *= 2
	}
	x.slots = make([]int32, n)
	mask := n - 1
	for e, g := range x.group {
		if g < 0 { // free
			continue
		}
		i := int(hash(int32(e))) & mask
		for x.slots[i] != 0 {
			i = (i + 1) & mask
		}
		x.slots[i] = int32(e) + 1
	}
}

func (x *groupEntries) bytes() int64 {
	return int64(cap(x.group))*(4+4+4) + int64(cap(x.head))*4 + int64(cap(x.slots))*4
}
