package agg

import (
	"fmt"
	"math"

	"github.com/ferrystream/ferry/agg/distinct"
	"github.com/ferrystream/ferry/agg/internal/entries"
	"github.com/ferrystream/ferry/agg/internal/scratch"
	"github.com/ferrystream/ferry/agg/internal/values"
	"github.com/ferrystream/ferry/agg/kernels"
	"github.com/ferrystream/ferry/engine"
)

// groupAgg is what the single-phase group aggregate (GroupAggregate) and its mini-batch mode
// (MiniBatchGroupAggregate) share: the aggregate calls and their accumulators, FILTER and
// DISTINCT, the record counter, the key encoding and the keyed state (engine.KeyedState, which
// holds every group: key, accumulators, counter, idle-state TTL), the per-batch passes both run
// and the output writer. The two operators differ only in how rows map to groups and when
// results are emitted.
//
// A batch runs in passes so every per-row loop is monomorphic: keys are encoded and hashed
// (begin), one sequential pass resolves each row's group (the operator's own), each aggregate
// folds all rows (fold), and a last pass decides what each row emits (the operator's own).
// Because every aggregate's state evolves only with its own inputs, per-aggregate passes see
// exactly the values a row-by-row run sees. Ids of groups removed in a batch are not reused until
// it ends (end), so a key removed and re-created within one batch gets fresh state.
type groupAgg struct {
	spec    *Spec
	keyCols []int
	keys    *engine.KeyEncoder
	state   *engine.KeyedState
	// counter is the record count per group (Flink's count1 behind RetractionRecordCounter);
	// nil for insert-only input, where a group lives forever (AccumulationRecordCounter), and
	// for the two-phase operators, whose count1 is one of their calls.
	counter *recordCounter
	// insertOnly rejects retractions (need_retraction false); the global aggregate reads
	// partial rows, whose RowKind Flink never looks at.
	insertOnly bool
	ttl        bool                  // idle-state TTL is enabled: Flink re-emits unchanged results too
	calls      []kernels.Accumulator // one per aggregate call
	outCalls   []kernels.Accumulator // the calls whose values are output columns (all but a hidden count1)
	filters    []int                 // per call: FILTER column, or -1
	sets       []*distinct.Set       // the value sets of DISTINCT calls, one per argument column
	entries    []*entries.Table      // with TTL: the entry tables of the state's maps, whose clock Process sets
	export     exportCursor          // ExportState's position (flinkstate.go)
	output     []engine.Field
	outTypes   []engine.Type

	// Per-batch scratch, reused.
	kgs        []int32
	gids       []int32  // group of each row, -1 for dropped rows
	act        []int8   // +1 for rows that accumulate, -1 for rows that retract
	callActs   [][]int8 // per call: the actions its accumulator folds (act, filtered or distinct)
	filterActs [][]int8 // per call with a plain FILTER: its own action buffer
	changed    []bool   // some aggregate value differs before and after the row
	src        []int32  // input row of each output row
	pick       []int32  // entry of the rows' before/after values each output row carries (rowValues)
	outKinds   []engine.RowKind
	varBytes   []int
}

// coreOptions is what the operators built on groupAgg set differently.
type coreOptions struct {
	// counter keeps Ferry's own record counter for retracting input (the single-phase
	// operators; Flink's count1 call is not in their spec).
	counter bool
	// hidden is the call whose value is not an output column (Flink's inserted count1), or -1.
	hidden int
	// partialInput: the batches hold partial rows (the global aggregate), whatever their
	// RowKind.
	partialInput bool
	// header is the spec header the keyed state is built from (nil: the spec's own).
	header *engine.Spec
	// layout is what shapes the state, for its fingerprint (nil: spec.stateLayout()).
	layout any
	// distinctNulls: DISTINCT sets keep NULL argument values as entries (the local aggregate,
	// whose partial rows carry them as Flink's do).
	distinctNulls bool
}

