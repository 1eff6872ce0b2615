package entries

import "unsafe"

// valueCounts is a per-group multiset of values with signed counts: the MapView<T, Long> of
// Flink's Min/MaxWithRetractAggFunction for every group of an operator, pointer-free over
// groupEntries, for any stored value type V. It is data only: its owner hashes values, finds
// them (comparing identity, Java's equals()) and owns them through its value-ops
// (minMaxRetractAcc.find, valueOps.drop). An entry keeps the value it was inserted with
// (HashMap.put keeps an existing key object). Counts are never 0: an entry whose count reaches
// 0 is removed.
type Counts[V comparable] struct {
	Table
	Val    []V
	Cnt    []int64
	Hashes []uint64 // the owner's hash of (group, value) per entry: probes compare it first
}

func NewCounts[V comparable]() Counts[V] {
	return Counts[V]{Table: NewTable()}
}

func (m *Counts[V]) hash(e int32) uint64 { return m.Hashes[e] }

// insert adds value v (hash h) with count c to group g; v must not be present.
func (m *Counts[V]) Insert(g int32, v V, h uint64, c int64) {
	e, appended := m.Add(g, h)
	if appended {
		m.Val = append(m.Val, v)
		m.Cnt = append(m.Cnt, c)
		m.Hashes = append(m.Hashes, h)
	} else {
		m.Val[e], m.Cnt[e], m.Hashes[e] = v, c, h
	}
}

// remove deletes entry e and returns its value, which the owner releases.
func (m *Counts[V]) Remove(e int32) V {
	m.Table.Remove(e, m.hash)
	v := m.Val[e]
	var zero V
	m.Val[e] = zero
	return v
}

// entries is the number of entries of group g.
func (m *Counts[V]) Entries(g int32) int {
	n := 0
	for e := m.Head[g]; e >= 0; e = m.Next[e] {
		n++
	}
	return n
}

func (m *Counts[V]) Bytes() int64 {
	var zero V
	return m.Table.Bytes() + int64(cap(m.Val))*int64(unsafe.Sizeof(zero)) + int64(cap(m.Cnt))*8 + int64(cap(m.Hashes))*8
}
