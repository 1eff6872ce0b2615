package agg

import (
	"fmt"

	"github.com/ferrystream/ferry/agg/distinct"
	"github.com/ferrystream/ferry/agg/internal/scratch"
	"github.com/ferrystream/ferry/agg/kernels"
	"github.com/ferrystream/ferry/engine"
)

// GlobalGroupAggregate is the global half of Flink's two-phase aggregate: KeyedMapBundleOperator
// running MiniBatchGlobalGroupAggFunction (docs/group-aggregate.md#the-global-aggregate). Its
// input rows are partial rows (key fields, then every call's accumulator fields), whatever their
// RowKind; each batch is one bundle. Per key, in the iteration order of the bundle operator's
// java.util.HashMap:
//
//   - the key's partial rows merge, in arrival order, into a fresh buffer accumulator
//     (addInput: localAgg.merge);
//   - the key's state is read (idle-state TTL: expired state reads as absent), or fresh
//     accumulators are the first row's (firstRow); there is no dropping of retractions;
//   - prev = the values, then the buffer merges into the state (globalAgg.merge), new = the
//     values;
//   - when the count star merged to 0 (retracting input): -D with prev unless firstRow, and
//     the state goes; otherwise the state is written and the key emits +I (firstRow; also with
//     a negative count), or -U/+U when a value changed or TTL is on, or nothing.
//
// Merging a bundle into a buffer first and the buffer into state is not the same as merging
// each row into state: floating-point sums and DECIMAL overflow depend on the grouping, so the
// operator does both steps, as Flink does.
//
// DISTINCT calls do not merge their own fields (Flink ignores them): their distinct maps merge,
// into the buffer's maps and then into the state's, and each entry whose merge into the state
// turns a call's bit on, or its count positive or not, accumulates or retracts the entry's value
// in the call (DistinctAggCodeGen.merge; distinct.Set.MergeView).
type GlobalGroupAggregate struct {
	groupAgg
	gspec     *GlobalSpec
	layout    partialLayout
	buf       partialBuffer   // localAgg's accumulators and maps (one per state set), one group per bundle key
	viewRows  []distinct.Rows // per set: the state merge's entries, folded by the set's calls
	viewBatch engine.Batch    // the entries as a batch over the local aggregate's input
	countStar recordCount     // the record counter's call; nil for insert-only input
	bundle    bundleKeys

	rowKey    []int32 // per input row: its bundle key
	stateGids []int32 // per output position j: the group of the j-th key in HashMap order
	order     []int32 // the bundle keys in HashMap order, as buffer groups
	scratch   []bool  // the state merge's changed flags (unused)
	partials  engine.OutBatch
	view      engine.Batch
}

var _ engine.KeyedOperator = (*GlobalGroupAggregate)(nil)

// NewGlobalGroupAggregate builds the global aggregate of a validated spec.
func NewGlobalGroupAggregate(spec *GlobalSpec) (*GlobalGroupAggregate, error) {
	hidden := -1
	if spec.CountStarInserted {
		hidden = spec.CountStar
	}
	core, err := newGroupAgg(spec.Spec, coreOptions{hidden: hidden, partialInput: true, layout: spec.stateLayout()})
	if err != nil {
		return nil, err
	}
	g := &GlobalGroupAggregate{groupAgg: *core, gspec: spec}
	if g.layout, err = newPartialLayout(g.calls, len(g.sets), len(g.keyCols)); err != nil {
		return nil, err
	}
	in := spec.InputTypes
	if err := checkPartialInput(in, len(g.keyCols), g.layout.all); err != nil {
		return nil, err
	}
	for i, call := range spec.Aggs {
		acc, _, err := newCall(i, call, spec.Spec)
		if err != nil {
			return nil, err
		}
		g.buf.accs = append(g.buf.accs, acc)
	}
	if spec.CountStar >= 0 {
		g.countStar = g.calls[spec.CountStar].(recordCount)
	}
	g.buf.inner = make([]bool, len(g.calls))
	g.viewRows = make([]distinct.Rows, len(g.sets))
	for s, d := range g.sets {
		b := distinct.NewSet(d.Col(), d.Type(), d.Retract())
		for _, c := range d.Calls() {
			b.AddCall(c, -1)
			g.buf.inner[c] = true
		}
		g.buf.sets = append(g.buf.sets, b)
		for c, acc := range g.outCalls {
			for _, call := range d.Calls() {
				if acc == g.calls[call] {
					g.outCalls[c] = &remapped{Accumulator: acc, rows: &g.viewRows[s]}
				}
			}
		}
	}
	g.viewBatch.Cols = make([]engine.Column, len(spec.ArgTypes))
	g.partials.Alloc = &scratch.Allocator{}
	return g, nil
}

