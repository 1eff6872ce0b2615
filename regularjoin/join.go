package regularjoin

import (
	"fmt"
	"math"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/joincore"
)

// Join is one instance of the regular join: Flink 2.3's StreamingJoinOperator step for step
// (docs/operators/regular-join.md). Per join key it keeps each side's rows in that side's state
// layout (joinKeys), with each row's association count on a padded side
// (OuterJoinRecordStateViews); the map layouts are java.util.HashMaps in Flink's heap-backend
// iteration order (javamap), which decides the order the other side's rows are joined in.
//
// Every input row is handled at once, in arrival order, exactly as Flink's processElement1/2, or
// with mini_batch queued in the bundles of MiniBatchStreamingJoinOperator until Flush (bundle.go);
// output rows are collected per call and handed out in chunks of at most spec.ChunkRows rows.
type Join struct {
	sides       [2]sideSpec
	filterNulls []int               // key positions whose NULL makes a key unjoinable
	cond        *joincore.Condition // the residual condition; nil: every pair of a key joins
	layouts     [2]*joincore.RowLayout
	enc         [2]*engine.KeyEncoder // the join keys
	// mapEnc encodes each side's map key as Flink's BinaryRowData (the unique key projection, or
	// the whole row for no_unique_key); nil for join_key_contains_unique_key.
	mapEnc [2]*engine.KeyEncoder
	state  *engine.KeyedState
	keys   *joinKeys
	output []engine.Field

	out    *joincore.PairOutput // the output of the current call
	call   joincore.CallRows    // the call's key groups and encoded rows
	arena  joincore.RowArena    // the memory of stored and emitted rows
	visits []visit              // the associated records of the current row
	mb     *miniBatch           // the bundles of mini-batch mode; nil without mini_batch
	// semiAnti is semiJoin or antiJoin for a SEMI or ANTI join (StreamingSemiAntiJoinOperator,
	// semianti.go), 0 for the others.
	semiAnti uint8
	order    []*record // scratch: a map's records in iteration order
}

// visit is one record of the other side that an input row is associated with (Flink's
// OuterRecord, repeated times times: a no_unique_key row stored count times): its association
// count as the visit read it, -1 for a side that is not padded.
type visit struct {
	r     *record
	n     int32
	times int32
}

func open(spec *engine.Spec, params *Params) (engine.Keyed, error) {
	j, err := newJoin(spec, params)
	if err != nil {
		return engine.Keyed{}, err
	}
	return engine.Keyed{Operator: j, Snapshottable: j.snapshottable}, nil
}

