package windowjoin

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/joincore"
)

// WindowJoin is one instance of the window join: Flink 2.3's WindowJoinOperator with its
// WindowJoinHelper, step for step (docs/operators/window-join.md). Per key it keeps, per window
// end, each side's rows in arrival order (Flink's "left-records" / "right-records" list states
// under the window end as namespace); one timer per (key, window) at the window end's timer
// time lives in a joincore.TimerQueue, ordered as Flink's heap timer service orders them. When
// the watermark reaches a timer, the window's rows join (joinAndClear) and are dropped.
//
// Rows are handled in batch order, exactly as Flink's processElement1/2; output rows are
// collected per call and handed out in chunks of at most spec.ChunkRows rows.
type WindowJoin struct {
	jt             joinType
	endIndex       [2]int
	filterNulls    []int               // key positions whose NULL makes a key unjoinable
	emitNullKeys   bool                // emit a preserved side's rows of unjoinable keys on arrival
	cond           *joincore.Condition // the residual condition; nil: every pair of a window joins
	zone           *Zone               // the shift time zone; nil: UTC
	layouts        [2]*joincore.RowLayout
	enc            [2]*engine.KeyEncoder
	state          *engine.KeyedState
	keys           *joinKeys
	timers         *joincore.TimerQueue
	output         []engine.Field
	out            *joincore.PairOutput
	watermark      int64 // the timer service's current watermark; math.MinInt64 until the first
	maxParallelism int
	// LateDropped counts the late rows dropped per side: Flink's leftNumLateRecordsDropped and
	// rightNumLateRecordsDropped.
	LateDropped [2]int64

	arena      joincore.RowArena // the memory of stored rows
	kgs        []int32
	timerTimes []int64 // per row of the batch, its window's timer time
	matched    []bool
	// Process' rows to keep: their batch positions, where each goes and, encoded, the rows.
	sel  []int32
	dest []rowDest
	rows [][]byte
}

// rowDest is where Process puts a row it keeps: a window of a key, or (key -1) the output.
type rowDest struct {
	key, window int32
}

func open(spec *engine.Spec) (engine.Operator, error) {
	var p Params
	if err := spec.DecodeParams(&p); err != nil {
		return nil, err
	}
	jt, err := p.validate(spec)
	if err != nil {
		return nil, err
	}
	j := &WindowJoin{
		jt:             jt,
		endIndex:       [2]int{p.LeftWindowEndIndex, p.RightWindowEndIndex},
		filterNulls:    joincore.FilteredPositions(p.FilterNulls),
		emitNullKeys:   p.NullKeyEmitImmediately,
		zone:           p.ShiftZone,
		timers:         joincore.NewTimerQueue(),
		watermark:      math.MinInt64,
		maxParallelism: spec.MaxParallelism,
	}
	var outTypes []engine.Type
	for i := range 2 {
		in := &spec.Inputs[i]
		j.layouts[i] = joincore.NewRowLayout(in.Types)
		j.enc[i] = engine.NewKeyEncoder(in.Keys, in.Types)
		if i == 1 && (jt.semi || jt.anti) {
			continue // SEMI and ANTI emit the left row itself
		}
		for _, f := range in.Named() {
			if i == 0 && jt.rightOuter || i == 1 && jt.leftOuter {
				f.Type.Nullable = true // the padded side
			}
			j.output = append(j.output, f)
			outTypes = append(outTypes, f.Type)
		}
	}
	if p.Condition != nil {
		if j.cond, err = joincore.CompileCondition(p.Condition, j.layouts[0], j.layouts[1]); err != nil {
			return nil, err
		}
	}
	j.out = joincore.NewPairOutput(j.layouts[0], j.layouts[1], outTypes, spec.ChunkRows)
	// The option changes when rows are emitted, not the state's format: either setting restores
	// the other's snapshots.
	layout := p
	layout.NullKeyEmitImmediately = false
	j.state = engine.NewKeyedState(spec, engine.StateConfig{KeySize: j.enc[0].FixedSize(), Layout: &layout})
	j.keys = &joinKeys{j: j}
	j.state.Register(j.keys)
	return j, nil
}

