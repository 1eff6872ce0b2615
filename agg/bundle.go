package agg

import (
	"github.com/ferrystream/ferry/internal/javahash"

	"github.com/ferrystream/ferry/agg/internal/scratch"
	"github.com/ferrystream/ferry/engine"
)

// MiniBatchGroupAggregate is the group aggregate in mini-batch mode (spec mini_batch): each batch
// is one bundle of Flink's KeyedMapBundleOperator running MiniBatchGroupAggFunction
// (docs/group-aggregate.md#mini-batch). The rows of a key fold in order into its
// accumulators; a key without state (or whose state expired: idle-state TTL reads it once per
// bundle) drops its leading retractions (and is skipped when nothing else is left); the record
// count decides only at the end of the bundle; and each key then emits at most one result, the
// keys in the iteration order of the java.util.HashMap the bundle operator collects them in.
type MiniBatchGroupAggregate struct {
	groupAgg
	bundle bundleState
}

var _ engine.KeyedOperator = (*MiniBatchGroupAggregate)(nil)

// NewMiniBatchGroupAggregate builds the mini-batch group aggregate of a validated spec.
func NewMiniBatchGroupAggregate(spec *Spec) (*MiniBatchGroupAggregate, error) {
	core, err := newGroupAgg(spec, coreOptions{counter: true, hidden: -1})
	if err != nil {
		return nil, err
	}
	return &MiniBatchGroupAggregate{groupAgg: *core}, nil
}

// Process implements engine.KeyedOperator: the batch is one bundle, its output one chunk. nowMs is the
// processing time idle-state TTL reads and writes for the whole bundle.
func (g *MiniBatchGroupAggregate) Process(inputs *engine.Inputs, nowMs int64, out *engine.OutBatch) (bool, error) {
	in := inputs.Batches[0]
	if err := g.begin(in, nowMs); err != nil {
		return false, err
	}
	g.resolveBundle(in, nowMs)
	g.resolveActions(in)
	if err := g.fold(in); err != nil {
		return false, err
	}
	err := g.emitBundle(in, nowMs, out)
	g.end(nowMs)
	return false, err
}

// bundleKey is one distinct key of a bundle.
type bundleKey struct {
	hash     int32 // BinaryRowData.hashCode of the key
	gid      int32 // its group, -1 while its rows were all dropped leading retractions
	fresh    bool  // it had no state before the bundle (Flink's firstRow)
	kept     bool  // fresh, yet its group was kept for its live map entries (ExpireValue)
	firstRow int32 // first and last row folded into the group
	lastRow  int32
}

// bundleState is the bookkeeping of mini-batch mode. tableLen outlives bundles, as the
// HashMap's table does (HashMap.clear keeps it); keyOf spans every group id and is zero between
// bundles; the rest is per bundle.
type bundleState struct {
	tableLen int
	keys     []bundleKey
	keyOf    []int32          // per group id: its bundle key + 1, 0 when not in this bundle
	dropped  map[string]int32 // keys seen only as dropped retractions so far: their bundle key
	order    []int32          // bundle keys in HashMap iteration order
	hashes   []int32          // scratch: the keys' hashCodes
	buckets  []int32          // scratch: chain length per bucket
}

