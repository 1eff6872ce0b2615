package topn

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/ferrystream/ferry/engine"
)

// The state of Flink's own Top-N functions (engine.FlinkState; docs/state.md, "Switching Ferry on
// or off"):
//
//   - AppendOnlyTopNFunction: MapState data-state-with-append, sort key to the list of the key's
//     rows of that sort key in its buffer;
//   - FastTop1Function: ValueState Top1-Rank-State, the key's row;
//   - AppendOnlyFirstNFunction: ValueState counterState, the number of rows the key emitted, with
//     idle-state TTL wrapped in a TtlValue with its last write;
//   - UpdatableTopNFunction: MapState data-state-with-update, row key to the row and its inner
//     rank (its 1-based position among the rows of its sort key, the order the buffer is rebuilt
//     in);
//   - RetractableTopNFunction: MapState data-state, sort key to the list of every row of the key of
//     that sort key, and ValueState sorted-map, sort key to the length of that list (after a
//     retraction of a row the state did not hold the two disagree; Ferry then writes no export).
//
// An import row is a stored row's fields (the input's, the key columns among them), or for
// AppendOnlyFirstN the key's fields, the counter (INT) and with TTL the last write (ms), for
// UpdatableTopN followed by its inner rank (INT). Every
// row of a key comes in one call, those of one sort key in the order of Flink's list; the order
// of the sort keys does not matter. An export row is the key as the bytes of Flink's
// BinaryRowData, then what follows the key fields in the import row (for the row forms: the whole
// row), a key's rows in buffer order.

// exportChunk is the number of keys per chunk of an export.
const exportChunk = 4096

// tail are the columns of an AppendOnlyFirstN import row after the key fields.
func (t *TopN) tail() []engine.Type {
	ts := []engine.Type{{ID: engine.Int}}
	if t.ttl {
		ts = append(ts, engine.Type{ID: engine.BigInt})
	}
	return ts
}

// ImportTypes implements engine.FlinkState.
func (t *TopN) ImportTypes() ([]engine.Type, error) {
	if t.bufs.counts != nil {
		return append(t.keyTypes(), t.tail()...), nil
	}
	return t.rowTypes(), nil
}

// ExportTypes implements engine.FlinkState.
func (t *TopN) ExportTypes() ([]engine.Type, error) {
	ts := []engine.Type{{ID: engine.Binary}}
	if t.bufs.counts != nil {
		return append(ts, t.tail()...), nil
	}
	return append(ts, t.rowTypes()...), nil
}

// rowTypes are the columns of a stored row's import row: its fields, then for UpdatableTopN its
// inner rank.
func (t *TopN) rowTypes() []engine.Type {
	ts := t.layout.Types()
	if t.bufs.rowKey != nil {
		ts = append(slices.Clone(ts), engine.Type{ID: engine.Int})
	}
	return ts
}

// ImportState implements engine.FlinkState: every key must be new to the operator, and hold a
// counter from 1 to the rank end (AppendOnlyFirstN) or one row (FastTop1); on any error no key
// is kept.
func (t *TopN) ImportState(in *engine.Batch) error {
	enc := t.enc
	if t.bufs.counts != nil {
		enc = t.importEnc
	}
	if err := enc.Encode(in); err != nil {
		return err
	}
	var counts, innerRanks []int32
	var lastWrites []int64
	if t.bufs.rowKey != nil {
		innerRanks = engine.Values[int32](&in.Cols[len(t.layout.Types())], in.Len)
		if err := t.checkInnerRanks(in, innerRanks); err != nil {
			return err
		}
	}
	if t.bufs.counts != nil {
		counts = engine.Values[int32](&in.Cols[len(t.keyCols)], in.Len)
		if t.ttl {
			lastWrites = engine.Values[int64](&in.Cols[len(t.keyCols)+1], in.Len)
		}
	}
	t.kgs = t.kgs[:0]
	seen := make(map[string]bool, in.Len)
	for i := range in.Len {
		kg, err := t.state.KeyGroupOf(enc.Hash(i))
		if err != nil {
			return fmt.Errorf("import row %d: %w", i, err)
		}
		t.kgs = append(t.kgs, int32(kg))
		key := enc.Key(i)
		if t.state.Find(key, enc.Hash(i), kg) >= 0 {
			return fmt.Errorf("%w: import row %d: a key that holds state already", engine.ErrData, i)
		}
		if seen[string(key)] && (t.p.Function == FastTop1 || t.p.Function == AppendOnlyFirstN) {
			return fmt.Errorf("%w: import row %d: a second row of a key, which Flink's %s never holds", engine.ErrData, i, t.p.Function)
		}
		seen[string(key)] = true
		if counts != nil && (counts[i] < 1 || int64(counts[i]) > t.p.RankEnd) {
			return fmt.Errorf("%w: import row %d: counter %d outside 1 to the rank end %d, which Flink never writes", engine.ErrData, i, counts[i], t.p.RankEnd)
		}
	}
	order := make([]int, in.Len) // the rows in import order; for UpdatableTopN by inner rank
	for i := range order {
		order[i] = i
	}
	if innerRanks != nil {
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(innerRanks[a], innerRanks[b]) })
	}
	for _, i := range order {
		key, hash, kg := enc.Key(i), enc.Hash(i), int(t.kgs[i])
		id := t.state.Find(key, hash, kg)
		if id < 0 {
			id = t.state.Insert(key, hash, kg)
		}
		if counts != nil {
			t.bufs.counts[id] = counts[i]
			if t.ttl {
				t.state.Touch(id, lastWrites[i])
			}
			continue
		}
		t.row = t.layout.Encode(t.row[:0], in, i)
		t.sk = t.sortKey.encode(t.sk[:0], t.row)
		gi := t.bufs.group(id, t.sk)
		if t.bufs.retract {
			t.bufs.bufs[id].groups[gi].count++
		}
		t.bufs.putAt(id, gi, t.row)
	}
	return nil
}