func newGroupAgg(spec *Spec, opt coreOptions) (*groupAgg, error) {
	keys := engine.NewKeyEncoder(spec.Keys, spec.InputTypes)
	ttl := engine.TTL{Ms: spec.StateTTLMs}
	header, layout := opt.header, opt.layout
	if header == nil {
		header = spec.Spec
	}
	if layout == nil {
		layout = spec.stateLayout()
	}
	g := &groupAgg{
		spec:       spec,
		keyCols:    spec.Keys,
		keys:       keys,
		state:      engine.NewKeyedState(header, engine.StateConfig{KeySize: keys.FixedSize(), TTL: ttl, Layout: layout}),
		ttl:        ttl.Enabled(),
		insertOnly: !spec.NeedRetraction && !opt.partialInput,
	}
	if spec.NeedRetraction && opt.counter {
		g.counter = &recordCounter{}
		g.state.Register(g.counter)
	}
	for _, k := range spec.Keys {
		g.output = append(g.output, engine.Field{Name: spec.Input[k].Name, Type: spec.InputTypes[k]})
	}
	sets := map[int]*distinct.Set{} // by argument column
	for i, call := range spec.Aggs {
		acc, field, err := newCall(i, call, spec)
		if err != nil {
			return nil, err
		}
		g.calls = append(g.calls, acc)
		g.state.Register(acc)
		if i != opt.hidden {
			g.outCalls = append(g.outCalls, acc)
			g.output = append(g.output, field)
		}
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
				set = distinct.NewSet(call.Args[0], spec.ArgTypes[call.Args[0]], spec.NeedRetraction)
				if opt.distinctNulls {
					set.KeepNulls()
				}
				sets[call.Args[0]] = set
				g.sets = append(g.sets, set)
			}
			set.AddCall(i, filter)
		}
	}
	for _, d := range g.sets {
		g.state.Register(d)
	}
	for _, c := range g.calls {
		g.entries = enableEntryTTL(g.entries, c, ttl)
	}
	for _, d := range g.sets {
		g.entries = enableEntryTTL(g.entries, d, ttl)
	}
	for _, f := range g.output {
		g.outTypes = append(g.outTypes, f.Type)
	}
	g.varBytes = make([]int, len(g.outTypes))
	return g, nil
}

// enableEntryTTL gives the entries of p, when it keeps any (entries.Owner), their own idle-state
// TTL, as Flink hands the operator's TTL to its MapViews (PerKeyStateDataViewStore), and
// appends their table to tables.
func enableEntryTTL(tables []*entries.Table, p engine.PerKey, ttl engine.TTL) []*entries.Table {
	if o, ok := p.(entries.Owner); ok && ttl.Enabled() {
		t := o.EntryTable()
		t.EnableTTL(ttl)
		tables = append(tables, t)
	}
	return tables
}

// setClock sets the processing time (ms) the entries of tables are read and written at.
func setClock(tables []*entries.Table, nowMs int64) {
	for _, t := range tables {
		t.SetNow(nowMs)
	}
}

// Output implements engine.KeyedOperator.
func (g *groupAgg) Output() []engine.Field { return g.output }

// State implements engine.KeyedOperator.
func (g *groupAgg) State() *engine.KeyedState { return g.state }

// Groups is the number of keys holding state.
func (g *groupAgg) Groups() int { return g.state.Len() }

// Advance implements engine.KeyedOperator; a group aggregate has no timers.
func (g *groupAgg) Advance(_, _ int64, out *engine.OutBatch) (bool, error) {
	out.Len = 0
	return false, nil
}

// Flush implements engine.KeyedOperator; a group aggregate buffers nothing across calls.
func (g *groupAgg) Flush(_ int64, out *engine.OutBatch) (bool, error) {
	out.Len = 0
	return false, nil
}

// Continue implements engine.KeyedOperator; a group aggregate emits one chunk per call (at most two
// rows per input row), so nothing ever continues.
func (g *groupAgg) Continue(out *engine.OutBatch) (bool, error) {
	out.Len = 0
	return false, nil
}

// Close implements engine.KeyedOperator.
func (g *groupAgg) Close() { *g = groupAgg{spec: g.spec} }

// begin validates a batch and encodes, hashes and places its keys, and sets the clock of the
// state's map entries to nowMs; it changes no state.
func (g *groupAgg) begin(in *engine.Batch, nowMs int64) error {
	setClock(g.entries, nowMs)
	n := in.Len
	if in.Retracts && g.insertOnly {
		for i, k := range in.Kinds {
			if !engine.IsAccumulate(k) {
				return fmt.Errorf("%w: row %d: retraction (%s) on an aggregation declared insert-only (need_retraction false)", engine.ErrData, i, kindName(k))
			}
		}
	}
	for k, c := range g.keyCols {
		// Each row emits at most two rows, each with a copy of its key; output offsets are int32.
		if col := &in.Cols[c]; g.outTypes[k].Variable() && n > 0 {
			if size := 2 * int64(col.Offs[col.Offset+n]-col.Offs[col.Offset]); size > math.MaxInt32 {
				return fmt.Errorf("%w: key column %d may produce %d bytes of output, more than 2 GiB; send smaller batches", engine.ErrData, c, size)
			}
		}
	}
	if err := g.keys.Encode(in); err != nil {
		return err
	}
	g.kgs = scratch.Resize(g.kgs, n)
	for i := range n {
		kg, err := g.state.KeyGroupOf(g.keys.Hash(i))
		if err != nil {
			return fmt.Errorf("row %d: %w", i, err)
		}
		g.kgs[i] = int32(kg)
	}
	return nil
}

