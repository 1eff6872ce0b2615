package agg

import (
	"fmt"
	"math"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/ttl"
)

// GroupAggregate is Flink's single-phase group aggregate without mini-batch
// (GroupAggFunction / GroupAggHelper): each input row updates its key's accumulators and emits
// the changelog Flink emits for that row, in input order. Batching is only transport: a batch
// produces exactly the rows Flink would produce for its rows one by one.
//
// Per row (flink-semantics.md §2.2): a retraction for a key without state is dropped; the first
// accumulate creates the state and emits +I; later rows emit -U (when generate_update_before)
// and +U, or nothing when no aggregate value changed; when the record counter of a retracting
// aggregation reaches zero the key emits -D with its previous values and its state is removed.
//
// A batch runs in passes so every per-row loop is monomorphic: keys are encoded and hashed, one
// sequential pass resolves each row's group (creating and removing groups in row order), each
// aggregate folds all rows, and a last pass decides what each row emits. Because every
// aggregate's state evolves only with its own inputs, per-aggregate passes see exactly the
// values a row-by-row run sees. Ids of groups removed in a batch are not reused until it ends,
// so a key removed and re-created within one batch gets fresh state.
type GroupAggregate struct {
	spec    *engine.Spec
	label   string
	keyCols []int
	keys    *engine.KeyEncoder
	table   *engine.GroupTable
	// counter is the record count per group (Flink's count1 behind RetractionRecordCounter);
	// nil for insert-only input, where a group lives forever (AccumulationRecordCounter).
	counter []int64
	// ttl is the idle-state retention; lastWrite the processing time each group's state was
	// last written (Flink's OnCreateAndWrite), kept only when TTL is enabled.
	ttl       ttl.Policy
	lastWrite []int64
	sweep     ttl.Sweeper
	calls     []accumulator
	filters   []int          // per call: FILTER column, or -1
	sets      []*distinctSet // the value sets of DISTINCT calls, one per argument column
	states    []groupState   // calls, then sets: everything per group that resets and snapshots
	output    []engine.Field
	outTypes  []engine.Type
	panicIn   string

	// Per-batch scratch, reused.
	kgs        []int32
	gids       []int32  // group of each row, -1 for dropped rows
	act        []int8   // +1 for rows that accumulate, -1 for rows that retract
	callActs   [][]int8 // per call: the actions its accumulator folds (act, filtered or distinct)
	filterActs [][]int8 // per call with a plain FILTER: its own action buffer
	first      []bool   // the row created its group
	gone       []bool   // the row's retraction brought the record count to zero
	changed    []bool   // some aggregate value differs before and after the row
	src        []int32  // input row of each output row
	pick       []int32  // entry of the rows' before/after values each output row carries (rowValues)
	outKinds   []engine.RowKind
	varBytes   []int
	snapIDs    []int32 // groups of the key group being snapshotted
	snapKG     int     // the key group snapIDs lists
	bundle     bundleState
}

var _ engine.Operator = (*GroupAggregate)(nil)

