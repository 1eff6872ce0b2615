package topn

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
)

// The bid of Nexmark: auction, bidder, price, channel, url, dateTime, extra.
var bidTypes = []engine.Type{{ID: engine.BigInt}, {ID: engine.BigInt}, {ID: engine.BigInt}, {ID: engine.Varchar, Nullable: true},
	{ID: engine.Varchar, Nullable: true}, {ID: engine.Timestamp, Precision: 3}, {ID: engine.Varchar, Nullable: true}}

const bidSpec = `{"kind":"top_n","name":"q19","inputs":[{"fields":[{"name":"auction","type":"BIGINT","nullable":false},` +
	`{"name":"bidder","type":"BIGINT","nullable":false},{"name":"price","type":"BIGINT","nullable":false},{"name":"channel","type":"VARCHAR"},` +
	`{"name":"url","type":"VARCHAR"},{"name":"dateTime","type":"TIMESTAMP(3)","nullable":false},{"name":"extra","type":"VARCHAR"}],"keys":[0]}],` +
	`"max_parallelism":128,"params":%s}`

// BenchmarkTopN measures the operator directly in Go (no C ABI) on Nexmark's bids, 4096 rows per
// batch, auctions drawn uniformly: q19's Top-10 by price with the rank number, its top-1 and the
// first 10 bids, at steady state (every auction seen before the timed loop).
func BenchmarkTopN(b *testing.B) {
	for _, c := range []struct{ name, params string }{
		{"q19-top10", `{"function":"append_only_top_n","sort_keys":[{"field":2,"ascending":false,"nulls_last":false}],"rank_start":1,"rank_end":10,"output_rank_number":true,"generate_update_before":true}`},
		{"top1", `{"function":"fast_top1","sort_keys":[{"field":2,"ascending":false,"nulls_last":false}],"rank_start":1,"rank_end":1,"generate_update_before":true}`},
		{"first10", `{"function":"append_only_first_n","sort_keys":[{"field":5,"ascending":true,"nulls_last":false}],"rank_start":1,"rank_end":10}`},
	} {
		for _, keys := range []int{1_000, 100_000} {
			b.Run(fmt.Sprintf("%s/keys=%d", c.name, keys), func(b *testing.B) {
				spec, err := engine.ParseSpec(fmt.Appendf(nil, bidSpec, c.params))
				if err != nil {
					b.Fatal(err)
				}
				op, err := engine.OpenKeyed(spec)
				if err != nil {
					b.Fatal(err)
				}
				rng := rand.New(rand.NewPCG(1, 2))
				batch := func() *engine.Batch {
					rows := make([][]any, 4096)
					for i := range rows {
						rows[i] = []any{int64(rng.IntN(keys)), int64(rng.IntN(100_000)), int64(rng.IntN(10_000_000)), "channel-1",
							"https://www.nexmark.com/abc/item.htm?query=1", enginetest.Timestamp{Millis: int64(i)}, ""}
					}
					return enginetest.Batch(bidTypes, rows, make([]engine.RowKind, len(rows)), enginetest.Options{})
				}
				out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
				process := func(in *engine.Batch) {
					more, err := op.Operator.Process(engine.Of(0, 1, in), 0, out)
					for err == nil && more {
						more, err = op.Operator.Continue(out)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				for range 30 * keys / 4096 {
					process(batch())
				}
				batches := make([]*engine.Batch, 64)
				for i := range batches {
					batches[i] = batch()
				}
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					process(batches[i%len(batches)])
					i++
				}
				b.ReportMetric(float64(i*4096)/b.Elapsed().Seconds(), "rows/s")
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(i*4096), "ns/row")
			})
		}
	}
}
