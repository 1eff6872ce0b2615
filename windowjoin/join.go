package windowjoin

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/joincore"
)

// WindowJoin is one instance of the window join's state machine: Flink 2.3's WindowJoinOperator
// with its WindowJoinHelper, without the rows (docs/operators/window-join.md#where-rows-live).
// The host keeps every input row and sends, per row, the key columns, window_end and a handle
// that names the row. Per key WindowJoin keeps, per window end, each side's handles in arrival
// order (Flink's "left-records" / "right-records" list states under the window end as
// namespace); one event-time timer per (key, window) at the window end's timer time, the end as
// namespace, lives in the KeyedState's timer service (engine.TimerService, Flink's heap timer
// order). When the watermark
// reaches a timer, WindowJoin emits the window's handles, left then right, and an end marker;
// the host joins those rows (WindowJoinHelper's doJoin) and drops them with the window.
//
// The rows reach the state only for a snapshot: the host sends the bytes of every row it holds
// (input RowsInput) right before it, and the snapshot stores them in place of the handles. A
// restored row gets a negative handle, and its bytes go back to the host in the output of the
// next call (kinds RestoredLeft, RestoredRight), before any other row.
//
// Rows are handled in batch order, exactly as Flink's processElement1/2; output rows are
// collected per call and handed out in chunks of at most spec.ChunkRows rows.
type WindowJoin struct {
	jt             joinType
	endIndex       [2]int
	handleIndex    [2]int
	filterNulls    []int // key positions whose NULL makes a key unjoinable
	zone           *Zone // the shift time zone; nil: UTC
	enc            [2]*engine.KeyEncoder
	state          *engine.KeyedState
	keys           joinKeys
	timers         *engine.TimerService // the state's: a timer per (key, window)
	out            handleOutput
	watermark      int64 // the timer service's current watermark; math.MinInt64 until the first
	maxParallelism int
	// LateDropped counts the late rows dropped per side: Flink's leftNumLateRecordsDropped and
	// rightNumLateRecordsDropped.
	LateDropped [2]int64

	// rows holds, per side, the bytes of rows by handle: those the host sent for the next
	// snapshot (RowsInput; dropped at the next Process or Advance), and those restored and not
	// yet handed back to the host (restored, in restoredOrder).
	rows          [2]map[int64][]byte
	restored      [2]map[int64][]byte
	restoredOrder [2][]int64
	nextRestored  int64 // the next restored row's handle: -1, -2, ...

	kgs        [2][]int32 // per side, per row of the call's batch: its key group
	timerTimes [2][]int64 // per side, per row of the call's batch: its window's timer time
}

// RowsInput is the input on which the host sends, before a snapshot, the bytes of every row it
// holds: side INT (0 left, 1 right), handle BIGINT, row BYTES (Flink's BinaryRowData).
const RowsInput = 2

// NoRow is the handle of a row the host does not keep: one of a key that can never match, on a
// side that is not preserved. Its window and timer are registered all the same.
const NoRow = math.MinInt64

// The output's kinds (its first column).
const (
	EmitLeft      = 0 // a left row of the window that fires, by handle
	EmitRight     = 1 // a right row of that window
	EmitEnd       = 2 // the window's rows are complete: join them and drop them
	RestoredLeft  = 3 // a restored left row: its new handle and its bytes
	RestoredRight = 4 // a restored right row
)

var outputFields = []engine.Field{
	{Name: "kind", Type: engine.Type{ID: engine.Int}},
	{Name: "handle", Type: engine.Type{ID: engine.BigInt}},
	{Name: "row", Type: engine.Type{ID: engine.Binary, Nullable: true}},
}

func open(spec *engine.Spec, params *Params) (engine.Keyed, error) {
	j, err := newJoin(spec, params)
	if err != nil {
		return engine.Keyed{}, err
	}
	return engine.Keyed{Operator: j, Snapshottable: j.snapshottable, WritesAtFreeze: true}, nil
}