// NewGroupAggregate builds a group aggregate from a validated spec of kind "group_aggregate".
func NewGroupAggregate(spec *engine.Spec) (*GroupAggregate, error) {
	if spec.StateTTLMs > 0 {
		for i, c := range spec.Aggs {
			if c.Distinct || (c.Retract && (c.Func == "MIN" || c.Func == "MAX")) {
				// Flink keeps these in MapViews whose entries expire one by one, apart from the key.
				return nil, fmt.Errorf("%w: aggs[%d]: idle-state TTL with %s: not native yet (its map state expires per entry)",
					engine.ErrUnsupported, i, mapViewCall(c))
			}
		}
	}
	start, end := spec.KeyGroupRange()
	keys := engine.NewKeyEncoder(spec.Keys, spec.InputTypes)
	g := &GroupAggregate{
		spec:    spec,
		label:   spec.Label(),
		keyCols: spec.Keys,
		keys:    keys,
		table:   engine.NewGroupTable(spec.MaxParallelism, start, end, keys.FixedSize()),
	}
	if spec.Test != nil {
		g.panicIn = spec.Test.Panic
	}
	if spec.NeedRetraction {
		g.counter = []int64{}
	}
	g.ttl = ttl.Policy{TTLMs: spec.StateTTLMs}
	if g.ttl.Enabled() {
		g.lastWrite = []int64{}
	}
	for _, k := range spec.Keys {
		f := engine.Field{Name: spec.Input[k].Name, Type: spec.InputTypes[k]}
		g.output = append(g.output, f)
	}
	sets := map[int]*distinctSet{} // by argument column
	for i, call := range spec.Aggs {
		acc, field, err := newCall(i, call, spec)
		if err != nil {
			return nil, err
		}
		g.calls = append(g.calls, acc)
		g.output = append(g.output, field)
		filter := -1
		if call.Filter != nil {
			filter = *call.Filter
		}
		g.filters = append(g.filters, filter)
		g.callActs = append(g.callActs, nil)
		g.filterActs = append(g.filterActs, nil)
		if call.Distinct {
			set := sets[call.Args[0]]
			if set == nil {
				set = newDistinctSet(call.Args[0], spec.NeedRetraction)
				sets[call.Args[0]] = set
				g.sets = append(g.sets, set)
			}
			set.addCall(i, filter)
		}
	}
	for _, c := range g.calls {
		g.states = append(g.states, c)
	}
	for _, d := range g.sets {
		g.states = append(g.states, d)
	}
	for _, f := range g.output {
		g.outTypes = append(g.outTypes, f.Type)
	}
	g.varBytes = make([]int, len(g.outTypes))
	return g, nil
}

// Output implements engine.Operator.
func (g *GroupAggregate) Output() []engine.Field { return g.output }

// Groups is the number of keys holding state.
func (g *GroupAggregate) Groups() int { return g.table.Len() }

// Process implements engine.Operator. nowMs is the processing time idle-state TTL reads and
// writes for the whole batch.
func (g *GroupAggregate) Process(in *engine.Batch, nowMs int64, out *engine.OutBatch) error {
	if g.panicIn == "process" {
		var m map[int]int
		m[0] = 1 // test hook: a runtime panic inside the kernel
	}
	n := in.Len
	if in.Retracts && g.counter == nil {
		for i, k := range in.Kinds {
			if !engine.IsAccumulate(k) {
				return fmt.Errorf("%w: row %d: retraction (%s) on an aggregation declared insert-only (need_retraction false)", engine.ErrData, i, kindName(k))
			}
		}
	}
	for k, c := range g.keyCols {
		// Each row emits at most two rows, each with a copy of its key; output offsets are int32.
		if col := &in.Cols[c]; g.outTypes[k].ID == engine.Varchar && n > 0 {
			if size := 2 * int64(col.Offs[col.Offset+n]-col.Offs[col.Offset]); size > math.MaxInt32 {
				return fmt.Errorf("%w: key column %d may produce %d bytes of output, more than 2 GiB; send smaller batches", engine.ErrData, c, size)
			}
		}
	}
	if err := g.keys.Encode(in); err != nil {
		return err
	}
	g.kgs = resize(g.kgs, n)
	for i := range n {
		kg, err := g.table.KeyGroupOf(g.keys.Hash(i))
		if err != nil {
			return fmt.Errorf("row %d: %w", i, err)
		}
		g.kgs[i] = int32(kg)
	}
	if g.spec.MiniBatch {
		g.resolveBundle(in, nowMs)
	} else {
		g.resolveGroups(in, nowMs)
	}
	g.resolveActions(in)
	for i, c := range g.calls {
		c.fold(in, g.gids, g.callActs[i], g.changed)
	}
	var err error
	if g.spec.MiniBatch {
		err = g.emitBundle(in, nowMs, out)
	} else {
		err = g.emit(in, out)
	}
	for _, id := range g.table.EndBatch() {
		g.resetGroup(id)
	}
	g.sweepExpired(nowMs)
	return err
}

