package distinct

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/ferrystream/ferry/agg/dataview"
	"github.com/ferrystream/ferry/agg/internal/entries"
	"github.com/ferrystream/ferry/agg/internal/scratch"
	"github.com/ferrystream/ferry/agg/internal/values"
	"github.com/ferrystream/ferry/engine"
)

// Set is the state Flink keeps for the DISTINCT calls that share one argument column
// (DistinctAggCodeGen): per key, a map from each distinct argument value to a value per call.
// On insert-only input the value is a bit per call — set the first time the call sees the value
// under its FILTER, which is when the call's inner aggregate accumulates. On retracting input it
// is a count per call: the inner aggregate accumulates when the count turns 1 and retracts when
// it turns 0; an entry whose counts are all 0 is removed; counts may go negative.
//
// The set turns each row into one action per call (+1 accumulate, -1 retract, 0 nothing) that
// the call's ordinary accumulator then folds. NULL argument values get no entry unless
// KeepNulls: Flink stores them, but every inner aggregate ignores NULL, so only the two-phase
// local aggregate, whose partial rows carry the map, keeps them (an entry of key length -1).
//
// Pointer-free: entries live in an entries.Table (chained per group, indexed by the hash of
// (group, key)), their keys in one byte arena.
type Set struct {
	col     int   // argument column
	calls   []int // indices of the operator's calls that share this set, in call order
	filters []int // per call: FILTER column, or -1
	retract bool  // counts (retracting input) rather than bits
	nulls   bool  // NULL argument values are entries too (the local aggregate's partial rows)
	typ     engine.Type
	acts    [][]int8

	table   entries.Table // the entries, chained per group
	entOff  []int64       // per entry: key offset in arena
	entLen  []int32
	entHash []uint64 // values.HashBytes(group, key)
	counts  []int64  // len(calls) per entry
	arena   []byte
	garbage int
	keyBuf  []byte

	scratchEntry dataview.Entry // the decoded entry of MergeView and LoadState
}

// NewSet returns the empty set of the DISTINCT calls over argument column col of type typ, with
// counts (retract: retracting input) or bits. Its calls are added with AddCall.
func NewSet(col int, typ engine.Type, retract bool) *Set {
	return &Set{col: col, typ: typ, retract: retract, table: entries.NewTable()}
}

// nullLen is the key length that marks the entry of the NULL key.
const nullLen = -1

// keyLen is the stored length of a key: nullLen for NULL.
func keyLen(key []byte, null bool) int32 {
	if null {
		return nullLen
	}
	return int32(len(key))
}

// hashNullable is values.HashBytes, with NULL apart from every value.
func hashNullable(g int32, key []byte, null bool) uint64 {
	h := values.HashBytes(g, key)
	if null {
		h = ^h
	}
	return h
}

// AddCall adds call, an index of the operator's calls, with its FILTER column (-1: none).
func (d *Set) AddCall(call int, filter int) {
	d.calls = append(d.calls, call)
	d.filters = append(d.filters, filter)
	d.acts = append(d.acts, nil)
}

// KeepNulls makes NULL argument values entries too, as the local aggregate's partial rows carry
// them; call it before the first row.
func (d *Set) KeepNulls() { d.nulls = true }

// Col is the argument column the set's calls share.
func (d *Set) Col() int { return d.col }

// Type is the argument's type.
func (d *Set) Type() engine.Type { return d.typ }

// Retract reports whether the set counts (retracting input) rather than sets a bit per call.
func (d *Set) Retract() bool { return d.retract }

// Calls are the operator's calls that share the set, in call order.
func (d *Set) Calls() []int { return d.calls }

// Acts are, per row of the last Resolve, the actions of the set's c-th call: +1 accumulate,
// -1 retract, 0 nothing. They are reused by the next Resolve.
func (d *Set) Acts(c int) []int8 { return d.acts[c] }

// HasEntries reports whether group g holds an entry, expired or not.
func (d *Set) HasEntries(g int32) bool { return d.table.Head[g] >= 0 }

// Grow implements engine.PerKey.
func (d *Set) Grow(n int) { d.table.GrowGroups(n) }

// Reset implements engine.PerKey: it removes every entry of group g (Flink's cleanup of the
// MapView).
func (d *Set) Reset(g int32) {
	for d.table.Head[g] >= 0 {
		d.remove(d.table.Head[g])
	}
}

// ResetValue implements engine.EntryState: a set has no value state.
func (d *Set) ResetValue(int32) {}