// newJoin builds the join of spec with params p.
func newJoin(spec *engine.Spec, params *Params) (*Join, error) {
	p := *params
	sides, err := p.validate(spec)
	if err != nil {
		return nil, err
	}
	j := &Join{sides: sides, filterNulls: joincore.FilteredPositions(p.FilterNulls)}
	switch p.JoinType {
	case "SEMI":
		j.semiAnti = semiJoin
	case "ANTI":
		j.semiAnti = antiJoin
	}
	var outTypes []engine.Type
	for s := range 2 {
		in := &spec.Inputs[s]
		j.layouts[s] = joincore.NewRowLayout(in.Types)
		j.enc[s] = engine.NewKeyEncoder(in.Keys, in.Types)
		switch sides[s].layout {
		case uniqueKey:
			j.mapEnc[s] = engine.NewKeyEncoder(sides[s].unique, in.Types)
		case noUniqueKey:
			all := make([]int, len(in.Types))
			for c := range all {
				all[c] = c
			}
			j.mapEnc[s] = engine.NewKeyEncoder(all, in.Types)
		}
		if s == 1 && j.semiAnti != 0 {
			continue // the output is the left row alone
		}
		for _, f := range in.Named() {
			if sides[1-s].outer && j.semiAnti == 0 {
				f.Type.Nullable = true // padded with NULLs when the other side is outer
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
	right := j.layouts[1]
	if j.semiAnti != 0 {
		right = nil
	}
	j.out = joincore.NewPairOutput(j.layouts[0], right, outTypes, spec.ChunkRows)
	if p.MiniBatch {
		j.mb = &miniBatch{}
	}
	stateLayout := p
	stateLayout.MiniBatch = false // it changes when rows are emitted, not what is stored
	j.state = engine.NewKeyedState(spec, engine.StateConfig{KeySize: j.enc[0].FixedSize(), Layout: &stateLayout, Version: stateVersion})
	j.keys = &joinKeys{j: j}
	j.state.Register(j.keys)
	return j, nil
}

// Output implements engine.KeyedOperator: the left input's fields, then the right input's,
// those of a side padded with NULLs nullable; the left input's alone for SEMI and ANTI.
func (j *Join) Output() []engine.Field { return j.output }

// State implements engine.KeyedOperator.
func (j *Join) State() *engine.KeyedState { return j.state }

// Close implements engine.KeyedOperator.
func (j *Join) Close() { *j = Join{} }

// Flush implements engine.KeyedOperator: in mini-batch mode the end of a bundle
// (MiniBatchStreamingJoinOperator.finishBundle), which processes the queued rows; without
// mini_batch the join buffers nothing.
func (j *Join) Flush(_ int64, out *engine.OutBatch) (bool, error) {
	if j.mb == nil || j.mb.count == 0 {
		out.Len = 0
		return false, nil
	}
	j.out.Reset()
	j.mb.finish(j)
	return j.endCall(out)
}

// snapshottable implements engine.Keyed.Snapshottable: it fails while a bundle's rows are queued
// outside the state (the host flushes before every barrier, as Flink's prepareSnapshotPreBarrier).
func (j *Join) snapshottable() error {
	if j.mb != nil && j.mb.count > 0 {
		return fmt.Errorf("%w: %d input rows of a mini-batch bundle are queued outside the state: flush before the snapshot", engine.ErrState, j.mb.count)
	}
	return nil
}

// Advance implements engine.KeyedOperator: the join has no timers (no idle-state TTL yet); a
// watermark ends a mini-batch bundle (processWatermark1/2 call finishBundle), which emits.
func (j *Join) Advance(watermarkMs, nowMs int64, out *engine.OutBatch) (bool, error) {
	if watermarkMs != math.MinInt64 {
		return j.Flush(nowMs, out)
	}
	out.Len = 0
	return false, nil
}

// Continue implements engine.KeyedOperator.
func (j *Join) Continue(out *engine.OutBatch) (bool, error) { return j.out.Emit(out) }

// Process implements engine.KeyedOperator: input 0 is the left side, input 1 the right side,
// their rows handled in the order they arrived, each as Flink's processElement1/2 handles it,
// row kinds included.
func (j *Join) Process(in *engine.Inputs, _ int64, out *engine.OutBatch) (bool, error) {
	for side, b := range in.Batches {
		if b == nil || b.Len == 0 {
			continue
		}
		if err := j.call.Encode(side, b, j.enc[side], j.layouts[side], &j.arena, j.state); err != nil {
			return false, err
		}
		if m := j.mapEnc[side]; m != nil {
			if err := m.Encode(b); err != nil {
				return false, fmt.Errorf("input %d: %w", side, err)
			}
		}
	}
	if j.mb != nil {
		j.mb.queue(j, in)
		j.call.Release() // the rows belong to the bundle now
		out.Len = 0
		return false, nil
	}
	j.out.Reset()
	var next [2]int
	for _, r := range in.Runs {
		side := r.Input
		kinds := in.Batches[side].Kinds
		for i := next[side]; i < next[side]+r.Rows; i++ {
			row := j.input(side, i)
			j.process(side, &row, kinds[i], false)
		}
		next[side] += r.Rows
	}
	return j.endCall(out)
}

// endCall ends a call that processed rows: scratch dropped, the state's batch ended, the first
// chunk of the output written to out.
func (j *Join) endCall(out *engine.OutBatch) (bool, error) {
	j.call.Release()
	clear(j.visits)
	clear(j.order)
	j.state.EndBatch()
	return j.out.Emit(out)
}

// input is one input row as process reads it: its join key's bytes, hashCode and key group, the
// row (joincore.RowLayout) and its map key's BinaryRowData bytes and hashCode (map layouts only).
// The bytes belong to the call's encoders unless copied (a bundle's rows).
type input struct {
	key  []byte
	hash int32
	kg   int32
	row  []byte
	mk   []byte
	mh   int32
}

// input returns row i of side of the current call.
func (j *Join) input(side, i int) input {
	enc := j.enc[side]
	in := input{key: enc.Key(i), hash: enc.Hash(i), kg: j.call.KeyGroups[side][i], row: j.call.Rows[side][i]}
	if m := j.mapEnc[side]; m != nil {
		in.mk, in.mh = m.Key(i), m.Hash(i)
	}
	return in
}

// process is StreamingJoinOperator.processElement for row in of side (0 left, 1 right), of row
// kind kind. suppress is its isSuppress (mini-batch only: a retraction followed by an accumulate
// message of the same key in a bundle): the retraction leaves the state alone, and neither message
// changes the other side's padding (no -D of a padded row that gets its first match, no +I of one
// that loses its last), only its association counts.
//
// A row whose key can never match (joincore.KeyJoins: NULL in a filter_nulls position) is not
// stored: Flink stores it, but it never joins, so all it ever emits is its own padding, +I on
// arrival and -D on retraction, on a padded side, and nothing on the other.
func (j *Join) process(side int, in *input, kind engine.RowKind, suppress bool) {
	if j.semiAnti != 0 {
		j.processSemiAnti(side, in, kind)
		return
	}
	key, row := in.key, in.row
	own, other := &j.sides[side], &j.sides[1-side]
	acc := engine.IsAccumulate(kind)
	if !joincore.KeyJoins(key, j.filterNulls) {
		if own.outer {
			j.pad(side, row, padKind(acc))
		}
		return
	}
	id := j.state.Find(key, in.hash, int(in.kg))
	if id < 0 {
		if !acc { // nothing to retract and nothing to join: Flink stores nothing either
			if own.outer {
				j.pad(side, row, engine.Delete)
			}
			return
		}
		id = j.state.Insert(key, in.hash, int(in.kg))
	}
	ks := &j.keys.k[id]
	mk, mh := in.mk, in.mh
	switch {
	case acc && own.outer:
		vs := j.associate(ks, side, row)
		if len(vs) == 0 {
			j.pad(side, row, engine.Insert)
			j.keys.add(ks, side, row, mk, mh, 0)
			break
		}
		var n int32
		for _, v := range vs {
			for range v.times {
				if other.outer {
					if v.n == 0 && !suppress {
						j.pad(1-side, v.r.row, engine.Delete)
					}
					v.r.assoc = v.n + 1
				}
				j.pair(side, row, v.r.row, engine.Insert)
				n++
			}
		}
		j.keys.add(ks, side, row, mk, mh, n)
	case acc:
		j.keys.add(ks, side, row, mk, mh, -1)
		for _, v := range j.associate(ks, side, row) {
			for range v.times {
				if other.outer {
					if v.n == 0 && !suppress {
						j.pad(1-side, v.r.row, engine.Delete)
					}
					v.r.assoc = v.n + 1
					j.pair(side, row, v.r.row, engine.Insert)
				} else {
					j.pair(side, row, v.r.row, kind) // +I or +U, as the input
				}
			}
		}
	default:
		if !suppress {
			j.keys.retract(ks, side, mk, mh)
		}
		vs := j.associate(ks, side, row)
		if len(vs) == 0 {
			if own.outer {
				j.pad(side, row, engine.Delete)
			}
			break
		}
		k := kind // -D or -U, as the input
		if own.outer {
			k = engine.Delete
		}
		for _, v := range vs {
			for range v.times {
				j.pair(side, row, v.r.row, k)
				if other.outer {
					if v.n == 1 && !suppress {
						j.pad(1-side, v.r.row, engine.Insert)
					}
					v.r.assoc = v.n - 1
				}
			}
		}
	}
	if ks.empty() {
		j.state.Remove(id)
	}
}

// padKind is the kind of a padded row of a side that matches nothing: +I for an accumulate
// message, -D for a retraction.
func padKind(acc bool) engine.RowKind {
	if acc {
		return engine.Insert
	}
	return engine.Delete
}

// associate is AbstractStreamingJoinOperator.iterator: the records of the side other than side
// that row joins with (the residual condition holds), in the order Flink's state visits them,
// each with its association count as read when visited. The result is valid until the next call.
func (j *Join) associate(ks *keyState, side int, row []byte) []visit {
	vs := j.visits[:0]
	st := &ks.s[1-side]
	switch {
	case st.one != nil:
		if j.holds(side, row, st.one.row) {
			vs = append(vs, visit{r: st.one, n: st.one.assoc, times: 1})
		}
	case st.m != nil:
		j.order = st.m.AppendOrder(j.order[:0])
		for _, r := range j.order {
			if j.holds(side, row, r.row) {
				vs = append(vs, visit{r: r, n: r.assoc, times: r.count})
			}
		}
	}
	j.visits = vs
	return vs
}

// holds reports whether the residual condition holds for row of side and other of the other side.
func (j *Join) holds(side int, row, other []byte) bool {
	switch {
	case j.cond == nil:
		return true
	case side == 0:
		return j.cond.Holds(row, other)
	}
	return j.cond.Holds(other, row)
}

// pair emits the joined row of row (of side) and other (of the other side) with row kind k.
func (j *Join) pair(side int, row, other []byte, k engine.RowKind) {
	if side == 0 {
		j.out.AddKind(row, other, k)
	} else {
		j.out.AddKind(other, row, k)
	}
}

// pad emits row of side padded with NULLs for the other side, with row kind k.
func (j *Join) pad(side int, row []byte, k engine.RowKind) {
	if side == 0 {
		j.out.AddKind(row, nil, k)
	} else {
		j.out.AddKind(nil, row, k)
	}
}
