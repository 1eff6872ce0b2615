// Package topn is the top_n operator kind: Flink 2.3's StreamExecRank, ROW_NUMBER() OVER
// (PARTITION BY … ORDER BY …) with a constant rank range, in every function Flink's translation
// picks (docs/operators/top-n.md):
//
//   - AppendOnlyTopNFunction (and its async-state twin): an insert-only input;
//   - AppendOnlyFirstNFunction: an insert-only input ordered by its processing time ascending;
//   - FastTop1Function (and its async-state twin): rank 1 to 1 of an insert-only or upsert input;
//   - UpdatableTopNFunction: an upsert input whose sort keys improve (updatable.go);
//   - RetractableTopNFunction: an input with retractions (retract.go).
//
// Each is a transcription of Flink's processElement: the same buffer per key (TopNBuffer: rows
// grouped by sort key, groups in the comparator's order, rows in arrival order), the same rows
// out in the same order with the same row kinds. Flink's LRU caches of buffers and rows only
// mirror its state, so without TTL they do not change results and Ferry has none.
package topn

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/joincore"
)

func init() { engine.RegisterKeyed(Kind, open) }

// TopN is one top_n operator.
type TopN struct {
	p          Params
	ttl        bool
	output     []engine.Field
	enc        *engine.KeyEncoder
	layout     *joincore.RowLayout
	sortKey    *sortKeyEncoder
	state      *engine.KeyedState
	bufs       *bufferState
	ranks      [][]byte            // ranks[r]: rank r encoded with rankLayout; grown on demand
	rankLayout *joincore.RowLayout // the rank number column (BIGINT NOT NULL)
	out        *joincore.PairOutput
	keyCols    []int              // the input's key columns
	importEnc  *engine.KeyEncoder // AppendOnlyFirstN: the key of an import row
	exportNext int32              // ExportState's next key id

	kgs []int32 // per row of the call: its key group
	row []byte  // scratch: one encoded input row
	sk  []byte  // scratch: its sort key
	rk  []byte  // scratch: its row key (UpdatableTopN)
	sel []int32 // scratch: the keys of an export chunk
}

func open(spec *engine.Spec, p *Params) (engine.Keyed, error) {
	if err := p.validate(spec); err != nil {
		return engine.Keyed{}, err
	}
	if err := joincore.RefuseBytes(spec, "a Top-N"); err != nil {
		return engine.Keyed{}, err
	}
	in := &spec.Inputs[0]
	t := &TopN{
		p:       *p,
		ttl:     p.StateTTLMs > 0,
		output:  in.Named(),
		enc:     engine.NewKeyEncoder(in.Keys, in.Types),
		layout:  joincore.NewRowLayout(in.Types),
		keyCols: in.Keys,
	}
	t.sortKey = &sortKeyEncoder{layout: t.layout, keys: p.SortKeys}
	types := in.Types
	if p.OutputRankNumber {
		rank := engine.Type{ID: engine.BigInt}
		t.output = append(t.output, engine.Field{Name: "rank_number", Type: rank})
		t.rankLayout = joincore.NewRowLayout([]engine.Type{rank})
		types = append(append([]engine.Type(nil), in.Types...), rank)
	}
	t.out = joincore.NewPairOutput(t.layout, t.rankLayout, types, spec.ChunkRows)
	t.state = engine.NewKeyedState(spec, engine.StateConfig{KeySize: t.enc.FixedSize(), TTL: engine.TTL{Ms: p.StateTTLMs}, Layout: p})
	t.bufs = &bufferState{layout: t.layout, sortKey: t.sortKey, retract: p.Function == RetractableTopN}
	if p.Function == UpdatableTopN {
		var keys []SortKey
		for _, c := range p.RowKeys {
			keys = append(keys, SortKey{Field: c, Ascending: true})
		}
		t.bufs.rowKey = &sortKeyEncoder{layout: t.layout, keys: keys}
	}
	if p.Function == AppendOnlyFirstN {
		t.bufs.counts = []int32{}
		cols := make([]int, len(in.Keys))
		for i := range cols {
			cols[i] = i
		}
		t.importEnc = engine.NewKeyEncoder(cols, t.keyTypes())
	}
	t.state.Register(t.bufs)
	return engine.Keyed{Operator: t, FlinkState: t}, nil
}

// Output implements engine.KeyedOperator: the input's fields, then the rank number if selected.
func (t *TopN) Output() []engine.Field { return t.output }

// State implements engine.KeyedOperator.
func (t *TopN) State() *engine.KeyedState { return t.state }

// Close implements engine.KeyedOperator.
func (t *TopN) Close() { *t = TopN{} }

