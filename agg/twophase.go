package agg

import (
	"fmt"
	"github.com/ferrystream/ferry/internal/javahash"
	"slices"

	"github.com/ferrystream/ferry/agg/dataview"
	"github.com/ferrystream/ferry/agg/distinct"
	"github.com/ferrystream/ferry/agg/internal/scratch"
	"github.com/ferrystream/ferry/agg/kernels"
	"github.com/ferrystream/ferry/engine"
)

// The two halves of Flink's two-phase (local/global) mini-batch aggregate
// (docs/group-aggregate.md#two-phase-aggregation): the local aggregate (MapBundleOperator running
// MiniBatchLocalGroupAggFunction) folds each bundle of rows per key into fresh accumulators and
// emits the key followed by its accumulator row; the global aggregate (KeyedMapBundleOperator
// running MiniBatchGlobalGroupAggFunction) merges those partial rows into its keyed state and
// emits the changelog. Both run on groupAgg and the accumulators' partial state
// (kernels.PartialState).

// Operator kinds of the two-phase aggregate (docs/abi.md).
const (
	LocalKind  = "local_group_aggregate"
	GlobalKind = "global_group_aggregate"
)

func init() {
	engine.RegisterKeyed(LocalKind, openLocal)
	engine.RegisterKeyed(GlobalKind, openGlobal)
}

func openLocal(s *engine.Spec, p *LocalParams) (engine.Keyed, error) {
	spec, err := parseLocalSpec(s, p)
	if err != nil {
		return engine.Keyed{}, err
	}
	l, err := NewLocalGroupAggregate(spec)
	return engine.Keyed{Operator: l}, err
}

func openGlobal(s *engine.Spec, p *GlobalParams) (engine.Keyed, error) {
	spec, err := parseGlobalSpec(s, p)
	if err != nil {
		return engine.Keyed{}, err
	}
	g, err := NewGlobalGroupAggregate(spec)
	if err != nil {
		return engine.Keyed{}, err
	}
	if spec.Frames == nil {
		return engine.Keyed{Operator: g, FlinkState: g}, nil
	}
	return NewFramed(g, g, spec.Spec, spec.Frames).Keyed(), nil
}

// LocalParams are the local aggregate's own spec parameters. Aggs are Flink's
// AggregateInfoList of the local aggregate in order, the count1 Flink inserts for retracting
// input included (a COUNT without arguments): the output row is the keys followed by every
// call's accumulator fields.
type LocalParams struct {
	Aggs           []AggCall `json:"aggs"`
	NeedRetraction bool      `json:"need_retraction,omitempty"`
	// Exchange makes the output frames of partial rows for the global aggregate's channels
	// (frames.go); the header's max_parallelism is then the consumer's.
	Exchange *ExchangeParams `json:"exchange,omitempty"`
}

// GlobalParams are the global aggregate's own spec parameters. Its input is Flink's partial
// row: the key fields, then every call's accumulator fields in call order. Aggs are Flink's
// AggregateInfoList in order (count1 included), their args indexing LocalInput, the fields of
// the local aggregate's input the calls read (Flink's localAggInputRowType, projected).
type GlobalParams struct {
	LocalInput []engine.FieldSpec `json:"local_input"`
	Aggs       []AggCall          `json:"aggs"`
	// CountStar is the call whose value is Flink's record counter (AggregateInfoList's
	// indexOfCountStar, a call index): a COUNT(*), or the $SUM0 over BIGINT of partial counts a
	// split DISTINCT's final aggregate counts with. The key's state goes when it merges to 0.
	// Set exactly when NeedRetraction.
	CountStar *int `json:"count_star,omitempty"`
	// CountStarInserted: the CountStar call is the count1 Flink inserted, not a call of the
	// query, so its value is no output column.
	CountStarInserted    bool  `json:"count_star_inserted,omitempty"`
	NeedRetraction       bool  `json:"need_retraction,omitempty"`
	GenerateUpdateBefore bool  `json:"generate_update_before,omitempty"`
	StateTTLMs           int64 `json:"state_ttl_ms,omitempty"`
	// Frames makes the input frames of partial rows (frames.go), cut into bundles here.
	Frames *FramesParams `json:"frames,omitempty"`
}

// GlobalSpec is a validated global-aggregate spec.
type GlobalSpec struct {
	*Spec
	CountStar         int // -1 for insert-only input
	CountStarInserted bool
	Frames            *FramesParams
	localInput        []engine.FieldSpec
}

