package regularjoin

import (
	"fmt"
	"testing"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
	"github.com/ferrystream/ferry/internal/nexmarktest"
)

// BenchmarkNexmark joins nexmarktest's stream as Nexmark's q4 and q6 do: auction(id, itemName,
// seller, category, dateTime) JOIN bid(auction, bidder, price, channel, dateTime) ON a.id =
// b.auction, the auction side keyed by its unique id (join_key_contains_unique_key), the bids
// without a unique key (no_unique_key); one Process call per 1,000 rows. The state grows with
// every row (no TTL): keep b.N moderate. ns/op is per input row.
//
//	go test -run '^$' -bench Nexmark -benchtime 500000x ./regularjoin
func BenchmarkNexmark(b *testing.B) {
	for _, keys := range []int{1000, 100_000} {
		for _, jt := range []string{"INNER", "LEFT"} {
			b.Run(fmt.Sprintf("%s/keys=%d", jt, keys), func(b *testing.B) { benchNexmark(b, jt, keys) })
		}
	}
}

func benchNexmark(b *testing.B, jt string, keys int) {
	const callRows = 1000
	spec := fmt.Sprintf(`{"kind":"regular_join","name":"bench","inputs":[{"fields":[%s],"keys":[0]},{"fields":[%s],"keys":[0]}],`+
		`"max_parallelism":128,"params":{"join_type":%q,"filter_nulls":[true],"left_layout":"join_key_contains_unique_key",`+
		`"left_unique_key":[0],"right_layout":"no_unique_key"}}`, nexmarktest.Fields[0], nexmarktest.Fields[1], jt)
	stream, fill := nexmarktest.New(keys), nexmarktest.Fill(keys)
	calls := make([]*engine.Inputs, (fill+b.N)/callRows+1)
	for c := range calls {
		var rows [2][][]any
		var runs []engine.Run
		for range callRows {
			side, row, _ := stream.Next()
			rows[side] = append(rows[side], row)
			if n := len(runs); n > 0 && runs[n-1].Input == side {
				runs[n-1].Rows++
			} else {
				runs = append(runs, engine.Run{Input: side, Rows: 1})
			}
		}
		in := &engine.Inputs{Batches: make([]*engine.Batch, 2), Runs: runs}
		for s := range 2 {
			if len(rows[s]) > 0 {
				in.Batches[s] = enginetest.Batch(nexmarktest.Types[s], rows[s], make([]engine.RowKind, len(rows[s])), enginetest.Options{})
			}
		}
		calls[c] = in
	}
	parsed, err := engine.ParseSpec([]byte(spec))
	if err != nil {
		b.Fatal(err)
	}
	op, err := enginetest.Open(parsed)
	if err != nil {
		b.Fatal(err)
	}
	defer op.Close()
	out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
	next := func() (bool, error) { return op.Continue(out) }
	nexmarktest.Measure(b, fill, callRows, func(i int) {
		more, err := op.Process(calls[i], 0, out)
		nexmarktest.Drain(b, more, err, next)
	})
}