// checkInnerRanks checks UpdatableTopN import rows: per key, the row keys distinct and the inner
// ranks of each sort key exactly 1 to its number of rows (Flink's rebuild of its buffer otherwise
// loses or misplaces rows).
func (t *TopN) checkInnerRanks(in *engine.Batch, innerRanks []int32) error {
	type keyed struct{ key, sub string }
	rowKeys := map[keyed]bool{}
	ranks := map[keyed][]int32{}
	for i := range in.Len {
		t.row = t.layout.Encode(t.row[:0], in, i)
		key := string(t.enc.Key(i))
		rk := keyed{key, string(t.bufs.rowKey.encode(nil, t.row))}
		if rowKeys[rk] {
			return fmt.Errorf("%w: import row %d: a second row of a row key, which Flink's data-state-with-update never holds", engine.ErrData, i)
		}
		rowKeys[rk] = true
		sk := keyed{key, string(t.sortKey.encode(nil, t.row))}
		ranks[sk] = append(ranks[sk], innerRanks[i])
	}
	for _, rs := range ranks {
		slices.Sort(rs)
		for j, r := range rs {
			if r != int32(j+1) {
				return fmt.Errorf("%w: import: inner ranks %v of a sort key are not 1 to %d, which Flink's buffer is rebuilt from", engine.ErrData, rs, len(rs))
			}
		}
	}
	return nil
}

// ExportState implements engine.FlinkState: the keys of the next exportChunk key ids.
func (t *TopN) ExportState(out *engine.OutBatch, first bool) (bool, error) {
	st := t.state
	if first {
		t.exportNext = 0
	}
	t.sel = st.LiveIDs(t.sel[:0], &t.exportNext, exportChunk)
	var rows [][]byte
	var keys []int32       // per export row: its key id
	var innerRanks []int32 // per export row: its inner rank (UpdatableTopN)
	for _, id := range t.sel {
		if t.bufs.counts != nil {
			keys = append(keys, id)
			continue
		}
		for _, g := range t.bufs.bufs[id].groups {
			if t.bufs.retract && g.count != int64(len(g.rows)) {
				return false, fmt.Errorf("%w: a key's Top-N state holds %d rows of a sort key its count says are %d (a retraction of a row it did not hold went before): Flink's form of it is not written", engine.ErrState, len(g.rows), g.count)
			}
			for j, r := range g.rows {
				rows = append(rows, r)
				keys = append(keys, id)
				innerRanks = append(innerRanks, int32(j+1))
			}
		}
	}
	types, _ := t.ExportTypes()
	vars := make([]int, len(types))
	vars[0] = st.KeyBytes(keys)
	if t.bufs.counts == nil {
		for c, ty := range t.layout.Types() {
			if ty.Variable() {
				vars[1+c] = t.layout.VarBytes(rows, c)
			}
		}
	}
	if err := out.Init(types, len(keys), vars); err != nil || len(keys) == 0 {
		return false, err
	}
	st.WriteKeys(&out.Cols[0], keys)
	if t.bufs.counts != nil {
		counts := engine.OutValues[int32](&out.Cols[1])
		for j, id := range keys {
			counts[j] = t.bufs.counts[id]
		}
		if t.ttl {
			lw := engine.OutValues[int64](&out.Cols[2])
			for j, id := range keys {
				lw[j] = st.LastWrite(id)
			}
		}
	} else {
		for f := range t.layout.Types() {
			t.layout.WriteColumn(&out.Cols[1+f], rows, f)
		}
		if t.bufs.rowKey != nil {
			copy(engine.OutValues[int32](&out.Cols[1+len(t.layout.Types())]), innerRanks)
		}
	}
	out.Finish()
	return t.exportNext < int32(st.Cap()), nil
}
