package agg

import (
	"fmt"
	"github.com/ferrystream/ferry/internal/javahash"
	"math"

	"github.com/ferrystream/ferry/agg/distinct"
	"github.com/ferrystream/ferry/agg/internal/entries"
	"github.com/ferrystream/ferry/agg/internal/scratch"
	"github.com/ferrystream/ferry/agg/kernels"
	"github.com/ferrystream/ferry/engine"
)

// IncrementalKind is the operator kind of the incremental aggregate (docs/abi.md).
const IncrementalKind = "incremental_group_aggregate"

func init() { engine.RegisterKeyed(IncrementalKind, openIncremental) }

func openIncremental(s *engine.Spec, p *IncrementalParams) (engine.Keyed, error) {
	spec, err := parseIncrementalSpec(s, p)
	if err != nil {
		return engine.Keyed{}, err
	}
	g, err := NewIncrementalGroupAggregate(spec)
	if err != nil {
		return engine.Keyed{}, err
	}
	if spec.Frames == nil {
		return engine.Keyed{Operator: g}, nil
	}
	return NewFramed(g, nil, spec.Spec, spec.Frames).Keyed(), nil
}

// IncrementalParams are the incremental aggregate's own spec parameters. Its input is the local
// aggregate's partial row: the partial key fields, then every call's accumulator fields, then
// the DISTINCT maps. Aggs are Flink's partial AggregateInfoList in order (count1 included),
// their args indexing LocalInput (Flink's partialLocalAggInputRowType, projected); FinalKeys
// are the final key's positions in the partial key (Flink's finalAggGrouping).
type IncrementalParams struct {
	LocalInput     []engine.FieldSpec `json:"local_input"`
	Aggs           []AggCall          `json:"aggs"`
	FinalKeys      []int              `json:"final_keys"`
	NeedRetraction bool               `json:"need_retraction,omitempty"`
	StateTTLMs     int64              `json:"state_ttl_ms,omitempty"`
	// Frames makes the input frames of the local's partial rows (frames.go), cut into bundles
	// here.
	Frames *FramesParams `json:"frames,omitempty"`
	// Exchange makes the output frames of the output rows routed by the final key for the
	// global aggregate's channels; its max_parallelism (the global's) is required.
	Exchange *ExchangeParams `json:"exchange,omitempty"`
}

// IncrementalSpec is a validated incremental-aggregate spec.
type IncrementalSpec struct {
	*Spec
	FinalKeys  []int // input columns of the final key (the partial key leads the input)
	Frames     *FramesParams
	localInput []engine.FieldSpec
}

// ParseIncrementalSpec decodes and validates an incremental-aggregate spec whose header
// engine.ParseSpec validated.
func ParseIncrementalSpec(s *engine.Spec) (*IncrementalSpec, error) {
	var p IncrementalParams
	if err := s.DecodeParams(&p); err != nil {
		return nil, err
	}
	return parseIncrementalSpec(s, &p)
}

// parseIncrementalSpec validates decoded params p of an incremental-aggregate spec.
func parseIncrementalSpec(s *engine.Spec, p *IncrementalParams) (*IncrementalSpec, error) {
	local, err := parseMergeInput(s, "an incremental aggregate", p.LocalInput, p.Aggs)
	if err != nil {
		return nil, err
	}
	keys := s.Inputs[0].Keys
	for i, k := range p.FinalKeys {
		if k < 0 || k >= len(keys) {
			return nil, engine.ParamError(fmt.Sprintf("final_keys[%d]", i), "%d is not a position in the %d-field partial key", k, len(keys))
		}
	}
	if p.StateTTLMs < 0 {
		return nil, engine.ParamError("state_ttl_ms", "negative (%d)", p.StateTTLMs)
	}
	in := &s.Inputs[0]
	spec := &IncrementalSpec{
		Spec: &Spec{Spec: s, Keys: in.Keys, Input: in.Fields, InputTypes: in.Types, ArgTypes: local,
			Params: Params{Aggs: p.Aggs, NeedRetraction: p.NeedRetraction, StateTTLMs: p.StateTTLMs}},
		FinalKeys:  p.FinalKeys,
		Frames:     p.Frames,
		localInput: p.LocalInput,
	}
	if err := p.Frames.validate(); err != nil {
		return nil, err
	}
	if spec.Exchange, err = p.Exchange.validate(s.MaxParallelism, false); err != nil {
		return nil, err
	}
	if err := twoPhaseCalls(spec.Aggs, spec.ArgTypes); err != nil {
		return nil, err
	}
	return spec, nil
}

