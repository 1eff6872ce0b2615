package agg

import (
	"fmt"
	"math"

	"github.com/ferrystream/ferry/agg/internal/scratch"
	"github.com/ferrystream/ferry/engine"
)

// LocalGroupAggregate is the local half of Flink's two-phase aggregate: MapBundleOperator
// running MiniBatchLocalGroupAggFunction (docs/group-aggregate.md#the-local-aggregate). Each
// batch is one bundle. Per key, its rows fold in order into fresh accumulators
// (createAccumulators, then accumulate or retract each row, FILTER gating each call; there is
// no record counter and nothing is dropped), and at the end of the bundle every key emits one
// +I row, whatever its rows were: the key fields followed by every call's accumulator fields
// (counts may be negative), the keys in the iteration order of the bundle operator's
// java.util.HashMap. Nothing outlives the bundle but that HashMap's table length: the operator
// keeps no state (State is nil), as Flink's flushes its bundle before every checkpoint barrier.
type LocalGroupAggregate struct {
	groupAgg
	layout partialLayout
	out    []engine.Field
	types  []engine.Type
	bundle bundleKeys
	groups []int32      // scratch: the bundle's groups in output order
	vb     []int        // scratch: VARCHAR sizes per output column
	frames *frameOutput // with params.exchange: the output is frames of the partial rows
}

var _ engine.KeyedOperator = (*LocalGroupAggregate)(nil)

// NewLocalGroupAggregate builds the local aggregate of a validated spec.
func NewLocalGroupAggregate(spec *Spec) (*LocalGroupAggregate, error) {
	// The bundle's keys live in a KeyedState over every key group, emptied after each bundle.
	core, err := newGroupAgg(spec, coreOptions{hidden: -1, header: fullRange(spec.Spec), distinctNulls: true})
	if err != nil {
		return nil, err
	}
	l := &LocalGroupAggregate{groupAgg: *core}
	if l.layout, err = newPartialLayout(l.calls, len(l.sets), len(l.keyCols)); err != nil {
		return nil, err
	}
	l.out = append(l.out, l.output[:len(l.keyCols)]...)
	l.out = append(l.out, partialFields(spec, &l.layout)...)
	for _, f := range l.out {
		l.types = append(l.types, f.Type)
	}
	if spec.Exchange != nil {
		if l.frames, err = newFrameOutput(spec.Exchange, l.types, 0); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// Output implements engine.KeyedOperator: the key fields, then every call's partial state; with
// params.exchange one column of frames of those rows.
func (l *LocalGroupAggregate) Output() []engine.Field {
	if l.frames != nil {
		return []engine.Field{frameField}
	}
	return l.out
}

// PartialOutput is the partial row: the key fields, then every call's partial state (the rows
// inside the frames with params.exchange).
func (l *LocalGroupAggregate) PartialOutput() []engine.Field { return l.out }

// State implements engine.KeyedOperator: the local aggregate keeps nothing across bundles.
func (l *LocalGroupAggregate) State() *engine.KeyedState { return nil }

// Process implements engine.KeyedOperator: the batch is one bundle, its output one chunk of at most
// one row per input row.
func (l *LocalGroupAggregate) Process(inputs *engine.Inputs, _ int64, out *engine.OutBatch) (bool, error) {
	in := inputs.Batches[0]
	if err := l.begin(in, 0); err != nil {
		return false, err
	}
	l.resolveRows(in)
	l.resolveActions(in)
	if err := l.fold(in); err != nil {
		return false, err
	}
	var err error
	if l.frames == nil {
		err = l.emitPartials(in, out)
	} else if err = l.emitPartials(in, &l.frames.rows); err == nil {
		l.frames.kgs = scratch.Resize(l.frames.kgs, len(l.src))
		for j, i := range l.src {
			l.frames.kgs[j] = l.kgs[i]
		}
		err = l.frames.emit(out)
	}
	l.clearBundle()
	return false, err
}

// resolveRows maps each row to its key's group, creating it (fresh accumulators) at the key's
// first row: MiniBatchLocalGroupAggFunction.addInput with a null previous accumulator.
func (l *LocalGroupAggregate) resolveRows(in *engine.Batch) {
	n := in.Len
	st := l.state
	b := &l.bundle
	b.start(st.Cap())
	l.gids = scratch.Resize(l.gids, n)
	l.changed = scratch.Resize(l.changed, n)
	for i := range n {
		key, hash, kg := l.keys.Key(i), l.keys.Hash(i), int(l.kgs[i])
		id := st.Find(key, hash, kg)
		if id < 0 {
			id = st.Insert(key, hash, kg)
			b.grow(st.Cap())
		}
		l.gids[i] = id
		b.key(id, hash, i)
	}
}

// emitPartials writes one +I row per key of the bundle, in HashMap order: the key (from the
// key's first row), then the partial state of every call.
func (l *LocalGroupAggregate) emitPartials(in *engine.Batch, out *engine.OutBatch) error {
	b := &l.bundle
	b.iterate()
	rows := len(b.order)
	l.src, l.groups = scratch.Resize(l.src, rows), scratch.Resize(l.groups, rows)
	for j, k := range b.order {
		l.src[j], l.groups[j] = b.keys[k].firstRow, b.keys[k].gid
	}
	keys := len(l.keyCols)
	l.vb = scratch.Resize(l.vb, len(l.types))
	clear(l.vb)
	for k, c := range l.keyCols {
		if l.types[k].Variable() {
			l.vb[k] = engine.GatherBytes(&in.Cols[c], l.src)
		}
	}
	l.layout.varBytes(l.calls, l.sets, l.groups, l.vb[keys:])
	for c, n := range l.vb {
		if n > math.MaxInt32 {
			return fmt.Errorf("%w: output column %d would hold %d bytes, more than 2 GiB; send smaller bundles", engine.ErrData, c, n)
		}
	}
	if err := out.Init(l.types, rows, l.vb); err != nil {
		return err
	}
	for k, c := range l.keyCols {
		engine.Gather(&out.Cols[k], &in.Cols[c], l.src)
	}
	if err := l.layout.writePartials(l.calls, l.sets, out, keys, l.groups); err != nil {
		return err
	}
	clear(out.Kinds()) // +I: Flink's local aggregate leaves every row's RowKind at INSERT
	out.Finish()
	return nil
}

// clearBundle removes the bundle's groups (HashMap.clear), so the next bundle starts from fresh
// accumulators.
func (l *LocalGroupAggregate) clearBundle() {
	for _, k := range l.bundle.keys {
		l.state.Remove(k.gid)
	}
	l.bundle.end()
	l.state.EndBatch()
}

// Close implements engine.KeyedOperator.
func (l *LocalGroupAggregate) Close() {
	l.groupAgg.Close()
	l.bundle = bundleKeys{}
}
