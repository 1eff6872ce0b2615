package agg

import (
	"fmt"

	"github.com/ferrystream/ferry/engine"
)

// minMaxRetractAcc is MIN or MAX with retraction: Flink's Min/MaxWithRetractAggFunction, step
// for step, for numbers, DECIMAL and VARCHAR alike (ops). Per group it keeps the current
// extreme, mapSize (the number of values whose count is positive) and a value→count multiset
// in which counts may go negative. Retracting the current extreme down to count 0 rescans every
// value of the group, negative counts included. The value is the extreme while mapSize > 0,
// else NULL.
//
// Flink's accumulator is STRUCTURED<min/max, mapSize BIGINT, map MAP_VIEW<T, BIGINT>>; its
// partial state crosses between the local and global aggregates as one VARBINARY value
// (minmax_retract_merge.go). Two accumulators merge with mergeGroups.
//
// The accumulators are its specializations numMinMaxRetractAcc, decMinMaxRetractAcc and
// strMinMaxRetractAcc (kernels_gen.go), whose per-row methods are generated from the ones
// marked agg:specialize.
type minMaxRetractAcc[V comparable, O valueOps[V]] struct {
	col     int
	fn      string      // "MIN" or "MAX"
	typ     engine.Type // the argument's type (the values' encoding in partial rows)
	max     bool
	ops     O
	ext     []V    // per group: current min (or max), owned by ops
	hasExt  []bool // ext is not NULL
	mapSize []int64
	counts  valueCounts[V] // values owned by ops
	rowValues[V]

	// partial rows (minmax_retract_merge.go): scratch
	keys         engine.OutBatch // the values as keys
	scratchVals  []V
	scratchNulls []bool
	keyCol       KeyColumn
}

func newMinMaxRetract[V comparable, O valueOps[V]](fn string, col int, typ engine.Type, ops O) minMaxRetractAcc[V, O] {
	return minMaxRetractAcc[V, O]{col: col, fn: fn, typ: typ, max: fn == "MAX", ops: ops, counts: newValueCounts[V]()}
}

func (a *minMaxRetractAcc[V, O]) Grow(n int) {
	a.ext, a.hasExt, a.mapSize = extend(a.ext, n), extend(a.hasExt, n), extend(a.mapSize, n)
	a.counts.growGroups(n)
}

func (a *minMaxRetractAcc[V, O]) Reset(g int32) {
	a.ResetValue(g)
	for m := &a.counts; m.head[g] >= 0; {
		a.ops.drop(m.remove(m.head[g]))
	}
}

// ResetValue implements engine.EntryState: the extreme and mapSize (Flink's accumulator row)
// return to the initial state, the multiset (its MapView's state) stays.
func (a *minMaxRetractAcc[V, O]) ResetValue(g int32) {
	if a.hasExt[g] {
		a.ops.drop(a.ext[g])
	}
	var zero V
	a.ext[g], a.hasExt[g], a.mapSize[g] = zero, false, 0
}

// LiveEntries implements engine.EntryState.
func (a *minMaxRetractAcc[V, O]) LiveEntries(g int32, nowMs int64) bool {
	return a.counts.live(g, nowMs)
}

// SweepEntries implements engine.EntryState.
func (a *minMaxRetractAcc[V, O]) SweepEntries(nowMs int64, budget int) {
	a.counts.sweepExpired(nowMs, budget, func(e int32) { a.ops.drop(a.counts.remove(e)) })
}

// entryTable implements entryOwner.
func (a *minMaxRetractAcc[V, O]) entryTable() *groupEntries { return &a.counts.groupEntries }

func (a *minMaxRetractAcc[V, O]) Bytes() int64 {
	var zero V
	return int64(cap(a.ext))*int64(sizeOf(zero)) + int64(cap(a.hasExt)) + int64(cap(a.mapSize))*8 +
		a.counts.bytes() + a.ops.bytes()
}

//agg:specialize
func (a *minMaxRetractAcc[V, O]) value(g int32) (V, bool) {
	if a.mapSize[g] > 0 && a.hasExt[g] {
		return a.ext[g], false
	}
	var zero V
	return zero, true
}

// beyond reports whether v would replace ext: ext.compareTo(v) > 0 for MIN, < 0 for MAX.
//
//agg:specialize
func (a *minMaxRetractAcc[V, O]) beyond(ext, v V) bool {
	if a.max {
		return a.ops.compare(ext, v) < 0
	}
	return a.ops.compare(ext, v) > 0
}

