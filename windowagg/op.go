package windowagg

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/ferrystream/ferry/agg/kernels"
	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/windowjoin"
)

// WindowAgg is one instance of Flink's WindowAggOperator with a slicing processor
// (SliceUnsharedSyncStateWindowAggProcessor for TUMBLE, SliceSharedSyncStateWindowAggProcessor
// for HOP and CUMULATE) and its RecordsWindowBuffer and AggCombiner.
//
// State: per key, its slices (slice end -> accumulator group of every call, in the kernels'
// flat slices), Flink's "window-aggs" value state under the slice end as namespace; one
// event-time timer per (key, window end) at Flink's timer time, the end as namespace, in the
// KeyedState's timer service (Flink's heap order).
//
// The buffer: Flink buffers a bundle of rows per (key, slice) and folds them into state when it
// flushes (watermark progress past its earliest slice, a checkpoint barrier, a full buffer),
// registering each pair's window timer then, in the bundle's first-appearance order. Since a
// (key, slice)'s rows fold in arrival order either way and nothing reads the state between
// flushes, WindowAgg folds every row at once and keeps only what the flush does besides: the
// pending timer registrations, in first-appearance order. Flush (the host's before every
// barrier) and watermark progress run them as Flink's flush would. A flush of a full buffer in
// Flink (memory-dependent) is not reproduced; docs/operators/window-aggregate.md.
type WindowAgg struct {
	a         assigner
	rowtime   int
	nCols     int              // the input's columns
	zone      *windowjoin.Zone // nil: UTC
	calls     []kernels.Accumulator
	countStar recordCount // the COUNT(*) call read for emptiness; nil for none
	visible   []int       // calls with an output column
	props     []string
	keyTypes  []engine.Type
	outTypes  []engine.Type
	output    []engine.Field

	enc    *engine.KeyEncoder
	state  *engine.KeyedState
	timers *engine.TimerService
	slices keySlices
	groups groupAlloc

	progress    int64 // the processor's currentProgress (the last watermark)
	timerWm     int64 // the timer service's watermark (set after the flush of an advance)
	nextTrigger int64 // nextTriggerProgress
	minSlice    int64 // the buffer's minSliceEnd
	pending     []pendingPair
	pendingSet  map[pendingPair]struct{}

	// LateDropped counts the rows dropped as late (Flink's numLateRecordsDropped).
	LateDropped int64

	emits   []emission // rows of the current advance, in order
	keyBuf  []byte     // their keys, back to back
	emitAt  int        // the next emission to write
	chunk   int
	scratch scratchBufs
}

// recordCount is the COUNT(*) kernel's count per group.
type recordCount interface{ Records(g int32) int64 }

type pendingPair struct {
	key int32
	end int64
}

// emission is one output row: its key (keyBuf[from:to]), its window end and the group that
// holds the accumulators to write (owned by the emission, freed once written).
type emission struct {
	from, to int
	end      int64
	gid      int32
}

type scratchBufs struct {
	kgs    []int32
	ends   []int64 // per row: its slice end, or the merge target
	gids   []int32
	act    []int8
	chg    []bool
	keys   [][]byte
	picks  []int32
	vbytes []int
	merge  engine.OutBatch
	view   engine.Batch
	one    [1]int32
}

var timestamp3 = engine.Type{ID: engine.Timestamp, Precision: 3}

func open(spec *engine.Spec, p *Params) (engine.Keyed, error) {
	w, err := newWindowAgg(spec, p)
	if err != nil {
		return engine.Keyed{}, err
	}
	return engine.Keyed{Operator: w, Snapshottable: w.snapshottable}, nil
}

