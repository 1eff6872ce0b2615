package exchange_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
	"github.com/ferrystream/ferry/exchange"
)

// BenchmarkFrames encodes a bundle's partial rows (BIGINT key, SUM and COUNT partials, a VARCHAR
// MAX) into frames for 4 channels and decodes every frame: ns/op is per row. The bundle holds
// one row per key: 64 keys, or 1 M keys (a bundle of that many distinct keys).
func BenchmarkFrames(b *testing.B) {
	types := []engine.Type{{ID: engine.BigInt}, {ID: engine.BigInt, Nullable: true}, {ID: engine.BigInt}, {ID: engine.Varchar, Nullable: true}}
	for _, keys := range []int{64, 1 << 20} {
		b.Run(fmt.Sprintf("keys=%d", keys), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 1))
			rows := make([][]any, keys)
			for i := range rows {
				rows[i] = []any{int64(i), r.Int64N(1 << 30), int64(r.IntN(100)), fmt.Sprintf("name-%d", r.IntN(1000))}
			}
			batch := enginetest.Batch(types, rows, make([]engine.RowKind, keys), enginetest.Options{})
			kgs := keyGroups(b, batch, types, []int{0}, 128)
			enc, err := exchange.NewEncoder(types, 4, 128, exchange.DefaultTargetBytes)
			if err != nil {
				b.Fatal(err)
			}
			dec := exchange.NewDecoder(types)
			var buf []byte
			var view engine.Batch
			b.ResetTimer()
			for range b.N / keys {
				n, total := enc.Plan(batch, kgs)
				if cap(buf) < total {
					buf = make([]byte, total)
				}
				buf = buf[:total]
				clear(buf)
				pos := 0
				for f := range n {
					size := enc.Size(f)
					enc.Write(f, batch, buf[pos:pos+size])
					if _, err := dec.Decode(buf[pos:pos+size], &view); err != nil {
						b.Fatal(err)
					}
					pos += size
				}
			}
		})
	}
}