// LiveEntries implements engine.EntryState.
func (d *Set) LiveEntries(g int32, nowMs int64) bool { return d.table.Live(g, nowMs) }

// SweepEntries implements engine.EntryState.
func (d *Set) SweepEntries(nowMs int64, budget int) {
	d.table.SweepExpired(nowMs, budget, d.remove)
}

// EntryTable implements entries.Owner.
func (d *Set) EntryTable() *entries.Table { return &d.table }

// Bytes implements engine.PerKey.
func (d *Set) Bytes() int64 {
	return d.table.Bytes() + int64(cap(d.entOff))*(8+4+8) + int64(cap(d.counts))*8 + int64(cap(d.arena))
}

// key returns the identity bytes of row i's argument: the raw value for fixed-width types (with
// NaN canonical, as Java's Double/Float equals), the UTF-8 bytes for VARCHAR.
func (d *Set) key(col *engine.Column, i int) []byte {
	switch col.Type.ID {
	case engine.Varchar:
		return col.Bytes(i)
	case engine.Boolean:
		d.keyBuf = append(d.keyBuf[:0], 0)
		if col.Bool(i) {
			d.keyBuf[0] = 1
		}
		return d.keyBuf
	case engine.Double:
		v := math.Float64frombits(binary.LittleEndian.Uint64(col.Fixed(i)))
		return binary.LittleEndian.AppendUint64(d.keyBuf[:0], uint64(values.JavaBits(v)))
	case engine.Float:
		v := math.Float32frombits(binary.LittleEndian.Uint32(col.Fixed(i)))
		return binary.LittleEndian.AppendUint32(d.keyBuf[:0], uint32(values.JavaBits(v)))
	}
	return col.Fixed(i)
}

// Resolve computes the action of every call of the set for every row, in row order, updating
// the set as Flink's generated accumulate/retract code would. base[i] is the row's own action.
func (d *Set) Resolve(in *engine.Batch, gids []int32, base []int8) {
	n := in.Len
	col := &in.Cols[d.col]
	for c := range d.calls {
		d.acts[c] = scratch.Resize(d.acts[c], n)
		clear(d.acts[c])
	}
	k := len(d.calls)
	for i, g := range gids[:n] {
		null := col.IsNull(i)
		if g < 0 || (null && !d.nulls) {
			continue
		}
		// A row no filter passes does not touch the set (Flink guards the whole block).
		touched := false
		for _, f := range d.filters {
			if f < 0 || passes(&in.Cols[f], i) {
				touched = true
				break
			}
		}
		if !touched {
			continue
		}
		var key []byte
		if !null {
			key = d.key(col, i)
		}
		h := hashNullable(g, key, null)
		e := d.findLive(g, key, null, h)
		if e < 0 {
			e = d.insert(g, key, null, h)
		}
		cnt := d.counts[int(e)*k : int(e)*k+k]
		changed := false
		for c, f := range d.filters {
			if f >= 0 && !passes(&in.Cols[f], i) {
				continue
			}
			switch {
			case !d.retract: // bit per call; insert-only input
				if cnt[c] == 0 {
					cnt[c] = 1
					d.acts[c][i] = 1
					changed = true
				}
			case base[i] > 0:
				if cnt[c]++; cnt[c] == 1 {
					d.acts[c][i] = 1
				}
			default:
				if cnt[c]--; cnt[c] == 0 {
					d.acts[c][i] = -1
				}
			}
		}
		// Flink puts the entry back when a bit turned on (insert-only input), or whenever the
		// row touched it and some count is not 0 (retracting input; all 0 removes it).
		if d.retract {
			empty := true
			for _, x := range cnt {
				if x != 0 {
					empty = false
				}
			}
			if empty {
				d.remove(e)
			} else {
				d.table.Touch(e)
			}
		} else if changed {
			d.table.Touch(e)
		}
	}
}

// passes reports whether a FILTER column is TRUE at row i.
func passes(f *engine.Column, i int) bool { return !f.IsNull(i) && f.Bool(i) }

// find returns group g's entry of key (NULL when null; h = hashNullable), or -1.
func (d *Set) find(g int32, key []byte, null bool, h uint64) int32 {
	l := keyLen(key, null)
	for e, pos := d.table.Probe(h, d.table.Home(h)); e >= 0; e, pos = d.table.Probe(h, pos) {
		if d.entHash[e] == h && d.table.Group[e] == g && d.entLen[e] == l && string(d.keyOf(e)) == string(key) {
			return e
		}
	}
	return -1
}

