package agg

import (
	"errors"
	"fmt"
	"github.com/ferrystream/ferry/internal/javahash"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
)

// Tests of the two-phase aggregate's operators against reference models of Flink's
// MapBundleOperator(MiniBatchLocalGroupAggFunction) and
// KeyedMapBundleOperator(MiniBatchGlobalGroupAggFunction), written from Flink 2.3.0's sources
// over the reference accumulators (reference_test.go, merge_reference_test.go). Java's
// GroupAggregateDifferentialTest runs Flink's own operators against Ferry's.

// twoPhaseCase is a random two-phase workload: the local aggregate's spec and input rows.
type twoPhaseCase struct {
	local *Spec
	rows  [][]any
	kinds []engine.RowKind
	times []int64
	// countStar is the call whose count Flink's record counter reads (-1: insert-only input);
	// inserted when Flink appended it (count1).
	countStar int
	inserted  bool
	ttl       int64 // the global aggregate's idle-state TTL
}

// randomTwoPhase turns randomScenario's group-by into the two-phase aggregate Flink would plan
// for it: no SUM(DISTINCT) over FLOAT, DOUBLE or DECIMAL (PartialSupport), and for retracting input a
// COUNT(*) record counter, the last such call of the query or a count1 appended
// (AggregateUtil.insertCountStarAggCall).
func randomTwoPhase(seed uint64) twoPhaseCase {
	sc := randomScenario(seed)
	spec := sc.spec
	aggs := append([]AggCall(nil), spec.Aggs...)
	for i := range aggs {
		if len(aggs[i].Args) > 0 && PartialSupport(aggs[i], spec.ArgTypes[aggs[i].Args[0]]) != nil {
			aggs[i].Distinct = false
		}
		// FIRST_VALUE/LAST_VALUE cannot merge: Flink plans no two phases with them; WELFORD_M2's
		// partial state is not native; LISTAGG's
		// partial state is checked against Flink's own functions (TwoPhaseSqlDifferentialTest)
		if f, ok := map[string]string{"FIRST_VALUE": "MIN", "LAST_VALUE": "MAX", "LISTAGG": "MAX", "WELFORD_M2": "SUM0"}[aggs[i].Func]; ok {
			aggs[i].Func = f
			aggs[i].Args = aggs[i].Args[:1] // LISTAGG's delimiter
		}
	}
	c := twoPhaseCase{rows: sc.rows, kinds: sc.kinds, times: sc.times, countStar: -1}
	if spec.NeedRetraction {
		for i, a := range aggs {
			if isCountStar(a) {
				c.countStar = i
			}
		}
		if c.countStar < 0 {
			aggs = append(aggs, AggCall{Func: "COUNT", Retract: true, Name: "_$count1$_"})
			c.countStar, c.inserted = len(aggs)-1, true
		}
	}
	h := *spec.Spec
	h.Kind = LocalKind
	h.Params = jsonMarshal(&LocalParams{Aggs: aggs, NeedRetraction: spec.NeedRetraction})
	local, err := ParseLocalSpec(&h)
	if err != nil {
		panic(err)
	}
	c.local, c.ttl = local, spec.StateTTLMs
	return c
}

// globalSpecOf is the global aggregate's spec behind the local aggregate of c: its input is the
// local's output, its calls read the local's input.
func globalSpecOf(t testing.TB, c twoPhaseCase, generateUpdateBefore bool) *GlobalSpec {
	t.Helper()
	l, err := NewLocalGroupAggregate(c.local)
	if err != nil {
		t.Fatal(err)
	}
	var fields []engine.FieldSpec
	var keys []int
	for i, f := range l.Output() {
		nullable := f.Type.Nullable
		typ := f.Type
		typ.Nullable = true
		fields = append(fields, engine.FieldSpec{Name: f.Name, Type: typ.String(), Nullable: &nullable})
		if i < len(c.local.Keys) {
			keys = append(keys, i)
		}
	}
	aggs := append([]AggCall(nil), c.local.Aggs...)
	for i := range aggs { // applied by the local aggregate
		aggs[i].Filter, aggs[i].JavaStrings = nil, nil
	}
	p := GlobalParams{LocalInput: c.local.Input, Aggs: aggs, NeedRetraction: c.local.NeedRetraction,
		GenerateUpdateBefore: generateUpdateBefore, StateTTLMs: c.ttl, CountStarInserted: c.inserted}
	if c.countStar >= 0 {
		p.CountStar = &c.countStar
	}
	h := engine.Spec{Kind: GlobalKind, Name: "global", MaxParallelism: c.local.MaxParallelism,
		Inputs: []engine.Input{{Fields: fields, Keys: keys}}, Params: jsonMarshal(&p)}
	hs, err := engine.ParseSpec(jsonMarshal(&h))
	if err != nil {
		t.Fatal(err)
	}
	gs, err := ParseGlobalSpec(hs)
	if err != nil {
		t.Fatal(err)
	}
	return gs
}

