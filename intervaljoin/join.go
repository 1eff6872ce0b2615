package intervaljoin

import (
	"math"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/joincore"
)

// IntervalJoin is one instance of the interval join: Flink 2.3's TimeIntervalJoin step for step
// (docs/operators/interval-join.md). Per key it caches each side's rows by row time (bucketMap,
// in Flink's heap-backend iteration order) with their matched flags (for a key that can never
// match, only the times where its rows are not padded: process), and one cleanup time per
// side (Flink's IntervalJoinLeftTimerState / IntervalJoinRightTimerState); the cleanup timers
// live in the KeyedState's timer service (engine.TimerService, Flink's heap timer order), event
// time for a row-time join, processing time for a processing-time join. The expiration bounds
// and operator times are operator-wide, as in Flink, and not snapshotted.
//
// With early fire (Flink master's EARLY_FIRE hint, FLINK-40171) each row of a padded side has a
// fired bit (bucket.fired) and an unmatched cached row an early-fire timer at its time plus the
// delay, in the cleanup timers' domain; every timer first pads the unmatched, unfired rows of the
// padded sides' buckets at its time minus the delay, then cleans up. With processing-time early
// fire on a row-time join (crossDomain, FLINK-40172) the early-fire timers are processing-time
// timers, each with the bucket times it fires per side (keyState.sched), and event-time timers
// clean up only.
//
// Every input row is handled at once, in batch order, exactly as Flink's processElement1/2;
// output rows are collected per call and handed out in chunks of at most spec.ChunkRows rows.
type IntervalJoin struct {
	jt              joinType
	rowtime         bool
	leftRelative    int64 // Flink's leftRelativeSize = -leftLowerBound
	rightRelative   int64 // rightRelativeSize = leftUpperBound
	minCleanUp      int64
	lateness        int64
	timeIndex       [2]int
	filterNulls     []int               // key positions whose NULL makes a key unjoinable
	emitNullKeys    bool                // pad a padded side's rows of unjoinable keys on arrival
	cond            *joincore.Condition // the residual condition; nil: every pair in range joins
	layouts         [2]*joincore.RowLayout
	enc             [2]*engine.KeyEncoder
	state           *engine.KeyedState
	keyTypes        []engine.Type // the key fields' types, in key order
	exportNext      int32         // the next key id of an export in Flink's form (flinkstate.go)
	keys            *joinKeys
	timers          *engine.TimerService // the state's: cleanup and early-fire timers
	domain          engine.TimeDomain    // the cleanup timers' domain: event time for rowtime
	output          []engine.Field
	outTypes        []engine.Type
	chunk           int
	maxParallelism  int
	watermark       int64 // the timer service's current watermark; math.MinInt64 until the first
	leftExpiration  int64 // Flink's leftExpirationTime: left cache rows up to it may be removed
	rightExpiration int64
	leftOpTime      int64 // Flink's leftOperatorTime (= rightOperatorTime in both modes)
	now             int64 // the processing time (ms) of the current call

	earlyFire   bool  // Flink's earlyFireEnabled
	fireDelay   int64 // the early-fire delay, ms
	crossDomain bool  // early-fire timers on processing time, the join on row time

	// out is the output of the current call: per row its left and right encoded row (nil for
	// the padded side).
	out *joincore.PairOutput

	call  joincore.CallRows // the call's key groups and encoded rows
	arena joincore.RowArena // the memory of cached rows
	order []*bucket
}

func open(spec *engine.Spec, params *Params) (engine.Keyed, error) {
	j, err := newJoin(spec, params)
	if err != nil {
		return engine.Keyed{}, err
	}
	return engine.Keyed{Operator: j, FlinkState: j}, nil
}