// ParseLocalSpec decodes and validates a local-aggregate spec whose header engine.ParseSpec
// validated. The local aggregate is not keyed by Flink (its bundle is keyed by the input's key
// columns): its key-group range is ignored.
func ParseLocalSpec(s *engine.Spec) (*Spec, error) {
	var p LocalParams
	if err := s.DecodeParams(&p); err != nil {
		return nil, err
	}
	return parseLocalSpec(s, &p)
}

// parseLocalSpec validates decoded params p of a local-aggregate spec.
func parseLocalSpec(s *engine.Spec, p *LocalParams) (*Spec, error) {
	if len(s.Inputs) != 1 {
		return nil, engine.SpecError("inputs", "a local aggregate has 1 input, not %d", len(s.Inputs))
	}
	spec, err := newSpec(s, Params{Aggs: p.Aggs, NeedRetraction: p.NeedRetraction})
	if err != nil {
		return nil, err
	}
	if err := twoPhaseCalls(spec.Aggs, spec.ArgTypes); err != nil {
		return nil, err
	}
	if spec.Exchange, err = p.Exchange.validate(s.MaxParallelism, true); err != nil {
		return nil, err
	}
	return spec, nil
}

// ParseGlobalSpec decodes and validates a global-aggregate spec whose header engine.ParseSpec
// validated: its input must be the key fields followed by the calls' partial state.
func ParseGlobalSpec(s *engine.Spec) (*GlobalSpec, error) {
	var p GlobalParams
	if err := s.DecodeParams(&p); err != nil {
		return nil, err
	}
	return parseGlobalSpec(s, &p)
}

// parseGlobalSpec validates decoded params p of a global-aggregate spec.
func parseGlobalSpec(s *engine.Spec, p *GlobalParams) (*GlobalSpec, error) {
	local, err := parseMergeInput(s, "a global aggregate", p.LocalInput, p.Aggs)
	if err != nil {
		return nil, err
	}
	in := &s.Inputs[0]
	if p.StateTTLMs < 0 {
		return nil, engine.ParamError("state_ttl_ms", "negative (%d)", p.StateTTLMs)
	}
	gs := &GlobalSpec{
		Spec: &Spec{Spec: s, Keys: in.Keys, Input: in.Fields, InputTypes: in.Types, ArgTypes: local,
			Params: Params{Aggs: p.Aggs, NeedRetraction: p.NeedRetraction, GenerateUpdateBefore: p.GenerateUpdateBefore, StateTTLMs: p.StateTTLMs}},
		CountStar:         -1,
		CountStarInserted: p.CountStarInserted,
		Frames:            p.Frames,
		localInput:        p.LocalInput,
	}
	if err := p.Frames.validate(); err != nil {
		return nil, err
	}
	switch {
	case p.NeedRetraction != (p.CountStar != nil):
		return nil, engine.ParamError("count_star", "set exactly when need_retraction is (a retracting aggregate counts its records)")
	case p.CountStar != nil:
		c := *p.CountStar
		if c < 0 || c >= len(p.Aggs) || !(isCountStar(p.Aggs[c]) || isCountSum(p.Aggs[c], local)) {
			return nil, engine.ParamError("count_star", "%d is neither a COUNT(*) call nor a $SUM0 over BIGINT", c)
		}
		if p.CountStarInserted && !isCountStar(p.Aggs[c]) {
			return nil, engine.ParamError("count_star_inserted", "Flink inserts a COUNT(*), not call %d", c)
		}
		if p.CountStarInserted && c != len(p.Aggs)-1 {
			return nil, engine.ParamError("count_star_inserted", "Flink inserts count1 as the last call, not call %d", c)
		}
		gs.CountStar = c
	case p.CountStarInserted:
		return nil, engine.ParamError("count_star_inserted", "without count_star")
	}
	if err := twoPhaseCalls(gs.Aggs, gs.ArgTypes); err != nil {
		return nil, err
	}
	return gs, nil
}

// isCountSum reports whether c is a $SUM0 over BIGINT without FILTER or DISTINCT: the record
// counter of a split DISTINCT's final aggregate over retracting input, the sum of the partial
// aggregates' COUNT(*)s (its BIGINT sum is what RetractionRecordCounter's getLong reads).
func isCountSum(c AggCall, args []engine.Type) bool {
	return c.Func == "SUM0" && len(c.Args) == 1 && c.Args[0] >= 0 && c.Args[0] < len(args) &&
		args[c.Args[0]].ID == engine.BigInt && c.Filter == nil && !c.Distinct
}

