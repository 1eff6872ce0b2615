// Package dedup is the deduplicate operator kind: Flink 2.3's StreamExecDeduplicate, the
// ROW_NUMBER() OVER (PARTITION BY … ORDER BY time attribute) … WHERE rn = 1 of an insert-only
// input, in every form Flink's translation builds (docs/operators/deduplicate.md):
//
//   - processing time, keep first row: ProcTimeDeduplicateKeepFirstRowFunction, or under
//     mini-batch ProcTimeMiniBatchDeduplicateKeepFirstRowFunction;
//   - processing time, keep last row: ProcTimeDeduplicateKeepLastRowFunction, or under mini-batch
//     ProcTimeMiniBatchDeduplicateKeepLastRowFunction;
//   - row time, keep first or last row: RowTimeDeduplicateFunction (and its async-state twin, the
//     same results), or under mini-batch RowTimeMiniBatchDeduplicateFunction or, compacting,
//     RowTimeMiniBatchLatestChangeDeduplicateFunction;
//   - row time, keep first row, insert-only output: RowTimeDeduplicateKeepFirstRowFunction (event
//     time timers; late rows dropped).
//
// A mini-batch operator takes each Process call as one bundle of Flink's KeyedMapBundleOperator
// and finishes its keys in the iteration order of the bundle's java.util.HashMap.
package dedup

import (
	"bytes"
	"fmt"
	"math"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/internal/javahash"
	"github.com/ferrystream/ferry/joincore"
)

func init() { engine.RegisterKeyed(Kind, open) }

// Dedup is one deduplicate operator.
type Dedup struct {
	p          Params
	ttl        bool
	output     []engine.Field
	enc        *engine.KeyEncoder
	layout     *joincore.RowLayout
	state      *engine.KeyedState
	rows       *rowState          // nil for the keep-first processing-time forms, whose state is the key alone
	watermark  int64              // the current watermark (ms), math.MinInt64 before the first
	keyCols    []int              // the input's key columns
	importEnc  *engine.KeyEncoder // the key of an import row of the forms whose import rows start with the key's fields
	exportNext int32              // ExportState's next key id

	kgs  []int32 // per row of the call: its key group
	enc1 []byte  // scratch: one encoded input row
	out  outRows // the output of the call
	b    bundle  // mini-batch bookkeeping
	sel  []int32 // scratch: rows of a call
	rts  []int64 // per row of the call: its row time
	prev []byte  // scratch: the row a row-time bundle kept last
}

// bundle is the bookkeeping of one mini-batch bundle: its distinct keys by first row, each
// key's rows (in order) and the HashMap table length, which outlives bundles as the HashMap's
// table does (HashMap.clear keeps it).
type bundle struct {
	tableLen int
	keyOf    map[string]int32 // encoded key -> bundle key
	first    []int32          // per bundle key: its first row
	rows     [][]int32        // per bundle key: its rows, in order
	hashes   []int32          // per bundle key: the key's hashCode
	order    []int32
	buckets  []int32
}

func open(spec *engine.Spec, p *Params) (engine.Keyed, error) {
	if err := p.validate(spec); err != nil {
		return engine.Keyed{}, err
	}
	if err := joincore.RefuseBytes(spec, "a deduplication"); err != nil {
		return engine.Keyed{}, err
	}
	in := &spec.Inputs[0]
	d := &Dedup{
		p:         *p,
		ttl:       p.StateTTLMs > 0,
		output:    in.Named(),
		enc:       engine.NewKeyEncoder(in.Keys, in.Types),
		layout:    joincore.NewRowLayout(in.Types),
		watermark: math.MinInt64,
		keyCols:   in.Keys,
		b:         bundle{keyOf: map[string]int32{}},
	}
	d.out.PairOutput = joincore.NewPairOutput(d.layout, nil, in.Types, spec.ChunkRows)
	d.state = engine.NewKeyedState(spec, engine.StateConfig{KeySize: d.enc.FixedSize(), TTL: engine.TTL{Ms: p.StateTTLMs},
		Timers: p.OutputInsertOnly, Layout: p})
	if p.KeepLastRow || p.Rowtime {
		d.rows = &rowState{layout: d.layout}
		d.state.Register(d.rows)
	}
	if d.rows == nil || p.OutputInsertOnly {
		cols := make([]int, len(in.Keys))
		for i := range cols {
			cols[i] = i
		}
		d.importEnc = engine.NewKeyEncoder(cols, d.keyTypes())
	}
	return engine.Keyed{Operator: d, FlinkState: d}, nil
}

// Output implements engine.KeyedOperator: the input's fields.
func (d *Dedup) Output() []engine.Field { return d.output }