// newJoin builds the join of spec with params p.
func newJoin(spec *engine.Spec, params *Params) (*IntervalJoin, error) {
	p := *params
	jt, err := p.validate(spec)
	if err != nil {
		return nil, err
	}
	j := &IntervalJoin{
		jt:             jt,
		rowtime:        p.TimeMode == "rowtime",
		leftRelative:   -p.LeftLowerBound,
		rightRelative:  p.LeftUpperBound,
		minCleanUp:     max(0, p.MinCleanUpIntervalMs),
		lateness:       p.AllowedLateness,
		timeIndex:      [2]int{p.LeftTimeIndex, p.RightTimeIndex},
		domain:         engine.ProcessingTime,
		chunk:          spec.ChunkRows,
		maxParallelism: spec.MaxParallelism,
		watermark:      math.MinInt64,
		emitNullKeys:   p.NullKeyEmitImmediately,
	}
	for _, k := range spec.Inputs[0].Keys {
		j.keyTypes = append(j.keyTypes, spec.Inputs[0].Types[k])
	}
	j.filterNulls = joincore.FilteredPositions(p.FilterNulls)
	if j.rowtime {
		j.domain = engine.EventTime
	}
	j.earlyFire, j.fireDelay, j.crossDomain = p.earlyFire(jt)
	for i := range 2 {
		in := &spec.Inputs[i]
		j.layouts[i] = joincore.NewRowLayout(in.Types)
		j.enc[i] = engine.NewKeyEncoder(in.Keys, in.Types)
		for _, f := range in.Named() {
			if i == 0 && jt.rightOuter || i == 1 && jt.leftOuter {
				f.Type.Nullable = true // the padded side
			}
			j.output = append(j.output, f)
			j.outTypes = append(j.outTypes, f.Type)
		}
	}
	if p.Condition != nil {
		if j.cond, err = joincore.CompileCondition(p.Condition, j.layouts[0], j.layouts[1]); err != nil {
			return nil, err
		}
	}
	j.out = joincore.NewPairOutput(j.layouts[0], j.layouts[1], j.outTypes, j.chunk)
	// These options change when rows are padded, not the state's format: either setting restores
	// the other's snapshots (fired bits and early-fire timers a join without them ignores).
	layout := p
	layout.NullKeyEmitImmediately = false
	layout.EarlyFireDelayMs, layout.EarlyFireTimeMode = nil, ""
	j.state = engine.NewKeyedState(spec, engine.StateConfig{KeySize: j.enc[0].FixedSize(), Timers: true, Layout: &layout,
		Version: stateVersion, Earlier: []engine.EarlierLayout{{Version: 1, Layout: &layout, Advice: layout1Advice}}})
	j.timers = j.state.Timers()
	j.keys = &joinKeys{j: j}
	j.state.Register(j.keys)
	return j, nil
}

// Output implements engine.KeyedOperator: the left input's fields, then the right input's,
// those of a padded side nullable.
func (j *IntervalJoin) Output() []engine.Field { return j.output }

// State implements engine.KeyedOperator.
func (j *IntervalJoin) State() *engine.KeyedState { return j.state }

// Close implements engine.KeyedOperator.
func (j *IntervalJoin) Close() { *j = IntervalJoin{} }

// Flush implements engine.KeyedOperator: the join buffers nothing (Flink's operator emits nothing at
// the end of input; the final watermark, if any, has expired the caches).
func (j *IntervalJoin) Flush(_ int64, out *engine.OutBatch) (bool, error) {
	out.Len = 0
	return false, nil
}

// Continue implements engine.KeyedOperator.
func (j *IntervalJoin) Continue(out *engine.OutBatch) (bool, error) { return j.out.Emit(out) }

// Process implements engine.KeyedOperator: input 0 is the left side, input 1 the right side,
// their rows handled in the order they arrived, each as Flink's processElement1/2 handles it.
// Row kinds are ignored, as Flink's operator ignores them (its inputs are insert-only); every
// output row is +I but the -U/+U pair of an early-fire pad's correction.
func (j *IntervalJoin) Process(in *engine.Inputs, nowMs int64, out *engine.OutBatch) (bool, error) {
	for side, b := range in.Batches {
		if b == nil || b.Len == 0 {
			continue
		}
		// Every row is encoded (cached or emitted), all of a batch together, a column at a time.
		if err := j.call.Encode(side, b, j.enc[side], j.layouts[side], &j.arena, j.state); err != nil {
			return false, err
		}
	}
	j.resetOutput()
	j.now = nowMs
	var next [2]int
	for _, r := range in.Runs {
		side := r.Input
		enc, layout, kgs := j.enc[side], j.layouts[side], j.call.KeyGroups[side]
		for i := next[side]; i < next[side]+r.Rows; i++ {
			key, hash, kg := enc.Key(i), enc.Hash(i), int(kgs[i])
			id := j.state.Find(key, hash, kg)
			if id < 0 {
				id = j.state.Insert(key, hash, kg)
			}
			row := j.call.Rows[side][i]
			j.updateOperatorTime(nowMs)
			t := j.leftOpTime
			if j.rowtime {
				t = layout.Int64At(row, j.timeIndex[side])
			}
			j.process(side, id, row, t)
			j.removeIfEmpty(id)
		}
		next[side] += r.Rows
	}
	j.call.Release() // the rows belong to the caches and the output now
	j.state.EndBatch()
	return j.out.Emit(out)
}

