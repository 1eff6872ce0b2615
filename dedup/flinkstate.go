package dedup

import (
	"fmt"

	"github.com/ferrystream/ferry/engine"
)

// The state of Flink's own deduplicate functions (engine.FlinkState; docs/state.md, "Switching
// Ferry on or off"), every form but the insert-only row-time keep-first (whose waiting rows sit
// beside Flink's timers): one ValueState "deduplicate-state" per key, a Boolean for the
// processing-time keep-first forms, the key's stored row for the others, with idle-state TTL
// wrapped in a TtlValue with its last write.
//
// An import row is, for the keep-first processing-time forms, the key's fields; for the others
// the stored row's fields (the input's, the key columns among them) and its RowKind (TINYINT,
// +I or +U: the kind Flink's row object carried when the state was written); then, with TTL, the
// last write (ms). An export row is the key as the bytes of Flink's BinaryRowData, then what
// follows the key fields in the import row (for the row forms: the whole row).

// exportChunk is the number of keys per chunk of an export.
const exportChunk = 4096

// flinkState is what the operator offers as engine.FlinkState: itself, except in the insert-only
// row-time keep-first form.
func (d *Dedup) flinkState() engine.FlinkState {
	if d.p.OutputInsertOnly {
		return nil
	}
	return d
}

// keyTypes are the types of the key columns.
func (d *Dedup) keyTypes() []engine.Type {
	var ts []engine.Type
	for _, k := range d.keyCols {
		ts = append(ts, d.layout.Types()[k])
	}
	return ts
}

// tail are the columns of an import row after the key fields, or for the row forms after the
// row: the RowKind, then with TTL the last write.
func (d *Dedup) tail() []engine.Type {
	var ts []engine.Type
	if d.rows != nil {
		ts = append(ts, engine.Type{ID: engine.TinyInt})
	}
	if d.ttl {
		ts = append(ts, engine.Type{ID: engine.BigInt})
	}
	return ts
}

// ImportTypes implements engine.FlinkState.
func (d *Dedup) ImportTypes() ([]engine.Type, error) {
	if d.rows != nil {
		return append(append([]engine.Type(nil), d.layout.Types()...), d.tail()...), nil
	}
	return append(d.keyTypes(), d.tail()...), nil
}

// ExportTypes implements engine.FlinkState.
func (d *Dedup) ExportTypes() ([]engine.Type, error) {
	ts := []engine.Type{{ID: engine.Binary}}
	if d.rows != nil {
		ts = append(ts, d.layout.Types()...)
	}
	return append(ts, d.tail()...), nil
}

// ImportState implements engine.FlinkState: every key must be new (to the operator and within
// the batch), every stored row +I or +U; on any error no key is kept.
func (d *Dedup) ImportState(in *engine.Batch) error {
	enc, at := d.enc, len(d.layout.Types()) // the key columns and the first column after the fields
	if d.rows == nil {
		enc, at = d.importEnc, len(d.keyCols)
	}
	if err := enc.Encode(in); err != nil {
		return err
	}
	var kinds []int8
	if d.rows != nil {
		kinds = engine.Values[int8](&in.Cols[at], in.Len)
		at++
	}
	var lastWrites []int64
	if d.ttl {
		lastWrites = engine.Values[int64](&in.Cols[at], in.Len)
	}
	d.kgs = d.kgs[:0]
	seen := make(map[string]bool, in.Len)
	for i := range in.Len {
		kg, err := d.state.KeyGroupOf(enc.Hash(i))
		if err != nil {
			return fmt.Errorf("import row %d: %w", i, err)
		}
		d.kgs = append(d.kgs, int32(kg))
		key := enc.Key(i)
		if seen[string(key)] || d.state.Find(key, enc.Hash(i), kg) >= 0 {
			return fmt.Errorf("%w: import row %d: a key that holds state already", engine.ErrData, i)
		}
		seen[string(key)] = true
		if kinds != nil && kinds[i] != int8(engine.Insert) && kinds[i] != int8(engine.UpdateAfter) {
			return fmt.Errorf("%w: import row %d: a stored row of RowKind %d, which Flink never stores", engine.ErrData, i, kinds[i])
		}
	}
	for i := range in.Len {
		id := d.state.Insert(enc.Key(i), enc.Hash(i), int(d.kgs[i]))
		if d.rows != nil {
			d.rows.set(id, d.encode(in, i))
			if kinds[i] == int8(engine.UpdateAfter) {
				d.rows.flags[id] = storedAsUpdate
			}
		}
		if d.ttl {
			d.state.Touch(id, lastWrites[i])
		}
	}
	return nil
}

// ExportState implements engine.FlinkState: the next exportChunk keys in id order.
func (d *Dedup) ExportState(out *engine.OutBatch, first bool) (bool, error) {
	st := d.state
	if first {
		d.exportNext = 0
	}
	d.sel = st.LiveIDs(d.sel[:0], &d.exportNext, exportChunk)
	types, _ := d.ExportTypes()
	vars := make([]int, len(types))
	vars[0] = st.KeyBytes(d.sel)
	var rows [][]byte
	if d.rows != nil {
		for _, id := range d.sel {
			rows = append(rows, d.rows.row(id))
		}
		for c, t := range d.layout.Types() {
			if t.Variable() {
				vars[1+c] = d.layout.VarBytes(rows, c)
			}
		}
	}
	if err := out.Init(types, len(d.sel), vars); err != nil || len(d.sel) == 0 {
		return false, err
	}
	st.WriteKeys(&out.Cols[0], d.sel)
	c := 1
	if d.rows != nil {
		for f := range d.layout.Types() {
			d.layout.WriteColumn(&out.Cols[c], rows, f)
			c++
		}
		kinds := engine.OutValues[int8](&out.Cols[c])
		for j, id := range d.sel {
			kinds[j] = int8(engine.Insert)
			if d.rows.flags[id]&storedAsUpdate != 0 {
				kinds[j] = int8(engine.UpdateAfter)
			}
		}
		c++
	}
	if d.ttl {
		lw := engine.OutValues[int64](&out.Cols[c])
		for j, id := range d.sel {
			lw[j] = st.LastWrite(id)
		}
	}
	out.Finish()
	return d.exportNext < int32(st.Cap()), nil
}