func newWindowAgg(spec *engine.Spec, p *Params) (*WindowAgg, error) {
	a, err := p.validate(spec)
	if err != nil {
		return nil, err
	}
	in := &spec.Inputs[0]
	w := &WindowAgg{a: a, rowtime: p.RowtimeIndex, zone: p.ShiftZone, props: p.Properties,
		progress: math.MinInt64, timerWm: math.MinInt64, nextTrigger: math.MinInt64, minSlice: math.MaxInt64,
		pendingSet: map[pendingPair]struct{}{}, chunk: spec.ChunkRows}
	for _, k := range in.Keys {
		w.keyTypes = append(w.keyTypes, in.Types[k])
		w.output = append(w.output, engine.Field{Name: in.Fields[k].Name, Type: in.Types[k]})
	}
	if err := engine.KeyColumnsDecodable(w.keyTypes); err != nil {
		return nil, err
	}
	for i, c := range p.Aggs {
		acc, typ, err := kernels.New(fmt.Sprintf("aggs[%d]", i), kernels.Call{Func: c.Func, Args: c.Args, JavaStrings: -1}, in.Types)
		if err != nil {
			return nil, err
		}
		if _, err := acc.PartialTypes(); err != nil && a.shape != tumble {
			return nil, fmt.Errorf("aggs[%d]: merging slices: %w", i, err)
		}
		w.calls = append(w.calls, acc)
		if p.CountStar != nil && *p.CountStar == i {
			rc, ok := acc.(recordCount)
			if !ok {
				return nil, engine.ParamError("count_star", "call %d keeps no record count", i)
			}
			w.countStar = rc
			if p.CountStarInserted {
				continue
			}
		}
		name := c.Name
		if name == "" {
			name = fmt.Sprintf("agg%d", i)
		}
		w.visible = append(w.visible, i)
		w.output = append(w.output, engine.Field{Name: name, Type: typ})
	}
	for _, pr := range p.Properties {
		w.output = append(w.output, engine.Field{Name: pr, Type: timestamp3})
	}
	for _, f := range w.output {
		w.outTypes = append(w.outTypes, f.Type)
	}
	w.enc = engine.NewKeyEncoder(in.Keys, in.Types)
	w.nCols = len(in.Types)
	w.groups.calls = w.calls
	w.slices.w = w
	w.state = engine.NewKeyedState(spec, engine.StateConfig{KeySize: w.enc.FixedSize(), Timers: true, Layout: p})
	w.timers = w.state.Timers()
	w.state.Register(&w.slices)
	return w, nil
}

// Output implements engine.KeyedOperator.
func (w *WindowAgg) Output() []engine.Field { return w.output }

// State implements engine.KeyedOperator.
func (w *WindowAgg) State() *engine.KeyedState { return w.state }

// Close implements engine.KeyedOperator.
func (w *WindowAgg) Close() { *w = WindowAgg{} }

func (w *WindowAgg) snapshottable() error {
	if len(w.pending) > 0 {
		return fmt.Errorf("%w: %s holds a bundle not flushed (the host flushes before every barrier)", engine.ErrState, Kind)
	}
	return nil
}

// timerTime is toEpochMillsForTimer(windowEnd - 1) in the shift zone.
func (w *WindowAgg) timerTime(end int64) (int64, error) {
	if w.zone == nil {
		if end == math.MinInt64 {
			return end, nil
		}
		return end - 1, nil
	}
	return w.zone.TimerTime(end)
}

// fired is TimeWindowUtil.isWindowFired.
func (w *WindowAgg) fired(end, progress int64) (bool, error) {
	if end == math.MaxInt64 {
		return false, nil
	}
	t, err := w.timerTime(end)
	return progress >= t, err
}