// Output implements engine.Operator: the left input's fields, then the right input's (those of
// a padded side nullable); for SEMI and ANTI the left input's fields alone.
func (j *WindowJoin) Output() []engine.Field { return j.output }

// State implements engine.Operator.
func (j *WindowJoin) State() *engine.KeyedState { return j.state }

// Close implements engine.Operator.
func (j *WindowJoin) Close() { *j = WindowJoin{} }

// Flush implements engine.Operator: Flink's operator emits nothing at the end of input (the
// final watermark, if any, has fired every window).
func (j *WindowJoin) Flush(_ int64, out *engine.OutBatch) (bool, error) {
	out.Len = 0
	return false, nil
}

// Continue implements engine.Operator.
func (j *WindowJoin) Continue(out *engine.OutBatch) (bool, error) { return j.out.Emit(out) }

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

// Process implements engine.Operator: input 0 is the left side, input 1 the right side. Every
// row is WindowJoinHelper.processElement: a late row (its window fired at the current
// watermark) is dropped and counted; any other row is stored under its key and window end, and
// the window's timer is registered. Row kinds are not checked: the planner gives the join
// insert-only inputs.
//
// A row of a key that can never match (docs/operators/window-join.md#null-keys) is stored only on
// a preserved side; its window's timer is registered all the same, so timers fire in Flink's
// order. With emitNullKeys such a row is emitted at once on a preserved side and otherwise
// dropped, with no timer.
func (j *WindowJoin) Process(input int, in *engine.Batch, _ int64, out *engine.OutBatch) (bool, error) {
	if input != 0 && input != 1 {
		return false, fmt.Errorf("%w: input %d: the window join has inputs 0 and 1", engine.ErrInvalid, input)
	}
	j.keys.settle()
	enc := j.enc[input]
	if err := enc.Encode(in); err != nil {
		return false, err
	}
	endCol := &in.Cols[j.endIndex[input]]
	j.kgs, j.timerTimes = j.kgs[:0], j.timerTimes[:0]
	for i := range in.Len {
		kg, err := j.state.KeyGroupOf(enc.Hash(i))
		if err != nil {
			return false, fmt.Errorf("row %d: %w", i, err)
		}
		if endCol.IsNull(i) {
			return false, fmt.Errorf("%w: row %d: window_end is NULL", engine.ErrData, i)
		}
		t, err := j.zone.timerTime(int64(binary.LittleEndian.Uint64(endCol.Fixed(i))))
		if err != nil {
			return false, fmt.Errorf("row %d: %w", i, err)
		}
		j.kgs = append(j.kgs, int32(kg))
		j.timerTimes = append(j.timerTimes, t)
	}
	j.out.Reset()
	keep := j.preserved(input)
	// First the state, each row to keep recorded with where it goes; then those rows are encoded
	// together, a column at a time, and stored or emitted in row order.
	j.sel, j.dest = j.sel[:0], j.dest[:0]
	for i := range in.Len {
		end, timer := int64(binary.LittleEndian.Uint64(endCol.Fixed(i))), j.timerTimes[i]
		if j.fired(end, timer) {
			j.LateDropped[input]++
			continue
		}
		key, hash, kg := enc.Key(i), enc.Hash(i), int(j.kgs[i])
		id := j.state.Find(key, hash, kg)
		joins := joincore.KeyJoins(key, j.filterNulls)
		if !joins && j.emitNullKeys {
			if keep {
				j.sel = append(j.sel, int32(i))
				j.dest = append(j.dest, rowDest{key: -1})
			}
			continue
		}
		if id < 0 {
			id = j.state.Insert(key, hash, kg)
		}
		wi, created := j.keys.window(id, end, timer)
		if joins || keep {
			j.sel = append(j.sel, int32(i))
			j.dest = append(j.dest, rowDest{key: id, window: int32(wi)})
		}
		if created { // one timer per (key, window), registered with the window's first row
			j.timers.Add(joincore.Timer{Time: timer, NS: end, Key: id})
			j.keys.k[id].wins[wi].registered = true
		}
	}
	j.rows = j.arena.EncodeRows(j.layouts[input], in, j.sel, j.rows[:0])
	for k, d := range j.dest {
		if d.key < 0 {
			j.emitUnmatched(input, j.rows[k])
		} else {
			j.keys.addRow(&j.keys.k[d.key].wins[d.window], input, j.rows[k])
		}
	}
	clear(j.rows) // the rows belong to the state and the output now
	j.state.EndBatch()
	return j.out.Emit(out)
}