func typeList(ts []engine.Type) string {
	s := "["
	for i, t := range ts {
		if i > 0 {
			s += ", "
		}
		t.Nullable = true
		s += t.String()
	}
	return s + "]"
}

// Process implements engine.KeyedOperator: the batch is one bundle, its output one chunk (at most
// two rows per input row). nowMs is the processing time idle-state TTL reads and writes for the
// whole bundle.
func (g *GlobalGroupAggregate) Process(inputs *engine.Inputs, nowMs int64, out *engine.OutBatch) (bool, error) {
	in := inputs.Batches[0]
	if err := g.begin(in, nowMs); err != nil {
		return false, err
	}
	g.resolveKeys(in, nowMs)
	if err := g.buf.merge(in, &g.layout, g.rowKey, len(g.bundle.keys)); err != nil {
		rollbackBundle(&g.bundle, g.state)
		return false, err
	}
	if err := g.mergeState(); err != nil {
		return false, err
	}
	err := g.emitBundle(in, nowMs, out)
	g.bundle.end()
	g.end(nowMs)
	return false, err
}

// resolveKeys maps each row to its bundle key and each bundle key to its group: the key's
// state, or a fresh group when it has none (or its accumulators expired by nowMs: read once, at
// the key's first row of the bundle; engine.KeyedState.ExpireValue keeps the key's map entries
// that did not expire).
func (g *GlobalGroupAggregate) resolveKeys(in *engine.Batch, nowMs int64) {
	n := in.Len
	st := g.state
	b := &g.bundle
	b.start(st.Cap())
	g.rowKey = scratch.Resize(g.rowKey, n)
	st.Warm(g.keys.Hashes()[:n], g.kgs[:n])
	for i := range n {
		key, hash, kg := g.keys.Key(i), g.keys.Hash(i), int(g.kgs[i])
		id := st.Find(key, hash, kg)
		fresh := false
		if id >= 0 && b.keyOf[id] == 0 && st.Expired(id, nowMs) {
			id = st.ExpireValue(id, nowMs) // NeverReturnExpired: reads as absent, cleared on read
			fresh = true
		}
		kept := fresh && id >= 0
		if id < 0 {
			id = st.Insert(key, hash, kg)
			b.grow(st.Cap())
			fresh = true
		}
		k := b.key(id, hash, i)
		if fresh {
			b.keys[k].fresh, b.keys[k].kept = true, kept
		}
		g.rowKey[i] = k
	}
}

// mergeState merges each bundle key's buffer into its state (globalAgg.merge), one row per key
// in HashMap order, so the values before and after each key's merge are entries 2j and 2j+1.
func (g *GlobalGroupAggregate) mergeState() error {
	b := &g.bundle
	b.iterate()
	rows := len(b.order)
	g.order, g.stateGids = scratch.Resize(g.order, rows), scratch.Resize(g.stateGids, rows)
	for j, k := range b.order {
		g.order[j], g.stateGids[j] = k, b.keys[k].gid
	}
	if err := g.buf.write(&g.layout, g.order, &g.partials, &g.view); err != nil {
		return err
	}
	g.changed = scratch.Resize(g.changed, rows)
	for c, acc := range g.calls {
		if g.buf.inner[c] {
			continue
		}
		if err := acc.Merge(&g.view, g.layout.first[c]-g.layout.start, g.stateGids, g.changed); err != nil {
			return fmt.Errorf("aggs[%d]: %w", c, err)
		}
	}
	for s, d := range g.sets {
		g.mergeViews(d, &g.viewRows[s], &g.view.Cols[g.layout.views-g.layout.start+s])
	}
	g.view.Forget()
	return nil
}

