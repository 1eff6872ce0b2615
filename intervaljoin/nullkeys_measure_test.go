package intervaljoin

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
)

// TestNullKeyStateFigures measures the state a stream with 30 % NULL keys leaves in the join:
// 200,000 rows over 40 s of row time (5 per ms, both sides alike), 10,000 other keys, a 24-byte
// VARCHAR per row, L.t BETWEEN R.t - 1 s AND R.t + 1 s, watermark 500 ms behind. It logs (go
// test -v) the engine's state estimate, the snapshot bytes, and those of the NULL key's key
// group at the end of the stream (steady state) per join type and setting;
// docs/operators/interval-join.md#null-keys publishes them.
func TestNullKeyStateFigures(t *testing.T) {
	if testing.Short() {
		t.Skip("measurement")
	}
	const maxPar = 128
	nullKG := engine.KeyGroup(engine.HashRow(encodeKey(nil)), maxPar)
	nullBytes := map[string]int{} // the NULL key group's snapshot bytes per join type and setting
	for _, jt := range []string{"INNER", "LEFT", "FULL"} {
		for _, emit := range []bool{false, true} {
			if emit && jt == "INNER" {
				continue
			}
			p := Params{JoinType: jt, TimeMode: "rowtime", LeftLowerBound: -1000, LeftUpperBound: 1000, LeftTimeIndex: 1, RightTimeIndex: 1,
				FilterNulls: []bool{true}, NullKeyEmitImmediately: emit}
			op := openJoin(t, p, maxPar, 1<<16)
			out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
			r := rand.New(rand.NewPCG(1, 2))
			var outRows int
			const n, batch = 200_000, 500
			for i := 0; i < n; i += batch {
				rows := [2][][]any{}
				for j := i; j < i+batch; j++ {
					var k any = int64(r.IntN(10_000))
					if r.IntN(100) < 30 {
						k = nil
					}
					tm := int64(j/5) - r.Int64N(200)
					side := r.IntN(2)
					rows[side] = append(rows[side], []any{k, enginetest.Timestamp{Millis: tm}, fmt.Sprintf("value %016d", j)})
				}
				for side, rs := range rows {
					types := leftTypes
					if side == 1 {
						types = rightTypes
					}
					b := enginetest.Batch(types, rs, make([]engine.RowKind, len(rs)), enginetest.Options{})
					more, err := op.Process(engine.Of(side, 2, b), 0, out)
					outRows += len(drain(t, op, more, err, out))
				}
				more, err := op.Advance(int64((i+batch)/5)-500, 0, out)
				outRows += len(drain(t, op, more, err, out))
			}
			var total, null int
			for kg, chunks := range enginetest.Snapshot(t, op.State(), 1<<30) {
				payload := chunks[0]
				total += len(payload)
				if kg == nullKG {
					null = len(payload)
				}
			}
			nullBytes[fmt.Sprint(jt, emit)] = null
			t.Logf("%-5s emit=%-5v state estimate %6d KiB, snapshot %6d KiB, NULL key's key group %6d KiB (%d output rows)",
				jt, emit, op.State().Stats().StateBytes>>10, total>>10, null>>10, outRows)
		}
	}
	// FULL stores both sides' rows (as Flink does), LEFT the left rows, INNER and emit-immediately
	// only times
	full := nullBytes["FULLfalse"]
	if left := nullBytes["LEFTfalse"]; left*3 > full*2 || left*3 < full {
		t.Errorf("LEFT: NULL key group %d bytes, FULL %d: want about half", left, full)
	}
	for _, c := range []string{"INNERfalse", "LEFTtrue", "FULLtrue"} {
		if nullBytes[c]*5 > full {
			t.Errorf("%s: NULL key group %d bytes, FULL (every row) %d", c, nullBytes[c], full)
		}
	}
}
