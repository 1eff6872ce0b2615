package agg

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
)

// benchSpec is a Nexmark-shaped aggregation: GROUP BY auction, COUNT(*), SUM(price),
// MAX(price), AVG(price), insert-only.
func benchSpec() *Spec {
	f := false
	return mustParse(&testSpec{
		Kind: "group_aggregate",
		Input: []engine.FieldSpec{
			{Name: "auction", Type: "BIGINT", Nullable: &f},
			{Name: "price", Type: "BIGINT"},
		},
		Keys: []int{0},
		Aggs: []AggCall{
			{Func: "COUNT", Name: "bids"},
			{Func: "SUM", Args: []int{1}, Name: "total"},
			{Func: "MAX", Args: []int{1}, Name: "top"},
			{Func: "AVG", Args: []int{1}, Name: "avg"},
		},
		GenerateUpdateBefore: true,
		MaxParallelism:       128,
	})
}

// benchBatches returns batches of size rows over keys distinct keys, uniformly drawn.
func benchBatches(keys, size, count int) []*engine.Batch {
	r := rand.New(rand.NewPCG(1, 2))
	types := benchSpec().InputTypes
	out := make([]*engine.Batch, count)
	for b := range out {
		rows := make([][]any, size)
		for i := range rows {
			rows[i] = []any{int64(r.IntN(keys)), int64(r.IntN(1_000_000))}
		}
		out[b] = enginetest.Batch(types, rows, make([]engine.RowKind, size), enginetest.Options{})
	}
	return out
}

// BenchmarkGroupAggregate measures the kernel directly in Go (no C ABI): keys encoded and
// hashed, groups resolved, four aggregates folded, the changelog written.
func BenchmarkGroupAggregate(b *testing.B) {
	for _, keys := range []int{64, 1_000_000} {
		for _, size := range []int{1, 1024, 4096} {
			b.Run(fmt.Sprintf("keys=%d/batch=%d", keys, size), func(b *testing.B) {
				op, err := NewGroupAggregate(benchSpec())
				if err != nil {
					b.Fatal(err)
				}
				out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
				// Pre-populate every key so the timed loop runs at steady state.
				types := benchSpec().InputTypes
				for k := 0; k < keys; k += 4096 {
					n := min(4096, keys-k)
					rows := make([][]any, n)
					for i := range rows {
						rows[i] = []any{int64(k + i), int64(i)}
					}
					if _, err := op.Process(engine.Of(0, 1, enginetest.Batch(types, rows, make([]engine.RowKind, n), enginetest.Options{})), 0, out); err != nil {
						b.Fatal(err)
					}
				}
				batches := benchBatches(keys, size, 256)
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if _, err := op.Process(engine.Of(0, 1, batches[i%len(batches)]), 0, out); err != nil {
						b.Fatal(err)
					}
					i++
				}
				b.ReportMetric(float64(i*size)/b.Elapsed().Seconds(), "rows/s")
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(i*size), "ns/row")
			})
		}
	}
}