// Flush implements engine.KeyedOperator: nothing is buffered between calls.
func (t *TopN) Flush(_ int64, out *engine.OutBatch) (bool, error) { out.Len = 0; return false, nil }

// Advance implements engine.KeyedOperator: the Top-N functions register no timers.
func (t *TopN) Advance(_, _ int64, out *engine.OutBatch) (bool, error) {
	out.Len = 0
	return false, nil
}

// Continue implements engine.KeyedOperator.
func (t *TopN) Continue(out *engine.OutBatch) (bool, error) { return t.out.Emit(out) }

// Process implements engine.KeyedOperator: the rows of the one input, in order. Every row is
// checked before any state changes, except where Flink's function itself fails midway (the
// updatable and retracting Top-N on a state only an invalid changelog leads to): the task then
// fails as Flink's does, and restarts from its last checkpoint.
func (t *TopN) Process(inputs *engine.Inputs, nowMs int64, out *engine.OutBatch) (bool, error) {
	in := inputs.Batches[0]
	if t.p.Function == AppendOnlyFirstN {
		for i := range in.Len {
			if in.Kinds[i] != engine.Insert { // Flink's checkArgument fails the task
				return false, fmt.Errorf("%w: %s takes insert-only input, row %d has RowKind %d", engine.ErrData, AppendOnlyFirstN, i, in.Kinds[i])
			}
		}
	}
	if err := t.enc.Encode(in); err != nil {
		return false, err
	}
	t.kgs = t.kgs[:0]
	for i := range in.Len {
		kg, err := t.state.KeyGroupOf(t.enc.Hash(i))
		if err != nil {
			return false, fmt.Errorf("row %d: %w", i, err)
		}
		t.kgs = append(t.kgs, int32(kg))
	}
	t.out.Reset()
	for i := range in.Len {
		id := t.state.Find(t.enc.Key(i), t.enc.Hash(i), int(t.kgs[i]))
		if id >= 0 && t.ttl && t.state.Expired(id, nowMs) {
			id = t.state.ExpireValue(id, nowMs)
		}
		if id < 0 {
			id = t.state.Insert(t.enc.Key(i), t.enc.Hash(i), int(t.kgs[i]))
		}
		switch t.p.Function {
		case AppendOnlyTopN:
			t.topN(id, in, i)
		case AppendOnlyFirstN:
			t.firstN(id, in, i, nowMs)
		case FastTop1:
			t.top1(id, in, i)
		case UpdatableTopN:
			if err := t.updatable(id, in, i); err != nil {
				return false, fmt.Errorf("row %d: %w", i, err)
			}
		case RetractableTopN:
			if err := t.retractable(id, in, i); err != nil {
				return false, fmt.Errorf("row %d: %w", i, err)
			}
			if len(t.bufs.bufs[id].groups) == 0 {
				t.state.Remove(id) // the key's last row retracted
			}
		}
	}
	t.state.Sweep(nowMs) // ends the batch
	return t.out.Emit(out)
}

// topN is AppendOnlyTopNFunction.processElement for row i of in, of key id.
func (t *TopN) topN(id int32, in *engine.Batch, i int) {
	b := &t.bufs.bufs[id]
	t.sk = t.sortKey.encodeRow(t.sk[:0], in, i)
	if !b.admits(t.sk, t.p.RankEnd) { // the constant rank end is the top-N size
		return
	}
	stored := t.bufs.put(id, t.sk, t.encode(in, i))
	if t.p.OutputRankNumber || t.p.RankStart > 1 {
		t.withRowNumber(id, t.sk)
	} else {
		t.withoutRowNumber(id, stored)
	}
}

// withRowNumber is AppendOnlyTopNHelper.processElementWithRowNumber, after the row of sort key sk
// went into key id's buffer (the last of its group): the rows behind it move one rank down (-U
// and +U per rank in range), the row that falls off the end is not retracted, and the groups
// behind the rank end leave the buffer.
func (t *TopN) withRowNumber(id int32, sk []byte) {
	b := &t.bufs.bufs[id]
	rank, found := int64(0), false
	var cur []byte // the row that takes the current rank
	gi := 0
	for ; gi < len(b.groups) && rank <= t.p.RankEnd; gi++ {
		g := &b.groups[gi]
		switch {
		case !found && bytes.Equal(g.sortKey, sk):
			rank += int64(len(g.rows))
			cur, found = g.rows[len(g.rows)-1], true
		case found:
			cur, rank = t.shift(g.rows, cur, rank, true)
		default:
			rank += int64(len(g.rows))
		}
	}
	if rank <= t.p.RankEnd {
		t.emit(engine.Insert, cur, rank)
	}
	t.bufs.dropGroupsFrom(id, gi)
}