// isCountStar reports whether c is COUNT(*) (Flink's Count1AggFunction, what its record
// counter reads): no argument, no FILTER, not DISTINCT.
func isCountStar(c AggCall) bool {
	return c.Func == "COUNT" && len(c.Args) == 0 && c.Filter == nil && !c.Distinct
}

// twoPhaseCalls refuses calls whose partial state does not cross as Arrow columns (PartialSupport).
func twoPhaseCalls(aggs []AggCall, args []engine.Type) error {
	for i, c := range aggs {
		var arg engine.Type
		if len(c.Args) > 0 && c.Args[0] >= 0 && c.Args[0] < len(args) {
			arg = args[c.Args[0]]
		}
		if err := PartialSupport(c, arg); err != nil {
			return fmt.Errorf("aggs[%d]: %w", i, err)
		}
	}
	return nil
}

// stateLayout is what shapes the global aggregate's state: the calls (with the argument types
// their kernels depend on) and whether a count star decides removal.
func (s *GlobalSpec) stateLayout() any {
	return struct {
		Params
		LocalInput []engine.FieldSpec `json:"local_input"`
		CountStar  int                `json:"count_star"`
	}{Params: s.Params, LocalInput: s.localInput, CountStar: s.CountStar}
}

// partialLayout is where each call's partial state lies in a row: call c's fields are columns
// [first[c], first[c]+len(types[c])), after the keys; then one column per distinct set (set s
// at column views+s), as Flink's AggregateInfoList.getAccTypes orders them. A layout may have
// no calls (a GROUP BY without aggregates): its rows are the keys alone.
type partialLayout struct {
	start int             // the first column after the keys
	first []int           // per call: its first column
	types [][]engine.Type // per call: its fields' types
	views int             // the first distinct map column
	all   []engine.Type   // every call's fields, then the distinct maps, in order
}

// newPartialLayout lays out the partial state of calls, then of sets distinct maps, after keys
// key columns.
func newPartialLayout(calls []kernels.Accumulator, sets int, keys int) (partialLayout, error) {
	l := partialLayout{start: keys}
	col := keys
	for i, c := range calls {
		ts, err := c.PartialTypes()
		if err != nil {
			return partialLayout{}, fmt.Errorf("aggs[%d]: %w", i, err)
		}
		l.first = append(l.first, col)
		l.types = append(l.types, ts)
		l.all = append(l.all, ts...)
		col += len(ts)
	}
	l.views = col
	for range sets {
		l.all = append(l.all, dataview.MapType)
	}
	return l, nil
}

// writePartials writes the partial state of groups (calls, then the distinct maps of sets) to
// out's columns from column first on, one row per group; out is laid out (Init) for
// len(groups) rows with varBytes' sizes.
func (l *partialLayout) writePartials(calls []kernels.Accumulator, sets []*distinct.Set, out *engine.OutBatch, first int, groups []int32) error {
	for c, acc := range calls {
		from := first + l.first[c] - l.start
		if err := acc.WritePartial(out.Cols[from:from+len(l.types[c])], groups); err != nil {
			return err
		}
	}
	for s, d := range sets {
		d.WriteView(&out.Cols[first+l.views-l.start+s], groups, false)
	}
	return nil
}

// VarBytes fills dst (one entry per partial column) with the VARCHAR and VARBINARY sizes
// groups need.
func (l *partialLayout) varBytes(calls []kernels.Accumulator, sets []*distinct.Set, groups []int32, dst []int) {
	for c, acc := range calls {
		from := l.first[c] - l.start
		acc.PartialVarBytes(groups, dst[from:from+len(l.types[c])])
	}
	for s, d := range sets {
		dst[l.views-l.start+s] = d.ViewBytes(groups, false)
	}
}