// BenchmarkGroupAggregateMaxRetract: MAX(price) with retraction (value->count multiset) and
// COUNT(*) over 10,000 keys on a changelog that replaces each key's price: +U new, -U old.
func BenchmarkGroupAggregateMaxRetract(b *testing.B) {
	f := false
	spec := mustParse(&testSpec{
		Kind: "group_aggregate",
		Input: []engine.FieldSpec{
			{Name: "auction", Type: "BIGINT", Nullable: &f},
			{Name: "price", Type: "BIGINT"},
		},
		Keys:                 []int{0},
		Aggs:                 []AggCall{{Func: "COUNT", Name: "n"}, {Func: "MAX", Args: []int{1}, Retract: true, Name: "top"}},
		NeedRetraction:       true,
		GenerateUpdateBefore: true,
		MaxParallelism:       128,
	})
	const keys, size = 10_000, 1024
	op, err := NewGroupAggregate(spec)
	if err != nil {
		b.Fatal(err)
	}
	out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
	r := rand.New(rand.NewPCG(3, 4))
	last := make([]int64, keys)
	var rows [][]any
	for k := range keys {
		last[k] = r.Int64N(1_000_000)
		rows = append(rows, []any{int64(k), last[k]})
	}
	for from := 0; from < keys; from += size {
		end := min(from+size, keys)
		if _, err := op.Process(engine.Of(0, 1, enginetest.Batch(spec.InputTypes, rows[from:end], make([]engine.RowKind, end-from), enginetest.Options{})), 0, out); err != nil {
			b.Fatal(err)
		}
	}
	// 256 batches that together replace every price once per cycle, so the multisets stay small.
	batches := make([]*engine.Batch, 256)
	for i := range batches {
		rows, kinds := make([][]any, 0, size), make([]engine.RowKind, 0, size)
		for len(rows) < size {
			k := r.IntN(keys)
			p := r.Int64N(1_000_000)
			rows = append(rows, []any{int64(k), p}, []any{int64(k), last[k]})
			kinds = append(kinds, engine.UpdateAfter, engine.UpdateBefore)
			last[k] = p
		}
		batches[i] = enginetest.Batch(spec.InputTypes, rows, kinds, enginetest.Options{})
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := op.Process(engine.Of(0, 1, batches[i%len(batches)]), 0, out); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkLocalGroupAggregate measures the two-phase plan's local aggregate in Go: each batch
// is one bundle of the benchmark's Nexmark-shaped query (COUNT(*), SUM, MAX, AVG of price per
// auction), folded into fresh accumulators and emitted as partial rows, one per key.
func BenchmarkLocalGroupAggregate(b *testing.B) {
	f := false
	input := []engine.FieldSpec{{Name: "auction", Type: "BIGINT", Nullable: &f}, {Name: "price", Type: "BIGINT"}}
	aggs := []AggCall{{Func: "COUNT"}, {Func: "SUM", Args: []int{1}}, {Func: "MAX", Args: []int{1}}, {Func: "AVG", Args: []int{1}}}
	h := engine.Spec{Kind: LocalKind, MaxParallelism: 128, Inputs: []engine.Input{{Fields: input, Keys: []int{0}}},
		Params: jsonMarshal(&LocalParams{Aggs: aggs})}
	for _, keys := range []int{64, 10_000} {
		for _, size := range []int{4096, 50_000} {
			b.Run(fmt.Sprintf("keys=%d/bundle=%d", keys, size), func(b *testing.B) {
				hs, err := engine.ParseSpec(jsonMarshal(&h))
				if err != nil {
					b.Fatal(err)
				}
				op, err := enginetest.Open(hs)
				if err != nil {
					b.Fatal(err)
				}
				out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
				batches := benchBatches(keys, size, 16)
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if _, err := op.Process(engine.Of(0, 1, batches[i%len(batches)]), 0, out); err != nil {
						b.Fatal(err)
					}
					i++
				}
				b.ReportMetric(float64(i*size)/b.Elapsed().Seconds(), "rows/s")
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(i*size), "ns/row")
			})
		}
	}
}

// BenchmarkGroupAggregateDistinctTTL measures what per-entry idle-state TTL costs a DISTINCT
// value set and a MIN-with-retraction multiset: the same retracting workload (10,000 keys, 1,024
// rows per batch, values from 1,000) without TTL and with a TTL nothing reaches (every entry
// stamped, every lookup checked, the bounded sweeps run).
func BenchmarkGroupAggregateDistinctTTL(b *testing.B) {
	for _, ttl := range []int64{0, 1 << 40} {
		b.Run(fmt.Sprintf("ttl=%v", ttl > 0), func(b *testing.B) {
			f := false
			spec := mustParse(&testSpec{Kind: "group_aggregate", MaxParallelism: 128, NeedRetraction: true, StateTTLMs: ttl,
				Input: []engine.FieldSpec{{Name: "k", Type: "BIGINT", Nullable: &f}, {Name: "v", Type: "BIGINT"}}, Keys: []int{0},
				Aggs: []AggCall{{Func: "COUNT", Args: []int{1}, Distinct: true, Retract: true}, {Func: "MIN", Args: []int{1}, Retract: true}}})
			op, err := NewGroupAggregate(spec)
			if err != nil {
				b.Fatal(err)
			}
			r := rand.New(rand.NewPCG(1, 2))
			batches := make([]*engine.Batch, 64)
			for n := range batches {
				rows := make([][]any, 1024)
				for i := range rows {
					rows[i] = []any{int64(r.IntN(10_000)), int64(r.IntN(1000))}
				}
				batches[n] = enginetest.Batch(spec.InputTypes, rows, make([]engine.RowKind, len(rows)), enginetest.Options{})
			}
			out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
			for n, in := range batches { // steady state: every key and most entries exist
				if _, err := op.Process(engine.Of(0, 1, in), int64(n), out); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := op.Process(engine.Of(0, 1, batches[i%len(batches)]), int64(len(batches)+i), out); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(i*1024), "ns/row")
		})
	}
}