// resolveActions decides, per call and row, whether the call accumulates (+1), retracts (-1)
// or skips (0) the row: the row's kind, gated by the call's FILTER, and for DISTINCT calls by
// the distinct value set, which sees the rows in order.
func (g *groupAgg) resolveActions(in *engine.Batch) {
	n := in.Len
	g.act = scratch.Resize(g.act, n)
	for i, k := range in.Kinds[:n] {
		g.act[i] = 1
		if !engine.IsAccumulate(k) {
			g.act[i] = -1
		}
	}
	for _, d := range g.sets {
		d.Resolve(in, g.gids, g.act)
		for c, call := range d.Calls() {
			g.callActs[call] = d.Acts(c)
		}
	}
	for i, f := range g.filters {
		switch {
		case g.spec.Aggs[i].Distinct: // resolved by its set
		case f < 0:
			g.callActs[i] = g.act
		default:
			acts := scratch.Resize(g.filterActs[i], n)
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

// passes reports whether a FILTER column is TRUE at row i (a distinct.Set applies the same
// rule to its calls' filters).
func passes(f *engine.Column, i int) bool { return !f.IsNull(i) && f.Bool(i) }

// fold folds the rows into every call's accumulator. It fails with the QueryError of a call
// that stopped at a row Flink throws on (SINGLE_VALUE), after which the operator is broken.
func (g *groupAgg) fold(in *engine.Batch) error {
	for i, c := range g.calls {
		if w, ok := c.(kernels.Warmer); ok {
			w.WarmGroups(g.gids[:in.Len])
		}
		c.Fold(in, g.gids, g.callActs[i], g.changed)
		if err := kernels.FoldErr(c); err != nil {
			return err
		}
	}
	return nil
}

// end finishes a batch: the groups it removed are reset for reuse, and expired groups nobody
// reads are swept (idle-state TTL).
func (g *groupAgg) end(nowMs int64) {
	g.state.EndBatch()
	g.state.Sweep(nowMs)
}

// addOutput appends an output row: the key of input row src, the aggregate values picked by
// pick (see rowValues), RowKind kind.
func (g *groupAgg) addOutput(src, pick int32, kind engine.RowKind) {
	g.src = append(g.src, src)
	g.pick = append(g.pick, pick)
	g.outKinds = append(g.outKinds, kind)
}

// writeOutput writes the output batch of the rows chosen in src (input row carrying the key),
// pick (aggregate values, see rowValues) and outKinds.
func (g *groupAgg) writeOutput(in *engine.Batch, out *engine.OutBatch) error {
	rows := len(g.src)
	if rows == 0 {
		out.Len = 0
		return nil
	}
	for k, c := range g.keyCols {
		g.varBytes[k] = 0
		if g.outTypes[k].Variable() {
			g.varBytes[k] = engine.GatherBytes(&in.Cols[c], g.src)
		}
	}
	if err := callVarBytes(g.outCalls, g.pick, g.varBytes[len(g.keyCols):]); err != nil {
		return err
	}
	if err := out.Init(g.outTypes, rows, g.varBytes); err != nil {
		return err
	}
	for k, c := range g.keyCols {
		engine.Gather(&out.Cols[k], &in.Cols[c], g.src)
	}
	for j, c := range g.outCalls {
		c.Write(&out.Cols[len(g.keyCols)+j], g.pick)
	}
	copy(out.Kinds(), g.outKinds)
	out.Finish()
	return nil
}

// GroupAggregate is Flink's single-phase group aggregate without mini-batch
// (GroupAggFunction / GroupAggHelper): each input row updates its key's accumulators and emits
// the changelog Flink emits for that row, in input order. Batching is only transport: a batch
// produces exactly the rows Flink would produce for its rows one by one.
//
// Per row (docs/group-aggregate.md#per-row-groupaggfunction): a retraction for a key without
// state is dropped; the first accumulate creates the state and emits +I; later rows emit -U
// (when generate_update_before) and +U, or nothing when no aggregate value changed; when the
// record counter of a retracting aggregation reaches zero the key emits -D with its previous
// values and its state is removed.
type GroupAggregate struct {
	groupAgg
	first []bool // the row created its group
	gone  []bool // the row's retraction brought the record count to zero
}

var _ engine.KeyedOperator = (*GroupAggregate)(nil)

// NewGroupAggregate builds the group aggregate of a validated spec.
func NewGroupAggregate(spec *Spec) (*GroupAggregate, error) {
	core, err := newGroupAgg(spec, coreOptions{counter: true, hidden: -1})
	if err != nil {
		return nil, err
	}
	return &GroupAggregate{groupAgg: *core}, nil
}

// Process implements engine.KeyedOperator. nowMs is the processing time idle-state TTL reads and
// writes for the whole batch. The output is one chunk.
func (g *GroupAggregate) Process(inputs *engine.Inputs, nowMs int64, out *engine.OutBatch) (bool, error) {
	in := inputs.Batches[0]
	if err := g.begin(in, nowMs); err != nil {
		return false, err
	}
	g.resolveGroups(in, nowMs)
	g.resolveActions(in)
	if err := g.fold(in); err != nil {
		return false, err
	}
	err := g.emit(in, out)
	g.end(nowMs)
	return false, err
}

// resolveGroups is the sequential pass: it maps each row to its group, creating groups on the
// first accumulate and removing them when the record count reaches zero. With idle-state TTL a
// group whose accumulators expired reads as absent (engine.KeyedState.ExpireValue: its map
// entries that did not expire stay visible), and every row that keeps its group writes it.
func (g *GroupAggregate) resolveGroups(in *engine.Batch, nowMs int64) {
	n := in.Len
	st := g.state
	g.gids = scratch.Resize(g.gids, n)
	g.first = scratch.Resize(g.first, n)
	g.gone = scratch.Resize(g.gone, n)
	g.changed = scratch.Resize(g.changed, n)
	clear(g.first)
	clear(g.gone)
	clear(g.changed)
	st.Warm(g.keys.Hashes()[:n], g.kgs[:n])
	for i := range n {
		acc := engine.IsAccumulate(in.Kinds[i])
		key, hash, kg := g.keys.Key(i), g.keys.Hash(i), int(g.kgs[i])
		id := st.Find(key, hash, kg)
		absent := id < 0
		if !absent && st.Expired(id, nowMs) {
			id = st.ExpireValue(id, nowMs) // NeverReturnExpired: reads as absent, cleared on read
			absent = true
		}
		if absent {
			if !acc {
				g.gids[i] = -1 // retraction before any accumulate: dropped
				continue
			}
			if id < 0 {
				id = st.Insert(key, hash, kg)
			}
			g.first[i] = true
		}
		g.gids[i] = id
		st.Touch(id, nowMs) // OnCreateAndWrite; a removed group's stamp is reset with it
		if g.counter == nil {
			continue
		}
		cnt := g.counter.n
		if acc {
			cnt[id]++
		} else {
			cnt[id]--
		}
		if cnt[id] == 0 {
			g.gone[i] = true
			st.Remove(id)
		}
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
		case g.changed[i] || g.ttl: // with TTL Flink re-emits unchanged results too
			if g.spec.GenerateUpdateBefore {
				add(i, true, engine.UpdateBefore)
			}
			add(i, false, engine.UpdateAfter)
		}
	}
	return g.writeOutput(in, out)
}

// recordCounter is the record count of every group (Flink's count1 behind
// RetractionRecordCounter), kept for retracting input only: a group whose count returns to zero
// is removed.
type recordCounter struct {
	n []int64
}

func (c *recordCounter) Grow(n int)                      { c.n = scratch.Extend(c.n, n) }
func (c *recordCounter) Reset(g int32)                   { c.n[g] = 0 }
func (c *recordCounter) Bytes() int64                    { return int64(cap(c.n)) * 8 }
func (c *recordCounter) Save(dst []byte, g int32) []byte { return values.PutVarint(dst, c.n[g]) }

func (c *recordCounter) Load(src []byte, g int32) ([]byte, error) {
	v, src, err := values.GetVarint(src)
	if err != nil {
		return nil, err
	}
	if v == 0 {
		return nil, fmt.Errorf("%w: a live key with record count 0", engine.ErrData)
	}
	c.n[g] = v
	return src, nil
}

func kindName(k engine.RowKind) string {
	return [...]string{"+I", "-U", "+U", "-D"}[k&3]
}

// callVarBytes sets dst[j] to the output size of call j when its output is VARCHAR
// (kernels.VarOutput), for OutBatch.Init. Output offsets are int32: a column over 2 GiB is an
// error, raised after the batch has changed state (a single MAX over long strings re-emitted by
// many rows).
func callVarBytes(calls []kernels.Accumulator, pick []int32, dst []int) error {
	for j, c := range calls {
		if v, ok := c.(kernels.VarOutput); ok {
			if dst[j] = v.VarBytes(pick); dst[j] > math.MaxInt32 {
				return fmt.Errorf("%w: aggregate %d would produce %d bytes of output in one batch, more than 2 GiB; send smaller batches", engine.ErrData, j, dst[j])
			}
		}
	}
	return nil
}
