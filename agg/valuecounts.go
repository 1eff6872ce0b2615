package agg

// valueCounts is a per-group multiset of values with signed counts: the MapView<T, Long> of
// Flink's Min/MaxWithRetractAggFunction for every group of an operator, pointer-free over
// groupEntries, for any value type through its value-ops. Value identity is Java's equals()
// (valueOps.equal); an entry keeps the value it was inserted with (HashMap.put keeps an existing
// key object), owned by ops. Counts are never 0: an entry whose count reaches 0 is removed.
type valueCounts[V comparable, O valueOps[V]] struct {
	groupEntries
	ops    O
	val    []V
	cnt    []int64
	hashes []uint64 // ops.hash(group, val) per entry: probes compare it first, removal rehashes nothing
}

func newValueCounts[V comparable, O valueOps[V]](ops O) valueCounts[V, O] {
	return valueCounts[V, O]{groupEntries: newGroupEntries(), ops: ops}
}

func (m *valueCounts[V, O]) hash(e int32) uint64 { return m.hashes[e] }

// find returns the entry of value v (hash h = ops.hash(g, v)) in group g, or -1.
func (m *valueCounts[V, O]) find(g int32, v V, h uint64) int32 {
	if m.used == 0 {
		return -1
	}
	mask := len(m.slots) - 1
	for i := int(h) & mask; ; i = (i + 1) & mask {
		s := m.slots[i]
		if s == 0 {
			return -1
		}
		if e := s - 1; m.hashes[e] == h && m.group[e] == g && m.ops.equal(m.val[e], v) {
			return e
		}
	}
}

// insert adds the owned value v (hash h) with count c to group g; v must not be present.
func (m *valueCounts[V, O]) insert(g int32, v V, h uint64, c int64) {
	e, appended := m.add(g, h, m.hash)
	if appended {
		m.val = append(m.val, v)
		m.cnt = append(m.cnt, c)
		m.hashes = append(m.hashes, h)
	} else {
		m.val[e], m.cnt[e], m.hashes[e] = v, c, h
	}
}

// remove deletes entry e and releases its value.
func (m *valueCounts[V, O]) remove(e int32) {
	m.groupEntries.remove(e, m.hash)
	m.ops.drop(m.val[e])
	var zero V
	m.val[e] = zero
}

// clearGroup removes every entry of group g.
func (m *valueCounts[V, O]) clearGroup(g int32) {
	for m.head[g] >= 0 {
		m.remove(m.head[g])
	}
}

// entries is the number of entries of group g.
func (m *valueCounts[V, O]) entries(g int32) int {
	n := 0
	for e := m.head[g]; e >= 0; e = m.next[e] {
		n++
	}
	return n
}

// compact moves the live values into ops' new arena (valueOps.compactStart).
func (m *valueCounts[V, O]) compact() {
	for e, g := range m.group {
		if g >= 0 {
			m.val[e] = m.ops.move(m.val[e])
		}
	}
}

func (m *valueCounts[V, O]) bytes() int64 {
	var zero V
	return m.groupEntries.bytes() + int64(cap(m.val))*int64(sizeOf(zero)) + int64(cap(m.cnt))*8 + int64(cap(m.hashes))*8
}