// refAccs creates reference accumulators for calls over argument types args (Flink's
// createAccumulators), without the record counter refGroupAgg adds on its own.
func refAccs(calls []AggCall, args []engine.Type) []refAgg {
	return newRefGroupAgg(&Spec{Params: Params{Aggs: calls}, InputTypes: args}).create()
}

// keyHashes are the BinaryRowData hashCodes of the key columns keys of rows.
func keyHashes(types []engine.Type, keys []int, rows [][]any) []int32 {
	if len(rows) == 0 {
		return nil
	}
	b := enginetest.Batch(types, rows, make([]engine.RowKind, len(rows)), enginetest.Options{})
	enc := engine.NewKeyEncoder(keys, types)
	if err := enc.Encode(b); err != nil {
		panic(err)
	}
	hs := make([]int32, len(rows))
	for i := range hs {
		hs[i] = enc.Hash(i)
	}
	return hs
}

// refBundleKey is one key of a reference bundle: its values, hash, rows' accumulators.
type refBundleKey struct {
	vals []any
	hash int32
	accs []refAgg
	// the local's distinct maps (value ids per argument column, and their values) or the
	// global's buffer maps (per distinct set)
	distinct     map[int]map[string][]int64
	distinctVals map[int]map[string]any
	views        []refView
}

// refBundle groups rows by key in order of first arrival, as the bundle operator's HashMap
// collects them, and returns the keys in the HashMap's iteration order.
type refBundle struct {
	keys  []*refBundleKey
	index map[string]int
}

func (b *refBundle) get(vals []any, hash int32, create func() []refAgg) *refBundleKey {
	if b.index == nil {
		b.index = map[string]int{}
	}
	id := keyString(vals)
	if i, ok := b.index[id]; ok {
		return b.keys[i]
	}
	k := &refBundleKey{vals: vals, hash: hash, accs: create(),
		distinct: map[int]map[string][]int64{}, distinctVals: map[int]map[string]any{}}
	b.index[id] = len(b.keys)
	b.keys = append(b.keys, k)
	return k
}

func (b *refBundle) ordered(tableLen *int) []*refBundleKey {
	hs := make([]int32, len(b.keys))
	for i, k := range b.keys {
		hs[i] = k.hash
	}
	order, _ := javahash.Order(hs, tableLen, nil, nil)
	out := make([]*refBundleKey, len(order))
	for j, i := range order {
		out[j] = b.keys[i]
	}
	return out
}

// refLocal is MapBundleOperator(MiniBatchLocalGroupAggFunction).
type refLocal struct {
	spec     *Spec
	tableLen int // the HashMap's table, kept across bundles
}

func (r *refLocal) bundle(rows [][]any, kinds []engine.RowKind) []enginetest.Row {
	s := r.spec
	hs := keyHashes(s.InputTypes, s.Keys, rows)
	var b refBundle
	for i, row := range rows {
		var kv []any
		for _, k := range s.Keys {
			kv = append(kv, row[k])
		}
		key := b.get(kv, hs[i], func() []refAgg { return refAccs(s.Aggs, s.InputTypes) })
		refDistinct(s, key.distinct, key.distinctVals, row, engine.IsAccumulate(kinds[i]), func(c int, add bool) {
			if add {
				key.accs[c].accumulate(row[s.Aggs[c].Args[0]])
			} else {
				key.accs[c].retract(row[s.Aggs[c].Args[0]])
			}
		}, nil, nil)
		for c, call := range s.Aggs {
			if f := call.Filter; call.Distinct || (f != nil && row[*f] != true) {
				continue
			}
			var v any
			if len(call.Args) > 0 {
				v = row[call.Args[0]]
				if j := call.JavaStrings; j != nil && v != nil && row[*j] == true {
					v = javaString(v.(string))
				}
			}
			if engine.IsAccumulate(kinds[i]) {
				key.accs[c].accumulate(v)
			} else {
				key.accs[c].retract(v)
			}
		}
	}
	var out []enginetest.Row
	for _, k := range b.ordered(&r.tableLen) {
		vals := append([]any(nil), k.vals...)
		for c, a := range k.accs {
			vals = append(vals, refPartialRow(s, c, a)...)
		}
		order, _ := distinctArgs(s)
		for i, sh := range viewShapes(s) {
			m := refView{}
			for id, cnt := range k.distinct[order[i]] {
				m[id] = &refViewEntry{v: k.distinctVals[order[i]][id], vals: cnt}
			}
			vals = append(vals, m.encode(sh))
		}
		out = append(out, enginetest.Row{Kind: engine.Insert, Values: vals})
	}
	return out
}

// refGlobal is KeyedMapBundleOperator(MiniBatchGlobalGroupAggFunction).
type refGlobal struct {
	spec     *GlobalSpec
	state    map[string]*refKey
	tableLen int
	clock    *refClock // the state's MapViews' idle-state TTL
}

func (r *refGlobal) values(accs []refAgg) []any {
	var vals []any
	for c, a := range accs {
		if r.spec.CountStarInserted && c == r.spec.CountStar {
			continue
		}
		vals = append(vals, a.value())
	}
	return vals
}