// Advance implements engine.Operator: moves the watermark to watermarkMs and fires the due
// window timers in Flink's order, each joining and clearing its window.
func (j *WindowJoin) Advance(watermarkMs, _ int64, out *engine.OutBatch) (bool, error) {
	j.keys.settle()
	j.out.Reset()
	j.watermark = watermarkMs
	for {
		t, ok := j.timers.Peek()
		if !ok || t.Time > watermarkMs {
			break
		}
		j.timers.Poll()
		j.onTimer(t.Key, t.NS)
	}
	j.state.EndBatch()
	return j.out.Emit(out)
}

// onTimer is WindowJoinOperator.onEventTime: joinAndClear of the window ending at end of key id.
func (j *WindowJoin) onTimer(id int32, end int64) {
	ks := &j.keys.k[id]
	wi := ks.find(end)
	if wi < 0 {
		return
	}
	w := &ks.wins[wi]
	j.doJoin(joincore.KeyJoins(j.state.Key(id), j.filterNulls), w.rows[0], w.rows[1])
	j.keys.removeWindow(id, wi)
	if len(ks.wins) == 0 {
		j.state.Remove(id)
	}
}

// emitUnmatched emits a preserved side's row that matched nothing: padded with NULLs for the
// other side, or for ANTI the left row itself.
func (j *WindowJoin) emitUnmatched(side int, row []byte) {
	if side == 0 {
		j.out.Add(row, nil)
	} else {
		j.out.Add(nil, row)
	}
}

// doJoin is the join type's WindowJoinProcessor.doJoin over a window's rows in arrival order
// (nil: Flink's absent list). joins is false for a key that can never match: the condition then
// rejects every pair (JoinConditionWithNullFilters), so no pair is evaluated.
func (j *WindowJoin) doJoin(joins bool, ls, rs [][]byte) {
	match := func(l, r []byte) bool { return joins && (j.cond == nil || j.cond.Holds(l, r)) }
	switch {
	case j.jt.semi || j.jt.anti:
		for _, l := range ls {
			m := false
			for _, r := range rs {
				if match(l, r) {
					m = true
					break
				}
			}
			if m != j.jt.anti {
				j.out.Add(l, nil)
			}
		}
	case j.jt.rightOuter && !j.jt.leftOuter: // RIGHT: the right rows drive
		for _, r := range rs {
			m := false
			for _, l := range ls {
				if match(l, r) {
					j.out.Add(l, r)
					m = true
				}
			}
			if !m {
				j.out.Add(nil, r)
			}
		}
	default: // INNER, LEFT, FULL: the left rows drive
		if j.jt.rightOuter {
			j.matched = append(j.matched[:0], make([]bool, len(rs))...)
		}
		for _, l := range ls {
			m := false
			for ri, r := range rs {
				if match(l, r) {
					j.out.Add(l, r)
					m = true
					if j.jt.rightOuter {
						j.matched[ri] = true
					}
				}
			}
			if !m && j.jt.leftOuter {
				j.out.Add(l, nil)
			}
		}
		if j.jt.rightOuter {
			for ri, r := range rs {
				if !j.matched[ri] {
					j.out.Add(nil, r)
				}
			}
		}
	}
}