// newJoin builds the join of spec with params p.
func newJoin(spec *engine.Spec, params *Params) (*WindowJoin, error) {
	p := *params
	jt, err := p.validate(spec)
	if err != nil {
		return nil, err
	}
	j := &WindowJoin{
		jt:             jt,
		endIndex:       [2]int{p.LeftWindowEndIndex, p.RightWindowEndIndex},
		filterNulls:    joincore.FilteredPositions(p.FilterNulls),
		zone:           p.ShiftZone,
		watermark:      math.MinInt64,
		maxParallelism: spec.MaxParallelism,
		nextRestored:   -1,
	}
	j.out.chunk = spec.ChunkRows
	for i := range 2 {
		in := &spec.Inputs[i]
		j.handleIndex[i] = len(in.Types) - 1
		j.enc[i] = engine.NewKeyEncoder(in.Keys, in.Types)
	}
	layout := stateLayout{p, rowFormat}
	j.state = engine.NewKeyedState(spec, engine.StateConfig{KeySize: j.enc[0].FixedSize(), Timers: true, Layout: layout,
		Version: stateVersion, Earlier: []engine.EarlierLayout{{Version: 1, Layout: layout, Advice: layout1Advice}}})
	j.timers = j.state.Timers()
	j.keys = joinKeys{j: j, freeWin: -1, freeLink: -1}
	j.state.Register(&j.keys)
	return j, nil
}

// rowFormat names the form of the rows in the state: the bytes of Flink's BinaryRowData, as
// the host sent them. It is part of the state fingerprint.
const rowFormat = "flink-binary-row"

// stateLayout is what shapes the state: the params and the rows' form.
type stateLayout struct {
	Params
	Rows string `json:"rows"`
}

// Output implements engine.KeyedOperator: kind INT, handle BIGINT, row BYTES (set for the restored
// kinds only).
func (j *WindowJoin) Output() []engine.Field { return outputFields }

// State implements engine.KeyedOperator.
func (j *WindowJoin) State() *engine.KeyedState { return j.state }

// Close implements engine.KeyedOperator.
func (j *WindowJoin) Close() { *j = WindowJoin{} }

// Flush implements engine.KeyedOperator: Flink's operator emits nothing at the end of input (the
// final watermark, if any, has fired every window).
func (j *WindowJoin) Flush(_ int64, out *engine.OutBatch) (bool, error) {
	out.Len = 0
	return false, nil
}

// Continue implements engine.KeyedOperator.
func (j *WindowJoin) Continue(out *engine.OutBatch) (bool, error) { return j.out.emit(out) }

// fired is TimeWindowUtil.isWindowFired at the current watermark for a window end and its timer
// time.
func (j *WindowJoin) fired(windowEnd, timer int64) bool {
	return windowEnd != math.MaxInt64 && j.watermark >= timer
}

// preserved reports whether rows of side (0 left, 1 right) are emitted when they match nothing
// (padded for LEFT, RIGHT, FULL; the left row itself for ANTI).
func (j *WindowJoin) preserved(side int) bool {
	if side == 0 {
		return j.jt.leftOuter || j.jt.anti
	}
	return j.jt.rightOuter
}

// begin starts a call that may emit: the output of the last call is dropped and restored rows
// not yet handed back go out first.
func (j *WindowJoin) begin() {
	j.out.reset()
	j.rows = [2]map[int64][]byte{}
	for side := range 2 {
		for _, h := range j.restoredOrder[side] {
			if b, ok := j.restored[side][h]; ok { // not dropped with its key since (Reset)
				j.out.addRestored(RestoredLeft+int32(side), h, b)
			}
		}
		j.restored[side], j.restoredOrder[side] = nil, nil
	}
}

// Process implements engine.KeyedOperator: input 0 is the left side, input 1 the right side,
// input RowsInput the rows for the next snapshot (in a call of their own). Every row of inputs 0
// and 1 is WindowJoinHelper.processElement, in arrival order: a late row (its window fired at
// the current watermark) is dropped and counted; any other row's handle is stored under its key
// and window end, and the window's timer is registered. Row kinds are not checked: the planner
// gives the join insert-only inputs. Every row is checked before any is stored.
//
// A row of a key that can never match (docs/operators/window-join.md#null-keys) is stored only on
// a preserved side, and the host sends NoRow for the others; its window's timer is registered
// all the same, so timers fire in Flink's order.
func (j *WindowJoin) Process(in *engine.Inputs, _ int64, out *engine.OutBatch) (bool, error) {
	if rows := in.Batches[RowsInput]; rows != nil {
		if in.Batches[0] != nil || in.Batches[1] != nil {
			return false, fmt.Errorf("%w: the rows for a snapshot (input %d) come in a call of their own", engine.ErrInvalid, RowsInput)
		}
		out.Len = 0
		return false, j.takeRows(rows)
	}
	for input := range 2 {
		if err := j.check(input, in.Batches[input]); err != nil {
			return false, fmt.Errorf("input %d: %w", input, err)
		}
	}
	j.begin()
	var next [2]int
	for _, r := range in.Runs {
		j.store(r.Input, in.Batches[r.Input], next[r.Input], r.Rows)
		next[r.Input] += r.Rows
	}
	j.state.EndBatch()
	return j.out.emit(out)
}

