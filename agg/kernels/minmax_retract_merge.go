package kernels

import (
	"fmt"

	"github.com/ferrystream/ferry/agg/dataview"
	"github.com/ferrystream/ferry/agg/internal/scratch"
	"github.com/ferrystream/ferry/engine"
)

// Partial state of MIN/MAX with retraction: Flink's accumulator row STRUCTURED<min T, mapSize
// BIGINT, map RAW(MapView<T, BIGINT>)>, one VARBINARY value per group in the layout of
// dataview_minmax.go. The local aggregate writes each key's accumulator; the global decodes each
// partial row into a scratch group and merges it as Min/MaxWithRetractAggFunction.merge does
// (mergeGroups).

func (a *minMaxRetractAcc[V, O]) PartialTypes() ([]engine.Type, error) {
	return []engine.Type{dataview.MinMaxType}, nil
}

// valueKeys writes the extreme (when not NULL) and every multiset value of groups, in that order
// per group, to the column keys.Cols[0], whose rows then hold their keys (dataview.KeyAt).
func (a *minMaxRetractAcc[V, O]) valueKeys(groups []int32) *engine.OutColumn {
	vals := a.scratchVals[:0]
	for _, g := range groups {
		if a.hasExt[g] {
			vals = append(vals, a.ext[g])
		}
		for e := a.counts.Head[g]; e >= 0; e = a.counts.Next[e] {
			vals = append(vals, a.counts.Val[e])
		}
	}
	a.scratchVals = vals
	a.scratchNulls = scratch.Resize(a.scratchNulls, len(vals))
	clear(a.scratchNulls)
	if a.keys.Alloc == nil {
		a.keys.Alloc = &scratch.Allocator{}
	}
	n := a.ops.VarBytes(vals, a.scratchNulls, nil)
	t := a.typ
	t.Nullable = false
	_ = a.keys.Init([]engine.Type{t}, len(vals), []int{n}) // a scratch.Allocator never fails
	if len(vals) > 0 {
		a.ops.Write(&a.keys.Cols[0], vals, a.scratchNulls, nil)
	}
	return &a.keys.Cols[0]
}

func (a *minMaxRetractAcc[V, O]) PartialVarBytes(groups []int32, dst []int) {
	dst[0] = a.StateBytes(groups, false)
}

func (a *minMaxRetractAcc[V, O]) WritePartial(out []engine.OutColumn, groups []int32) error {
	a.WriteState(&out[0], groups, false)
	return nil
}

// StateBytes is the encoded size of the accumulators of groups, with each entry's last write
// when times is set (the state form, minmax_retract_state.go).
func (a *minMaxRetractAcc[V, O]) StateBytes(groups []int32, times bool) int {
	l := dataview.MinMaxAcc{Value: a.typ}
	keys := a.valueKeys(groups)
	n := 0
	j := 0
	for _, g := range groups {
		var ext []byte
		if a.hasExt[g] {
			ext = dataview.KeyAt(keys, j)
			j++
		}
		n += l.HeadSize(ext, a.hasExt[g])
		for e := a.counts.Head[g]; e >= 0; e = a.counts.Next[e] {
			n += l.EntrySize(dataview.KeyAt(keys, j), times)
			j++
		}
	}
	return n
}

// WriteState writes the accumulators of groups to col, laid out with stateBytes(groups, times)
// bytes; times (only with TTL) writes each entry's last write after its count.
func (a *minMaxRetractAcc[V, O]) WriteState(col *engine.OutColumn, groups []int32, times bool) {
	l := dataview.MinMaxAcc{Value: a.typ}
	keys := a.valueKeys(groups)
	pos, j := 0, 0
	for r, g := range groups {
		col.Offs[r] = int32(pos)
		var ext []byte
		if a.hasExt[g] {
			ext = dataview.KeyAt(keys, j)
			j++
		}
		b := l.AppendHead(col.Data[pos:pos:len(col.Data)], ext, a.hasExt[g], a.mapSize[g])
		for e := a.counts.Head[g]; e >= 0; e = a.counts.Next[e] {
			var at int64
			if times {
				at = a.counts.At[e]
			}
			b = l.AppendEntry(b, dataview.KeyAt(keys, j), a.counts.Cnt[e], times, at)
			j++
		}
		pos += len(b)
	}
	col.Offs[len(groups)] = int32(pos)
}