// Advance implements engine.KeyedOperator: fires the due timers, event-time ones up to watermarkMs
// (rowtime) or processing-time ones up to nowMs (proctime), in Flink's order. On a row-time
// join, watermarkMs math.MinInt64 is a processing-time callback instead: it fires the
// processing-time early-fire timers up to nowMs (crossDomain; none otherwise) and leaves the
// watermark as it is.
func (j *IntervalJoin) Advance(watermarkMs, nowMs int64, out *engine.OutBatch) (bool, error) {
	j.resetOutput()
	j.now = nowMs
	if j.rowtime && watermarkMs == math.MinInt64 {
		for {
			t, ok := j.timers.Next(engine.ProcessingTime, nowMs)
			if !ok {
				break
			}
			j.onProcTimer(t.Key, t.Time)
			j.removeIfEmpty(t.Key)
		}
		j.state.EndBatch()
		return j.out.Emit(out)
	}
	upTo := nowMs
	if j.rowtime {
		j.watermark = watermarkMs
		upTo = watermarkMs
	}
	for {
		t, ok := j.timers.Next(j.domain, upTo)
		if !ok {
			break
		}
		j.onTimer(t.Key, t.Time, nowMs)
		j.removeIfEmpty(t.Key)
	}
	j.state.EndBatch()
	return j.out.Emit(out)
}

// updateOperatorTime is Flink's updateOperatorTime: the watermark (at least 0) for rowtime, the
// processing time for proctime; both sides share it.
func (j *IntervalJoin) updateOperatorTime(nowMs int64) {
	if j.rowtime {
		j.leftOpTime = max(j.watermark, 0)
	} else {
		j.leftOpTime = nowMs
	}
}

// expiration is Flink's calExpirationTime.
func (j *IntervalJoin) expiration(operatorTime, relativeSize int64) int64 {
	if operatorTime < math.MaxInt64 {
		return operatorTime - relativeSize - j.lateness - 1
	}
	return math.MaxInt64
}

// joinable reports whether rows of key join at all (joincore.KeyJoins).
func (j *IntervalJoin) joinable(key []byte) bool { return joincore.KeyJoins(key, j.filterNulls) }

// padded reports whether the rows of side (0 left, 1 right) are padded when they match nothing.
func (j *IntervalJoin) padded(side int) bool {
	if side == 0 {
		return j.jt.leftOuter
	}
	return j.jt.rightOuter
}

func (j *IntervalJoin) emitRow(l, r []byte) {
	j.out.Add(l, r)
}

// firedAt reports whether row i of b, a bucket of a padded side, had its early-fire pad.
func (b *bucket) firedAt(i int) bool { return b.fired != nil && b.fired[i] }