// check encodes the keys of side input's batch in (nil: none) and checks every row, recording
// its key group and timer time (kgs, timerTimes).
func (j *WindowJoin) check(input int, in *engine.Batch) error {
	j.kgs[input], j.timerTimes[input] = j.kgs[input][:0], j.timerTimes[input][:0]
	if in == nil || in.Len == 0 {
		return nil
	}
	enc := j.enc[input]
	if err := enc.Encode(in); err != nil {
		return err
	}
	endCol, handles := &in.Cols[j.endIndex[input]], engine.Values[int64](&in.Cols[j.handleIndex[input]], in.Len)
	keep := j.preserved(input)
	for i := range in.Len {
		kg, err := j.state.KeyGroupOf(enc.Hash(i))
		if err != nil {
			return fmt.Errorf("row %d: %w", i, err)
		}
		if endCol.IsNull(i) {
			return fmt.Errorf("%w: row %d: window_end is NULL", engine.ErrData, i)
		}
		t, err := j.zone.TimerTime(int64(binary.LittleEndian.Uint64(endCol.Fixed(i))))
		if err != nil {
			return fmt.Errorf("row %d: %w", i, err)
		}
		if stored := joincore.KeyJoins(enc.Key(i), j.filterNulls) || keep; stored != (handles[i] != NoRow) {
			return fmt.Errorf("%w: row %d: handle %d for a row the join %s", engine.ErrData, i, handles[i],
				map[bool]string{true: "keeps", false: "does not keep (want NoRow)"}[stored])
		}
		j.kgs[input] = append(j.kgs[input], int32(kg))
		j.timerTimes[input] = append(j.timerTimes[input], t)
	}
	return nil
}

// store stores rows [from, from+n) of side input's checked batch in.
func (j *WindowJoin) store(input int, in *engine.Batch, from, n int) {
	enc := j.enc[input]
	endCol, handles := &in.Cols[j.endIndex[input]], engine.Values[int64](&in.Cols[j.handleIndex[input]], in.Len)
	for i := from; i < from+n; i++ {
		end, timer := int64(binary.LittleEndian.Uint64(endCol.Fixed(i))), j.timerTimes[input][i]
		if j.fired(end, timer) {
			j.LateDropped[input]++
			continue
		}
		key, hash, kg := enc.Key(i), enc.Hash(i), int(j.kgs[input][i])
		id := j.state.Find(key, hash, kg)
		if id < 0 {
			id = j.state.Insert(key, hash, kg)
		}
		wi, created := j.keys.window(id, end)
		if h := handles[i]; h != NoRow {
			j.keys.addRow(wi, input, h)
		}
		if created { // one timer per (key, window), registered with the window's first row
			j.timers.Register(engine.EventTime, id, timer, end)
		}
	}
}

// takeRows keeps the bytes of the rows of a RowsInput batch for the next snapshot.
func (j *WindowJoin) takeRows(in *engine.Batch) error {
	sides, handles, rows := engine.Values[int32](&in.Cols[0], in.Len), engine.Values[int64](&in.Cols[1], in.Len), &in.Cols[2]
	for i := range in.Len {
		if s := sides[i]; s != 0 && s != 1 {
			return fmt.Errorf("%w: row %d: side %d, want 0 or 1", engine.ErrData, i, s)
		}
		if rows.IsNull(i) {
			return fmt.Errorf("%w: row %d: the row's bytes are NULL", engine.ErrData, i)
		}
	}
	for i := range in.Len {
		m := &j.rows[sides[i]]
		if *m == nil {
			*m = map[int64][]byte{}
		}
		(*m)[handles[i]] = append([]byte(nil), rows.Bytes(i)...)
	}
	return nil
}

// rowBytes returns the bytes of side's row h for a snapshot: those the host sent, or those
// restored and not yet handed back.
func (j *WindowJoin) rowBytes(side int, h int64) ([]byte, bool) {
	if b, ok := j.rows[side][h]; ok {
		return b, true
	}
	b, ok := j.restored[side][h]
	return b, ok
}

// restore keeps a restored row of side until it goes back to the host and returns its handle.
func (j *WindowJoin) restore(side int, row []byte) int64 {
	h := j.nextRestored
	j.nextRestored--
	if j.restored[side] == nil {
		j.restored[side] = map[int64][]byte{}
	}
	j.restored[side][h] = row
	j.restoredOrder[side] = append(j.restoredOrder[side], h)
	return h
}

func (j *WindowJoin) hasRow(side int, h int64) bool {
	_, ok := j.rowBytes(side, h)
	return ok
}

