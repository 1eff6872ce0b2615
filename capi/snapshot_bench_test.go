//go:build ferrytest

package main

import (
	"testing"

	"github.com/ferrystream/ferry/agg"
	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
	"github.com/ferrystream/ferry/snapshot"
)

// BenchmarkSnapshot measures checkpointing a group aggregate with 1 M keys (BIGINT key; COUNT(*),
// SUM, MAX, AVG over BIGINT; max parallelism 128): snapshot = serialize every key group and
// compress it into chunks; restore = validate, decompress and load every chunk into a fresh
// operator. MB/s counts the uncompressed state.
func BenchmarkSnapshot(b *testing.B) {
	header0, err := engine.ParseSpec([]byte(`{"kind":"group_aggregate","inputs":[{"fields":[{"name":"auction","type":"BIGINT","nullable":false},{"name":"price","type":"BIGINT"}],"keys":[0]}],
		"max_parallelism":128,"params":{"aggs":[{"func":"COUNT"},{"func":"SUM","args":[1]},{"func":"MAX","args":[1]},{"func":"AVG","args":[1]}]}}`))
	if err != nil {
		b.Fatal(err)
	}
	spec, err := agg.ParseSpec(header0)
	if err != nil {
		b.Fatal(err)
	}
	const keys = 1_000_000
	op, err := agg.NewGroupAggregate(spec)
	if err != nil {
		b.Fatal(err)
	}
	out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
	for start := 0; start < keys; start += 4096 {
		var rows [][]any
		for k := start; k < min(start+4096, keys); k++ {
			rows = append(rows, []any{int64(k) * 7919, int64(k % 100_000)})
		}
		if _, err := op.Process(0, enginetest.Batch(spec.InputTypes, rows, make([]engine.RowKind, len(rows)), enginetest.Options{}), 0, out); err != nil {
			b.Fatal(err)
		}
	}
	header := func(kg, chunk int, last bool) snapshot.Header {
		return snapshot.Header{Kind: header0.Kind, MaxParallelism: 128, KeyGroup: kg, Fingerprint: op.State().Fingerprint(), Chunk: chunk, Last: last}
	}
	type chunk struct {
		kg   int
		data []byte
	}
	// snapshotAll returns every chunk of every key group and the uncompressed state size.
	snapshotAll := func() ([]chunk, int) {
		var chunks []chunk
		raw := 0
		var payload []byte
		for kg := range 128 {
			for from, index := 0, 0; from >= 0; index++ {
				next, p, err := op.State().SnapshotKeyGroup(kg, from, payload[:0], snapshot.MaxChunk)
				if err != nil {
					b.Fatal(err)
				}
				payload = p
				if len(p) == 0 {
					break
				}
				raw += len(p)
				chunks = append(chunks, chunk{kg, snapshot.Encode(nil, header(kg, index, next < 0), p)})
				from = next
			}
		}
		return chunks, raw
	}
	b.Run("snapshot/keys=1M", func(b *testing.B) {
		var raw, stored int
		for b.Loop() {
			chunks, r := snapshotAll()
			raw, stored = r, 0
			for _, c := range chunks {
				stored += len(c.data)
			}
		}
		b.SetBytes(int64(raw))
		b.ReportMetric(float64(raw)/float64(stored), "compression-ratio")
		b.ReportMetric(float64(stored)/keys, "stored-bytes/key")
	})
	b.Run("restore/keys=1M", func(b *testing.B) {
		chunks, raw := snapshotAll()
		var scratch []byte
		for b.Loop() {
			fresh, err := agg.NewGroupAggregate(spec)
			if err != nil {
				b.Fatal(err)
			}
			for _, c := range chunks {
				_, p, err := snapshot.Decode(c.data, header(c.kg, 0, false), scratch)
				if err != nil {
					b.Fatal(err)
				}
				scratch = p[:0]
				if err := fresh.State().RestoreKeyGroup(c.kg, p); err != nil {
					b.Fatal(err)
				}
			}
			if fresh.Groups() != keys {
				b.Fatalf("restored %d groups", fresh.Groups())
			}
		}
		b.SetBytes(int64(raw))
	})
}