// stateLayout is what shapes the incremental aggregate's state: its DISTINCT maps, which the
// calls and their argument types shape.
func (s *IncrementalSpec) stateLayout() any {
	return struct {
		Params
		LocalInput []engine.FieldSpec `json:"local_input"`
	}{Params: s.Params, LocalInput: s.localInput}
}

// IncrementalGroupAggregate is the middle stage of a split DISTINCT under mini-batch: Flink's
// KeyedMapBundleOperator running MiniBatchIncrementalGroupAggFunction
// (docs/group-aggregate.md#the-incremental-aggregate). Its input rows are the partial rows of
// the local aggregate below it (partial key, then every call's accumulator fields, then the
// DISTINCT maps); its keyed state, per partial key, is the DISTINCT maps alone; each batch is
// one bundle:
//
//   - the rows of a partial key merge, in arrival order, into a fresh buffer (addInput:
//     partialAgg.merge, maps on the heap);
//   - the bundle's partial keys, in the iteration order of the bundle operator's HashMap, are
//     grouped by their final key (a projection of the partial key) into a fresh HashMap of
//     HashMaps (finishBundle's finalAggBuffer: the outer one filled by computeIfAbsent, whose
//     order differs from put's, the inner ones by put);
//   - per final key, in that map's order: fresh accumulators (finalAgg.resetAccumulators), then
//     each of its partial keys' buffers merges into them, in the inner map's order
//     (finalAgg.merge): the plain calls merge their fields; a DISTINCT map merges into the
//     partial key's state map, and each entry that turns a call's bit on, or its count
//     positive or not, accumulates or retracts the entry's value in that call;
//   - every final key emits one +I row: the final key, then every call's accumulator fields
//     (the DISTINCT maps stay behind).
//
// So each output row carries what the bundle added to its final key: the global aggregate
// above sums it up. A partial key whose maps merged to empty holds no state.
type IncrementalGroupAggregate struct {
	spec      *IncrementalSpec
	keys      *engine.KeyEncoder    // the partial key
	finalKeys *engine.KeyEncoder    // the final key, over the same input columns
	state     *engine.KeyedState    // per partial key: sets
	sets      []*distinct.Set       // the state's maps, one per DISTINCT argument column
	entries   []*entries.Table      // with TTL: the maps' entry tables, whose clock Process sets
	buf       partialBuffer         // partialAgg's accumulators and maps, one group per bundle key
	final     []kernels.Accumulator // finalAgg's accumulators, one group per final key
	layout    partialLayout         // the input's partial state (calls, then maps)
	outLayout partialLayout         // the output's: the calls alone
	output    []engine.Field
	types     []engine.Type
	bundle    bundleKeys
	frames    *frameOutput // with params.exchange: the output is frames of the output rows

	// Per-bundle scratch, reused.
	kgs       []int32
	rowKey    []int32 // per input row: its bundle key
	finalOf   map[string]int32
	finals    []finalKey // the bundle's final keys, in order of first appearance
	calls     []int32    // per bundle key in HashMap order: its final key (computeIfAbsent's calls)
	outOrder  []int32    // final keys in HashMap order
	seqP      []int32    // the merge sequence: bundle keys (buffer groups), final key by final key
	seqF      []int32    // per merge: the final key's output position
	members   []int32    // scratch: one final key's bundle keys
	hashes    []int32
	order     []int32
	buckets   []int32
	rows      distinct.Rows
	viewBatch engine.Batch
	partials  engine.OutBatch
	view      engine.Batch
	scratch   []bool
	src       []int32
	groups    []int32
	vb        []int
}

// finalKey is one final key of a bundle: its hashCode, the input row carrying it, its bundle
// keys in the order the bundle's HashMap yields them.
type finalKey struct {
	hash    int32
	row     int32
	members []int32
}

var _ engine.KeyedOperator = (*IncrementalGroupAggregate)(nil)

