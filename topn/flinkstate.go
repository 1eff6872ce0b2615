package topn

import (
	"fmt"

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
//   - RetractableTopNFunction: MapState data-state, sort key to the list of every row of the key of
//     that sort key, and ValueState sorted-map, sort key to the length of that list (after a
//     retraction of a row the state did not hold the two disagree; Ferry then writes no export).
//
// An import row is a stored row's fields (the input's, the key columns among them), or for
// AppendOnlyFirstN the key's fields, the counter (INT) and with TTL the last write (ms). Every
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
	return t.layout.Types(), nil
}

// ExportTypes implements engine.FlinkState.
func (t *TopN) ExportTypes() ([]engine.Type, error) {
	ts := []engine.Type{{ID: engine.Binary}}
	if t.bufs.counts != nil {
		return append(ts, t.tail()...), nil
	}
	return append(ts, t.layout.Types()...), nil
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
	var counts []int32
	var lastWrites []int64
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
	for i := range in.Len {
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
		if t.bufs.retract {
			t.bufs.bufs[id].groups[t.bufs.group(id, t.sk)].count++
		}
		t.bufs.put(id, t.sk, t.row)
	}
	return nil
}

// ExportState implements engine.FlinkState: the keys of the next exportChunk key ids.
func (t *TopN) ExportState(out *engine.OutBatch, first bool) (bool, error) {
	st := t.state
	if first {
		t.exportNext = 0
	}
	t.sel = t.sel[:0]
	var rows [][]byte
	var keys []int32 // per export row: its key id
	for ; t.exportNext < int32(st.Cap()) && len(t.sel) < exportChunk; t.exportNext++ {
		id := t.exportNext
		if !st.Live(id) {
			continue
		}
		t.sel = append(t.sel, id)
		if t.bufs.counts != nil {
			keys = append(keys, id)
			continue
		}
		for _, g := range t.bufs.bufs[id].groups {
			if t.bufs.retract && g.count != int64(len(g.rows)) {
				return false, fmt.Errorf("%w: a key's Top-N state holds %d rows of a sort key its count says are %d (a retraction of a row it did not hold went before): Flink's form of it is not written", engine.ErrState, len(g.rows), g.count)
			}
			for _, r := range g.rows {
				rows = append(rows, r)
				keys = append(keys, id)
			}
		}
	}
	types, _ := t.ExportTypes()
	vars := make([]int, len(types))
	for _, id := range keys {
		vars[0] += len(st.Key(id))
	}
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
	kc := &out.Cols[0]
	pos := int32(0)
	for j, id := range keys {
		kc.Offs[j] = pos
		pos += int32(copy(kc.Data[pos:], st.Key(id)))
	}
	kc.Offs[len(keys)] = pos
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
	}
	out.Finish()
	return t.exportNext < int32(st.Cap()), nil
}