// process is TimeIntervalJoin.processElement1 (side 0, a left row) or processElement2 (side 1)
// for a row at time t of key id.
//
// A row of an unjoinable key (joinable) joins nothing, so Ferry never compares it; what it keeps
// of it follows the other side effects Flink's caching has (docs/operators/interval-join.md#null-keys):
// its bucket time is always cached, with the cleanup timer it registers, because cleanup timers
// move the operator-wide expiration bounds and fire in an order shared with every key; the row
// itself is stored only on a padded side, to be padded when Flink pads it, unless emitNullKeys
// pads it on arrival.
func (j *IntervalJoin) process(side int, id int32, row []byte, t int64) {
	ks := &j.keys.k[id]
	own, other := &ks.left, &ks.right
	ownRel, otherRel := j.leftRelative, j.rightRelative
	otherExp := &j.rightExpiration
	ownOuter, otherOuter := j.padded(side), j.padded(1-side)
	hasTimer := ks.hasRightTimer // a cached left row sets the right timer state
	if side == 1 {
		own, other = other, own
		ownRel, otherRel = otherRel, ownRel
		otherExp = &j.leftExpiration
		hasTimer = ks.hasLeftTimer
	}
	lo, hi := t-otherRel, t+ownRel
	joins := j.joinable(j.state.Key(id))
	emitted := false
	if *otherExp < hi {
		*otherExp = j.expiration(j.leftOpTime, otherRel) // both sides' operator times are equal
		if *other != nil {
			j.order = (*other).AppendOrder(j.order[:0])
			for _, b := range j.order {
				if joins && b.time >= lo && b.time <= hi {
					for r, o := range b.rows {
						l, rr := row, o
						if side == 1 {
							l, rr = o, row
						}
						if j.cond != nil && !j.cond.Holds(l, rr) {
							continue
						}
						if otherOuter && !b.matched[r] && b.firedAt(r) {
							// the row's early-fire pad is out: the match replaces it
							j.emitPadKind(1-side, o, engine.UpdateBefore)
							j.out.AddKind(l, rr, engine.UpdateAfter)
						} else {
							j.emitRow(l, rr)
						}
						emitted = true
						if otherOuter {
							b.matched[r] = true
						}
					}
				}
				if b.time <= *otherExp {
					if otherOuter {
						for r, o := range b.rows {
							if !b.matched[r] && !b.firedAt(r) {
								j.emitPad(1-side, o)
							}
						}
					}
					j.keys.removeBucket(*other, b)
				}
			}
		}
	}
	cached := j.leftOpTime < hi // the other side's operator time has not passed the row's window
	if cached {
		if *own == nil {
			*own = j.keys.newMap()
		}
		b := j.keys.bucketAt(*own, t)
		stored := joins || ownOuter && !j.emitNullKeys
		if stored {
			j.keys.addRow(b, row, emitted, false)
		}
		if j.earlyFire && ownOuter && stored && !emitted {
			j.registerEarlyFire(id, side, t) // before the cleanup timer, as Flink registers them
		}
		if !hasTimer {
			j.registerCleanUp(id, t, side == 0)
		}
	}
	if !emitted && ownOuter && (!cached || !joins && j.emitNullKeys) {
		j.emitPad(side, row)
	}
}

// emitPad emits row of side (0 left, 1 right) padded with NULLs for the other side, +I.
func (j *IntervalJoin) emitPad(side int, row []byte) { j.emitPadKind(side, row, engine.Insert) }

// emitPadKind is emitPad with row kind k.
func (j *IntervalJoin) emitPadKind(side int, row []byte, k engine.RowKind) {
	if side == 0 {
		j.out.AddKind(row, nil, k)
	} else {
		j.out.AddKind(nil, row, k)
	}
}

// registerEarlyFire registers the early-fire timer of a row of side cached at time t: a timer
// at t + the delay in the cleanup timers' domain; crossDomain, a processing-time timer at the
// call's processing time + the delay, which fires bucket t of side (keyState.sched).
func (j *IntervalJoin) registerEarlyFire(id int32, side int, t int64) {
	if !j.crossDomain {
		j.registerTimer(id, t+j.fireDelay)
		return
	}
	at := j.now + j.fireDelay
	j.keys.k[id].schedule(side, at, t)
	j.timers.Register(engine.ProcessingTime, id, at, 0)
}

// fireEarly is Flink's earlyFire: pads each row of bucket t of side's cache m (nil: none) that
// neither matched nor fired, in bucket order, and marks it fired.
func (j *IntervalJoin) fireEarly(m *bucketMap, side int, t int64) {
	if m == nil {
		return
	}
	b := getBucket(m, t)
	if b == nil || b.fired == nil {
		return
	}
	for i, row := range b.rows {
		if !b.matched[i] && !b.fired[i] {
			j.emitPad(side, row)
			b.fired[i] = true
		}
	}
}

