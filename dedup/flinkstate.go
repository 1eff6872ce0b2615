package dedup

import (
	"encoding/binary"
	"fmt"

	"github.com/ferrystream/ferry/engine"
)

// The state of Flink's own deduplicate functions (engine.FlinkState; docs/state.md, "Switching
// Ferry on or off"). Every form but the insert-only row-time keep-first keeps one ValueState
// "deduplicate-state" per key, a Boolean for the processing-time keep-first forms, the key's
// stored row for the others, with idle-state TTL wrapped in a TtlValue with its last write.
//
// An import row is, for the keep-first processing-time forms, the key's fields; for the others
// the stored row's fields (the input's, the key columns among them) and its RowKind (TINYINT,
// +I or +U: the kind Flink's row object carried when the state was written); then, with TTL, the
// last write (ms). An export row is the key as the bytes of Flink's BinaryRowData, then what
// follows the key fields in the import row (for the row forms: the whole row).
//
// The insert-only row-time keep-first (RowTimeDeduplicateKeepFirstRowFunction) keeps per key
// "waiting-to-emit-on-timer", a ValueState<RowData> without TTL (the earliest row not emitted
// yet), "already-emitted-state-boolean", a ValueState<Boolean> (TtlValue with TTL), and one
// event-time timer in the "user-timers" timer service at the waiting row's row time. Its import
// row is the key's fields, then waitingColumns: the waiting row's fields (all nullable, NULL
// without one), its RowKind (NULL: no waiting row; else +I), the emitted flag (NULL: unset), the
// key's timer and its position in the iteration of Flink's timer queue (NULL: none; the position
// orders timers of equal time across keys, as engine.TimerService.ImportFlink takes it), and with
// TTL the emitted flag's last write (NULL without the flag). A key holds a waiting row with its
// timer at the row's time, or the emitted flag (true), never both: Flink's function reads the
// flag before it stores a row, which clears an expired one.

// The columns of the insert-only row-time keep-first after the waiting row's fields.
const (
	waitKind = iota
	waitEmitted
	waitTimer
	waitPosition
	waitLastWrite // with TTL only
)

// exportChunk is the number of keys per chunk of an export.
const exportChunk = 4096

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

// waitingColumns are the columns of an import row of the insert-only row-time keep-first after
// the key fields, all nullable: the waiting row's fields, then the columns named wait*.
func (d *Dedup) waitingColumns() []engine.Type {
	n := func(id engine.TypeID) engine.Type { return engine.Type{ID: id, Nullable: true} }
	var ts []engine.Type
	for _, t := range d.layout.Types() {
		t.Nullable = true
		ts = append(ts, t)
	}
	ts = append(ts, n(engine.TinyInt), n(engine.Boolean), n(engine.BigInt), n(engine.BigInt))
	if d.ttl {
		ts = append(ts, n(engine.BigInt))
	}
	return ts
}

// ImportTypes implements engine.FlinkState.
func (d *Dedup) ImportTypes() ([]engine.Type, error) {
	if d.p.OutputInsertOnly {
		return append(d.keyTypes(), d.waitingColumns()...), nil
	}
	if d.rows != nil {
		return append(append([]engine.Type(nil), d.layout.Types()...), d.tail()...), nil
	}
	return append(d.keyTypes(), d.tail()...), nil
}

// ExportTypes implements engine.FlinkState.
func (d *Dedup) ExportTypes() ([]engine.Type, error) {
	ts := []engine.Type{{ID: engine.Binary}}
	if d.p.OutputInsertOnly {
		return append(ts, d.waitingColumns()...), nil
	}
	if d.rows != nil {
		ts = append(ts, d.layout.Types()...)
	}
	return append(ts, d.tail()...), nil
}