func (r *refGlobal) bundle(rows [][]any, now int64) []enginetest.Row {
	s := r.spec
	if r.state == nil {
		r.state = map[string]*refKey{}
		r.clock = &refClock{ttl: s.StateTTLMs}
	}
	r.clock.now = now
	create := func() []refAgg { return refAccs(s.Aggs, s.ArgTypes) }
	createState := func() []refAgg { // the state's MapViews expire per entry
		g := newRefGroupAgg(&Spec{Params: Params{Aggs: s.Aggs}, InputTypes: s.ArgTypes})
		g.clock = r.clock
		return g.create()
	}
	widths := make([]int, len(s.Aggs))
	for c, a := range create() {
		widths[c] = len(refPartialRow(s.Spec, c, a))
	}
	hs := keyHashes(s.InputTypes, s.Keys, rows)
	shapes := viewShapes(s.Spec)
	_, byArg := distinctArgs(s.Spec)
	setCalls := make([][]int, len(shapes))
	order, _ := distinctArgs(s.Spec)
	for i, arg := range order {
		setCalls[i] = byArg[arg]
	}
	var b refBundle
	for i, row := range rows {
		nk := len(s.Keys)
		key := b.get(append([]any(nil), row[:nk]...), hs[i], create)
		col := nk
		for c, a := range key.accs { // addInput: localAgg.merge into the bundle's accumulator
			switch {
			case s.Aggs[c].Distinct: // a DISTINCT call merges through its map only
			case isRefAcc(a):
				refMergeAcc(a, refAccDecode(s.ArgTypes[s.Aggs[c].Args[0]], a, row[col].(string)))
			default:
				refMergePartial(a, row[col:col+widths[c]])
			}
			col += widths[c]
		}
		for len(key.views) < len(shapes) {
			key.views = append(key.views, refView{})
		}
		for v, sh := range shapes {
			ents, err := decodeView(sh, row[col+v].(string))
			if err != nil {
				panic(err)
			}
			refMergeView(key.views[v], ents, sh, func(j int, add bool, x any) {
				if add {
					key.accs[setCalls[v][j]].accumulate(x)
				} else {
					key.accs[setCalls[v][j]].retract(x)
				}
			}, nil)
		}
	}
	var out []enginetest.Row
	emit := func(kind engine.RowKind, k *refBundleKey, vals []any) {
		out = append(out, enginetest.Row{Kind: kind, Values: append(append([]any(nil), k.vals...), vals...)})
	}
	for _, k := range b.ordered(&r.tableLen) {
		id := keyString(k.vals)
		st, ok := r.state[id]
		expired := ok && s.StateTTLMs > 0 && st.lastWrite+s.StateTTLMs <= now
		first := !ok || expired
		if first {
			fresh := &refKey{accs: createState()}
			for range shapes {
				fresh.views = append(fresh.views, refView{})
			}
			if expired { // the MapViews are state of their own, bound to the key: their entries stay
				fresh.views = st.views
				carryMaps(st.accs, fresh.accs)
			}
			st = fresh
		}
		prev := r.values(st.accs)
		for c, a := range st.accs { // globalAgg.merge(bufferAcc)
			switch {
			case s.Aggs[c].Distinct:
			case isRefAcc(a):
				refMergeAcc(a, k.accs[c])
			default:
				refMergePartial(a, refPartial(k.accs[c]))
			}
		}
		for v, sh := range shapes {
			var ents []refViewEntry
			ids := make([]string, 0, len(k.views[v]))
			for id := range k.views[v] {
				ids = append(ids, id)
			}
			slices.Sort(ids)
			for _, id := range ids {
				ents = append(ents, *k.views[v][id])
			}
			refMergeView(st.views[v], ents, sh, func(j int, add bool, x any) {
				if add {
					st.accs[setCalls[v][j]].accumulate(x)
				} else {
					st.accs[setCalls[v][j]].retract(x)
				}
			}, r.clock)
		}
		next := r.values(st.accs)
		if s.CountStar >= 0 && st.accs[s.CountStar].value().(int64) == 0 {
			if !first {
				emit(engine.Delete, k, prev)
			}
			delete(r.state, id)
			continue
		}
		st.lastWrite = now
		r.state[id] = st
		if first {
			emit(engine.Insert, k, next)
			continue
		}
		equal := s.StateTTLMs == 0
		for i := range prev {
			if equal && !jPrimEq(prev[i], next[i]) {
				equal = false
			}
		}
		if equal {
			continue
		}
		if s.GenerateUpdateBefore {
			emit(engine.UpdateBefore, k, prev)
		}
		emit(engine.UpdateAfter, k, next)
	}
	return out
}

// bundles cuts n rows into bundles of random sizes (never across a change of processing time).
func bundles(r *rand.Rand, n int, times []int64, maxSize int) [][2]int {
	var out [][2]int
	for pos := 0; pos < n; {
		end := min(pos+1+r.IntN(maxSize), n)
		for i := pos; times != nil && i < end; i++ {
			if times[i] != times[pos] {
				end = i
			}
		}
		out = append(out, [2]int{pos, end})
		pos = end
	}
	return out
}