// sweepBudget is how many group ids each call inspects for expired, never-read state.
const sweepBudget = 1024

// sweepExpired removes expired state of groups no row reads again, a bounded slice per call,
// so idle keys do not hold memory forever. Reading them would find them absent anyway.
func (g *GroupAggregate) sweepExpired(nowMs int64) {
	if !g.ttl.Enabled() {
		return
	}
	from, to := g.sweep.Next(g.table.Cap(), sweepBudget)
	for id := int32(from); id < int32(to); id++ {
		if g.table.Live(id) && g.ttl.Expired(g.lastWrite[id], nowMs) {
			g.table.Remove(id)
		}
	}
	for _, id := range g.table.EndBatch() {
		g.resetGroup(id)
	}
}

// mapViewCall names a call whose state Flink keeps in a MapView.
func mapViewCall(c engine.AggCall) string {
	if c.Distinct {
		return c.Func + "(DISTINCT)"
	}
	return c.Func + " with retraction"
}

// resolveGroups is the sequential pass: it maps each row to its group, creating groups on the
// first accumulate and removing them when the record count reaches zero. With idle-state TTL an
// expired group reads as absent (and is removed), and every row that keeps its group writes it.
func (g *GroupAggregate) resolveGroups(in *engine.Batch, nowMs int64) {
	n := in.Len
	g.gids = resize(g.gids, n)
	g.first = resize(g.first, n)
	g.gone = resize(g.gone, n)
	g.changed = resize(g.changed, n)
	clear(g.first)
	clear(g.gone)
	clear(g.changed)
	for i := range n {
		acc := engine.IsAccumulate(in.Kinds[i])
		key, hash, kg := g.keys.Key(i), g.keys.Hash(i), int(g.kgs[i])
		id := g.table.Find(key, hash, kg)
		if id >= 0 && g.lastWrite != nil && g.ttl.Expired(g.lastWrite[id], nowMs) {
			g.table.Remove(id) // NeverReturnExpired: reads as absent, cleared on read
			id = -1
		}
		if id < 0 {
			if !acc {
				g.gids[i] = -1 // retraction before any accumulate: dropped
				continue
			}
			id = g.table.Insert(key, hash, kg)
			g.grow()
			g.first[i] = true
		}
		g.gids[i] = id
		if g.lastWrite != nil {
			g.lastWrite[id] = nowMs // OnCreateAndWrite; a removed group's stamp is reset with it
		}
		if g.counter == nil {
			continue
		}
		if acc {
			g.counter[id]++
		} else {
			g.counter[id]--
		}
		if g.counter[id] == 0 {
			g.gone[i] = true
			g.table.Remove(id)
		}
	}
}

// resolveActions decides, per call and row, whether the call accumulates (+1), retracts (-1)
// or skips (0) the row: the row's kind, gated by the call's FILTER, and for DISTINCT calls by
// the distinct value set, which sees the rows in order.
func (g *GroupAggregate) resolveActions(in *engine.Batch) {
	n := in.Len
	g.act = resize(g.act, n)
	for i, k := range in.Kinds[:n] {
		g.act[i] = 1
		if !engine.IsAccumulate(k) {
			g.act[i] = -1
		}
	}
	for _, d := range g.sets {
		d.resolve(in, g.gids, g.act)
		for c, call := range d.calls {
			g.callActs[call] = d.acts[c]
		}
	}
	for i, f := range g.filters {
		switch {
		case g.spec.Aggs[i].Distinct: // resolved by its set
		case f < 0:
			g.callActs[i] = g.act
		default:
			acts := resize(g.filterActs[i], n)
			col := &in.Cols[f]
			for r := range acts {
				acts[r] = 0
				if passes(col, r) {
					acts[r] = g.act[r]
				}
			}
			g.filterActs[i], g.callActs[i] = acts, acts
		}
	}
}