// Process implements engine.KeyedOperator: every row is processElement, in order. Rows are
// checked (key group, row time, time zone) before any state changes.
func (w *WindowAgg) Process(inputs *engine.Inputs, _ int64, out *engine.OutBatch) (bool, error) {
	out.Len = 0
	in := inputs.Batches[0]
	if in.Retracts {
		return false, fmt.Errorf("%w: %s takes insert-only input", engine.ErrData, Kind)
	}
	if err := w.enc.Encode(in); err != nil {
		return false, err
	}
	s := &w.scratch
	s.kgs, s.ends = s.kgs[:0], s.ends[:0]
	rt := &in.Cols[w.rowtime]
	for i := range in.Len {
		kg, err := w.state.KeyGroupOf(w.enc.Hash(i))
		if err != nil {
			return false, fmt.Errorf("row %d: %w", i, err)
		}
		if rt.IsNull(i) {
			return false, fmt.Errorf("%w: row %d: RowTime field should not be null, please convert it to a non-null long value", engine.ErrData, i)
		}
		epoch := int64(binary.LittleEndian.Uint64(rt.Fixed(i)))
		ts, err := w.zone.ToLocal(epoch)
		if err != nil {
			return false, fmt.Errorf("row %d: %w", i, err)
		}
		if misaligned(w.zone, ts-epoch, w.a.sliceSize) { // an earlier offset of the zone
			return false, fmt.Errorf("%w: row %d: %s", engine.ErrUnsupported, i, misalignedReason(w.zone, ts-epoch, w.a.sliceSize))
		}
		end := w.a.sliceEnd(ts)
		if _, err := w.fired(w.a.lastWindowEnd(end), 0); err != nil { // the zone covers the window
			return false, fmt.Errorf("row %d: %w", i, err)
		}
		s.kgs, s.ends = append(s.kgs, int32(kg)), append(s.ends, end)
	}
	s.gids = s.gids[:0]
	for i := range in.Len {
		end := s.ends[i]
		late, _ := w.fired(end, w.progress)
		target := end
		if late {
			if dead, _ := w.fired(w.a.lastWindowEnd(end), w.progress); dead {
				w.LateDropped++
				s.gids = append(s.gids, -1)
				continue
			}
			target = w.a.mergeTarget(end)
		}
		key, hash, kg := w.enc.Key(i), w.enc.Hash(i), int(s.kgs[i])
		id := w.state.Find(key, hash, kg)
		if id < 0 {
			id = w.state.Insert(key, hash, kg)
		}
		s.gids = append(s.gids, w.slices.group(id, target, true))
		if p := (pendingPair{id, target}); !hasPending(w.pendingSet, p) {
			w.pendingSet[p] = struct{}{}
			w.pending = append(w.pending, p)
		}
		w.minSlice = min(w.minSlice, target)
		if late { // processElement registers the first unfired window's timer at once
			unfired := end
			for f, _ := w.fired(unfired, w.progress); f; f, _ = w.fired(unfired, w.progress) {
				unfired += w.a.sliceSize
			}
			if err := w.register(id, unfired); err != nil {
				return false, err
			}
		}
	}
	s.act = resize(s.act, in.Len)
	for i := range s.act {
		s.act[i] = 1
	}
	s.chg = resize(s.chg, in.Len)
	for _, c := range w.calls {
		c.Fold(in, s.gids, s.act, s.chg)
	}
	return false, nil
}

func hasPending(m map[pendingPair]struct{}, p pendingPair) bool { _, ok := m[p]; return ok }

func (w *WindowAgg) register(id int32, end int64) error {
	t, err := w.timerTime(end)
	if err != nil {
		return err
	}
	w.timers.Register(engine.EventTime, id, t, end)
	return nil
}

// flush is RecordsWindowBuffer.flush: AggCombiner.combine of every (key, slice) of the bundle,
// in first-appearance order, registers the slice's window timer unless it fired at the timer
// service's watermark.
func (w *WindowAgg) flush() error {
	for _, p := range w.pending {
		if f, err := w.fired(p.end, w.timerWm); err != nil {
			return err
		} else if !f {
			if err := w.register(p.key, p.end); err != nil {
				return err
			}
		}
	}
	w.pending = w.pending[:0]
	clear(w.pendingSet)
	w.minSlice = math.MaxInt64
	return nil
}

// Flush implements engine.KeyedOperator: prepareSnapshotPreBarrier's buffer flush; it emits
// nothing.
func (w *WindowAgg) Flush(_ int64, out *engine.OutBatch) (bool, error) {
	out.Len = 0
	return false, w.flush()
}

// Advance implements engine.KeyedOperator: processWatermark. A watermark above the last one
// advances the processor (a buffer flush when the earliest buffered slice fired, gated by
// nextTriggerProgress), then fires every timer up to it in Flink's timer order: each is
// fireWindow and clearWindow. Processing-time callbacks (watermarkMs math.MinInt64) do nothing.
func (w *WindowAgg) Advance(wm, _ int64, out *engine.OutBatch) (bool, error) {
	out.Len = 0
	if wm == math.MinInt64 || wm <= w.progress {
		return false, nil
	}
	w.progress = wm
	if wm >= w.nextTrigger {
		if f, err := w.fired(w.minSlice, wm); err != nil {
			return false, err
		} else if f {
			if err := w.flush(); err != nil {
				return false, err
			}
		}
		next, err := w.nextTriggerProgress(wm)
		if err != nil {
			return false, err
		}
		w.nextTrigger = next
	}
	w.timerWm = wm
	w.emits, w.keyBuf, w.emitAt = w.emits[:0], w.keyBuf[:0], 0
	for {
		t, ok := w.timers.Next(engine.EventTime, wm)
		if !ok {
			break
		}
		if err := w.fire(t.Key, t.Namespace); err != nil {
			return false, err
		}
		w.clear(t.Key, t.Namespace)
		if len(w.slices.of[t.Key]) == 0 && !w.timers.HasTimers(t.Key) {
			w.state.Remove(t.Key)
		}
	}
	w.state.EndBatch()
	return w.Continue(out)
}