// State implements engine.KeyedOperator.
func (d *Dedup) State() *engine.KeyedState { return d.state }

// Close implements engine.KeyedOperator.
func (d *Dedup) Close() { *d = Dedup{} }

// Flush implements engine.KeyedOperator: nothing is buffered between calls.
func (d *Dedup) Flush(_ int64, out *engine.OutBatch) (bool, error) { out.Len = 0; return false, nil }

// Continue implements engine.KeyedOperator.
func (d *Dedup) Continue(out *engine.OutBatch) (bool, error) { return d.out.Emit(out) }

// Process implements engine.KeyedOperator: the rows of the one input, in order (under mini-batch:
// one bundle). Every row is checked before any state changes.
func (d *Dedup) Process(inputs *engine.Inputs, nowMs int64, out *engine.OutBatch) (bool, error) {
	in := inputs.Batches[0]
	for i := range in.Len { // Flink's checkInsertOnly fails the task on any other kind, +U too
		if in.Kinds[i] != engine.Insert {
			return false, fmt.Errorf("%w: %s takes insert-only input, row %d has RowKind %d", engine.ErrData, Kind, i, in.Kinds[i])
		}
	}
	if err := d.enc.Encode(in); err != nil {
		return false, err
	}
	d.kgs = d.kgs[:0]
	for i := range in.Len {
		kg, err := d.state.KeyGroupOf(d.enc.Hash(i))
		if err != nil {
			return false, fmt.Errorf("row %d: %w", i, err)
		}
		d.kgs = append(d.kgs, int32(kg))
	}
	d.rts = d.rts[:0]
	if d.p.Rowtime {
		col := &in.Cols[d.p.RowtimeIndex]
		vals := engine.Values[int64](col, in.Len)
		for i := range in.Len {
			rt := int64(0) // a NULL reads 0, as BinaryRowData.getLong of a NULL field
			if !col.IsNull(i) {
				rt = vals[i]
			}
			d.rts = append(d.rts, rt)
		}
	}
	d.out.reset()
	if d.p.MiniBatch {
		d.processBundle(in, nowMs)
	} else {
		for i := range in.Len {
			d.processRow(in, i, nowMs)
		}
	}
	d.state.Sweep(nowMs) // ends the batch
	return d.out.Emit(out)
}

// find returns the id of row i's key, -1 when absent; state that expired by nowMs reads as
// absent and goes (a key with a pending timer stays: the insert-only keep-first's).
func (d *Dedup) find(i int, nowMs int64) int32 {
	id := d.state.Find(d.enc.Key(i), d.enc.Hash(i), int(d.kgs[i]))
	if id >= 0 && d.ttl && d.expired(id, nowMs) {
		id = d.state.ExpireValue(id, nowMs)
	}
	return id
}

// expired reports whether key id's TTL-bound state expired: all of it, except in the insert-only
// keep-first form, whose waiting row has no TTL and only the emitted flag expires.
func (d *Dedup) expired(id int32, nowMs int64) bool {
	if d.p.OutputInsertOnly && d.rows.flags[id]&emitted == 0 {
		return false
	}
	return d.state.Expired(id, nowMs)
}

// insert adds row i's key.
func (d *Dedup) insert(i int) int32 {
	return d.state.Insert(d.enc.Key(i), d.enc.Hash(i), int(d.kgs[i]))
}

// encode returns row i of in encoded (valid until the next call).
func (d *Dedup) encode(in *engine.Batch, i int) []byte {
	d.enc1 = d.layout.Encode(d.enc1[:0], in, i)
	return d.enc1
}

// processRow runs one input row through the form's processElement.
func (d *Dedup) processRow(in *engine.Batch, i int, nowMs int64) {
	switch {
	case d.p.OutputInsertOnly:
		d.firstOnRowtime(in, i, nowMs)
	case d.p.Rowtime:
		id := d.find(i, nowMs)
		var prev []byte
		if id >= 0 {
			prev = d.rows.row(id)
		}
		cur := d.encode(in, i)
		if d.keeps(prev, d.rts[i]) {
			if id < 0 {
				id = d.insert(i)
			}
			d.store(id, cur, d.update(prev, cur), nowMs)
		}
	case d.p.KeepLastRow:
		d.lastOnProctime(i, d.encode(in, i), nowMs)
	default:
		if d.find(i, nowMs) >= 0 {
			return
		}
		d.state.Touch(d.insert(i), nowMs)
		d.out.add(engine.Insert, d.encode(in, i))
	}
}