// resolveBundle maps each row to its group as MiniBatchGroupAggFunction.finishBundle reads
// them: rows keep their order within a key, groups are created on a key's first accumulate and
// never removed mid-bundle, and the record count is only counted here. With idle-state TTL a
// key's accumulators that expired by nowMs read as absent at the key's first row
// (engine.KeyedState.ExpireValue: its map entries that did not expire stay visible).
func (g *MiniBatchGroupAggregate) resolveBundle(in *engine.Batch, nowMs int64) {
	b := &g.bundle
	st := g.state
	n := in.Len
	b.keyOf = scratch.Extend(b.keyOf, st.Cap()) // restored groups too
	g.gids = scratch.Resize(g.gids, n)
	g.changed = scratch.Resize(g.changed, n) // the folds flag rows; a bundle compares its keys' ends instead
	b.keys = b.keys[:0]
	clear(b.dropped)
	newKey := func(hash, gid int32) int32 {
		b.keys = append(b.keys, bundleKey{hash: hash, gid: gid, firstRow: -1})
		return int32(len(b.keys) - 1)
	}
	st.Warm(g.keys.Hashes()[:n], g.kgs[:n])
	for i := range n {
		acc := engine.IsAccumulate(in.Kinds[i])
		key, hash, kg := g.keys.Key(i), g.keys.Hash(i), int(g.kgs[i])
		id := st.Find(key, hash, kg)
		valueless := false // the key holds map entries but no accumulators
		if id >= 0 && b.keyOf[id] == 0 && st.Expired(id, nowMs) {
			id = st.ExpireValue(id, nowMs) // NeverReturnExpired: reads as absent, cleared on read
			valueless = id >= 0
		}
		var k int32
		switch {
		case id >= 0 && b.keyOf[id] > 0:
			k = b.keyOf[id] - 1
		case id >= 0 && !valueless:
			k = newKey(hash, id)
			b.keyOf[id] = k + 1
		case !acc: // a leading retraction of a key without state: dropped, yet in the bundle's map
			g.gids[i] = -1
			if _, ok := b.dropped[string(key)]; !ok {
				if b.dropped == nil {
					b.dropped = map[string]int32{}
				}
				b.dropped[string(key)] = newKey(hash, -1)
			}
			continue
		default:
			if id < 0 {
				id = st.Insert(key, hash, kg)
				b.keyOf = scratch.Extend(b.keyOf, st.Cap())
			}
			var ok bool
			if k, ok = b.dropped[string(key)]; ok {
				b.keys[k].gid = id
			} else {
				k = newKey(hash, id)
			}
			b.keys[k].fresh = true
			b.keyOf[id] = k + 1
		}
		g.gids[i] = id
		if b.keys[k].firstRow < 0 {
			b.keys[k].firstRow = int32(i)
		}
		b.keys[k].lastRow = int32(i)
		if g.counter != nil {
			if acc {
				g.counter.n[id]++
			} else {
				g.counter.n[id]--
			}
		}
	}
}

// emitBundle emits each key's result in HashMap order, as finishBundle does, removes the groups
// whose record count ended at zero and stamps the others written at nowMs (idle-state TTL).
func (g *MiniBatchGroupAggregate) emitBundle(in *engine.Batch, nowMs int64, out *engine.OutBatch) error {
	b := &g.bundle
	g.src, g.pick, g.outKinds = g.src[:0], g.pick[:0], g.outKinds[:0]
	add := g.addOutput
	b.hashes = scratch.Resize(b.hashes, len(b.keys))
	for i, k := range b.keys {
		b.hashes[i] = k.hash
	}
	b.order, b.buckets = javahash.Order(b.hashes, &b.tableLen, b.order[:0], b.buckets)
	for _, ki := range b.order {
		k := b.keys[ki]
		if k.gid < 0 {
			continue // only dropped retractions
		}
		b.keyOf[k.gid] = 0
		prev, next := 2*k.firstRow, 2*k.lastRow+1
		switch {
		case g.counter != nil && g.counter.n[k.gid] == 0:
			if !k.fresh {
				add(k.firstRow, prev, engine.Delete)
			}
			g.state.Remove(k.gid)
			continue
		case k.fresh:
			add(k.firstRow, next, engine.Insert)
		case g.ttl || g.differ(prev, next): // with TTL Flink re-emits unchanged results too
			if g.spec.GenerateUpdateBefore {
				add(k.firstRow, prev, engine.UpdateBefore)
			}
			add(k.firstRow, next, engine.UpdateAfter)
		}
		g.state.Touch(k.gid, nowMs) // accState.update: OnCreateAndWrite
	}
	return g.writeOutput(in, out)
}

// differ reports whether any output call's entries a and b differ: Flink's equaliser over the
// row of aggregate values.
func (g *groupAgg) differ(a, b int32) bool {
	for _, c := range g.outCalls {
		if c.Differ(a, b) {
			return true
		}
	}
	return false
}