// nextTriggerProgress is TimeWindowUtil.getNextTriggerWatermarkWithOffset.
func (w *WindowAgg) nextTriggerProgress(wm int64) (int64, error) {
	if wm == math.MaxInt64 {
		return wm, nil
	}
	iv := w.a.sliceSize
	var trigger int64
	if w.zone != nil && w.zone.UsesDaylightTime {
		local, err := w.zone.ToLocal(wm)
		if err != nil {
			return 0, err
		}
		if trigger, err = w.zone.TimerTime(windowStart(local, w.a.offset, iv) + iv); err != nil {
			return 0, err
		}
	} else {
		trigger = windowStart(wm, w.a.offset, iv) + iv - 1
	}
	if trigger > wm {
		return trigger, nil
	}
	return trigger + iv, nil
}

// fire is the processor's fireWindow for key id and window end: the window's accumulators
// (TUMBLE: its slice; HOP: its slices merged, newest first, into fresh accumulators;
// CUMULATE: the window's slice merged into the first slice's) are emitted unless COUNT(*) reads
// 0, and HOP (when not empty) and CUMULATE register the next window's timer.
func (w *WindowAgg) fire(id int32, end int64) error {
	var gid int32
	switch w.a.shape {
	case tumble:
		gid = w.groups.copyOf(w.slices.group(id, end, false))
	case hop:
		gid = w.groups.alloc()
		for k, e := 0, end; k < w.a.nSlices; k, e = k+1, e-w.a.sliceSize {
			if src := w.slices.group(id, e, false); src >= 0 {
				if err := w.merge(gid, src); err != nil {
					return err
				}
			}
		}
	case cumulate:
		first := w.a.windowStart(end) + w.a.sliceSize
		target := w.slices.group(id, first, true)
		if end != first {
			if src := w.slices.group(id, end, false); src >= 0 {
				if err := w.merge(target, src); err != nil {
					return err
				}
			}
		}
		gid = w.groups.copyOf(target)
	}
	empty := w.countStar != nil && w.records(gid) == 0
	if empty {
		w.groups.free(gid)
	} else {
		key := w.state.Key(id)
		w.emits = append(w.emits, emission{from: len(w.keyBuf), to: len(w.keyBuf) + len(key), end: end, gid: gid})
		w.keyBuf = append(w.keyBuf, key...)
	}
	switch {
	case w.a.shape == hop && !empty:
		return w.register(id, end+w.a.sliceSize)
	case w.a.shape == cumulate:
		if next := end + w.a.sliceSize; next <= w.a.windowStart(end)+w.a.size {
			return w.register(id, next)
		}
	}
	return nil
}

// records is COUNT(*)'s count in group gid (Flink's acc.getLong(indexOfCountStar)).
func (w *WindowAgg) records(gid int32) int64 { return w.countStar.Records(gid) }

// merge merges group src's accumulators into group dst (the aggregator's merge).
func (w *WindowAgg) merge(dst, src int32) error {
	s := &w.scratch
	s.one[0] = src
	for _, c := range w.calls {
		types, err := c.PartialTypes()
		if err != nil {
			return err
		}
		vb := make([]int, len(types))
		c.PartialVarBytes(s.one[:], vb)
		s.merge.Alloc = engine.HeapAllocator{}
		if err := s.merge.Init(types, 1, vb); err != nil {
			return err
		}
		if err := c.WritePartial(s.merge.Cols[:len(types)], s.one[:]); err != nil {
			return err
		}
		s.merge.Finish()
		s.view.Len = 1
		s.view.Cols = resize(s.view.Cols, len(types))
		for k := range types {
			oc := &s.merge.Cols[k]
			s.view.Cols[k] = engine.Column{Type: oc.Type, Valid: oc.Valid, Data: oc.Data, Offs: oc.Offs}
		}
		s.view.Kinds = s.merge.Kinds()
		s.one[0] = dst
		s.chg = resize(s.chg, max(len(s.chg), 1))
		if err := c.Merge(&s.view, 0, s.one[:], s.chg[:1]); err != nil {
			return err
		}
		s.one[0] = src
	}
	return nil
}