// partialFields names the partial columns "<call name>$<field>" and "distinct$<set>" (Flink
// names the former otherwise; only their types cross the boundary).
func partialFields(spec *Spec, l *partialLayout) []engine.Field {
	var fs []engine.Field
	for c, ts := range l.types {
		name := spec.Aggs[c].Name
		if name == "" {
			name = fmt.Sprintf("agg%d", c)
		}
		for k, t := range ts {
			fs = append(fs, engine.Field{Name: fmt.Sprintf("%s$%d", name, k), Type: t})
		}
	}
	for s, t := range l.all[l.views-l.start:] {
		fs = append(fs, engine.Field{Name: fmt.Sprintf("distinct$%d", s), Type: t})
	}
	return fs
}

// bundleKeys is the per-bundle bookkeeping the two-phase operators share: the distinct keys of a
// bundle in order of first arrival, their HashMap iteration order, and the HashMap's table
// length, which outlives bundles as in Flink (HashMap.clear keeps the table).
type bundleKeys struct {
	tableLen int
	keys     []bundleKey
	keyOf    []int32 // per group id: its bundle key + 1, 0 when not in this bundle
	order    []int32 // bundle keys in HashMap iteration order
	hashes   []int32 // scratch
	buckets  []int32 // scratch
}

// start begins a bundle over a state of capacity ids.
func (b *bundleKeys) start(capacity int) {
	b.keys = b.keys[:0]
	b.keyOf = scratch.Extend(b.keyOf, capacity)
}

// key returns the bundle key of group gid (key hash hash), adding it on first sight; row is the
// input row that brought it.
func (b *bundleKeys) key(gid, hash int32, row int) int32 {
	if k := b.keyOf[gid]; k > 0 {
		b.keys[k-1].lastRow = int32(row)
		return k - 1
	}
	b.keys = append(b.keys, bundleKey{hash: hash, gid: gid, firstRow: int32(row), lastRow: int32(row)})
	k := int32(len(b.keys))
	b.keyOf[gid] = k
	return k - 1
}

// grow makes room in keyOf for group ids below capacity.
func (b *bundleKeys) grow(capacity int) { b.keyOf = scratch.Extend(b.keyOf, capacity) }

// iterate computes the HashMap iteration order of the bundle's keys (b.order).
func (b *bundleKeys) iterate() {
	b.hashes = scratch.Resize(b.hashes, len(b.keys))
	for i, k := range b.keys {
		b.hashes[i] = k.hash
	}
	b.order, b.buckets = javahash.Order(b.hashes, &b.tableLen, b.order[:0], b.buckets)
}

// end forgets the bundle's keys.
func (b *bundleKeys) end() {
	for _, k := range b.keys {
		b.keyOf[k.gid] = 0
	}
	b.keys = b.keys[:0]
}

// fullRange is header with every key group in range: the local aggregate is not keyed, so any
// key may arrive at any subtask.
func fullRange(header *engine.Spec) *engine.Spec {
	h := *header
	h.Inputs = slices.Clone(header.Inputs)
	start, end := 0, header.MaxParallelism-1
	h.KeyGroupStart, h.KeyGroupEnd = &start, &end
	return &h
}

// parseMergeInput validates what the aggregates that merge partial rows (global, incremental)
// share: one input whose key fields lead, the local aggregate's input fields the calls read, and
// calls without FILTER (it applies where rows fold, in the local aggregate) or Java-string
// origins. It returns the local input's types. what names the kind in messages.
func parseMergeInput(s *engine.Spec, what string, localInput []engine.FieldSpec, aggs []AggCall) ([]engine.Type, error) {
	if len(s.Inputs) != 1 {
		return nil, engine.SpecError("inputs", "%s has 1 input, not %d", what, len(s.Inputs))
	}
	for i, k := range s.Inputs[0].Keys {
		if k != i {
			return nil, engine.SpecError(fmt.Sprintf("inputs[0].keys[%d]", i), "column %d: %s's keys are its first fields, in order", k, what)
		}
	}
	local := make([]engine.Type, len(localInput))
	for i, f := range localInput {
		t, err := engine.ParseType(f.Type)
		if err != nil {
			return nil, engine.ParamError(fmt.Sprintf("local_input[%d].type", i), "%v", err)
		}
		if f.Nullable != nil {
			t.Nullable = *f.Nullable
		}
		local[i] = t
	}
	for i, a := range aggs {
		field := fmt.Sprintf("aggs[%d]", i)
		switch {
		case a.Filter != nil:
			return nil, engine.ParamError(field+".filter", "%s merges partial state: FILTER applies in the local aggregate", what)
		case a.JavaStrings != nil:
			return nil, engine.ParamError(field+".java_strings", "%s compares the strings of partial rows by bytes", what)
		}
	}
	if err := validateCalls(aggs, local); err != nil {
		return nil, err
	}
	return local, nil
}