// keeps is Flink's shouldKeepCurrentRow: whether a row of row time rt replaces prev (nil: none).
// Keep-last takes a row no older than prev, keep-first only a strictly older one.
func (d *Dedup) keeps(prev []byte, rt int64) bool {
	if prev == nil {
		return true
	}
	pt := d.layout.Int64At(prev, d.p.RowtimeIndex)
	if d.p.KeepLastRow {
		return pt <= rt
	}
	return rt < pt
}

// update emits cur replacing prev (nil: none), as Flink's updateDeduplicateResult, and returns
// the kind cur went out with.
func (d *Dedup) update(prev, cur []byte) engine.RowKind {
	if !d.p.GenerateUpdateBefore && !d.p.GenerateInsert {
		d.out.add(engine.UpdateAfter, cur)
		return engine.UpdateAfter
	}
	if prev == nil {
		d.out.add(engine.Insert, cur)
		return engine.Insert
	}
	if d.p.GenerateUpdateBefore {
		d.out.add(engine.UpdateBefore, prev)
	}
	d.out.add(engine.UpdateAfter, cur)
	return engine.UpdateAfter
}

// store writes row, which went out as kind, as key id's state at nowMs. The row forms keep the
// kind as Flink's state holds the row: the row-time forms set it before writing, so every backend
// stores it; processing-time keep-last after, so only a backend that keeps the object sees it.
func (d *Dedup) store(id int32, row []byte, kind engine.RowKind, nowMs int64) {
	d.rows.set(id, row)
	d.rows.flags[id] = 0
	if kind == engine.UpdateAfter && (d.p.Rowtime || d.p.StoredRowKeepsKind) {
		d.rows.flags[id] = storedAsUpdate
	}
	d.state.Touch(id, nowMs)
}

// lastOnProctime is Flink's processLastRowOnProcTime for row i of the call, encoded as cur.
// Without -U and +I Flink keeps no state and emits every row as +U. Otherwise the row replaces
// the stored one; a row equal to it is not emitted unless TTL is on, and equal means Flink's
// equaliser: the same bytes and, when the state keeps the row object, the same row kind (the
// stored row's is the kind it went out with, a new row's +I).
func (d *Dedup) lastOnProctime(i int, cur []byte, nowMs int64) {
	if !d.p.GenerateUpdateBefore && !d.p.GenerateInsert {
		d.out.add(engine.UpdateAfter, cur)
		return
	}
	id := d.find(i, nowMs)
	if id < 0 {
		d.out.add(engine.Insert, cur)
		d.store(d.insert(i), cur, engine.Insert, nowMs)
		return
	}
	prev := d.rows.row(id)
	if !d.ttl && d.rows.flags[id]&storedAsUpdate == 0 && bytes.Equal(prev, cur) {
		d.store(id, cur, engine.Insert, nowMs) // unchanged: nothing goes out
		return
	}
	if d.p.GenerateUpdateBefore {
		d.out.add(engine.UpdateBefore, prev)
	}
	d.out.add(engine.UpdateAfter, cur)
	d.store(id, cur, engine.UpdateAfter, nowMs)
}

// firstOnRowtime is RowTimeDeduplicateKeepFirstRowFunction.processElement: a row behind the
// watermark, or of a key whose row went out already, is dropped; an earlier row than the waiting
// one replaces it, its timer moved to the row's time.
func (d *Dedup) firstOnRowtime(in *engine.Batch, i int, nowMs int64) {
	rt := d.rts[i]
	if rt < d.watermark {
		return
	}
	id := d.find(i, nowMs)
	if id >= 0 && d.rows.flags[id]&emitted != 0 {
		return
	}
	var prev []byte
	if id >= 0 {
		prev = d.rows.row(id)
	}
	if !d.keeps(prev, rt) {
		return
	}
	if id < 0 {
		id = d.insert(i)
	}
	timers := d.state.Timers()
	if prev != nil {
		timers.Delete(engine.EventTime, id, d.layout.Int64At(prev, d.p.RowtimeIndex), 0)
	}
	timers.Register(engine.EventTime, id, rt, 0)
	d.rows.set(id, d.encode(in, i))
}

// Advance implements engine.KeyedOperator: in the insert-only keep-first form, the rows whose
// timers the watermark passed go out (+I), in Flink's timer order; their keys are then marked
// emitted (a write for TTL at nowMs).
func (d *Dedup) Advance(watermarkMs, nowMs int64, out *engine.OutBatch) (bool, error) {
	d.out.reset()
	if watermarkMs != math.MinInt64 { // as Flink's advanceWatermark: the watermark is taken as it comes
		d.watermark = watermarkMs
		if d.p.OutputInsertOnly {
			timers := d.state.Timers()
			for {
				t, ok := timers.Next(engine.EventTime, watermarkMs)
				if !ok {
					break
				}
				row := d.rows.row(t.Key)
				if row == nil {
					return false, fmt.Errorf("%w: %s: a timer of a key without a waiting row", engine.ErrData, Kind)
				}
				d.out.add(engine.Insert, row)
				d.rows.clearRow(t.Key)
				d.rows.flags[t.Key] |= emitted
				d.state.Touch(t.Key, nowMs)
			}
		}
	}
	return d.out.Emit(out)
}

