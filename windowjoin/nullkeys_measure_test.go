package windowjoin

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
)

// nexmarkRowSize is the size of the BinaryRowData of the measured stream's row (k BIGINT,
// window_end TIMESTAMP(3), v VARCHAR of 22 bytes): an 8-byte null bit set, three 8-byte fixed
// slots (TIMESTAMP(3) is compact) and the VARCHAR, too long to inline, in 24 bytes of the
// variable part.
const nexmarkRowSize = 8 + 3*8 + 24

// TestNullKeyStateFigures measures the state a stream with 30 % NULL keys leaves in the join:
// 100,000 rows, one per ms of event time (either side), in 10 s tumbling windows (window ends
// 10,000 ms apart), 10,000 other keys, the watermark 5 s behind. The host sends Go each row's
// key, window end and handle, and before the snapshot the bytes of every row it holds, each
// nexmarkRowSize bytes (what the JVM sends for such a row). It snapshots the state at the end
// of the stream and logs (go test -v) the snapshot bytes, those of the NULL key's key group and
// the engine's state estimate per join type, with `=` keys, under which a NULL key's rows are
// kept on a preserved side only, and with IS NOT DISTINCT FROM keys, under which every row is
// kept, as Flink keeps every row; docs/operators/window-join.md#state-saved publishes them.
func TestNullKeyStateFigures(t *testing.T) {
	if testing.Short() {
		t.Skip("measurement")
	}
	const maxPar = 128
	nullKG := engine.KeyGroup(engine.HashRow(encodeKey(nil)), maxPar)
	figures := map[string][2]int{} // snapshot bytes and the NULL key group's, per case
	for _, c := range []struct {
		jt     string
		filter bool
	}{{"INNER", true}, {"LEFT", true}, {"FULL", true}, {"INNER", false}} {
		h := newHost(t, Params{JoinType: c.jt, FilterNulls: []bool{c.filter}}, 1, maxPar, 1<<16)
		h.rowSize = nexmarkRowSize
		r := rand.New(rand.NewPCG(1, 2))
		const n, batch = 100_000, 500
		for i := 0; i < n; i += batch {
			var rows [2][]row
			for j := i; j < i+batch; j++ {
				var k any = int64(r.IntN(10_000))
				if r.IntN(100) < 30 {
					k = nil
				}
				end := (int64(j)/10_000 + 1) * 10_000
				side := r.IntN(2)
				rows[side] = append(rows[side], row{[]any{k}, end, fmt.Sprint(j)})
			}
			for side, rs := range rows {
				h.process(side, rs)
			}
			h.advance(int64(i+batch) - 5000)
		}
		h.sendRows()
		if err := h.op.snapshottable(); err != nil {
			t.Fatal(err)
		}
		var total, null int
		for kg, chunks := range enginetest.Snapshot(t, h.op.State(), 1<<30) {
			payload := chunks[0]
			total += len(payload)
			if kg == nullKG {
				null = len(payload)
			}
		}
		name := fmt.Sprintf("%s filterNulls=%v", c.jt, c.filter)
		figures[name] = [2]int{total, null}
		t.Logf("%-24s snapshot %5d KiB, NULL key's key group %5d KiB, state estimate %5d KiB",
			name, total>>10, null>>10, h.op.State().Stats().StateBytes>>10)
		h.op.Close()
	}
	all := figures["FULL filterNulls=true"][1] // every row kept
	if left := figures["LEFT filterNulls=true"][1]; left*3 > all*2 || left*3 < all {
		t.Errorf("LEFT: NULL key group %d bytes, every row %d: want about half", left, all)
	}
	if inner := figures["INNER filterNulls=true"][1]; inner*20 > all {
		t.Errorf("INNER: NULL key group %d bytes, every row %d", inner, all)
	}
	if same := figures["INNER filterNulls=false"][1]; same*10 < all*9 || same*10 > all*11 {
		t.Errorf("INNER, IS NOT DISTINCT FROM: NULL key group %d bytes, every row %d", same, all)
	}
}