// Merge decodes each row's accumulator into a scratch group past the groups in use and merges
// it into group gids[i] (mergeGroups). Malformed input changes nothing.
func (a *minMaxRetractAcc[V, O]) Merge(in *engine.Batch, first int, gids []int32, changed []bool) error {
	if err := checkPartial(in, first, []engine.Type{dataview.MinMaxType}); err != nil {
		return err
	}
	col := &in.Cols[first]
	rows := gids[:in.Len]
	l := dataview.MinMaxAcc{Value: a.typ}
	var dec dataview.DecodedMinMax
	a.keyCol.Reset(a.typ)
	var src, dst []int32
	for i, g := range rows {
		if g < 0 {
			continue
		}
		if col.IsNull(i) {
			return fmt.Errorf("%w: accumulator at row %d is NULL, which Flink's local aggregate never writes", engine.ErrData, i)
		}
		if err := l.Decode(col.Bytes(i), &dec); err != nil {
			return fmt.Errorf("row %d: %w", i, err)
		}
		a.keyCol.Add(dec.Ext)
		for _, k := range dec.Keys {
			a.keyCol.Add(k)
		}
	}
	// Decode into scratch groups [base, base+n), merge, then clear them.
	base := int32(len(a.mapSize))
	a.Grow(int(base) + len(rows))
	keys := engine.Batch{Len: a.keyCol.Rows, Cols: []engine.Column{a.keyCol.Col}}
	a.ops.Bind(&keys, 0, false)
	k := 0
	for i, g := range rows {
		if g < 0 {
			continue
		}
		_ = l.Decode(col.Bytes(i), &dec)
		s := base + int32(len(src))
		if dec.Ext != nil {
			a.ext[s], a.hasExt[s] = a.ops.Keep(a.ops.At(k)), true
		}
		k++
		a.mapSize[s] = dec.MapSize
		for j, c := range dec.Counts {
			v := a.ops.At(k)
			k++
			h := a.ops.Hash(s, v)
			if a.find(s, v, h) >= 0 {
				a.ops.Unbind()
				a.clearScratch(base, s+1)
				return fmt.Errorf("%w: row %d: accumulator's map holds a value twice (entry %d)", engine.ErrData, i, j)
			}
			a.counts.Insert(s, a.ops.Keep(v), h, c)
		}
		src, dst = append(src, s), append(dst, g)
	}
	a.ops.Unbind()
	a.mergeRows(src, dst, rows, changed)
	a.clearScratch(base, base+int32(len(src)))
	return nil
}

// clearScratch resets the scratch groups [from, to).
func (a *minMaxRetractAcc[V, O]) clearScratch(from, to int32) {
	for s := from; s < to; s++ {
		a.Reset(s)
	}
}

// mergeRows merges scratch group src[k] into dst[k], recording values per input row as merge's
// contract says: the k-th merged row is the k-th row of rows with a group.
func (a *minMaxRetractAcc[V, O]) mergeRows(src, dst, rows []int32, changed []bool) {
	if len(src) == len(rows) {
		a.mergeGroups(a, src, dst, changed)
		return
	}
	// Some rows are skipped: merge the others one by one, recording at their own index.
	a.rowValues.reset(len(rows))
	k := 0
	for i, g := range rows {
		if g < 0 {
			continue
		}
		pv, pn := a.value(g)
		a.mergeGroup(a, src[k], g)
		nv, nn := a.value(g)
		a.note(i, pv, pn, nv, nn, changed)
		k++
	}
}

// GroupMerger is implemented by accumulators whose partial state merges in Go only (a MapView
// in Flink): MergeGroupsFrom merges group src[i] of from, an accumulator of the same call
// built the same way, into group dst[i], recording values as Merge does for rows.
type GroupMerger interface {
	MergeGroupsFrom(from Accumulator, src, dst []int32, changed []bool)
}