func rowStrings(rows []enginetest.Row) []string {
	var s []string
	for _, r := range rows {
		s = append(s, r.String())
	}
	return s
}

// TestLocalGroupAggregateMatchesReference runs random workloads (insert-only and retracting,
// FILTER, NULLs, extremes, NaN, retractions of keys never seen) through the local aggregate in
// bundles of random sizes and compares every bundle's output, order included, with the model.
func TestLocalGroupAggregateMatchesReference(t *testing.T) {
	seeds := 60
	if testing.Short() {
		seeds = 20
	}
	for seed := range uint64(seeds) {
		c := randomTwoPhase(seed)
		r := rand.New(rand.NewPCG(seed, 5))
		op, err := NewLocalGroupAggregate(c.local)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if op.State() != nil {
			t.Fatal("the local aggregate keeps state")
		}
		ref := &refLocal{spec: c.local}
		out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
		maxSize := []int{1, 3, 50, 400, 5000}[r.IntN(5)]
		for n, bd := range bundles(r, len(c.rows), nil, maxSize) {
			rows, kinds := c.rows[bd[0]:bd[1]], c.kinds[bd[0]:bd[1]]
			b := enginetest.Batch(c.local.InputTypes, rows, kinds, enginetest.Options{Offset: n % 3, Garbage: r})
			if _, err := op.Process(engine.Of(0, 1, b), 0, out); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			shapes, views := viewShapes(c.local), op.layout.views
			got := rowStrings(canonicalAccs(canonicalViews(enginetest.Rows(out), views, shapes), c.local, &op.layout))
			want := rowStrings(canonicalAccs(canonicalViews(ref.bundle(rows, kinds), views, shapes), c.local, &op.layout))
			if d := diffStrings(got, want); d != "" {
				t.Fatalf("seed %d bundle %d (spec %s): %s", seed, n, jsonMarshal(c.local.Params), d)
			}
			if op.state.Len() != 0 {
				t.Fatalf("seed %d: %d keys left after the bundle", seed, op.state.Len())
			}
		}
	}
}

// partialStream is what the global aggregate receives: the partial rows of several local
// aggregates (random splits of the input, random bundle sizes), interleaved with each local's
// order kept, as Flink's exchange delivers them. Times carry the processing time of each row.
func partialStream(c twoPhaseCase, r *rand.Rand) ([][]any, []int64) {
	locals := 1 + r.IntN(3)
	refs := make([]*refLocal, locals)
	pending := make([][]int, locals) // per local: its input rows not yet in a bundle
	streams := make([][][]any, locals)
	times := make([][]int64, locals)
	for l := range refs {
		refs[l] = &refLocal{spec: c.local}
	}
	flush := func(l int) {
		if len(pending[l]) == 0 {
			return
		}
		var rows [][]any
		var kinds []engine.RowKind
		for _, i := range pending[l] {
			rows, kinds = append(rows, c.rows[i]), append(kinds, c.kinds[i])
		}
		now := int64(0)
		if c.times != nil {
			now = c.times[pending[l][len(pending[l])-1]]
		}
		for _, row := range refs[l].bundle(rows, kinds) {
			streams[l] = append(streams[l], row.Values)
			times[l] = append(times[l], now)
		}
		pending[l] = pending[l][:0]
	}
	size := 1 + r.IntN(40)
	for i := range c.rows {
		l := r.IntN(locals)
		if c.times != nil && i > 0 && c.times[i] != c.times[i-1] {
			for l := range refs { // a time step: every local's bundle ends (a barrier, say)
				flush(l)
			}
		}
		pending[l] = append(pending[l], i)
		if len(pending[l]) >= size {
			flush(l)
		}
	}
	for l := range refs {
		flush(l)
	}
	var rows [][]any
	var ts []int64
	pos := make([]int, locals)
	for {
		var open []int
		for l := range streams {
			if pos[l] < len(streams[l]) {
				open = append(open, l)
			}
		}
		if len(open) == 0 {
			break
		}
		l := open[r.IntN(len(open))]
		// the globally earliest time goes first, so time never runs backwards
		for _, o := range open {
			if times[o][pos[o]] < times[l][pos[l]] {
				l = o
			}
		}
		rows, ts = append(rows, streams[l][pos[l]]), append(ts, times[l][pos[l]])
		pos[l]++
	}
	return rows, ts
}