//agg:specialize
func (a *minMaxRetractAcc[V, O]) setExt(g int32, v V) {
	if a.hasExt[g] {
		a.ops.drop(a.ext[g])
	}
	a.ext[g], a.hasExt[g] = a.ops.keep(v), true
}

//agg:specialize
func (a *minMaxRetractAcc[V, O]) clearExt(g int32) {
	if !a.hasExt[g] {
		return
	}
	a.ops.drop(a.ext[g])
	a.hasExt[g] = false
	if a.ops.sparse() { // a fixed-width extreme stays as it was, unread: snapshots keep their bytes
		var zero V
		a.ext[g] = zero
	}
}

// note records row i's values and flags it changed under Flink's equaliser.
//
//agg:specialize
func (a *minMaxRetractAcc[V, O]) note(i int, pv V, pn bool, nv V, nn bool, changed []bool) {
	a.store(i, pv, pn, nv, nn)
	if pn != nn || (!nn && pv != nv && !a.ops.same(pv, nv)) {
		changed[i] = true
	}
}

// tidy compacts the arena of owned values when it is due; recorded values are not read after.
//
//agg:specialize
func (a *minMaxRetractAcc[V, O]) tidy() {
	if !a.ops.compactDue() {
		return
	}
	a.ops.compactStart()
	for g, has := range a.hasExt {
		if has {
			a.ext[g] = a.ops.move(a.ext[g])
		}
	}
	for e, g := range a.counts.group {
		if g >= 0 {
			a.counts.val[e] = a.ops.move(a.counts.val[e])
		}
	}
	a.ops.compactEnd()
}

//agg:specialize
func (a *minMaxRetractAcc[V, O]) fold(in *engine.Batch, gids []int32, act []int8, changed []bool) {
	a.tidy()
	a.rowValues.reset(in.Len)
	col := &in.Cols[a.col]
	a.ops.bind(in, a.col, true)
	act = act[:in.Len]
	gids = gids[:in.Len]
	for i, g := range gids {
		if g < 0 {
			continue
		}
		pv, pn := a.value(g)
		if d := act[i]; d != 0 && !col.IsNull(i) {
			if d > 0 {
				a.accumulate(g, a.ops.at(i))
			} else {
				a.retract(g, a.ops.at(i))
			}
		}
		nv, nn := a.value(g)
		a.note(i, pv, pn, nv, nn, changed)
	}
	a.ops.unbind()
}

//agg:specialize
func (a *minMaxRetractAcc[V, O]) accumulate(g int32, v V) {
	if a.mapSize[g] == 0 || !a.hasExt[g] || a.beyond(a.ext[g], v) {
		a.setExt(g, v)
	}
	m := &a.counts
	h := a.ops.hash(g, v)
	e := a.findLive(g, v, h)
	var c int64 = 1
	if e >= 0 {
		c = m.cnt[e] + 1
	}
	switch {
	case c == 0: // a -1 brought back to 0
		a.ops.drop(m.remove(e))
	case e >= 0:
		m.cnt[e] = c
		m.touch(e)
	default:
		m.insert(g, a.ops.keep(v), h, c)
	}
	if c == 1 {
		a.mapSize[g]++
	}
}

//agg:specialize
func (a *minMaxRetractAcc[V, O]) retract(g int32, v V) {
	m := &a.counts
	h := a.ops.hash(g, v)
	e := a.findLive(g, v, h)
	var c int64 = -1
	if e >= 0 {
		c = m.cnt[e] - 1
	}
	if c != 0 {
		if e >= 0 {
			m.cnt[e] = c
			m.touch(e)
		} else {
			m.insert(g, a.ops.keep(v), h, c)
		}
		return // negative counts are not part of mapSize
	}
	a.ops.drop(m.remove(e))
	a.mapSize[g]--
	if a.mapSize[g] == 0 {
		a.clearExt(g)
		return
	}
	if a.hasExt[g] && a.ops.equal(v, a.ext[g]) {
		a.rescan(g)
	}
}