// shift emits rows, a group's rows, each moving one rank while rank is within the rank end: -U
// of the row that held the rank, +U of the row that takes it. They move down behind a row that
// entered above them (down: carried, the row before, takes the first rank) or up behind one that
// left (carried held it). It returns the last row moved, carried on, and the next rank.
func (t *TopN) shift(rows [][]byte, carried []byte, rank int64, down bool) ([]byte, int64) {
	for _, r := range rows {
		if rank > t.p.RankEnd {
			break
		}
		held, takes := carried, r
		if down {
			held, takes = r, carried
		}
		t.emit(engine.UpdateBefore, held, rank)
		t.emit(engine.UpdateAfter, takes, rank)
		carried = r
		rank++
	}
	return carried, rank
}

// withoutRowNumber is AppendOnlyTopNHelper.processElementWithoutRowNumber, after row went into
// key id's buffer: when the buffer holds more than N rows its last row leaves (-D, unless it is the
// new row itself), then the new row goes out (+I).
func (t *TopN) withoutRowNumber(id int32, row []byte) {
	b := &t.bufs.bufs[id]
	if int64(b.n) > t.p.RankEnd {
		last := t.bufs.dropLast(id)
		if bytes.Equal(last, row) { // Flink: input.equals(lastElement)
			return
		}
		t.out.AddKind(last, nil, engine.Delete)
	}
	t.out.AddKind(row, nil, engine.Insert)
}

// firstN is AppendOnlyFirstNFunction.processElement for row i of in, of key id: the key's first
// N rows go out as they come.
func (t *TopN) firstN(id int32, in *engine.Batch, i int, nowMs int64) {
	rank := int64(t.bufs.counts[id]) // 0 for a new (or expired) key
	if rank >= t.p.RankEnd {
		return
	}
	rank++
	t.bufs.counts[id] = int32(rank)
	t.state.Touch(id, nowMs)
	t.emit(engine.Insert, bytes.Clone(t.encode(in, i)), rank)
}

// top1 is FastTop1Function.processElement for row i of in, of key id: the key's first row goes
// out (+I); a later row with a smaller sort key replaces it (-U, +U); the row's kind is not read.
func (t *TopN) top1(id int32, in *engine.Batch, i int) {
	b := &t.bufs.bufs[id]
	t.sk = t.sortKey.encodeRow(t.sk[:0], in, i)
	if b.n == 0 {
		t.emit(engine.Insert, t.bufs.put(id, t.sk, t.encode(in, i)), 1)
		return
	}
	if b.groups[0].compareKey(t.sk, keyPrefix(t.sk)) <= 0 {
		return
	}
	prev := b.groups[0].rows[0]
	t.bufs.dropGroupsFrom(id, 0)
	t.emit(engine.UpdateBefore, prev, 1)
	t.emit(engine.UpdateAfter, t.bufs.put(id, t.sk, t.encode(in, i)), 1)
}

// encode returns row i of in encoded (valid until the next call).
func (t *TopN) encode(in *engine.Batch, i int) []byte {
	t.row = t.layout.Encode(t.row[:0], in, i)
	return t.row
}

// emit adds row at rank as Flink's collect{Insert,UpdateBefore,UpdateAfter}(out, row, rank,
// rankEnd) do: only a rank in the range goes out, -U only with generateUpdateBefore, the rank
// appended when selected.
func (t *TopN) emit(kind engine.RowKind, row []byte, rank int64) {
	if rank < t.p.RankStart || rank > t.p.RankEnd || (kind == engine.UpdateBefore && !t.p.GenerateUpdateBefore) {
		return
	}
	var r []byte
	if t.p.OutputRankNumber {
		r = t.rank(rank)
	}
	t.out.AddKind(row, r, kind)
}

// rank returns rank encoded as the rank number column's row.
func (t *TopN) rank(rank int64) []byte {
	for int64(len(t.ranks)) <= rank {
		v := int64(len(t.ranks))
		r := make([]byte, 9) // RowLayout of one BIGINT NOT NULL: an empty null bitmap, the value
		binary.LittleEndian.PutUint64(r[1:], uint64(v))
		t.ranks = append(t.ranks, r)
	}
	return t.ranks[rank]
}

// keyTypes are the types of the key columns.
func (t *TopN) keyTypes() []engine.Type {
	var ts []engine.Type
	for _, k := range t.keyCols {
		ts = append(ts, t.layout.Types()[k])
	}
	return ts
}
