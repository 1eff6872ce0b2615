package intervaljoin

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
	"github.com/ferrystream/ferry/internal/nexmarktest"
)

// BenchmarkNexmark runs the workload of the JVM's IntervalJoinBench in Go: auction(id, itemName,
// seller, category, dateTime) JOIN bid(auction, bidder, price, channel, dateTime) ON a.id =
// b.auction AND b.dateTime BETWEEN a.dateTime AND a.dateTime + 10 s, over nexmarktest's stream;
// one Process call per 1,000 rows, then a watermark. LEFT+early_fire is the LEFT join with
// EARLY_FIRE('delay'='2s'). ns/op is per input row.
//
//	go test -run '^$' -bench Nexmark -cpuprofile /tmp/ij.prof ./intervaljoin
func BenchmarkNexmark(b *testing.B) {
	for _, keys := range []int{1000, 100_000} {
		for _, jt := range []string{"INNER", "LEFT", "LEFT+early_fire"} {
			b.Run(fmt.Sprintf("%s/keys=%d", jt, keys), func(b *testing.B) { benchNexmark(b, jt, keys) })
		}
	}
}

type nexmarkCall struct {
	in   [2]*engine.Batch
	runs []engine.Run
	wm   int64
	call *engine.Inputs // in and runs
}

func benchNexmark(b *testing.B, jt string, keys int) {
	const callRows = 1000
	earlyFire := ""
	if j, ok := strings.CutSuffix(jt, "+early_fire"); ok {
		jt, earlyFire = j, `"early_fire_delay_ms":2000,`
	}
	spec := fmt.Sprintf(`{"kind":"interval_join","name":"bench","inputs":[{"fields":[%s],"keys":[0]},{"fields":[%s],"keys":[0]}],`+
		`"max_parallelism":128,"params":{"join_type":%q,"time_mode":"rowtime","left_lower_bound":-10000,"left_upper_bound":0,`+
		`"allowed_lateness":0,"min_clean_up_interval_ms":0,"left_time_index":4,"right_time_index":4,%s"filter_nulls":[true]}}`,
		nexmarktest.Fields[0], nexmarktest.Fields[1], jt, earlyFire)

	// Enough calls to fill the state, then b.N rows of a steady stream.
	stream, fill := nexmarktest.New(keys), nexmarktest.Fill(keys)
	calls := make([]nexmarkCall, (fill+b.N)/callRows+1)
	for c := range calls {
		var rows [2][][]any
		var runs []engine.Run
		t := int64(0)
		for range callRows {
			var side int
			var row []any
			side, row, t = stream.Next()
			rows[side] = append(rows[side], row)
			if n := len(runs); n > 0 && runs[n-1].Input == side {
				runs[n-1].Rows++
			} else {
				runs = append(runs, engine.Run{Input: side, Rows: 1})
			}
		}
		calls[c].runs, calls[c].wm = runs, t-1
		for s := range 2 {
			if len(rows[s]) > 0 {
				calls[c].in[s] = enginetest.Batch(nexmarktest.Types[s], rows[s], make([]engine.RowKind, len(rows[s])), enginetest.Options{})
			}
		}
		calls[c].call = inputsOf(calls[c].in[:], runs)
	}
	parsed, err := engine.ParseSpec([]byte(spec))
	if err != nil {
		b.Fatal(err)
	}
	op, err := enginetest.Open(parsed)
	if err != nil {
		b.Fatal(err)
	}
	j := op.(*IntervalJoin)
	out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
	next := func() (bool, error) { return j.Continue(out) }
	nexmarktest.Measure(b, fill, callRows, func(i int) {
		c := &calls[i]
		more, err := j.Process(c.call, 0, out)
		nexmarktest.Drain(b, more, err, next)
		more, err = j.Advance(c.wm, 0, out)
		nexmarktest.Drain(b, more, err, next)
	})
}
