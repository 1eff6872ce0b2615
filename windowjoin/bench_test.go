package windowjoin

import (
	"fmt"
	"testing"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
	"github.com/ferrystream/ferry/internal/nexmarktest"
)

// BenchmarkNexmark runs the workload of the JVM's WindowJoinBench in Go: nexmarktest's auctions
// and bids, each through a 10-second tumbling window (window_start, window_end, window_time
// appended), joined on the window and a.id = b.auction. Per 1,000 rows one Process call per
// side, then a watermark, as the JVM operator's batches are cut. ns/op is per input row.
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
	in [2]*engine.Batch
	wm int64
}

func benchNexmark(b *testing.B, jt string, keys int) {
	const callRows, windowMs = 1000, 10_000
	window := `,{"name":"window_start","type":"TIMESTAMP(3)","nullable":false},{"name":"window_end","type":"TIMESTAMP(3)","nullable":false},{"name":"window_time","type":"TIMESTAMP(3)","nullable":false}`
	spec := fmt.Sprintf(`{"kind":"window_join","name":"bench","inputs":[{"fields":[%s],"keys":[0]},{"fields":[%s],"keys":[0]}],`+
		`"max_parallelism":128,"params":{"join_type":%q,"left_window_end_index":6,"right_window_end_index":6,"filter_nulls":[true]}}`,
		nexmarktest.Fields[0]+window, nexmarktest.Fields[1]+window, jt)
	ts := engine.Type{ID: engine.Timestamp, Precision: 3}
	var types [2][]engine.Type
	for s := range 2 {
		types[s] = append(append([]engine.Type(nil), nexmarktest.Types[s]...), ts, ts, ts)
	}

	// Enough calls to fill the state, then b.N rows of a steady stream.
	stream, fill := nexmarktest.New(keys), nexmarktest.Fill(keys)
	calls := make([]nexmarkCall, (fill+b.N)/callRows+1)
	for c := range calls {
		var rows [2][][]any
		t := int64(0)
		for range callRows {
			var side int
			var row []any
			side, row, t = stream.Next()
			start := t - t%windowMs
			row = append(row, enginetest.Timestamp{Millis: start}, enginetest.Timestamp{Millis: start + windowMs}, enginetest.Timestamp{Millis: start + windowMs - 1})
			rows[side] = append(rows[side], row)
		}
		calls[c].wm = t - 1
		for s := range 2 {
			if len(rows[s]) > 0 {
				calls[c].in[s] = enginetest.Batch(types[s], rows[s], make([]engine.RowKind, len(rows[s])), enginetest.Options{})
			}
		}
	}
	parsed, err := engine.ParseSpec([]byte(spec))
	if err != nil {
		b.Fatal(err)
	}
	op, err := engine.Open(parsed)
	if err != nil {
		b.Fatal(err)
	}
	j := op.(*WindowJoin)
	out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
	next := func() (bool, error) { return j.Continue(out) }
	nexmarktest.Measure(b, fill, callRows, func(i int) {
		c := &calls[i]
		for s, in := range c.in {
			if in != nil {
				more, err := j.Process(s, in, 0, out)
				nexmarktest.Drain(b, more, err, next)
			}
		}
		more, err := j.Advance(c.wm, 0, out)
		nexmarktest.Drain(b, more, err, next)
	})
}