// TestGlobalGroupAggregateMatchesReference feeds the global aggregate the partial rows of
// reference local aggregates (negative and zero counts, NULL sums, overflowed DECIMAL, NaN),
// in bundles of random sizes, with idle-state TTL, and snapshots and restores it mid-stream;
// every bundle's changelog, order included, must be the model's.
func TestGlobalGroupAggregateMatchesReference(t *testing.T) {
	seeds := 80
	if testing.Short() {
		seeds = 20
	}
	for seed := range uint64(seeds) {
		c := randomTwoPhase(seed)
		r := rand.New(rand.NewPCG(seed, 11))
		gs := globalSpecOf(t, c, r.IntN(2) == 0)
		rows, times := partialStream(c, r)
		op, err := NewGlobalGroupAggregate(gs)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		ref := &refGlobal{spec: gs}
		out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
		var tt []int64
		if c.times != nil {
			tt = times
		}
		maxSize := []int{1, 4, 60, 3000}[r.IntN(4)]
		for n, bd := range bundles(r, len(rows), tt, maxSize) {
			part := rows[bd[0]:bd[1]]
			now := times[bd[0]]
			kinds := make([]engine.RowKind, len(part))
			for i := range kinds {
				kinds[i] = engine.RowKind(r.IntN(4)) // ignored: a partial row always merges
			}
			b := enginetest.Batch(gs.InputTypes, part, kinds, enginetest.Options{Offset: n % 3, Garbage: r})
			if _, err := op.Process(engine.Of(0, 1, b), now, out); err != nil {
				t.Fatalf("seed %d bundle %d: %v", seed, n, err)
			}
			got, want := rowStrings(enginetest.Rows(out)), rowStrings(ref.bundle(part, now))
			if d := diffStrings(got, want); d != "" {
				t.Fatalf("seed %d bundle %d (spec %s): %s", seed, n, jsonMarshal(gs.Params), d)
			}
			if r.IntN(8) == 0 {
				op = restoreGlobal(t, op, gs)
				ref.tableLen = 0 // a restored operator has a new HashMap
			}
		}
		if op.Groups() != len(ref.state) && gs.StateTTLMs == 0 {
			t.Fatalf("seed %d: %d keys in state, the model has %d", seed, op.Groups(), len(ref.state))
		}
	}
}

// restoreGlobal snapshots every key group of op into a fresh operator, in small chunks.
func restoreGlobal(t *testing.T, op *GlobalGroupAggregate, spec *GlobalSpec) *GlobalGroupAggregate {
	t.Helper()
	fresh, err := NewGlobalGroupAggregate(spec)
	if err != nil {
		t.Fatal(err)
	}
	enginetest.Restore(t, fresh.State(), enginetest.Snapshot(t, op.State(), 1+op.Groups()%31))
	if fresh.Groups() != op.Groups() {
		t.Fatalf("restored %d keys of %d", fresh.Groups(), op.Groups())
	}
	op.Close()
	return fresh
}

// twoPhaseCaseOf builds a case from a hand-written local spec.
func twoPhaseCaseOf(t *testing.T, input []engine.FieldSpec, keys []int, aggs []AggCall, retract bool, ttl int64) twoPhaseCase {
	t.Helper()
	h := engine.Spec{Kind: LocalKind, MaxParallelism: 128, Inputs: []engine.Input{{Fields: input, Keys: keys}},
		Params: jsonMarshal(&LocalParams{Aggs: aggs, NeedRetraction: retract})}
	hs, err := engine.ParseSpec(jsonMarshal(&h))
	if err != nil {
		t.Fatal(err)
	}
	local, err := ParseLocalSpec(hs)
	if err != nil {
		t.Fatal(err)
	}
	c := twoPhaseCase{local: local, countStar: -1, ttl: ttl}
	if retract {
		for i, a := range aggs {
			if isCountStar(a) {
				c.countStar = i
				c.inserted = a.Name == "_$count1$_"
			}
		}
	}
	return c
}

// runGlobal feeds bundles of partial rows (one slice per bundle) through a global aggregate at
// the given times and returns each bundle's output.
func runGlobal(t *testing.T, gs *GlobalSpec, bundles [][][]any, times []int64) [][]string {
	t.Helper()
	op, err := NewGlobalGroupAggregate(gs)
	if err != nil {
		t.Fatal(err)
	}
	out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
	var res [][]string
	for n, rows := range bundles {
		b := enginetest.Batch(gs.InputTypes, rows, make([]engine.RowKind, len(rows)), enginetest.Options{})
		now := int64(0)
		if times != nil {
			now = times[n]
		}
		if _, err := op.Process(engine.Of(0, 1, b), now, out); err != nil {
			t.Fatal(err)
		}
		res = append(res, rowStrings(enginetest.Rows(out)))
	}
	return res
}