// processBundle finishes the call's rows as one bundle: each key's rows as Flink's addInput
// folds them, then the keys in HashMap order through the form's finishBundle.
func (d *Dedup) processBundle(in *engine.Batch, nowMs int64) {
	b := &d.b
	clear(b.keyOf)
	b.first, b.hashes = b.first[:0], b.hashes[:0]
	for i := range in.Len {
		k, ok := b.keyOf[string(d.enc.Key(i))]
		if !ok {
			k = int32(len(b.first))
			b.keyOf[string(d.enc.Key(i))] = k
			b.first = append(b.first, int32(i))
			b.hashes = append(b.hashes, d.enc.Hash(i))
			if int(k) < len(b.rows) {
				b.rows[k] = b.rows[k][:0]
			} else {
				b.rows = append(b.rows, nil)
			}
		}
		b.rows[k] = append(b.rows[k], int32(i))
	}
	b.order, b.buckets = javahash.Order(b.hashes, &b.tableLen, b.order[:0], b.buckets)
	for _, k := range b.order {
		rows := b.rows[k]
		switch {
		case !d.p.Rowtime && !d.p.KeepLastRow: // the bundle keeps a key's first row
			d.processRow(in, int(rows[0]), nowMs)
		case !d.p.Rowtime: // the bundle keeps a key's last row
			last := int(rows[len(rows)-1])
			d.lastOnProctime(last, d.encode(in, last), nowMs)
		case d.p.CompactChanges: // the bundle keeps the row shouldKeepCurrentRow picks
			kept := int(rows[0])
			for _, r := range rows[1:] {
				if d.keepsOver(d.rts[kept], d.rts[r]) {
					kept = int(r)
				}
			}
			d.processRow(in, kept, nowMs)
		default:
			d.rowtimeBundle(in, rows, nowMs)
		}
	}
}

// keepsOver is keeps between two rows of a bundle: whether a row of row time rt replaces one of
// row time prev.
func (d *Dedup) keepsOver(prev, rt int64) bool {
	if d.p.KeepLastRow {
		return prev <= rt
	}
	return rt < prev
}

// rowtimeBundle is RowTimeMiniBatchDeduplicateFunction's finishBundle for one key: every row of
// the bundle is compared with the one kept before it and emitted when it replaces it; the last
// kept row is written to the state, also when it is the state's own (a write for TTL).
func (d *Dedup) rowtimeBundle(in *engine.Batch, rows []int32, nowMs int64) {
	id := d.find(int(rows[0]), nowMs)
	var prev []byte // the kept row: the state's, then a copy of the last bundle row kept
	var prevRT int64
	kind, kept := engine.Insert, false // the kind the last kept row of the bundle went out with
	if id >= 0 {
		if prev = d.rows.row(id); prev != nil {
			prevRT = d.layout.Int64At(prev, d.p.RowtimeIndex)
		}
	}
	for _, r := range rows {
		if prev != nil && !d.keepsOver(prevRT, d.rts[r]) {
			continue
		}
		cur := d.encode(in, int(r))
		kind, kept = d.update(prev, cur), true
		d.prev = append(d.prev[:0], cur...)
		prev, prevRT = d.prev, d.rts[r]
	}
	if id < 0 {
		id = d.insert(int(rows[0]))
	}
	if !kept && d.rows.flags[id]&storedAsUpdate != 0 { // the state's row, written again
		kind = engine.UpdateAfter
	}
	d.store(id, prev, kind, nowMs)
}

// outRows is the output of one call: copies of the rows (the state updates its rows in place,
// and the encoding scratch is reused), written out in chunks by joincore.PairOutput. A copy is a
// slice of buf; a later append that moves buf leaves it where it was.
type outRows struct {
	*joincore.PairOutput
	buf []byte
}

// add appends a copy of row with kind.
func (o *outRows) add(kind engine.RowKind, row []byte) {
	start := len(o.buf)
	o.buf = append(o.buf, row...)
	o.AddKind(o.buf[start:len(o.buf):len(o.buf)], nil, kind)
}

// reset drops the rows of the call.
func (o *outRows) reset() {
	o.Reset()
	o.buf = o.buf[:0]
}
