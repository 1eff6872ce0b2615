package agg

import "unsafe"

// occurrences is a per-group list of values in arrival order, from which a retraction takes
// the oldest occurrence equal to its value: what the data views of Flink's
// FIRST_VALUE/LAST_VALUE and LISTAGG with retraction come down to (firstlast_retract.go,
// listagg_retract.go). It is pointer-free over groupEntries: an entry's chain links run from
// the group's newest entry (head) to its oldest (tail), and the index finds the entries of a
// value by their hash. Like valueCounts it is data only: its owner hashes values (the group
// is part of the hash), compares them (Java's equals()) and owns them through its value-ops.
// With idle-state TTL each entry keeps its own last write (groupEntries.at).
type occurrences[V comparable] struct {
	groupEntries
	val    []V
	seq    []uint64 // per entry: its arrival number, which orders the entries of a group
	hashes []uint64 // per entry: the owner's hash of (group, value)
	tail   []int32  // per group: the oldest entry, -1 when empty
	arrive uint64   // the next arrival number
}

func newOccurrences[V comparable]() occurrences[V] {
	return occurrences[V]{groupEntries: newGroupEntries()}
}

func (m *occurrences[V]) hash(e int32) uint64 { return m.hashes[e] }

func (m *occurrences[V]) growGroups(n int) {
	m.groupEntries.growGroups(n)
	for len(m.tail) < n {
		m.tail = append(m.tail, -1)
	}
}

// push appends value v (hash h) to group g as its newest entry and returns the entry.
func (m *occurrences[V]) push(g int32, v V, h uint64) int32 {
	e, appended := m.add(g, h)
	if appended {
		m.val = append(m.val, v)
		m.seq = append(m.seq, m.arrive)
		m.hashes = append(m.hashes, h)
	} else {
		m.val[e], m.seq[e], m.hashes[e] = v, m.arrive, h
	}
	m.arrive++
	if m.tail[g] < 0 {
		m.tail[g] = e
	}
	return e
}

// remove deletes entry e and returns its value, which the owner releases.
func (m *occurrences[V]) remove(e int32) V {
	if g := m.group[e]; m.tail[g] == e {
		m.tail[g] = m.prev[e]
	}
	m.groupEntries.remove(e, m.hash)
	v := m.val[e]
	var zero V
	m.val[e] = zero
	return v
}

// oldest returns the oldest entry of group g holding a value equal to v (hash h) for which
// skip is false, or -1. equal is Java's equals() on the owner's values.
func (m *occurrences[V]) oldest(g int32, v V, h uint64, equal func(a, b V) bool, skip func(e int32) bool) int32 {
	best := int32(-1)
	for e, pos := m.probe(h, m.home(h)); e >= 0; e, pos = m.probe(h, pos) {
		if m.hashes[e] == h && m.group[e] == g && (best < 0 || m.seq[e] < m.seq[best]) && equal(m.val[e], v) && !skip(e) {
			best = e
		}
	}
	return best
}

// entries is the number of entries of group g.
func (m *occurrences[V]) entries(g int32) int {
	n := 0
	for e := m.head[g]; e >= 0; e = m.next[e] {
		n++
	}
	return n
}

func (m *occurrences[V]) bytes() int64 {
	var zero V
	return m.groupEntries.bytes() + int64(cap(m.val))*int64(unsafe.Sizeof(zero)) + int64(cap(m.seq))*8 +
		int64(cap(m.hashes))*8 + int64(cap(m.tail))*4
}
