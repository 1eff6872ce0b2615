// Package entries holds the per-group entry tables behind the data views the aggregates keep
// per key (Flink's MapViews and ListViews): a Table of entries chained per group with per-entry
// idle-state TTL, the multisets of MIN/MAX with retraction (Counts) and the occurrence lists of
// FIRST_VALUE, LAST_VALUE and LISTAGG with retraction (Occurrences). They are pointer-free (flat
// slices indexed by entry id), so the garbage collector never scans per-key memory. They are
// data only: their owners hash, compare and own the values. It imports engine only.
package entries

import "github.com/ferrystream/ferry/engine"

// Table is the bookkeeping the per-group entry sets share: the DISTINCT value sets
// (distinct.Set), the multisets behind MIN/MAX with retraction (Counts) and the lists behind
// FIRST_VALUE, LAST_VALUE and LISTAGG with retraction (Occurrences). Entries live in flat
// slices indexed by entry id, chained per group through Next/Prev from Head, recycled through a
// free list, and found through an engine.Index of entry ids under their hash. The owner keeps
// each entry's key and value in slices parallel to Group, looks an entry up by walking the
// candidates of its hash h and comparing its own keys,
//
//	for e, pos := x.Probe(h, x.Home(h)); e >= 0; e, pos = x.Probe(h, pos) { ... }
//
// and supplies the entry hash h when it adds an entry and hash(e) (the hash e was added with)
// when it removes one.
//
// With idle-state TTL (EnableTTL; the keyed state's sets and multisets, never a buffer's) every
// entry keeps its own last write, as Flink's TtlMapState wraps each map value with its
// timestamp: Add and Touch stamp an entry with now, the processing time (ms) of the current
// call, which the operator sets (SetNow) before it reads or writes entries; an entry is expired
// when ttl.Expired(At[e], now). The owner treats an expired entry as absent (Flink's get,
// contains and iteration skip it, NeverReturnExpired) and deletes it when it meets it;
// SweepExpired walks the entry ids for the bounded sweep of entries nobody reads again.
type Table struct {
	Group []int32 // owning group; -1 for free entries
	Next  []int32 // next entry of the same group, or of the free list; -1 ends
	Prev  []int32 // previous entry of the same group; -1 at the head
	Head  []int32 // per group: first entry, -1 when empty
	free  int32   // head of the free-entry list, -1 when empty
	used  int     // live entries
	index engine.Index

	ttl   engine.TTL
	At    []int64 // per entry: its last write (ms); nil without TTL
	now   int64   // the current call's processing time (ms)
	sweep engine.Sweeper
}

// NewTable returns an empty table.
func NewTable() Table { return Table{free: -1} }

// Owner is state that keeps per-group entries in a Table: a DISTINCT value set, the multiset of
// MIN/MAX with retraction, the list of LISTAGG with retraction (Flink's MapViews and
// ListViews). The operator enables their idle-state TTL and sets their clock.
type Owner interface {
	EntryTable() *Table
}

// SetNow sets the processing time (ms) of the current call, at which entries are read and
// written.
func (x *Table) SetNow(nowMs int64) { x.now = nowMs }

// Len is the number of entries, of every group.
func (x *Table) Len() int { return x.used }

// EnableTTL makes entries expire ttl after their last write; call it before the first entry.
func (x *Table) EnableTTL(ttl engine.TTL) {
	if ttl.Enabled() {
		x.ttl, x.At = ttl, []int64{}
	}
}

// Touch stamps entry e written now (Flink's put: OnCreateAndWrite). A no-op without TTL.
func (x *Table) Touch(e int32) {
	if x.At != nil {
		x.At[e] = x.now
	}
}

// Expired reports whether entry e is expired now. Always false without TTL.
func (x *Table) Expired(e int32) bool {
	return x.At != nil && x.ttl.Expired(x.At[e], x.now)
}

// Live reports whether group g holds an entry not expired at nowMs.
func (x *Table) Live(g int32, nowMs int64) bool {
	for e := x.Head[g]; e >= 0; e = x.Next[e] {
		if x.At == nil || !x.ttl.Expired(x.At[e], nowMs) {
			return true
		}
	}
	return false
}

// SweepExpired calls remove for each entry expired at nowMs among the next budget entry ids
// (engine.Sweeper). A no-op without TTL.
func (x *Table) SweepExpired(nowMs int64, budget int, remove func(e int32)) {
	if x.At == nil {
		return
	}
	from, to := x.sweep.Next(len(x.Group), budget)
	for e := int32(from); e < int32(to); e++ {
		if x.Group[e] >= 0 && x.ttl.Expired(x.At[e], nowMs) {
			remove(e)
		}
	}
}

// entryTag folds a 64-bit entry hash into the index's 32-bit tag.
func entryTag(h uint64) uint32 { return uint32(h ^ h>>32) }

// GrowGroups makes room for groups below n, empty.
func (x *Table) GrowGroups(n int) {
	for len(x.Head) < n {
		x.Head = append(x.Head, -1)
	}
}

// Home is where a lookup of the entries added under hash h starts (engine.Index.Home).
func (x *Table) Home(h uint64) int { return x.index.Home(entryTag(h)) }

// Probe returns the next candidate entry of hash h at or after position pos, or -1, and the
// position to continue from (engine.Index.Probe); the owner confirms a candidate by its keys.
func (x *Table) Probe(h uint64, pos int) (int32, int) { return x.index.Probe(entryTag(h), pos) }

// Add links a new entry of group g at the head of its chain and indexes it under hash h. It
// returns the entry and whether it is a new id (the owner appends to its parallel slices) rather
// than a recycled one (the owner overwrites at e).
func (x *Table) Add(g int32, h uint64) (e int32, appended bool) {
	if x.free >= 0 {
		e = x.free
		x.free = x.Next[e]
		x.Group[e] = g
	} else {
		e, appended = int32(len(x.Group)), true
		x.Group = append(x.Group, g)
		x.Next = append(x.Next, -1)
		x.Prev = append(x.Prev, -1)
		if x.At != nil {
			x.At = append(x.At, 0)
		}
	}
	x.Touch(e)
	hd := x.Head[g]
	x.Next[e], x.Prev[e] = hd, -1
	if hd >= 0 {
		x.Prev[hd] = e
	}
	x.Head[g] = e
	x.index.Insert(entryTag(h), e)
	x.used++
	return e, appended
}

// Remove unlinks entry e from its group and the index and frees it; hash(e) is the hash e was
// added with.
func (x *Table) Remove(e int32, hash func(e int32) uint64) {
	g := x.Group[e]
	if p := x.Prev[e]; p >= 0 {
		x.Next[p] = x.Next[e]
	} else {
		x.Head[g] = x.Next[e]
	}
	if n := x.Next[e]; n >= 0 {
		x.Prev[n] = x.Prev[e]
	}
	x.index.Delete(entryTag(hash(e)), e)
	x.used--
	x.Group[e] = -1
	x.Next[e] = x.free
	x.free = e
}

// Entries is the number of entries of group g.
func (x *Table) Entries(g int32) int {
	n := 0
	for e := x.Head[g]; e >= 0; e = x.Next[e] {
		n++
	}
	return n
}

// Bytes is the memory the table holds.
func (x *Table) Bytes() int64 {
	return int64(cap(x.Group))*(4+4+4) + int64(cap(x.At))*8 + int64(cap(x.Head))*4 + x.index.Bytes()
}