// ImportState implements engine.FlinkState: every key must be new (to the operator and within
// the batch), every stored row +I or +U; on any error no key is kept.
func (d *Dedup) ImportState(in *engine.Batch) error {
	if d.p.OutputInsertOnly {
		return d.importWaiting(in)
	}
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
	if d.p.OutputInsertOnly {
		if err := d.exportWaiting(out); err != nil || len(d.sel) == 0 {
			return false, err
		}
		return d.exportNext < int32(st.Cap()), nil
	}
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

// importedWait is one key of an import of the insert-only row-time keep-first.
type importedWait struct {
	kg        int32
	waiting   bool
	emitted   bool
	timer     int64
	position  uint64
	lastWrite int64
}

// importWaiting is ImportState of the insert-only row-time keep-first: each key holds a waiting
// row (+I, its key the key's, every NOT NULL field set) with its one timer at the row's time, or
// the emitted flag true; on any error no key is kept.
func (d *Dedup) importWaiting(in *engine.Batch) error {
	nk, w := len(d.keyCols), len(d.layout.Types())
	if err := d.importEnc.Encode(in); err != nil {
		return err
	}
	row := engine.Batch{Len: in.Len, Cols: in.Cols[nk : nk+w]}
	if err := d.enc.Encode(&row); err != nil {
		return err
	}
	col := func(c int) *engine.Column { return &in.Cols[nk+w+c] }
	i64 := func(c, i int) int64 { return int64(binary.LittleEndian.Uint64(col(c).Fixed(i))) }
	keys := make([]importedWait, in.Len)
	seen := make(map[string]bool, in.Len)
	for i := range in.Len {
		fail := func(format string, args ...any) error {
			return fmt.Errorf("%w: import row %d: "+format, append([]any{engine.ErrData, i}, args...)...)
		}
		kg, err := d.state.KeyGroupOf(d.importEnc.Hash(i))
		if err != nil {
			return fmt.Errorf("import row %d: %w", i, err)
		}
		k := &keys[i]
		k.kg = int32(kg)
		key := d.importEnc.Key(i)
		if seen[string(key)] || d.state.Find(key, d.importEnc.Hash(i), kg) >= 0 {
			return fail("a key that holds state already")
		}
		seen[string(key)] = true
		k.waiting = !col(waitKind).IsNull(i)
		if k.waiting {
			if kind := int8(col(waitKind).Fixed(i)[0]); kind != int8(engine.Insert) {
				return fail("a waiting row of RowKind %d, which Flink's insert-only first row never stores", kind)
			}
			for c, t := range d.layout.Types() {
				if !t.Nullable && row.Cols[c].IsNull(i) {
					return fail("field %d of the waiting row is NULL, its type %s", c, t)
				}
			}
			if string(d.enc.Key(i)) != string(key) {
				return fail("a waiting row of another key")
			}
		}
		if !col(waitEmitted).IsNull(i) {
			if !col(waitEmitted).Bool(i) {
				return fail("already-emitted-state-boolean holds false, which Flink never writes")
			}
			k.emitted = true
		}
		switch {
		case k.waiting == k.emitted:
			return fail("a key holds a waiting row or the emitted flag, not both or neither (waiting %v, emitted %v)", k.waiting, k.emitted)
		case k.waiting != !col(waitTimer).IsNull(i):
			return fail("a key has a timer exactly when it holds a waiting row (waiting %v)", k.waiting)
		case col(waitTimer).IsNull(i) != col(waitPosition).IsNull(i):
			return fail("a timer without its position, or a position without its timer")
		}
		if k.waiting {
			k.timer = i64(waitTimer, i)
			if rt := d.layout.Int64At(d.encode(&row, i), d.p.RowtimeIndex); k.timer != rt {
				return fail("a timer at %d, not at the waiting row's time %d", k.timer, rt)
			}
			pos := i64(waitPosition, i)
			if pos < 1 {
				return fail("timer position %d, want 1 or more", pos)
			}
			k.position = uint64(pos)
		}
		if d.ttl {
			if lw := col(waitLastWrite); lw.IsNull(i) != !k.emitted {
				return fail("a last write exactly with the emitted flag (emitted %v)", k.emitted)
			} else if k.emitted {
				k.lastWrite = i64(waitLastWrite, i)
			}
		}
	}
	timers := d.state.Timers()
	for i := range in.Len {
		k := &keys[i]
		id := d.state.Insert(d.importEnc.Key(i), d.importEnc.Hash(i), int(k.kg))
		if k.waiting {
			d.rows.set(id, d.encode(&row, i))
			timers.ImportFlink(engine.EventTime, id, k.timer, 0, k.position)
		} else {
			d.rows.flags[id] = emitted
			d.state.Touch(id, k.lastWrite)
		}
	}
	return nil
}

// exportWaiting writes the keys of d.sel as ExportState of the insert-only row-time keep-first:
// the key bytes, then waitingColumns (a timer with its position in Ferry's timer heap).
func (d *Dedup) exportWaiting(out *engine.OutBatch) error {
	st, timers := d.state, d.state.Timers()
	types, _ := d.ExportTypes()
	rows := make([][]byte, len(d.sel))
	for j, id := range d.sel {
		rows[j] = d.rows.row(id)
	}
	vars := make([]int, len(types))
	vars[0] = st.KeyBytes(d.sel)
	for c, t := range d.layout.Types() {
		if t.Variable() {
			vars[1+c] = d.layout.VarBytes(rows, c)
		}
	}
	if err := out.Init(types, len(d.sel), vars); err != nil || len(d.sel) == 0 {
		return err
	}
	st.WriteKeys(&out.Cols[0], d.sel)
	w := len(d.layout.Types())
	for f := range w {
		d.layout.WriteColumn(&out.Cols[1+f], rows, f)
	}
	col := func(c int) *engine.OutColumn { return &out.Cols[1+w+c] }
	kinds := engine.OutValues[int8](col(waitKind))
	times, positions := engine.OutValues[int64](col(waitTimer)), engine.OutValues[int64](col(waitPosition))
	for j, id := range d.sel {
		if rows[j] != nil {
			rt := d.layout.Int64At(rows[j], d.p.RowtimeIndex)
			pos, ok := timers.Position(engine.EventTime, id, rt, 0)
			if !ok {
				return fmt.Errorf("%w: %s: a waiting row without its timer", engine.ErrData, Kind)
			}
			kinds[j], times[j], positions[j] = int8(engine.Insert), rt, int64(pos)
		} else {
			col(waitKind).SetNull(j)
			col(waitTimer).SetNull(j)
			col(waitPosition).SetNull(j)
		}
		e := col(waitEmitted)
		if d.rows.flags[id]&emitted != 0 {
			e.Data[j>>3] |= 1 << (j & 7)
		} else {
			e.Data[j>>3] &^= 1 << (j & 7)
			e.SetNull(j)
		}
		if d.ttl {
			if d.rows.flags[id]&emitted != 0 {
				engine.OutValues[int64](col(waitLastWrite))[j] = st.LastWrite(id)
			} else {
				col(waitLastWrite).SetNull(j)
			}
		}
	}
	out.Finish()
	return nil
}