// findLive is find for a read of the state's map: an expired entry reads as absent and is
// deleted (TtlMapState.get under NeverReturnExpired).
func (d *Set) findLive(g int32, key []byte, null bool, h uint64) int32 {
	e := d.find(g, key, null, h)
	if e >= 0 && d.table.Expired(e) {
		d.remove(e)
		return -1
	}
	return e
}

// keyOf returns entry e's key bytes (empty for NULL).
func (d *Set) keyOf(e int32) []byte {
	if d.entLen[e] == nullLen {
		return nil
	}
	return d.arena[d.entOff[e] : d.entOff[e]+int64(d.entLen[e])]
}

// insert adds group g's entry of key (NULL when null) with all counts 0.
func (d *Set) insert(g int32, key []byte, null bool, h uint64) int32 {
	k := len(d.calls)
	l := keyLen(key, null)
	e, appended := d.table.Add(g, h)
	if appended {
		d.entOff = append(d.entOff, int64(len(d.arena)))
		d.entLen = append(d.entLen, l)
		d.entHash = append(d.entHash, h)
		d.counts = append(d.counts, make([]int64, k)...)
	} else {
		d.entOff[e], d.entLen[e], d.entHash[e] = int64(len(d.arena)), l, h
		clear(d.counts[int(e)*k : int(e)*k+k])
	}
	d.arena = append(d.arena, key...)
	return e
}

func (d *Set) hash(e int32) uint64 { return d.entHash[e] }

func (d *Set) remove(e int32) {
	d.table.Remove(e, d.hash)
	d.garbage += len(d.keyOf(e))
	if d.garbage > 1<<16 && d.garbage*2 > len(d.arena) {
		d.compact()
	}
}

func (d *Set) compact() {
	arena := make([]byte, 0, len(d.arena)-d.garbage)
	for e, g := range d.table.Group {
		if g >= 0 {
			off := d.entOff[e]
			d.entOff[e] = int64(len(arena))
			if d.entLen[e] != nullLen {
				arena = append(arena, d.arena[off:off+int64(d.entLen[e])]...)
			}
		}
	}
	d.arena, d.garbage = arena, 0
}

// Save implements engine.PerKey: group g's entries, their number, then each key
// (length-prefixed; length -1 for the NULL key), its values and, with TTL, its last write.
func (d *Set) Save(dst []byte, g int32) []byte {
	dst = values.PutVarint(dst, int64(d.table.Entries(g)))
	k := len(d.calls)
	for e := d.table.Head[g]; e >= 0; e = d.table.Next[e] {
		dst = values.PutVarint(dst, int64(d.entLen[e]))
		dst = append(dst, d.keyOf(e)...)
		for _, c := range d.counts[int(e)*k : int(e)*k+k] {
			dst = values.PutVarint(dst, c)
		}
		if d.table.At != nil {
			dst = values.PutVarint(dst, d.table.At[e])
		}
	}
	return dst
}

// Load implements engine.PerKey.
func (d *Set) Load(src []byte, g int32) ([]byte, error) {
	n, src, err := values.GetVarint(src)
	if err != nil {
		return nil, err
	}
	if n < 0 || n > int64(len(src)) {
		return nil, fmt.Errorf("%w: distinct value count %d out of range", engine.ErrData, n)
	}
	k := len(d.calls)
	for range n {
		var l int64
		if l, src, err = values.GetVarint(src); err != nil {
			return nil, err
		}
		null := l == nullLen
		if null {
			l = 0
		}
		if l < 0 || l > int64(len(src)) {
			return nil, fmt.Errorf("%w: distinct key length %d invalid", engine.ErrData, l)
		}
		key := src[:l]
		src = src[l:]
		h := hashNullable(g, key, null)
		if d.find(g, key, null, h) >= 0 {
			return nil, fmt.Errorf("%w: duplicate distinct value", engine.ErrData)
		}
		e := d.insert(g, key, null, h)
		cnt := d.counts[int(e)*k : int(e)*k+k]
		for c := range cnt {
			if cnt[c], src, err = values.GetVarint(src); err != nil {
				return nil, err
			}
		}
		if d.table.At != nil {
			if d.table.At[e], src, err = values.GetVarint(src); err != nil {
				return nil, err
			}
		}
	}
	return src, nil
}
