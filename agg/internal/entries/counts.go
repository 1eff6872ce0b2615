package entries

import "unsafe"

// Counts is a per-group multiset of values with signed counts: the MapView<T, Long> of Flink's
// Min/MaxWithRetractAggFunction for every group of an operator, pointer-free over Table, for
// any stored value type V. It is data only: its owner hashes values, finds them (comparing
// identity, Java's equals()) and owns them through its value-ops (the kernels' MIN/MAX with
// retraction, values.Ops). An entry keeps the value it was inserted with (HashMap.put keeps an
// existing key object). Counts are never 0: an entry whose count reaches 0 is removed.
type Counts[V comparable] struct {
	Table
	Val    []V      // per entry: its value, owned by the owner's ops
	Cnt    []int64  // per entry: its count
	Hashes []uint64 // per entry: the owner's hash of (group, value); probes compare it first
}

// NewCounts returns an empty multiset.
func NewCounts[V comparable]() Counts[V] {
	return Counts[V]{Table: NewTable()}
}

func (m *Counts[V]) hash(e int32) uint64 { return m.Hashes[e] }

// Insert adds value v (hash h) with count c to group g; v must not be present.
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

// Remove deletes entry e and returns its value, which the owner releases.
func (m *Counts[V]) Remove(e int32) V {
	m.Table.Remove(e, m.hash)
	v := m.Val[e]
	var zero V
	m.Val[e] = zero
	return v
}

// Bytes is the memory the multiset holds (not its values' bytes, which the owner's ops hold).
func (m *Counts[V]) Bytes() int64 {
	var zero V
	return m.Table.Bytes() + int64(cap(m.Val))*int64(unsafe.Sizeof(zero)) + int64(cap(m.Cnt))*8 + int64(cap(m.Hashes))*8
}
