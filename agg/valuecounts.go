package agg

// valueCounts is a per-group multiset of values with signed counts: the MapView<T, Long> of
// Flink's Min/MaxWithRetractAggFunction for every group of an operator. It is pointer-free:
// entries live in flat slices, chained per group through next/prev indices, and an
// open-addressing index maps (group, value bits) to an entry. Value identity is Java equals()
// on the boxed value (bitsOf).
type valueCounts[T number] struct {
	group  []int32 // owning group; -1 for free entries
	val    []T
	cnt    []int64
	next   []int32 // next entry of the same group, or of the free list; -1 ends
	prev   []int32 // previous entry of the same group; -1 at the head
	head   []int32 // per group: first entry, -1 when empty
	free   int32   // head of the free-entry list, -1 when empty
	slots  []int32 // entry+1, 0 empty; len is a power of two
	used   int     // occupied slots
	length int     // live entries
}

func newValueCounts[T number]() valueCounts[T] { return valueCounts[T]{free: -1} }

func (m *valueCounts[T]) growGroups(n int) {
	for len(m.head) < n {
		m.head = append(m.head, -1)
	}
}

func slotOf(g int32, bits int64, mask int) int {
	h := uint64(bits)*0x9e3779b97f4a7c15 ^ uint64(uint32(g))*0xc2b2ae3d27d4eb4f
	h ^= h >> 29
	return int(h) & mask
}

// find returns the entry of value v in group g, or -1.
func (m *valueCounts[T]) find(g int32, v T) int32 {
	if m.length == 0 {
		return -1
	}
	bits := bitsOf(v)
	mask := len(m.slots) - 1
	for i := slotOf(g, bits, mask); ; i = (i + 1) & mask {
		s := m.slots[i]
		if s == 0 {
			return -1
		}
		e := s - 1
		if m.group[e] == g && bitsOf(m.val[e]) == bits {
			return e
		}
	}
}

// insert adds value v with count c to group g; v must not be present.
func (m *valueCounts[T]) insert(g int32, v T, c int64) {
	var e int32
	if m.free >= 0 {
		e = m.free
		m.free = m.next[e]
		m.group[e], m.val[e], m.cnt[e] = g, v, c
	} else {
		e = int32(len(m.group))
		m.group = append(m.group, g)
		m.val = append(m.val, v)
		m.cnt = append(m.cnt, c)
		m.next = append(m.next, -1)
		m.prev = append(m.prev, -1)
	}
	h := m.head[g]
	m.next[e], m.prev[e] = h, -1
	if h >= 0 {
		m.prev[h] = e
	}
	m.head[g] = e
	if (m.used+1)*4 > len(m.slots)*3 {
		m.rehash()
	}
	mask := len(m.slots) - 1
	i := slotOf(g, bitsOf(v), mask)
	for m.slots[i] != 0 {
		i = (i + 1) & mask
	}
	m.slots[i] = e + 1
	m.used++
	m.length++
}

// remove deletes entry e.
func (m *valueCounts[T]) remove(e int32) {
	g := m.group[e]
	if p := m.prev[e]; p >= 0 {
		m.next[p] = m.next[e]
	} else {
		m.head[g] = m.next[e]
	}
	if n := m.next[e]; n >= 0 {
		m.prev[n] = m.prev[e]
	}
	mask := len(m.slots) - 1
	i := slotOf(g, bitsOf(m.val[e]), mask)
	for m.slots[i] != e+1 {
		i = (i + 1) & mask
	}
	// Backward-shift deletion (linear probing without tombstones).
	for {
		m.slots[i] = 0
		j := i
		for {
			j = (j + 1) & mask
			s := m.slots[j]
			if s == 0 {
				m.used--
				m.length--
				m.group[e] = -1
				m.next[e] = m.free
				m.free = e
				return
			}
			home := slotOf(m.group[s-1], bitsOf(m.val[s-1]), mask)
			if (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j) {
				m.slots[i] = s
				i = j
				break
			}
		}
	}
}

// clearGroup removes every entry of group g.
func (m *valueCounts[T]) clearGroup(g int32) {
	for m.head[g] >= 0 {
		m.remove(m.head[g])
	}
}

func (m *valueCounts[T]) rehash() {
	n := 16
	for n*3 < (m.used+1)*4*2 {
		n *= 2
	}
	m.slots = make([]int32, n)
	mask := n - 1
	for e := range m.group {
		if m.group[e] < 0 { // free
			continue
		}
		i := slotOf(m.group[e], bitsOf(m.val[e]), mask)
		for m.slots[i] != 0 {
			i = (i + 1) & mask
		}
		m.slots[i] = int32(e) + 1
	}
}

func (m *valueCounts[T]) bytes() int64 {
	return int64(cap(m.group))*(4+8+8+4+4) + int64(cap(m.head))*4 + int64(cap(m.slots))*4
}