// TestGlobalGroupAggregateEmitRules checks MiniBatchGlobalGroupAggFunction's rules by hand on
// SUM(v) with a count1: a key's first bundle with a negative count emits +I (the count is not
// zero) and keeps state; one whose count merges to 0 emits nothing and keeps none; a later
// bundle merging to 0 emits -D with the previous values; an unchanged result emits nothing
// without TTL and -U/+U with it; there is no dropping of retraction-first bundles.
func TestGlobalGroupAggregateEmitRules(t *testing.T) {
	input := bigintInput("k", "v")
	aggs := []AggCall{{Func: "SUM", Args: []int{1}, Retract: true, Name: "s"}, {Func: "COUNT", Retract: true, Name: "_$count1$_"}}
	c := twoPhaseCaseOf(t, input, []int{0}, aggs, true, 0)
	gs := globalSpecOf(t, c, true)
	if got := typeList(gs.InputTypes); got != "[BIGINT, BIGINT, BIGINT, BIGINT]" {
		t.Fatalf("global input %s", got)
	}
	row := func(k, sum, cnt, count1 any) []any { return []any{k, sum, cnt, count1} }
	got := runGlobal(t, gs, [][][]any{
		{row(int64(1), int64(-5), int64(-1), int64(-1)), row(int64(2), nil, int64(0), int64(0))},
		{row(int64(1), int64(5), int64(1), int64(1)), row(int64(1), int64(7), int64(1), int64(1))},
		{row(int64(1), int64(0), int64(0), int64(0))},
		{row(int64(1), int64(-7), int64(-1), int64(-1))},
		{row(int64(2), int64(3), int64(1), int64(1))},
	}, nil)
	want := [][]string{
		{"+I[1, -5]"}, // negative count: not zero, so +I; key 2 merged to 0 on its first bundle: nothing
		{"-U[1, -5]", "+U[1, 7]"},
		{}, // unchanged
		{"-D[1, 7]"},
		{"+I[2, 3]"}, // key 2 kept no state
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got  %v\nwant %v", got, want)
	}
	// With TTL an unchanged result re-emits; expired state reads as a first row.
	c = twoPhaseCaseOf(t, input, []int{0}, aggs, true, 10)
	gs = globalSpecOf(t, c, false)
	got = runGlobal(t, gs, [][][]any{
		{row(int64(1), int64(5), int64(1), int64(1))},
		{row(int64(1), int64(0), int64(0), int64(0))},
		{row(int64(1), int64(1), int64(1), int64(1))},
	}, []int64{0, 9, 19})
	want = [][]string{{"+I[1, 5]"}, {"+U[1, 5]"}, {"+I[1, 1]"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("TTL: got  %v\nwant %v", got, want)
	}
}

// TestGlobalGroupAggregateMergesBundleFirst: the bundle's partial rows merge into a fresh
// accumulator before the state does, which a DOUBLE sum can tell: (1e16 + (1 + 1)) differs from
// ((1e16 + 1) + 1).
func TestGlobalGroupAggregateMergesBundleFirst(t *testing.T) {
	input := bigintInput("k", "v:DOUBLE")
	c := twoPhaseCaseOf(t, input, []int{0}, []AggCall{{Func: "SUM", Args: []int{1}, Name: "s"}}, false, 0)
	gs := globalSpecOf(t, c, false)
	got := runGlobal(t, gs, [][][]any{{{int64(1), 1e16}}, {{int64(1), 1.0}, {int64(1), 1.0}}}, nil)
	if want := "[[+I[1, 1e+16]] [+U[1, 1.0000000000000002e+16]]]"; fmt.Sprint(got) != want {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// TestLocalGroupAggregateRows checks the local aggregate's rows by hand: +I per key whatever the
// input's kinds, negative counts, FILTER, the count1 among the partial fields, and keys in
// HashMap order.
func TestLocalGroupAggregateRows(t *testing.T) {
	input := bigintInput("k", "v", "f:BOOLEAN")
	f := 2
	aggs := []AggCall{{Func: "SUM", Args: []int{1}, Retract: true, Name: "s"}, {Func: "AVG", Args: []int{1}, Retract: true, Name: "a"},
		{Func: "COUNT", Args: []int{1}, Retract: true, Filter: &f, Name: "c"}, {Func: "COUNT", Retract: true, Name: "_$count1$_"}}
	c := twoPhaseCaseOf(t, input, []int{0}, aggs, true, 0)
	op, err := NewLocalGroupAggregate(c.local)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(op.Output()); got != "[{k BIGINT} {s$0 BIGINT} {s$1 BIGINT} {a$0 BIGINT} {a$1 BIGINT} {c$0 BIGINT} {_$count1$_$0 BIGINT}]" {
		t.Fatalf("output %s", got)
	}
	rows := [][]any{{int64(17), int64(5), true}, {int64(1), int64(3), false}, {int64(17), nil, true}, {int64(1), int64(3), true}}
	kinds := []engine.RowKind{engine.Delete, engine.Insert, engine.UpdateBefore, engine.UpdateBefore}
	out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
	if _, err := op.Process(engine.Of(0, 1, enginetest.Batch(c.local.InputTypes, rows, kinds, enginetest.Options{})), 0, out); err != nil {
		t.Fatal(err)
	}
	// The BinaryRowData hashCodes of BIGINT keys 1 and 17 (1465514398, 1985866184) put them in
	// buckets 7 and 5 of 16: key 17 comes first.
	if hs := keyHashes(c.local.InputTypes[:1], []int{0}, [][]any{{int64(1)}, {int64(17)}}); hs[0] != 1465514398 || hs[1] != 1985866184 {
		t.Fatalf("hashCodes %v", hs)
	}
	want := "[+I[17, -5, -1, -5, -1, -1, -2] +I[1, 0, 0, 0, 0, -1, 0]]"
	if got := fmt.Sprint(rowStrings(enginetest.Rows(out))); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// TestTwoPhaseSpecs checks what the two kinds accept and refuse, with the reasons the planner
// shows.
func TestTwoPhaseSpecs(t *testing.T) {
	input := bigintInput("k", "v", "d:DOUBLE")
	local := func(aggs []AggCall, retract bool) error {
		h := engine.Spec{Kind: LocalKind, MaxParallelism: 128, Inputs: []engine.Input{{Fields: input, Keys: []int{0}}},
			Params: jsonMarshal(&LocalParams{Aggs: aggs, NeedRetraction: retract})}
		hs, err := engine.ParseSpec(jsonMarshal(&h))
		if err != nil {
			return err
		}
		_, err = enginetest.Open(hs)
		return err
	}
	for _, tc := range []struct {
		aggs    []AggCall
		retract bool
		err     string
	}{
		{[]AggCall{{Func: "SUM", Args: []int{2}, Distinct: true}}, false, "SUM(DISTINCT) over DOUBLE: the global aggregate folds the values in a java.util.HashMap's order: not native yet"},
		{[]AggCall{{Func: "SUM", Args: []int{7}}}, false, "spec: params.aggs[0].args[0]: column 7 out of range"},
	} {
		err := local(tc.aggs, tc.retract)
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%v: got %v, want %q", tc.aggs, err, tc.err)
		}
	}
	if err := local([]AggCall{{Func: "SUM", Args: []int{1}, Retract: true}, {Func: "COUNT", Retract: true}}, true); err != nil {
		t.Fatal(err)
	}
	// MapViews cross: MIN/MAX with retraction, DISTINCT calls (FILTER and retraction included).
	if err := local([]AggCall{{Func: "MAX", Args: []int{2}, Retract: true}, {Func: "COUNT", Retract: true}}, true); err != nil {
		t.Fatal(err)
	}
	if err := local([]AggCall{{Func: "COUNT", Args: []int{1}, Distinct: true, Retract: true}, {Func: "SUM", Args: []int{1}, Distinct: true, Retract: true}, {Func: "COUNT", Retract: true}}, true); err != nil {
		t.Fatal(err)
	}
	// A local aggregate refuses retractions on input declared insert-only, as the single-phase one.
	c := twoPhaseCaseOf(t, input, []int{0}, []AggCall{{Func: "SUM", Args: []int{1}}}, false, 0)
	op, _ := NewLocalGroupAggregate(c.local)
	b := enginetest.Batch(c.local.InputTypes, [][]any{{int64(1), int64(1), 0.5}}, []engine.RowKind{engine.Delete}, enginetest.Options{})
	if _, err := op.Process(engine.Of(0, 1, b), 0, &engine.OutBatch{Alloc: engine.HeapAllocator{}}); !errors.Is(err, engine.ErrData) {
		t.Fatalf("retraction on insert-only input: %v", err)
	}

	c = twoPhaseCaseOf(t, input, []int{0}, []AggCall{{Func: "AVG", Args: []int{1}, Name: "a"}, {Func: "COUNT", Name: "_$count1$_"}}, true, 0)
	good := globalSpecOf(t, c, false)
	global := func(edit func(p *GlobalParams, in *engine.Input)) error {
		p := GlobalParams{LocalInput: good.localInput, Aggs: good.Aggs, NeedRetraction: true, CountStarInserted: true}
		one := 1
		p.CountStar = &one
		in := engine.Input{Fields: append([]engine.FieldSpec(nil), good.Input...), Keys: []int{0}}
		edit(&p, &in)
		h := engine.Spec{Kind: GlobalKind, MaxParallelism: 128, Inputs: []engine.Input{in}, Params: jsonMarshal(&p)}
		hs, err := engine.ParseSpec(jsonMarshal(&h))
		if err != nil {
			return err
		}
		_, err = enginetest.Open(hs)
		return err
	}
	if err := global(func(*GlobalParams, *engine.Input) {}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		edit func(p *GlobalParams, in *engine.Input)
		err  string
	}{
		{func(p *GlobalParams, _ *engine.Input) { p.CountStar = nil }, "params.count_star: set exactly when need_retraction"},
		{func(p *GlobalParams, _ *engine.Input) { zero := 0; p.CountStar = &zero }, "params.count_star: 0 is neither a COUNT(*) call nor a $SUM0 over BIGINT"},
		{func(_ *GlobalParams, in *engine.Input) { in.Fields = in.Fields[:3] }, "inputs[0].fields: 3 fields, want 4"},
		{func(_ *GlobalParams, in *engine.Input) { in.Fields[1].Type = "DOUBLE" }, "inputs[0].fields[1]: DOUBLE, want BIGINT"},
		{func(_ *GlobalParams, in *engine.Input) { in.Keys = []int{1} }, "inputs[0].keys[0]: column 1: a global aggregate's keys are its first fields"},
		{func(p *GlobalParams, _ *engine.Input) { f := 0; p.Aggs[0].Filter = &f }, "params.aggs[0].filter"},
	} {
		if err := global(tc.edit); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("got %v, want %q", err, tc.err)
		}
	}
	// A NULL count in a partial row is not Flink's: refused, the state unchanged.
	op2, err := NewGlobalGroupAggregate(good)
	if err != nil {
		t.Fatal(err)
	}
	out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
	b = enginetest.Batch(good.InputTypes, [][]any{{int64(1), int64(4), int64(1), int64(1)}, {int64(2), int64(4), nil, int64(1)}},
		make([]engine.RowKind, 2), enginetest.Options{})
	if _, err := op2.Process(engine.Of(0, 1, b), 0, out); !errors.Is(err, engine.ErrData) || op2.Groups() != 0 {
		t.Fatalf("NULL count: %v, %d keys", err, op2.Groups())
	}
}

// TestTwoPhaseWithoutCalls: a GROUP BY without aggregates (SELECT k ... GROUP BY k, DISTINCT)
// is a local aggregate that emits the keys alone and a global one without calls: +I for a new
// key, nothing for a known one (the values, none, never change).
func TestTwoPhaseWithoutCalls(t *testing.T) {
	input := bigintInput("k", "v")
	c := twoPhaseCaseOf(t, input, []int{0}, nil, false, 0)
	op, err := NewLocalGroupAggregate(c.local)
	if err != nil {
		t.Fatal(err)
	}
	rows := [][]any{{int64(17), int64(5)}, {int64(1), int64(3)}, {int64(17), nil}}
	out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
	if _, err := op.Process(engine.Of(0, 1, enginetest.Batch(c.local.InputTypes, rows, make([]engine.RowKind, len(rows)), enginetest.Options{})), 0, out); err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(rowStrings(enginetest.Rows(out))), "[+I[17] +I[1]]"; got != want {
		t.Fatalf("local: got %s, want %s", got, want)
	}
	gs := globalSpecOf(t, c, true)
	got := runGlobal(t, gs, [][][]any{{{int64(17)}, {int64(1)}}, {{int64(1)}, {int64(2)}}, {{int64(2)}}}, nil)
	want := [][]string{{"+I[17]", "+I[1]"}, {"+I[2]"}, {}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("global: got  %v\nwant %v", got, want)
	}
	// With TTL the known key re-emits its (unchanged) result.
	c.ttl = 1000
	got = runGlobal(t, globalSpecOf(t, c, true), [][][]any{{{int64(1)}}, {{int64(1)}}}, []int64{0, 1})
	if want := [][]string{{"+I[1]"}, {"-U[1]", "+U[1]"}}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("global with TTL: got  %v\nwant %v", got, want)
	}
}

// TestGlobalGroupAggregateSum0RecordCounter: the final aggregate of a split DISTINCT over
// retracting input counts records in the $SUM0 of the partial aggregates' counts (Flink's
// indexOfCountStar at a $SUM0 over BIGINT, read with getLong): the key goes when that sum merges
// to 0, and a first bundle whose sum is 0 emits nothing.
func TestGlobalGroupAggregateSum0RecordCounter(t *testing.T) {
	input := bigintInput("k", "n", "v", "i:INT")
	aggs := []AggCall{{Func: "SUM", Args: []int{2}, Retract: true, Name: "s"}, {Func: "SUM0", Args: []int{1}, Retract: true, Name: "n"}}
	c := twoPhaseCaseOf(t, input, []int{0}, aggs, true, 0)
	c.countStar = 1
	gs := globalSpecOf(t, c, true)
	row := func(k, sum, cnt, n any) []any { return []any{k, sum, cnt, n} }
	got := runGlobal(t, gs, [][][]any{
		{row(int64(1), int64(5), int64(1), int64(2)), row(int64(2), int64(3), int64(1), int64(0))},
		{row(int64(1), int64(4), int64(1), int64(1))},
		{row(int64(1), int64(-9), int64(-2), int64(-3))},
	}, nil)
	want := [][]string{{"+I[1, 5, 2]"}, {"-U[1, 5, 2]", "+U[1, 9, 3]"}, {"-D[1, 9, 3]"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got  %v\nwant %v", got, want)
	}
	// Only a COUNT(*) or a $SUM0 over BIGINT counts records.
	for _, bad := range []AggCall{{Func: "SUM0", Args: []int{3}, Retract: true}, {Func: "SUM", Args: []int{1}, Retract: true}} {
		c := twoPhaseCaseOf(t, input, []int{0}, []AggCall{bad}, true, 0)
		c.countStar = 0
		h := engine.Spec{Kind: GlobalKind, MaxParallelism: 128, Inputs: []engine.Input{{Fields: bigintInput("k", "a", "b")[:2], Keys: []int{0}}},
			Params: jsonMarshal(&GlobalParams{LocalInput: input, Aggs: []AggCall{bad}, NeedRetraction: true, CountStar: &c.countStar})}
		hs, err := engine.ParseSpec(jsonMarshal(&h))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseGlobalSpec(hs); err == nil || !strings.Contains(err.Error(), "neither a COUNT(*) call nor a $SUM0 over BIGINT") {
			t.Errorf("%+v: %v", bad, err)
		}
	}
}