//kernels:specialize
func (a *minMaxRetractAcc[V, O]) MergeGroupsFrom(from Accumulator, src, dst []int32, changed []bool) {
	a.mergeGroups(from.(*minMaxRetractAcc[V, O]), src, dst, changed)
}

// mergeGroups merges group src[i] of from into group dst[i] of a, for each i in order, as
// Min/MaxWithRetractAggFunction.merge merges one accumulator into another:
//
//   - the other's extreme replaces this one when this mapSize is 0, or when the other's mapSize
//     is positive, its extreme not NULL and beyond this one (compareTo);
//   - each of the other's (value, count) entries adds its count to this multiset; an entry
//     whose sum is 0 is removed; mapSize drops by one when a positive count ends at or below 0
//     and grows by one when a count at or below 0 ends positive;
//   - when a positive count of the current extreme ended at or below 0, the extreme is
//     recomputed over every value once the entries are merged (updateMin/updateMax).
//
// from may be a itself, with src[i] != dst[i]; both must be the same function (MIN or MAX).
// Like Fold for rows, it records dst[i]'s value before and after as entries 2i and 2i+1
// (Write, Differ) and sets changed[i] when they differ under Flink's equaliser.
//
//kernels:specialize
func (a *minMaxRetractAcc[V, O]) mergeGroups(from *minMaxRetractAcc[V, O], src, dst []int32, changed []bool) {
	a.tidy()
	if from != a {
		from.tidy()
	}
	a.rowValues.reset(len(src))
	for i, s := range src {
		d := dst[i]
		pv, pn := a.value(d)
		a.mergeGroup(from, s, d)
		nv, nn := a.value(d)
		a.note(i, pv, pn, nv, nn, changed)
	}
}

//kernels:specialize
func (a *minMaxRetractAcc[V, O]) mergeGroup(from *minMaxRetractAcc[V, O], s, d int32) {
	if a.mapSize[d] == 0 || (from.mapSize[s] > 0 && from.hasExt[s] && (!a.hasExt[d] || a.beyondFrom(a.ext[d], from, from.ext[s]))) {
		if from.hasExt[s] {
			if a.hasExt[d] {
				a.ops.Drop(a.ext[d])
			}
			a.ext[d], a.hasExt[d] = a.ops.KeepFrom(from.ops, from.ext[s]), true
		} else {
			a.clearExt(d)
		}
	}
	m := &a.counts
	rescan := false
	for e := from.counts.Head[s]; e >= 0; e = from.counts.Next[e] {
		// Copy the key into a's arena first (a no-op for fixed-width values): hashing and
		// equality read it through a's ops.
		k := a.ops.KeepFrom(from.ops, from.counts.Val[e])
		other := from.counts.Cnt[e]
		h := a.ops.Hash(d, k)
		x := a.findLive(d, k, h)
		var this int64
		if x >= 0 {
			this = m.Cnt[x]
		}
		merged := other + this
		switch {
		case merged == 0:
			a.ops.Drop(m.Remove(x)) // other != 0, so the entry existed
		case x >= 0:
			m.Cnt[x] = merged
			m.Touch(x)
		default:
			m.Insert(d, k, h, merged)
		}
		if x >= 0 || merged == 0 {
			a.ops.Drop(k) // the multiset keeps its own key object
		}
		switch {
		case merged <= 0 && this > 0:
			a.mapSize[d]--
			if a.hasExt[d] && a.ops.Equal(k, a.ext[d]) {
				rescan = true
			}
		case merged > 0 && this <= 0:
			a.mapSize[d]++
		}
	}
	if rescan {
		a.rescan(d)
	}
}

// beyondFrom is beyond for a candidate v owned by from's ops.
//
//kernels:specialize
func (a *minMaxRetractAcc[V, O]) beyondFrom(ext V, from *minMaxRetractAcc[V, O], v V) bool {
	k := a.ops.KeepFrom(from.ops, v)
	b := a.beyond(ext, k)
	a.ops.Drop(k)
	return b
}
