package agg

// valueCounts is a per-group multiset of values with signed counts: the MapView<T, Long> of
// Flink's Min/MaxWithRetractAggFunction for every group of an operator, pointer-free
// (groupEntries). Value identity is Java equals() on the boxed value (bitsOf); an entry keeps
// the value it was inserted with.
type valueCounts[T number] struct {
	groupEntries
	val []T
	cnt []int64
}

func newValueCounts[T number]() valueCounts[T] {
	return valueCounts[T]{groupEntries: newGroupEntries()}
}

// valueHash hashes a value's identity bits within group g.
func valueHash(g int32, bits int64) uint64 {
	h := uint64(bits)*0x9e3779b97f4a7c15 ^ uint64(uint32(g))*0xc2b2ae3d27d4eb4f
	return h ^ h>>29
}

func (m *valueCounts[T]) hash(e int32) uint64 { return valueHash(m.group[e], bitsOf(m.val[e])) }

// find returns the entry of value v in group g, or -1.
func (m *valueCounts[T]) find(g int32, v T) int32 {
	bits := bitsOf(v)
	h := valueHash(g, bits)
	for e, pos := m.probe(h, m.home(h)); e >= 0; e, pos = m.probe(h, pos) {
		if m.group[e] == g && bitsOf(m.val[e]) == bits {
			return e
		}
	}
	return -1
}

// insert adds value v with count c to group g; v must not be present.
func (m *valueCounts[T]) insert(g int32, v T, c int64) {
	e, appended := m.add(g, valueHash(g, bitsOf(v)))
	if appended {
		m.val = append(m.val, v)
		m.cnt = append(m.cnt, c)
	} else {
		m.val[e], m.cnt[e] = v, c
	}
}

// remove deletes entry e.
func (m *valueCounts[T]) remove(e int32) { m.groupEntries.remove(e, m.hash) }

// clearGroup removes every entry of group g.
func (m *valueCounts[T]) clearGroup(g int32) {
	for m.head[g] >= 0 {
		m.remove(m.head[g])
	}
}

func (m *valueCounts[T]) bytes() int64 {
	return m.groupEntries.bytes() + int64(cap(m.val))*8 + int64(cap(m.cnt))*8
}