// checkPartialInput checks that an input of these types is keys key fields followed by the
// partial state want.
func checkPartialInput(in []engine.Type, keys int, want []engine.Type) error {
	if len(in) != keys+len(want) {
		return engine.SpecError("inputs[0].fields", "%d fields, want %d: the keys, then the calls' partial state (%s)",
			len(in), keys+len(want), typeList(want))
	}
	for k, t := range want {
		got := in[keys+k]
		if !got.SameAs(t) {
			got.Nullable = true
			return engine.SpecError(fmt.Sprintf("inputs[0].fields[%d]", keys+k), "%s, want %s: the calls' partial state is %s",
				got, t, typeList(want))
		}
	}
	return nil
}

// partialBuffer is the bundle buffer of an aggregate that merges partial rows (the global's
// localAgg, the incremental's partialAgg): per bundle key, fresh accumulators and DISTINCT maps,
// into which the key's partial rows merge in arrival order. A DISTINCT call's own fields are
// not merged: Flink merges it through its map only.
type partialBuffer struct {
	accs    []kernels.Accumulator // one per call
	sets    []*distinct.Set       // one per DISTINCT argument, in the layout's order
	inner   []bool                // per call: DISTINCT
	changed []bool                // scratch: the merges' changed flags (unused)
	vb      []int                 // scratch: the partial columns' variable bytes
}

// write writes the partial state of groups, laid out by l, to out (one row per group) and makes
// view a view of out's columns.
func (p *partialBuffer) write(l *partialLayout, groups []int32, out *engine.OutBatch, view *engine.Batch) error {
	p.vb = scratch.Resize(p.vb, len(l.all))
	clear(p.vb)
	l.varBytes(p.accs, p.sets, groups, p.vb)
	if err := out.Init(l.all, len(groups), p.vb); err != nil {
		return err
	}
	if err := l.writePartials(p.accs, p.sets, out, 0, groups); err != nil {
		return err
	}
	out.Finish()
	viewOf(out, view)
	return nil
}

// merge resets the buffer to keys fresh groups and merges every row of in, laid out by l, into
// group rowKey[i]. It checks the maps first and changes nothing else when one is malformed.
func (p *partialBuffer) merge(in *engine.Batch, l *partialLayout, rowKey []int32, keys int) error {
	for s, d := range p.sets {
		if err := d.CheckViews(&in.Cols[l.views+s], rowKey); err != nil {
			return fmt.Errorf("distinct map %d: %w", s, err)
		}
	}
	p.changed = scratch.Resize(p.changed, in.Len)
	for c, acc := range p.accs {
		acc.Grow(keys)
		for k := range int32(keys) {
			acc.Reset(k)
		}
		if p.inner[c] {
			continue
		}
		if err := acc.Merge(in, l.first[c], rowKey, p.changed); err != nil {
			return fmt.Errorf("aggs[%d]: %w", c, err)
		}
	}
	for s, d := range p.sets {
		d.Grow(keys)
		for k := range int32(keys) {
			d.Reset(k)
		}
		col := &in.Cols[l.views+s]
		for i, k := range rowKey {
			d.MergeView(col.Bytes(i), k, nil)
		}
	}
	return nil
}

// foldRows folds the rows of a merge into set d into d's calls (of calls): b is a batch laid out
// as the aggregate's input, whose column d.Col() holds the rows' keys for the folds.
func foldRows(d *distinct.Set, rows *distinct.Rows, calls []kernels.Accumulator, b *engine.Batch, changed *[]bool) {
	b.Len = len(rows.Gids)
	b.Cols[d.Col()] = rows.Keys.Col
	*changed = scratch.Resize(*changed, b.Len)
	for k, c := range d.Calls() {
		calls[c].Fold(b, rows.Gids, rows.Acts[k], *changed)
	}
	b.Cols[d.Col()] = engine.Column{}
}

// rollbackBundle undoes a bundle's key resolution after its batch was refused: the groups it
// created in st go.
func rollbackBundle(b *bundleKeys, st *engine.KeyedState) {
	for _, k := range b.keys {
		if k.fresh && !k.kept {
			st.Remove(k.gid)
		}
	}
	b.end()
	st.EndBatch()
}