func (g *GroupAggregate) grow() {
	n := g.table.Cap()
	if g.counter != nil {
		g.counter = extend(g.counter, n)
	}
	if g.lastWrite != nil {
		g.lastWrite = extend(g.lastWrite, n)
	}
	if g.spec.MiniBatch {
		g.bundle.keyOf = extend(g.bundle.keyOf, n)
	}
	for _, s := range g.states {
		s.Grow(n)
	}
}

func (g *GroupAggregate) resetGroup(id int32) {
	if g.counter != nil {
		g.counter[id] = 0
	}
	if g.lastWrite != nil {
		g.lastWrite[id] = 0
	}
	for _, s := range g.states {
		s.Reset(id)
	}
}

// emit decides each row's output rows and writes the output batch.
func (g *GroupAggregate) emit(in *engine.Batch, out *engine.OutBatch) error {
	g.src, g.pick, g.outKinds = g.src[:0], g.pick[:0], g.outKinds[:0]
	add := func(i int, prev bool, k engine.RowKind) {
		p := int32(2*i + 1) // the row's value after folding, 2i before
		if prev {
			p--
		}
		g.addOutput(int32(i), p, k)
	}
	for i, id := range g.gids[:in.Len] {
		switch {
		case id < 0:
		case g.gone[i]:
			if !g.first[i] {
				add(i, true, engine.Delete)
			}
		case g.first[i]:
			add(i, false, engine.Insert)
		case g.changed[i] || g.ttl.Enabled(): // with TTL Flink re-emits unchanged results too
			if g.spec.GenerateUpdateBefore {
				add(i, true, engine.UpdateBefore)
			}
			add(i, false, engine.UpdateAfter)
		}
	}
	return g.writeOutput(in, out)
}

// addOutput appends an output row: the key of input row src, the aggregate values picked by
// pick (see rowValues), RowKind kind.
func (g *GroupAggregate) addOutput(src, pick int32, kind engine.RowKind) {
	g.src = append(g.src, src)
	g.pick = append(g.pick, pick)
	g.outKinds = append(g.outKinds, kind)
}

// writeOutput writes the output batch of the rows chosen in src (input row carrying the key),
// pick (aggregate values, see rowValues) and outKinds.
func (g *GroupAggregate) writeOutput(in *engine.Batch, out *engine.OutBatch) error {
	rows := len(g.src)
	if rows == 0 {
		out.Len = 0
		return nil
	}
	for k, c := range g.keyCols {
		g.varBytes[k] = 0
		if g.outTypes[k].ID == engine.Varchar {
			g.varBytes[k] = engine.GatherBytes(&in.Cols[c], g.src)
		}
	}
	if err := callVarBytes(g.calls, g.pick, g.varBytes[len(g.keyCols):]); err != nil {
		return err
	}
	if err := out.Init(g.outTypes, rows, g.varBytes); err != nil {
		return err
	}
	for k, c := range g.keyCols {
		engine.Gather(&out.Cols[k], &in.Cols[c], g.src)
	}
	for j, c := range g.calls {
		c.write(&out.Cols[len(g.keyCols)+j], g.pick)
	}
	copy(out.Kinds(), g.outKinds)
	out.Finish()
	return nil
}

// Advance implements engine.Operator; a group aggregate without TTL has no timers.
func (g *GroupAggregate) Advance(_, _ int64, out *engine.OutBatch) error {
	out.Len = 0
	return nil
}

// Flush implements engine.Operator; a group aggregate buffers nothing.
func (g *GroupAggregate) Flush(_ int64, out *engine.OutBatch) error {
	out.Len = 0
	return nil
}

