package session

import (
	"fmt"
	"testing"
	"time"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
	"github.com/ferrystream/ferry/snapshot"
)

// BenchmarkFrozenSnapshot measures what a checkpoint costs the goroutine that processes rows, on
// BenchmarkSnapshot's group aggregate with 1 M and 10 M keys (10 M skipped with -short):
// sync = the synchronous snapshot of today, every key group's chunks written and compressed
// (Session.Snapshot); freeze = engine.KeyedState.Freeze, the pause a write on another goroutine
// leaves; write = Frozen.Snapshot on another goroutine (chunks not compressed) while batches of
// 4096 updates to existing keys keep being processed (each call taking turns with the writer), reporting the
// rows processed per second during the write beside the rate without one (alone-rows/s) and the
// keys saved as pre-images.
func BenchmarkFrozenSnapshot(b *testing.B) {
	for _, n := range []int{1_000_000, 10_000_000} {
		if n > 1_000_000 && testing.Short() {
			continue
		}
		src, _ := benchStateOf(b, n)
		name := fmt.Sprintf("keys=%dM", n/1_000_000)
		types := []engine.Type{{ID: engine.BigInt}, {ID: engine.BigInt, Nullable: true}}
		batch := func(i int) *engine.CArray {
			var rows [][]any
			for k := range 4096 {
				rows = append(rows, []any{int64((i*4096+k*613)%n) * 7919, int64(k)})
			}
			return enginetest.CArray(enginetest.Batch(types, rows, make([]engine.RowKind, len(rows)), enginetest.Options{}))
		}
		batches := make([]*engine.CArray, 64)
		for i := range batches {
			batches[i] = batch(i)
		}
		step := func(i int) {
			if _, err := src.process(0, batches[i%len(batches)], 0); err != nil {
				b.Fatal(err)
			}
		}
		b.Run("sync/"+name, func(b *testing.B) {
			for b.Loop() {
				if _, err := src.flush(0); err != nil {
					b.Fatal(err)
				}
				for kg := range 128 {
					src.chunks(b, kg)
				}
			}
		})
		b.Run("freeze/"+name, func(b *testing.B) {
			for b.Loop() {
				src.state.Freeze().Release()
			}
		})
		b.Run("write/"+name, func(b *testing.B) {
			start, rows := time.Now(), 0
			for i := 0; time.Since(start) < time.Second; i++ {
				step(i)
				rows += 4096
			}
			alone := float64(rows) / time.Since(start).Seconds()
			rows, busy, saved := 0, time.Duration(0), 0
			for b.Loop() {
				f := src.state.Freeze()
				done := make(chan error, 1)
				go func() {
					done <- f.Snapshot(snapshot.MaxChunk, func(kg int, c []byte, last bool) ([]byte, error) { return c[:0], nil })
				}()
				t0 := time.Now()
				for i := 0; ; i++ {
					select {
					case err := <-done:
						if err != nil {
							b.Fatal(err)
						}
						busy += time.Since(t0)
						goto written
					default:
					}
					step(i)
					rows += 4096
					if k, _ := f.Pending(); k > saved {
						saved = k
					}
				}
			written:
			}
			b.ReportMetric(float64(rows)/busy.Seconds(), "rows/s")
			b.ReportMetric(alone, "alone-rows/s")
			b.ReportMetric(float64(saved), "max-pre-images")
		})
	}
}