// find returns the entry of value v (hash h = ops.hash(g, v)) in group g, or -1.
//
//agg:specialize
func (a *minMaxRetractAcc[V, O]) find(g int32, v V, h uint64) int32 {
	m := &a.counts
	for e, pos := m.probe(h, m.home(h)); e >= 0; e, pos = m.probe(h, pos) {
		if m.hashes[e] == h && m.group[e] == g && a.ops.equal(m.val[e], v) {
			return e
		}
	}
	return -1
}

// findLive is find for a read of the state's multiset: an expired entry reads as absent and is
// deleted (TtlMapState.get under NeverReturnExpired).
//
//agg:specialize
func (a *minMaxRetractAcc[V, O]) findLive(g int32, v V, h uint64) int32 {
	e := a.find(g, v, h)
	if e >= 0 && a.counts.expired(e) {
		a.ops.drop(a.counts.remove(e))
		return -1
	}
	return e
}

// rescan is Flink's updateMin/updateMax: the extreme over every value of the group, negative
// counts included; no value at all leaves mapSize 0 and the extreme NULL. Expired values are
// skipped and deleted, as TtlMapState's iterator does.
//
//agg:specialize
func (a *minMaxRetractAcc[V, O]) rescan(g int32) {
	m := &a.counts
	best := int32(-1)
	for e := m.head[g]; e >= 0; {
		next := m.next[e]
		if m.expired(e) {
			a.ops.drop(m.remove(e))
		} else if best < 0 || a.beyond(m.val[best], m.val[e]) {
			best = e
		}
		e = next
	}
	if best < 0 {
		a.mapSize[g] = 0
		a.clearExt(g)
		return
	}
	a.setExt(g, m.val[best])
}

//agg:specialize
func (a *minMaxRetractAcc[V, O]) differ(p, q int32) bool {
	return a.nulls[p] != a.nulls[q] || (!a.nulls[q] && a.vals[p] != a.vals[q] && !a.ops.same(a.vals[p], a.vals[q]))
}

//agg:specialize
func (a *minMaxRetractAcc[V, O]) write(out *engine.OutColumn, pick []int32) {
	a.ops.write(out, a.vals, a.nulls, pick)
}

// Save writes the extreme (a NULL flag, then the value unless ops are sparse and it is NULL),
// mapSize, and the group's entries (count, then value, count and, with TTL, last write each),
// newest first.
func (a *minMaxRetractAcc[V, O]) Save(dst []byte, g int32) []byte {
	dst = putBool(dst, a.hasExt[g])
	if a.hasExt[g] || !a.ops.sparse() {
		dst = a.ops.put(dst, a.ext[g])
	}
	dst = putVarint(dst, a.mapSize[g])
	m := &a.counts
	dst = putVarint(dst, int64(m.entries(g)))
	for e := m.head[g]; e >= 0; e = m.next[e] {
		dst = putVarint(a.ops.put(dst, m.val[e]), m.cnt[e])
		if m.at != nil {
			dst = putVarint(dst, m.at[e])
		}
	}
	return dst
}

func (a *minMaxRetractAcc[V, O]) Load(src []byte, g int32) ([]byte, error) {
	var err error
	if a.hasExt[g], src, err = getBool(src); err != nil {
		return nil, err
	}
	if a.hasExt[g] || !a.ops.sparse() {
		if a.ext[g], src, err = a.ops.get(src); err != nil {
			a.hasExt[g] = false
			return nil, err
		}
	}
	if a.mapSize[g], src, err = getVarint(src); err != nil {
		return nil, err
	}
	n, src, err := getVarint(src)
	if err != nil {
		return nil, err
	}
	if n < 0 || n > int64(len(src))/2 { // an entry takes at least two bytes
		return nil, fmt.Errorf("%w: value count %d out of range", engine.ErrData, n)
	}
	for range n {
		var v V
		var c int64
		if v, src, err = a.ops.get(src); err != nil {
			return nil, err
		}
		if c, src, err = getVarint(src); err != nil {
			return nil, err
		}
		var at int64
		if a.counts.at != nil {
			if at, src, err = getVarint(src); err != nil {
				return nil, err
			}
		}
		h := a.ops.hash(g, v)
		if c == 0 || a.find(g, v, h) >= 0 {
			return nil, fmt.Errorf("%w: invalid value count entry", engine.ErrData)
		}
		a.counts.insert(g, v, h, c)
		if a.counts.at != nil {
			a.counts.at[a.counts.head[g]] = at // insert links the entry at the head
		}
	}
	return src, nil
}