// SnapshotKeyGroup implements engine.Operator. The payload is a sequence of groups: each its
// encoded key (length-prefixed), its record count (retracting input only) and each aggregate's
// state. Groups are taken in the key group's slot order.
func (g *GroupAggregate) SnapshotKeyGroup(kg, from int, dst []byte, limit int) (int, []byte, error) {
	if g.panicIn == "snapshot" {
		var p *GroupAggregate
		_ = p.label // test hook: nil dereference
	}
	if err := g.checkKeyGroup(kg); err != nil {
		return -1, dst, err
	}
	if from == 0 || kg != g.snapKG { // continuations reuse the list: state is unchanged between calls
		g.snapIDs, g.snapKG = g.table.AppendKeyGroup(kg, g.snapIDs[:0]), kg
	}
	start := len(dst)
	for i := from; i < len(g.snapIDs); i++ {
		if len(dst)-start >= limit {
			return i, dst, nil
		}
		id := g.snapIDs[i]
		key := g.table.Key(id)
		dst = putVarint(dst, int64(len(key)))
		dst = append(dst, key...)
		if g.counter != nil {
			dst = putVarint(dst, g.counter[id])
		}
		if g.lastWrite != nil {
			dst = putVarint(dst, g.lastWrite[id])
		}
		for _, st := range g.states {
			dst = st.Save(dst, id)
		}
	}
	return -1, dst, nil
}

// HasState implements engine.Operator.
func (g *GroupAggregate) HasState(kg int) bool {
	return g.checkKeyGroup(kg) == nil && g.table.KeyGroupLen(kg) > 0
}

// RestoreKeyGroup implements engine.Operator. Every key is checked to hash into kg and to be new.
func (g *GroupAggregate) RestoreKeyGroup(kg int, payload []byte) (err error) {
	if g.panicIn == "restore" {
		var s []int
		_ = s[len(payload)] // test hook: index out of range
	}
	if err := g.checkKeyGroup(kg); err != nil {
		return err
	}
	var added []int32
	defer func() {
		if err != nil {
			for _, id := range added {
				g.table.Remove(id)
			}
			for _, id := range g.table.EndBatch() {
				g.resetGroup(id)
			}
			err = fmt.Errorf("key group %d: %w", kg, err)
		}
	}()
	for src := payload; len(src) > 0; {
		var n int64
		if n, src, err = getVarint(src); err != nil {
			return err
		}
		if n < 8 || n%8 != 0 || n > int64(len(src)) {
			return fmt.Errorf("%w: key length %d invalid", engine.ErrData, n)
		}
		key := src[:n]
		src = src[n:]
		hash := engine.HashRow(key)
		if got := engine.KeyGroup(hash, g.spec.MaxParallelism); got != kg {
			return fmt.Errorf("%w: key hashes to key group %d", engine.ErrData, got)
		}
		if g.table.Find(key, hash, kg) >= 0 {
			return fmt.Errorf("%w: duplicate key", engine.ErrData)
		}
		id := g.table.Insert(key, hash, kg)
		added = append(added, id)
		g.grow()
		if g.counter != nil {
			if g.counter[id], src, err = getVarint(src); err != nil {
				return err
			}
			if g.counter[id] == 0 {
				return fmt.Errorf("%w: a live key with record count 0", engine.ErrData)
			}
		}
		if g.lastWrite != nil {
			if g.lastWrite[id], src, err = getVarint(src); err != nil {
				return err
			}
		}
		for _, st := range g.states {
			if src, err = st.Load(src, id); err != nil {
				return err
			}
		}
	}
	return nil
}

func (g *GroupAggregate) checkKeyGroup(kg int) error {
	start, end := g.spec.KeyGroupRange()
	if kg < start || kg > end {
		return fmt.Errorf("%w: key group %d outside this operator's range [%d, %d]", engine.ErrInvalid, kg, start, end)
	}
	return nil
}

// Stats implements engine.Operator; StateBytes estimates the memory the state owns.
func (g *GroupAggregate) Stats() engine.Stats {
	n := g.table.Bytes() + int64(cap(g.counter))*8 + int64(cap(g.lastWrite))*8
	for _, s := range g.states {
		n += s.Bytes()
	}
	return engine.Stats{Keys: int64(g.table.Len()), StateBytes: n}
}

// Close implements engine.Operator.
func (g *GroupAggregate) Close() {
	*g = GroupAggregate{spec: g.spec, label: g.label}
}

func kindName(k engine.RowKind) string {
	return [...]string{"+I", "-U", "+U", "-D"}[k&3]
}