// NewIncrementalGroupAggregate builds the incremental aggregate of a validated spec.
func NewIncrementalGroupAggregate(spec *IncrementalSpec) (*IncrementalGroupAggregate, error) {
	keys := engine.NewKeyEncoder(spec.Keys, spec.InputTypes)
	ttl := engine.TTL{Ms: spec.StateTTLMs}
	g := &IncrementalGroupAggregate{
		spec:      spec,
		keys:      keys,
		finalKeys: engine.NewKeyEncoder(spec.FinalKeys, spec.InputTypes),
		state: engine.NewKeyedState(spec.Spec.Spec, engine.StateConfig{KeySize: keys.FixedSize(), TTL: ttl,
			EntriesOnly: true, Layout: spec.stateLayout()}),
		buf: partialBuffer{inner: make([]bool, len(spec.Aggs))},
	}
	byCol := map[int]int{} // DISTINCT argument column -> set
	for i, call := range spec.Aggs {
		buf, _, err := newCall(i, call, spec.Spec)
		if err != nil {
			return nil, err
		}
		fin, _, err := newCall(i, call, spec.Spec)
		if err != nil {
			return nil, err
		}
		g.buf.accs, g.final = append(g.buf.accs, buf), append(g.final, fin)
		if !call.Distinct {
			continue
		}
		g.buf.inner[i] = true
		col := call.Args[0]
		s, ok := byCol[col]
		if !ok {
			s = len(g.sets)
			byCol[col] = s
			g.sets = append(g.sets, distinct.NewSet(col, spec.ArgTypes[col], spec.NeedRetraction))
			g.buf.sets = append(g.buf.sets, distinct.NewSet(col, spec.ArgTypes[col], spec.NeedRetraction))
		}
		g.sets[s].AddCall(i, -1)
		g.buf.sets[s].AddCall(i, -1)
	}
	for _, d := range g.sets {
		g.state.Register(d)
		g.entries = enableEntryTTL(g.entries, d, ttl)
	}
	var err error
	if g.layout, err = newPartialLayout(g.buf.accs, len(g.sets), len(spec.Keys)); err != nil {
		return nil, err
	}
	if err := checkPartialInput(spec.InputTypes, len(spec.Keys), g.layout.all); err != nil {
		return nil, err
	}
	if g.outLayout, err = newPartialLayout(g.final, 0, len(spec.FinalKeys)); err != nil {
		return nil, err
	}
	for _, k := range spec.FinalKeys {
		g.output = append(g.output, engine.Field{Name: spec.Input[k].Name, Type: spec.InputTypes[k]})
	}
	g.output = append(g.output, partialFields(spec.Spec, &g.outLayout)...)
	for _, f := range g.output {
		g.types = append(g.types, f.Type)
	}
	g.viewBatch.Cols = make([]engine.Column, len(spec.ArgTypes))
	g.partials.Alloc = &scratch.Allocator{}
	if spec.Exchange != nil {
		if g.frames, err = newFrameOutput(spec.Exchange, g.types, len(spec.FinalKeys)); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// Output implements engine.KeyedOperator: the final key fields, then every call's partial state;
// with params.exchange one column of frames of those rows.
func (g *IncrementalGroupAggregate) Output() []engine.Field {
	if g.frames != nil {
		return []engine.Field{frameField}
	}
	return g.output
}

// RowOutput is the output row: the final key fields, then every call's partial state (the rows
// inside the frames with params.exchange).
func (g *IncrementalGroupAggregate) RowOutput() []engine.Field { return g.output }

// State implements engine.KeyedOperator.
func (g *IncrementalGroupAggregate) State() *engine.KeyedState { return g.state }

// Process implements engine.KeyedOperator: the batch is one bundle, its output one chunk of at most
// one row per input row. nowMs is the processing time the maps' entries are read and written at
// (idle-state TTL expires each entry on its own).
func (g *IncrementalGroupAggregate) Process(inputs *engine.Inputs, nowMs int64, out *engine.OutBatch) (bool, error) {
	in := inputs.Batches[0]
	setClock(g.entries, nowMs)
	if in.Len == 0 { // an empty bundle emits nothing; expired entries are still swept
		out.Len = 0
		g.state.Sweep(nowMs)
		return false, nil
	}
	if err := g.keys.Encode(in); err != nil {
		return false, err
	}
	if err := g.finalKeys.Encode(in); err != nil {
		return false, err
	}
	g.kgs = scratch.Resize(g.kgs, in.Len)
	for i := range in.Len {
		kg, err := g.state.KeyGroupOf(g.keys.Hash(i))
		if err != nil {
			return false, fmt.Errorf("row %d: %w", i, err)
		}
		g.kgs[i] = int32(kg)
	}
	g.resolveKeys(in)
	if err := g.buf.merge(in, &g.layout, g.rowKey, len(g.bundle.keys)); err != nil {
		rollbackBundle(&g.bundle, g.state)
		return false, err
	}
	g.groupFinalKeys()
	if err := g.mergeFinal(); err != nil {
		return false, err
	}
	var err error
	if g.frames == nil {
		err = g.emit(in, out)
	} else if err = g.emit(in, &g.frames.rows); err == nil {
		err = g.frames.emit(out)
	}
	g.endBundle(nowMs)
	return false, err
}

// resolveKeys maps each row to its bundle key, and each bundle key to its state group, created
// empty for a partial key without state.
func (g *IncrementalGroupAggregate) resolveKeys(in *engine.Batch) {
	st := g.state
	b := &g.bundle
	b.start(st.Cap())
	g.rowKey = scratch.Resize(g.rowKey, in.Len)
	st.Warm(g.keys.Hashes()[:in.Len], g.kgs[:in.Len])
	for i := range in.Len {
		key, hash, kg := g.keys.Key(i), g.keys.Hash(i), int(g.kgs[i])
		id := st.Find(key, hash, kg)
		fresh := id < 0
		if fresh {
			id = st.Insert(key, hash, kg)
			b.grow(st.Cap())
		}
		k := b.key(id, hash, i)
		if fresh {
			b.keys[k].fresh = true
		}
		g.rowKey[i] = k
	}
}

// groupFinalKeys builds finishBundle's finalAggBuffer: the bundle keys in the bundle's HashMap
// order, put under their final keys; then the merge sequence, final key by final key in the
// outer HashMap's order, each one's bundle keys in its inner HashMap's order.
func (g *IncrementalGroupAggregate) groupFinalKeys() {
	b := &g.bundle
	b.iterate()
	if g.finalOf == nil {
		g.finalOf = map[string]int32{}
	}
	clear(g.finalOf)
	g.finals, g.calls = g.finals[:0], g.calls[:0]
	for _, k := range b.order {
		row := b.keys[k].firstRow
		fk := g.finalKeys.Key(int(row))
		f, ok := g.finalOf[string(fk)]
		if !ok {
			f = int32(len(g.finals))
			g.finalOf[string(fk)] = f
			if len(g.finals) < cap(g.finals) {
				g.finals = g.finals[:f+1]
				g.finals[f].hash, g.finals[f].row, g.finals[f].members = g.finalKeys.Hash(int(row)), row, g.finals[f].members[:0]
			} else {
				g.finals = append(g.finals, finalKey{hash: g.finalKeys.Hash(int(row)), row: row})
			}
		}
		g.finals[f].members = append(g.finals[f].members, k)
		g.calls = append(g.calls, f)
	}
	g.hashes = scratch.Resize(g.hashes, len(g.finals))
	for f := range g.finals {
		g.hashes[f] = g.finals[f].hash
	}
	// finalAggBuffer: a new HashMap per bundle, filled by computeIfAbsent
	g.outOrder, g.buckets = javahash.ComputeIfAbsentOrder(g.hashes, g.calls, g.outOrder[:0], g.buckets)
	g.seqP, g.seqF = g.seqP[:0], g.seqF[:0]
	for j, f := range g.outOrder {
		members := g.finals[f].members
		g.hashes = scratch.Resize(g.hashes, len(members))
		for m, k := range members {
			g.hashes[m] = b.keys[k].hash
		}
		tableLen := 0 // each accMap: a new HashMap, filled by put
		g.order, g.buckets = javahash.Order(g.hashes, &tableLen, g.order[:0], g.buckets)
		for _, m := range g.order {
			g.seqP = append(g.seqP, members[m])
			g.seqF = append(g.seqF, int32(j))
		}
	}
}

// mergeFinal merges the buffers into fresh accumulators per final key, in the merge sequence:
// the plain calls' fields, then each map into its partial key's state map, whose entries fold
// into the map's DISTINCT calls.
func (g *IncrementalGroupAggregate) mergeFinal() error {
	n := len(g.seqP)
	if err := g.buf.write(&g.layout, g.seqP, &g.partials, &g.view); err != nil {
		return err
	}
	defer g.view.Forget()
	finals := len(g.outOrder)
	g.scratch = scratch.Resize(g.scratch, n)
	for c, acc := range g.final {
		acc.Grow(finals)
		for f := range int32(finals) {
			acc.Reset(f)
		}
		if g.buf.inner[c] {
			continue
		}
		if err := acc.Merge(&g.view, g.layout.first[c]-g.layout.start, g.seqF, g.scratch); err != nil {
			return fmt.Errorf("aggs[%d]: %w", c, err)
		}
	}
	for s, d := range g.sets {
		col := &g.view.Cols[g.layout.views-g.layout.start+s]
		r := &g.rows
		r.Reset(d)
		for j, k := range g.seqP {
			from := len(r.Gids)
			d.MergeView(col.Bytes(j), g.bundle.keys[k].gid, r)
			for i := from; i < len(r.Gids); i++ {
				r.Gids[i] = g.seqF[j] // the entry folds into its final key's accumulators
			}
		}
		foldRows(d, r, g.final, &g.viewBatch, &g.scratch)
	}
	return nil
}

// emit writes one +I row per final key, in the outer HashMap's order: the final key (from the
// row that brought it), then every call's accumulator fields.
func (g *IncrementalGroupAggregate) emit(in *engine.Batch, out *engine.OutBatch) error {
	rows := len(g.outOrder)
	g.src, g.groups = scratch.Resize(g.src, rows), scratch.Resize(g.groups, rows)
	for j, f := range g.outOrder {
		g.src[j], g.groups[j] = g.finals[f].row, int32(j)
	}
	keys := len(g.spec.FinalKeys)
	g.vb = scratch.Resize(g.vb, len(g.types))
	clear(g.vb)
	for k, c := range g.spec.FinalKeys {
		if g.types[k].Variable() {
			g.vb[k] = engine.GatherBytes(&in.Cols[c], g.src)
		}
	}
	g.outLayout.varBytes(g.final, nil, g.groups, g.vb[keys:])
	for c, n := range g.vb {
		if n > math.MaxInt32 {
			return fmt.Errorf("%w: output column %d would hold %d bytes, more than 2 GiB; send smaller bundles", engine.ErrData, c, n)
		}
	}
	if err := out.Init(g.types, rows, g.vb); err != nil {
		return err
	}
	for k, c := range g.spec.FinalKeys {
		engine.Gather(&out.Cols[k], &in.Cols[c], g.src)
	}
	if err := g.outLayout.writePartials(g.final, nil, out, keys, g.groups); err != nil {
		return err
	}
	clear(out.Kinds()) // +I
	out.Finish()
	return nil
}

// endBundle removes the partial keys whose maps are all empty (Flink's MapState holds nothing
// for them), forgets the bundle and sweeps expired entries, and keys left without entries
// (idle-state TTL).
func (g *IncrementalGroupAggregate) endBundle(nowMs int64) {
	for _, k := range g.bundle.keys {
		empty := true
		for _, d := range g.sets {
			if d.HasEntries(k.gid) {
				empty = false
				break
			}
		}
		if empty {
			g.state.Remove(k.gid)
		}
	}
	g.bundle.end()
	g.state.EndBatch()
	g.state.Sweep(nowMs)
}

// Advance implements engine.KeyedOperator; the incremental aggregate has no timers.
func (g *IncrementalGroupAggregate) Advance(_, _ int64, out *engine.OutBatch) (bool, error) {
	out.Len = 0
	return false, nil
}

// Flush implements engine.KeyedOperator; it buffers nothing across calls.
func (g *IncrementalGroupAggregate) Flush(_ int64, out *engine.OutBatch) (bool, error) {
	out.Len = 0
	return false, nil
}

// Continue implements engine.KeyedOperator; each bundle is one chunk.
func (g *IncrementalGroupAggregate) Continue(out *engine.OutBatch) (bool, error) {
	out.Len = 0
	return false, nil
}

// Close implements engine.KeyedOperator.
func (g *IncrementalGroupAggregate) Close() {
	*g = IncrementalGroupAggregate{spec: g.spec, frames: g.frames}
	if g.frames != nil {
		g.frames.rows = engine.OutBatch{Alloc: &scratch.Allocator{}}
	}
}
