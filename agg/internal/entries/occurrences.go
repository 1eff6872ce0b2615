package entries

import "unsafe"

// Occurrences is a per-group list of values in arrival order, from which a retraction takes
// the oldest occurrence equal to its value: what the data views of Flink's
// FIRST_VALUE/LAST_VALUE and LISTAGG with retraction come down to (the kernels of those
// functions). It is pointer-free over Table: an entry's chain links run from the group's
// newest entry (Head) to its oldest (Tail), and the index finds the entries of a value by their
// hash. Like Counts it is data only: its owner hashes values (the group is part of the hash),
// compares them (Java's equals()) and owns them through its value-ops. With idle-state TTL each
// entry keeps its own last write (Table.At).
type Occurrences[V comparable] struct {
	Table
	Val    []V      // per entry: its value, owned by the owner's ops
	seq    []uint64 // per entry: its arrival number, which orders the entries of a group
	hashes []uint64 // per entry: the owner's hash of (group, value)
	Tail   []int32  // per group: the oldest entry, -1 when empty
	arrive uint64   // the next arrival number
}

// NewOccurrences returns an empty list.
func NewOccurrences[V comparable]() Occurrences[V] {
	return Occurrences[V]{Table: NewTable()}
}

func (m *Occurrences[V]) hash(e int32) uint64 { return m.hashes[e] }

// GrowGroups makes room for groups below n, empty.
func (m *Occurrences[V]) GrowGroups(n int) {
	m.Table.GrowGroups(n)
	for len(m.Tail) < n {
		m.Tail = append(m.Tail, -1)
	}
}

// Push appends value v (hash h) to group g as its newest entry and returns the entry.
func (m *Occurrences[V]) Push(g int32, v V, h uint64) int32 {
	e, appended := m.Add(g, h)
	if appended {
		m.Val = append(m.Val, v)
		m.seq = append(m.seq, m.arrive)
		m.hashes = append(m.hashes, h)
	} else {
		m.Val[e], m.seq[e], m.hashes[e] = v, m.arrive, h
	}
	m.arrive++
	if m.Tail[g] < 0 {
		m.Tail[g] = e
	}
	return e
}

// Remove deletes entry e and returns its value, which the owner releases.
func (m *Occurrences[V]) Remove(e int32) V {
	if g := m.Group[e]; m.Tail[g] == e {
		m.Tail[g] = m.Prev[e]
	}
	m.Table.Remove(e, m.hash)
	v := m.Val[e]
	var zero V
	m.Val[e] = zero
	return v
}

// Oldest returns the oldest entry of group g holding a value equal to v (hash h) for which
// skip is false, or -1. equal is Java's equals() on the owner's values.
func (m *Occurrences[V]) Oldest(g int32, v V, h uint64, equal func(a, b V) bool, skip func(e int32) bool) int32 {
	best := int32(-1)
	for e, pos := m.Probe(h, m.Home(h)); e >= 0; e, pos = m.Probe(h, pos) {
		if m.hashes[e] == h && m.Group[e] == g && (best < 0 || m.seq[e] < m.seq[best]) && equal(m.Val[e], v) && !skip(e) {
			best = e
		}
	}
	return best
}

// Bytes is the memory the list holds (not its values' bytes, which the owner's ops hold).
func (m *Occurrences[V]) Bytes() int64 {
	var zero V
	return m.Table.Bytes() + int64(cap(m.Val))*int64(unsafe.Sizeof(zero)) + int64(cap(m.seq))*8 +
		int64(cap(m.hashes))*8 + int64(cap(m.Tail))*4
}
