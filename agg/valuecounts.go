package agg

import "unsafe"

// valueCounts is a per-group multiset of values with signed counts: the MapView<T, Long> of
// Flink's Min/MaxWithRetractAggFunction for every group of an operator, pointer-free over
// groupEntries, for any stored value type V. It is data only: its owner hashes values, finds
// them (comparing identity, Java's equals()) and owns them through its value-ops
// (minMaxRetractAcc.find, valueOps.drop). An entry keeps the value it was inserted with
// (HashMap.put keeps an existing key object). Counts are never 0: an entry whose count reaches
// 0 is removed.
type valueCounts[V comparable] struct {
	groupEntries
	val    []V
	cnt    []int64
	hashes []uint64 // the owner's hash of (group, value) per entry: probes compare it first
}

func newValueCounts[V comparable]() valueCounts[V] {
	return valueCounts[V]{groupEntries: newGroupEntries()}
}

func (m *valueCounts[V]) hash(e int32) uint64 { return m.hashes[e] }

// insert adds value v (hash h) with count c to group g; v must not be present.
func (m *valueCounts[V]) insert(g int32, v V, h uint64, c int64) {
	e, appended := m.add(g, h)
	if appended {
		m.val = append(m.val, v)
		m.cnt = append(m.cnt, c)
		m.hashes = append(m.hashes, h)
	} else {
		m.val[e], m.cnt[e], m.hashes[e] = v, c, h
	}
}

// remove deletes entry e and returns its value, which the owner releases.
func (m *valueCounts[V]) remove(e int32) V {
	m.groupEntries.remove(e, m.hash)
	v := m.val[e]
	var zero V
	m.val[e] = zero
	return v
}

// entries is the number of entries of group g.
func (m *valueCounts[V]) entries(g int32) int {
	n := 0
	for e := m.head[g]; e >= 0; e = m.next[e] {
		n++
	}
	return n
}

func (m *valueCounts[V]) bytes() int64 {
	var zero V
	return m.groupEntries.bytes() + int64(cap(m.val))*int64(unsafe.Sizeof(zero)) + int64(cap(m.cnt))*8 + int64(cap(m.hashes))*8
}
