package windowjoin

import (
	"fmt"
	"testing"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
	"github.com/ferrystream/ferry/internal/nexmarktest"
)

// BenchmarkNexmark runs the workload of the JVM's WindowJoinBench in Go: nexmarktest's auctions
// and bids, each through a 10-second tumbling window, joined on the window and a.id = b.auction.
// The rows stay with the host, so Go gets what the host sends it: the key, window_end and a
// handle per row. Per 1,000 rows one Process call per side, then a watermark, as the JVM
// operator's batches are cut; the fired windows come back as handles. ns/op is per input row.
//
//	go test -run '^$' -bench Nexmark -cpuprofile /tmp/wj.prof ./windowjoin
func BenchmarkNexmark(b *testing.B) {
	for _, keys := range []int{1000, 100_000} {
		for _, jt := range []string{"INNER", "LEFT"} {
			b.Run(fmt.Sprintf("%s/keys=%d", jt, keys), func(b *testing.B) { benchNexmark(b, jt, keys) })
		}
	}
}

type nexmarkCall struct {
	in [2]*engine.Inputs // per side, a call with its rows; nil: none
	wm int64
}

func benchNexmark(b *testing.B, jt string, keys int) {
	const callRows, windowMs = 1000, 10_000
	in := func(key string) string {
		return fmt.Sprintf(`{"fields":[{"name":%q,"type":"BIGINT","nullable":false},{"name":"window_end","type":"TIMESTAMP(3)","nullable":false},`+
			`{"name":"h","type":"BIGINT","nullable":false}],"keys":[0]}`, key)
	}
	spec := fmt.Sprintf(`{"kind":"window_join","name":"bench","inputs":[%s,%s,%s],`+
		`"max_parallelism":128,"params":{"join_type":%q,"left_window_end_index":1,"right_window_end_index":1,"filter_nulls":[true]}}`,
		in("id"), in("auction"), rowsInputJSON, jt)
	types := []engine.Type{{ID: engine.BigInt}, {ID: engine.Timestamp, Precision: 3}, {ID: engine.BigInt}}

	// Enough calls to fill the state, then b.N rows of a steady stream.
	stream, fill := nexmarktest.New(keys), nexmarktest.Fill(keys)
	calls := make([]nexmarkCall, (fill+b.N)/callRows+1)
	handle := int64(0)
	for c := range calls {
		var rows [2][][]any
		t := int64(0)
		for range callRows {
			var side int
			var row []any
			side, row, t = stream.Next()
			handle++
			rows[side] = append(rows[side], []any{row[0], enginetest.Timestamp{Millis: t - t%windowMs + windowMs}, handle})
		}
		calls[c].wm = t - 1
		for s := range 2 {
			if len(rows[s]) > 0 {
				calls[c].in[s] = engine.Of(s, 3, enginetest.Batch(types, rows[s], make([]engine.RowKind, len(rows[s])), enginetest.Options{}))
			}
		}
	}
	parsed, err := engine.ParseSpec([]byte(spec))
	if err != nil {
		b.Fatal(err)
	}
	op, err := enginetest.Open(parsed)
	if err != nil {
		b.Fatal(err)
	}
	j := op.(*WindowJoin)
	out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
	next := func() (bool, error) { return j.Continue(out) }
	nexmarktest.Measure(b, fill, callRows, func(i int) {
		c := &calls[i]
		for _, in := range c.in {
			if in != nil {
				more, err := j.Process(in, 0, out)
				nexmarktest.Drain(b, more, err, next)
			}
		}
		more, err := j.Advance(c.wm, 0, out)
		nexmarktest.Drain(b, more, err, next)
	})
}