// snapshottable is the engine.Keyed capability Snapshottable: every stored handle has its row's
// bytes.
func (j *WindowJoin) snapshottable() error {
	k := &j.keys
	for id := range k.first {
		for wi := k.first[id]; wi >= 0; wi = k.wins[wi].next {
			for side := range 2 {
				for li := k.wins[wi].head[side]; li >= 0; li = k.links[li].next {
					if h := k.links[li].h; !j.hasRow(side, h) {
						return fmt.Errorf("%w: the %s row of handle %d has no bytes: send every row on input %d before the snapshot",
							engine.ErrState, [...]string{"left", "right"}[side], h, RowsInput)
					}
				}
			}
		}
	}
	return nil
}

// Advance implements engine.KeyedOperator: moves the watermark to watermarkMs and fires the due
// window timers in Flink's order, each emitting and clearing its window.
func (j *WindowJoin) Advance(watermarkMs, _ int64, out *engine.OutBatch) (bool, error) {
	j.begin()
	j.watermark = watermarkMs
	for {
		t, ok := j.timers.Next(engine.EventTime, watermarkMs)
		if !ok {
			break
		}
		j.onTimer(t.Key, t.Namespace)
	}
	j.state.EndBatch()
	return j.out.emit(out)
}

// onTimer is WindowJoinOperator.onEventTime: the window ending at end of key id goes to the host
// to join (joinAndClear), and is dropped.
func (j *WindowJoin) onTimer(id int32, end int64) {
	k := &j.keys
	wi := k.find(id, end)
	if wi < 0 {
		return
	}
	for side := range 2 {
		for li := k.wins[wi].head[side]; li >= 0; li = k.links[li].next {
			j.out.add(EmitLeft+int32(side), k.links[li].h)
		}
	}
	j.out.add(EmitEnd, 0)
	k.removeWindow(id, wi)
	if k.first[id] < 0 {
		j.state.Remove(id)
	}
}

// handleOutput collects the output rows of one call and writes them out in chunks. The
// restored rows, the only ones with bytes, come first.
type handleOutput struct {
	chunk    int
	kinds    []int32
	handles  []int64
	restored [][]byte // the bytes of rows 0 .. len(restored)-1
	next     int
	types    []engine.Type
	varBytes [3]int
}

func (o *handleOutput) add(kind int32, h int64) {
	o.kinds = append(o.kinds, kind)
	o.handles = append(o.handles, h)
}

// addRestored adds a restored row; it precedes every row add added.
func (o *handleOutput) addRestored(kind int32, h int64, row []byte) {
	o.add(kind, h)
	o.restored = append(o.restored, row)
}

func (o *handleOutput) reset() {
	clear(o.restored)
	o.kinds, o.handles, o.restored, o.next = o.kinds[:0], o.handles[:0], o.restored[:0], 0
}

// emit writes the next chunk of the call's rows into out; more reports whether rows remain.
func (o *handleOutput) emit(out *engine.OutBatch) (more bool, err error) {
	n := min(o.chunk, len(o.kinds)-o.next)
	if n <= 0 {
		out.Len = 0
		o.reset()
		return false, nil
	}
	if o.types == nil {
		for _, f := range outputFields {
			o.types = append(o.types, f.Type)
		}
	}
	var rows [][]byte // the chunk's restored rows
	if o.next < len(o.restored) {
		rows = o.restored[o.next:min(o.next+n, len(o.restored))]
	}
	size := 0
	for _, r := range rows {
		size += len(r)
	}
	if size > math.MaxInt32 {
		return false, fmt.Errorf("%w: one output chunk holds %d bytes of restored rows, more than 2 GiB; lower chunk_rows", engine.ErrData, size)
	}
	o.varBytes[2] = size
	if err := out.Init(o.types, n, o.varBytes[:]); err != nil {
		return false, err
	}
	copy(engine.OutValues[int32](&out.Cols[0]), o.kinds[o.next:])
	copy(engine.OutValues[int64](&out.Cols[1]), o.handles[o.next:])
	bc := &out.Cols[2]
	at := int32(0)
	for i, r := range rows {
		bc.Offs[i] = at
		at += int32(copy(bc.Data[at:], r))
	}
	for i := len(rows); i < n; i++ {
		bc.Offs[i] = at
		bc.SetNull(i)
	}
	bc.Offs[n] = at
	clear(out.Kinds()) // every row +I
	out.Finish()
	o.next += n
	if o.next < len(o.kinds) {
		return true, nil
	}
	o.reset()
	return false, nil
}
