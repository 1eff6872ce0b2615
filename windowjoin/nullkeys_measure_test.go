package windowjoin

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
)

// TestNullKeyStateFigures measures the state a stream with 30 % NULL keys leaves in the join:
// 100,000 rows, one per ms of event time (either side), in 10 s tumbling windows (window ends
// 10,000 ms apart), 10,000 other keys, a 24-byte VARCHAR per row, the watermark 5 s behind. It
// snapshots the state at the end of the stream and logs (go test -v) the snapshot bytes, those
// of the NULL key's key group and the engine's state estimate per join type and setting, and the
// same with IS NOT DISTINCT FROM keys, under which every row is stored, as Flink stores every
// row; docs/operators/window-join.md#state-saved publishes them.
func TestNullKeyStateFigures(t *testing.T) {
	if testing.Short() {
		t.Skip("measurement")
	}
	const maxPar = 128
	nullKG := engine.KeyGroup(engine.HashRow(encodeKey(nil)), maxPar)
	figures := map[string][2]int{} // snapshot bytes and the NULL key group's, per case
	for _, c := range []struct {
		jt           string
		filter, emit bool
	}{
		{"INNER", true, false},
		{"LEFT", true, false}, {"LEFT", true, true},
		{"FULL", true, false}, {"FULL", true, true},
	} {
		p := Params{JoinType: c.jt, LeftWindowEndIndex: 1, RightWindowEndIndex: 1, FilterNulls: []bool{c.filter}, NullKeyEmitImmediately: c.emit}
		op := openJoin(t, p, maxPar, 1<<16)
		out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
		r := rand.New(rand.NewPCG(1, 2))
		const n, batch = 100_000, 500
		for i := 0; i < n; i += batch {
			rows := [2][][]any{}
			for j := i; j < i+batch; j++ {
				var k any = int64(r.IntN(10_000))
				if r.IntN(100) < 30 {
					k = nil
				}
				ms := int64(j)
				end := (ms/10_000 + 1) * 10_000
				side := r.IntN(2)
				rows[side] = append(rows[side], []any{k, enginetest.Timestamp{Millis: end}, fmt.Sprintf("value %016d", j)})
			}
			for side, rs := range rows {
				b := enginetest.Batch(leftTypes, rs, make([]engine.RowKind, len(rs)), enginetest.Options{})
				more, err := op.Process(side, b, 0, out)
				drain(t, op, more, err, out)
			}
			more, err := op.Advance(int64(i+batch)-5000, 0, out)
			drain(t, op, more, err, out)
		}
		var total, null int
		for kg, chunks := range enginetest.Snapshot(t, op.State(), 1<<30) {
			payload := chunks[0]
			total += len(payload)
			if kg == nullKG {
				null = len(payload)
			}
		}
		name := fmt.Sprintf("%s filterNulls=%v emit=%v", c.jt, c.filter, c.emit)
		figures[name] = [2]int{total, null}
		t.Logf("%-36s snapshot %5d KiB, NULL key's key group %5d KiB, state estimate %5d KiB",
			name, total>>10, null>>10, op.State().Stats().StateBytes>>10)
	}
	all := figures["FULL filterNulls=true emit=false"][1] // every row stored
	if left := figures["LEFT filterNulls=true emit=false"][1]; left*3 > all*2 || left*3 < all {
		t.Errorf("LEFT: NULL key group %d bytes, every row %d: want about half", left, all)
	}
	for _, c := range []string{"INNER filterNulls=true emit=false", "LEFT filterNulls=true emit=true", "FULL filterNulls=true emit=true"} {
		if figures[c][1]*20 > all {
			t.Errorf("%s: NULL key group %d bytes, every row %d", c, figures[c][1], all)
		}
	}
}
