package kernels

import (
	"fmt"

	"github.com/ferrystream/ferry/agg/dataview"
	"github.com/ferrystream/ferry/agg/internal/entries"
	"github.com/ferrystream/ferry/agg/internal/scratch"
	"github.com/ferrystream/ferry/agg/internal/values"
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
// marked kernels:specialize here and in opsValues (go generate).
type minMaxRetractAcc[V comparable, O values.Ops[V]] struct {
	col     int
	fn      string      // "MIN" or "MAX"
	typ     engine.Type // the argument's type (the values' encoding in partial rows)
	max     bool
	ext     []V    // per group: current min (or max), owned by ops
	hasExt  []bool // ext is not NULL
	mapSize []int64
	counts  entries.Counts[V] // values owned by ops
	opsValues[V, O]

	// partial rows (minmax_retract_merge.go): scratch
	keys         engine.OutBatch // the values as keys
	scratchVals  []V
	scratchNulls []bool
	keyCol       dataview.KeyColumn
}

func newMinMaxRetract[V comparable, O values.Ops[V]](fn string, col int, typ engine.Type, ops O) minMaxRetractAcc[V, O] {
	return minMaxRetractAcc[V, O]{col: col, fn: fn, typ: typ, max: fn == "MAX", counts: entries.NewCounts[V](), opsValues: opsValues[V, O]{ops: ops}}
}

func (a *minMaxRetractAcc[V, O]) Grow(n int) {
	a.ext, a.hasExt, a.mapSize = scratch.Extend(a.ext, n), scratch.Extend(a.hasExt, n), scratch.Extend(a.mapSize, n)
	a.counts.GrowGroups(n)
}

func (a *minMaxRetractAcc[V, O]) Reset(g int32) {
	a.ResetValue(g)
	for m := &a.counts; m.Head[g] >= 0; {
		a.ops.Drop(m.Remove(m.Head[g]))
	}
}

// ResetValue implements engine.EntryState: the extreme and mapSize (Flink's accumulator row)
// return to the initial state, the multiset (its MapView's state) stays.
func (a *minMaxRetractAcc[V, O]) ResetValue(g int32) {
	if a.hasExt[g] {
		a.ops.Drop(a.ext[g])
	}
	var zero V
	a.ext[g], a.hasExt[g], a.mapSize[g] = zero, false, 0
}

// LiveEntries implements engine.EntryState.
func (a *minMaxRetractAcc[V, O]) LiveEntries(g int32, nowMs int64) bool {
	return a.counts.Live(g, nowMs)
}

// SweepEntries implements engine.EntryState.
func (a *minMaxRetractAcc[V, O]) SweepEntries(nowMs int64, budget int) {
	a.counts.SweepExpired(nowMs, budget, func(e int32) { a.ops.Drop(a.counts.Remove(e)) })
}

// EntryTable implements entries.Owner.
func (a *minMaxRetractAcc[V, O]) EntryTable() *entries.Table { return &a.counts.Table }

func (a *minMaxRetractAcc[V, O]) Bytes() int64 {
	var zero V
	return int64(cap(a.ext))*int64(sizeOf(zero)) + int64(cap(a.hasExt)) + int64(cap(a.mapSize))*8 +
		a.counts.Bytes() + a.ops.Bytes()
}

//kernels:specialize
func (a *minMaxRetractAcc[V, O]) value(g int32) (V, bool) {
	if a.mapSize[g] > 0 && a.hasExt[g] {
		return a.ext[g], false
	}
	var zero V
	return zero, true
}

// beyond reports whether v would replace ext: ext.compareTo(v) > 0 for MIN, < 0 for MAX.
//
//kernels:specialize
func (a *minMaxRetractAcc[V, O]) beyond(ext, v V) bool {
	if a.max {
		return a.ops.Compare(ext, v) < 0
	}
	return a.ops.Compare(ext, v) > 0
}

//kernels:specialize
func (a *minMaxRetractAcc[V, O]) setExt(g int32, v V) {
	if a.hasExt[g] {
		a.ops.Drop(a.ext[g])
	}
	a.ext[g], a.hasExt[g] = a.ops.Keep(v), true
}

//kernels:specialize
func (a *minMaxRetractAcc[V, O]) clearExt(g int32) {
	if !a.hasExt[g] {
		return
	}
	a.ops.Drop(a.ext[g])
	a.hasExt[g] = false
	if a.ops.Sparse() { // a fixed-width extreme stays as it was, unread: snapshots keep their bytes
		var zero V
		a.ext[g] = zero
	}
}

// tidy compacts the arena of owned values when it is due; recorded values are not read after.
//
//kernels:specialize
func (a *minMaxRetractAcc[V, O]) tidy() {
	if !a.ops.CompactDue() {
		return
	}
	a.ops.CompactStart()
	for g, has := range a.hasExt {
		if has {
			a.ext[g] = a.ops.Move(a.ext[g])
		}
	}
	for e, g := range a.counts.Group {
		if g >= 0 {
			a.counts.Val[e] = a.ops.Move(a.counts.Val[e])
		}
	}
	a.ops.CompactEnd()
}

//kernels:specialize
func (a *minMaxRetractAcc[V, O]) Fold(in *engine.Batch, gids []int32, act []int8, changed []bool) {
	a.tidy()
	col := &in.Cols[a.col]
	a.ops.Bind(in, a.col, true)
	act = act[:in.Len]
	for i, g := range a.rows(in.Len, gids) {
		pv, pn := a.value(g)
		if d := act[i]; d != 0 && !col.IsNull(i) {
			if d > 0 {
				a.accumulate(g, a.ops.At(i))
			} else {
				a.retract(g, a.ops.At(i))
			}
		}
		nv, nn := a.value(g)
		a.note(i, pv, pn, nv, nn, changed)
	}
	a.ops.Unbind()
}

//kernels:specialize
func (a *minMaxRetractAcc[V, O]) accumulate(g int32, v V) {
	if a.mapSize[g] == 0 || !a.hasExt[g] || a.beyond(a.ext[g], v) {
		a.setExt(g, v)
	}
	m := &a.counts
	h := a.ops.Hash(g, v)
	e := a.findLive(g, v, h)
	var c int64 = 1
	if e >= 0 {
		c = m.Cnt[e] + 1
	}
	switch {
	case c == 0: // a -1 brought back to 0
		a.ops.Drop(m.Remove(e))
	case e >= 0:
		m.Cnt[e] = c
		m.Touch(e)
	default:
		m.Insert(g, a.ops.Keep(v), h, c)
	}
	if c == 1 {
		a.mapSize[g]++
	}
}

//kernels:specialize
func (a *minMaxRetractAcc[V, O]) retract(g int32, v V) {
	m := &a.counts
	h := a.ops.Hash(g, v)
	e := a.findLive(g, v, h)
	var c int64 = -1
	if e >= 0 {
		c = m.Cnt[e] - 1
	}
	if c != 0 {
		if e >= 0 {
			m.Cnt[e] = c
			m.Touch(e)
		} else {
			m.Insert(g, a.ops.Keep(v), h, c)
		}
		return // negative counts are not part of mapSize
	}
	a.ops.Drop(m.Remove(e))
	a.mapSize[g]--
	if a.mapSize[g] == 0 {
		a.clearExt(g)
		return
	}
	if a.hasExt[g] && a.ops.Equal(v, a.ext[g]) {
		a.rescan(g)
	}
}

// find returns the entry of value v (hash h = ops.hash(g, v)) in group g, or -1.
//
//kernels:specialize
func (a *minMaxRetractAcc[V, O]) find(g int32, v V, h uint64) int32 {
	m := &a.counts
	for e, pos := m.Probe(h, m.Home(h)); e >= 0; e, pos = m.Probe(h, pos) {
		if m.Hashes[e] == h && m.Group[e] == g && a.ops.Equal(m.Val[e], v) {
			return e
		}
	}
	return -1
}

// findLive is find for a read of the state's multiset: an expired entry reads as absent and is
// deleted (TtlMapState.get under NeverReturnExpired).
//
//kernels:specialize
func (a *minMaxRetractAcc[V, O]) findLive(g int32, v V, h uint64) int32 {
	e := a.find(g, v, h)
	if e >= 0 && a.counts.Expired(e) {
		a.ops.Drop(a.counts.Remove(e))
		return -1
	}
	return e
}

// rescan is Flink's updateMin/updateMax: the extreme over every value of the group, negative
// counts included; no value at all leaves mapSize 0 and the extreme NULL. Expired values are
// skipped and deleted, as TtlMapState's iterator does.
//
//kernels:specialize
func (a *minMaxRetractAcc[V, O]) rescan(g int32) {
	m := &a.counts
	best := int32(-1)
	for e := m.Head[g]; e >= 0; {
		next := m.Next[e]
		if m.Expired(e) {
			a.ops.Drop(m.Remove(e))
		} else if best < 0 || a.beyond(m.Val[best], m.Val[e]) {
			best = e
		}
		e = next
	}
	if best < 0 {
		a.mapSize[g] = 0
		a.clearExt(g)
		return
	}
	a.setExt(g, m.Val[best])
}

// Save writes the extreme (putValue), mapSize, and the group's entries (count, then value,
// count and, with TTL, last write each), newest first.
func (a *minMaxRetractAcc[V, O]) Save(dst []byte, g int32) []byte {
	dst = putValue(a.ops, dst, a.ext[g], a.hasExt[g])
	dst = values.PutVarint(dst, a.mapSize[g])
	m := &a.counts
	dst = values.PutVarint(dst, int64(m.Entries(g)))
	for e := m.Head[g]; e >= 0; e = m.Next[e] {
		dst = values.PutVarint(a.ops.Put(dst, m.Val[e]), m.Cnt[e])
		if m.At != nil {
			dst = values.PutVarint(dst, m.At[e])
		}
	}
	return dst
}

func (a *minMaxRetractAcc[V, O]) Load(src []byte, g int32) ([]byte, error) {
	var err error
	if a.ext[g], a.hasExt[g], src, err = getValue(a.ops, src); err != nil {
		return nil, err
	}
	if a.mapSize[g], src, err = values.GetVarint(src); err != nil {
		return nil, err
	}
	n, src, err := values.GetVarint(src)
	if err != nil {
		return nil, err
	}
	if n < 0 || n > int64(len(src))/2 { // an entry takes at least two bytes
		return nil, fmt.Errorf("%w: value count %d out of range", engine.ErrData, n)
	}
	for range n {
		var v V
		var c int64
		if v, src, err = a.ops.Get(src); err != nil {
			return nil, err
		}
		if c, src, err = values.GetVarint(src); err != nil {
			return nil, err
		}
		var at int64
		if a.counts.At != nil {
			if at, src, err = values.GetVarint(src); err != nil {
				return nil, err
			}
		}
		h := a.ops.Hash(g, v)
		if c == 0 || a.find(g, v, h) >= 0 {
			return nil, fmt.Errorf("%w: invalid value count entry", engine.ErrData)
		}
		a.counts.Insert(g, v, h, c)
		if a.counts.At != nil {
			a.counts.At[a.counts.Head[g]] = at // insert links the entry at the head
		}
	}
	return src, nil
}