// mergeViews merges the buffer's maps of set d (column col, one row per bundle key in HashMap
// order) into the state's and folds the entries' actions into the set's calls, each bundle
// key's entries after an anchor row, so the calls' values before and after the key's merge are
// those of its first and last row (remapped).
func (g *GlobalGroupAggregate) mergeViews(d *distinct.Set, rows *distinct.Rows, col *engine.Column) {
	rows.Reset(d)
	for j, gid := range g.stateGids {
		rows.Anchor(gid)
		d.MergeView(col.Bytes(j), gid, rows)
	}
	foldRows(d, rows, g.calls, &g.viewBatch, &g.scratch)
}

// remapped is a DISTINCT call of the global aggregate as emission reads it: its values were
// recorded per entry row of its set's state merge (distinct.Rows), and bundle key j's values before
// and after are those of its first and last row, not entries 2j and 2j+1.
type remapped struct {
	kernels.Accumulator
	rows *distinct.Rows
	pick []int32
}

func (r *remapped) at(p int32) int32 {
	if j := p / 2; p%2 == 0 {
		return 2 * r.rows.First[j]
	} else {
		return 2*r.rows.Last[j] + 1
	}
}

func (r *remapped) picks(pick []int32) []int32 {
	r.pick = scratch.Resize(r.pick, len(pick))
	for i, p := range pick {
		r.pick[i] = r.at(p)
	}
	return r.pick
}

func (r *remapped) Write(out *engine.OutColumn, pick []int32) {
	r.Accumulator.Write(out, r.picks(pick))
}
func (r *remapped) Differ(a, b int32) bool { return r.Accumulator.Differ(r.at(a), r.at(b)) }

func (r *remapped) VarBytes(pick []int32) int {
	if v, ok := r.Accumulator.(kernels.VarOutput); ok {
		return v.VarBytes(r.picks(pick))
	}
	return 0
}

// emitBundle emits each key's result in HashMap order, removes the groups whose record count
// merged to zero and stamps the others written at nowMs (idle-state TTL).
func (g *GlobalGroupAggregate) emitBundle(in *engine.Batch, nowMs int64, out *engine.OutBatch) error {
	b := &g.bundle
	g.src, g.pick, g.outKinds = g.src[:0], g.pick[:0], g.outKinds[:0]
	for j, ki := range b.order {
		k := b.keys[ki]
		prev, next := int32(2*j), int32(2*j+1)
		switch {
		case g.countStar != nil && g.countStar.Records(k.gid) == 0:
			if !k.fresh {
				g.addOutput(k.firstRow, prev, engine.Delete)
			}
			g.state.Remove(k.gid)
			continue
		case k.fresh:
			g.addOutput(k.firstRow, next, engine.Insert)
		case g.ttl || g.differ(prev, next): // with TTL Flink re-emits unchanged results too
			if g.spec.GenerateUpdateBefore {
				g.addOutput(k.firstRow, prev, engine.UpdateBefore)
			}
			g.addOutput(k.firstRow, next, engine.UpdateAfter)
		}
		g.state.Touch(k.gid, nowMs) // accState.update: OnCreateAndWrite
	}
	return g.writeOutput(in, out)
}

// recordCount is a call whose value Flink's record counter reads (RetractionRecordCounter:
// acc.getLong at the call's first accumulator field): COUNT(*), or the $SUM0 of partial counts
// a split DISTINCT's final aggregate counts with.
type recordCount interface {
	Records(g int32) int64
}

// viewOf makes b a view of out's columns (without its RowKind column), for merging rows the
// operator wrote itself.
func viewOf(out *engine.OutBatch, b *engine.Batch) {
	cols := out.Cols[:len(out.Cols)-1]
	b.Len = out.Len
	b.Cols = scratch.Resize(b.Cols, len(cols))
	for i := range cols {
		c := &cols[i]
		b.Cols[i] = engine.Column{Type: c.Type, Valid: c.Valid, Data: c.Data, Offs: c.Offs}
	}
}

// Close implements engine.KeyedOperator.
func (g *GlobalGroupAggregate) Close() {
	g.groupAgg.Close()
	g.buf, g.partials, g.view = partialBuffer{}, engine.OutBatch{}, engine.Batch{}
}