// onProcTimer fires the processing-time early-fire timer (id, ts) of a crossDomain join: the
// buckets scheduled for ts, the left cache's first, each in the order scheduled; no cleanup.
func (j *IntervalJoin) onProcTimer(id int32, ts int64) {
	j.updateOperatorTime(j.now)
	ks := &j.keys.k[id]
	for side, m := range [2]*bucketMap{ks.left, ks.right} {
		times := ks.unschedule(side, ts)
		if !j.padded(side) {
			continue
		}
		for _, t := range times {
			j.fireEarly(m, side, t)
		}
	}
}

// registerCleanUp is Flink's registerCleanUpTimer: a left row's cleanup time goes into the
// right timer state (it cleans the left cache), and the reverse.
func (j *IntervalJoin) registerCleanUp(id int32, rowTime int64, leftRow bool) {
	ks := &j.keys.k[id]
	if leftRow {
		at := rowTime + j.leftRelative + j.minCleanUp + j.lateness + 1
		j.registerTimer(id, at)
		ks.rightTimer, ks.hasRightTimer = at, true
	} else {
		at := rowTime + j.rightRelative + j.minCleanUp + j.lateness + 1
		j.registerTimer(id, at)
		ks.leftTimer, ks.hasLeftTimer = at, true
	}
}

// registerTimer registers the timer (id, at) in the cleanup timers' domain (a timer it has
// already stays as it is).
func (j *IntervalJoin) registerTimer(id int32, at int64) { j.timers.Register(j.domain, id, at, 0) }

// onTimer is TimeIntervalJoin.onTimer for key id.
func (j *IntervalJoin) onTimer(id int32, ts, nowMs int64) {
	j.updateOperatorTime(nowMs)
	ks := &j.keys.k[id]
	if j.earlyFire && !j.crossDomain { // early fire before cleanup at a shared time
		if j.jt.leftOuter {
			j.fireEarly(ks.left, 0, ts-j.fireDelay)
		}
		if j.jt.rightOuter {
			j.fireEarly(ks.right, 1, ts-j.fireDelay)
		}
	}
	if ks.hasLeftTimer && ts == ks.leftTimer {
		j.rightExpiration = j.expiration(j.leftOpTime, j.rightRelative)
		j.removeExpired(id, false)
	}
	if ks.hasRightTimer && ts == ks.rightTimer {
		j.leftExpiration = j.expiration(j.leftOpTime, j.leftRelative)
		j.removeExpired(id, true)
	}
}

// removeExpired is Flink's removeExpiredRows over the left cache (removeLeft) or the right one:
// pads and removes the expired buckets, then registers a timer for the earliest remaining bucket
// or, when none remains with a positive time, clears the cache and its timer state.
func (j *IntervalJoin) removeExpired(id int32, removeLeft bool) {
	ks := &j.keys.k[id]
	m, exp, pad, side := ks.right, j.rightExpiration, j.jt.rightOuter, 1
	if removeLeft {
		m, exp, pad, side = ks.left, j.leftExpiration, j.jt.leftOuter, 0
	}
	earliest := int64(-1)
	if m != nil {
		j.order = m.AppendOrder(j.order[:0])
		for _, b := range j.order {
			if b.time <= exp {
				if pad {
					for i, row := range b.rows {
						if !b.matched[i] && !b.firedAt(i) {
							j.emitPad(side, row)
						}
					}
				}
				j.keys.removeBucket(m, b)
			} else if b.time < earliest || earliest < 0 {
				earliest = b.time
			}
		}
	}
	switch {
	case earliest > 0:
		j.registerCleanUp(id, earliest, removeLeft)
	case removeLeft:
		j.keys.dropMap(ks.left)
		ks.hasRightTimer, ks.rightTimer, ks.left = false, 0, nil
	default:
		j.keys.dropMap(ks.right)
		ks.hasLeftTimer, ks.leftTimer, ks.right = false, 0, nil
	}
}

// removeIfEmpty removes key id once nothing of it is left: no cache (present, even empty), no
// cleanup time, no timer, no early-fire schedule.
func (j *IntervalJoin) removeIfEmpty(id int32) {
	ks := &j.keys.k[id]
	if ks.left == nil && ks.right == nil && !ks.hasLeftTimer && !ks.hasRightTimer && len(ks.sched[0]) == 0 && len(ks.sched[1]) == 0 &&
		!j.timers.HasTimers(id) {
		j.state.Remove(id)
	}
}

func (j *IntervalJoin) resetOutput() { j.out.Reset() }