// clear is clearWindow: the window's expired slices go.
func (w *WindowAgg) clear(id int32, end int64) {
	switch w.a.shape {
	case tumble:
		w.slices.drop(id, end)
	case hop:
		w.slices.drop(id, end-w.a.size+w.a.sliceSize)
	case cumulate:
		first := w.a.windowStart(end) + w.a.sliceSize
		switch end {
		case first:
		case w.a.windowStart(end) + w.a.size:
			w.slices.drop(id, end)
			w.slices.drop(id, first)
		default:
			w.slices.drop(id, end)
		}
	}
}

// Continue implements engine.KeyedOperator: the next chunk of the fired windows' rows.
func (w *WindowAgg) Continue(out *engine.OutBatch) (bool, error) {
	n := min(len(w.emits)-w.emitAt, w.chunk)
	if n <= 0 {
		out.Len = 0
		return false, nil
	}
	rows := w.emits[w.emitAt : w.emitAt+n]
	s := &w.scratch
	s.keys, s.gids = s.keys[:0], s.gids[:0]
	for _, e := range rows {
		s.keys = append(s.keys, w.keyBuf[e.from:e.to])
		s.gids = append(s.gids, e.gid)
	}
	// record every call's current value (a fold that changes nothing); Write picks "after".
	nullIn := nullBatch(len(rows), w.nCols)
	s.act = resize(s.act, n)
	clear(s.act)
	s.chg = resize(s.chg, n)
	s.picks = resize(s.picks, n)
	for j := range s.picks {
		s.picks[j] = int32(2*j + 1)
	}
	s.vbytes = resize(s.vbytes, len(w.outTypes))
	clear(s.vbytes)
	engine.KeyVarBytes(w.keyTypes, s.keys, s.vbytes)
	for j, i := range w.visible {
		w.calls[i].Fold(nullIn, s.gids, s.act, s.chg)
		if vb, ok := w.calls[i].(kernels.VarOutput); ok {
			s.vbytes[len(w.keyTypes)+j] = vb.VarBytes(s.picks)
		}
	}
	if err := out.Init(w.outTypes, n, s.vbytes); err != nil {
		return false, err
	}
	engine.WriteKeyColumns(out.Cols, w.keyTypes, s.keys, 0)
	for j, i := range w.visible {
		w.calls[i].Write(&out.Cols[len(w.keyTypes)+j], s.picks)
	}
	base := len(w.keyTypes) + len(w.visible)
	for k, pr := range w.props {
		dst := engine.OutValues[int64](&out.Cols[base+k])
		for j, e := range rows {
			switch pr {
			case PropWindowStart:
				dst[j] = w.a.windowStart(e.end)
			case PropWindowEnd:
				dst[j] = e.end
			case PropWindowTime:
				v := e.end - 1
				if w.zone != nil {
					var err error
					if v, err = w.zone.AtZone(v); err != nil {
						return false, err
					}
				}
				dst[j] = v
			}
		}
	}
	out.Finish()
	for _, e := range rows {
		w.groups.free(e.gid)
	}
	w.emitAt += n
	return w.emitAt < len(w.emits), nil
}

// nullBatch is a batch of n rows, every column NULL, wide enough for any column the calls read:
// the input of a fold that changes nothing (every action 0) and records the groups' values.
func nullBatch(n, cols int) *engine.Batch {
	b := &engine.Batch{Len: n, Kinds: make([]byte, n)}
	zero := make([]byte, (n+7)/8+16*n+8)
	offs := make([]int32, n+1)
	b.Cols = make([]engine.Column, cols)
	for i := range b.Cols {
		b.Cols[i] = engine.Column{Valid: zero[:(n+7)/8+1], Data: zero, Offs: offs}
	}
	return b
}

func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
