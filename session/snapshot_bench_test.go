package session

import (
	"testing"

	"github.com/klauspost/compress/s2"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
	"github.com/ferrystream/ferry/snapshot"
)

// BenchmarkSnapshot measures checkpointing a group aggregate with 1 M keys (BIGINT key; COUNT(*),
// SUM, MAX, AVG over BIGINT; max parallelism 128) through Session, as the C ABI runs it:
// snapshot = every key group's chunks, written and compressed (Snapshot, until it reports the
// end); restore = every chunk validated, decompressed and loaded into a fresh operator. MB/s
// counts the uncompressed payload.
func BenchmarkSnapshot(b *testing.B) {
	src, spec := benchState(b)
	// snapshotAll returns every key group's chunks, after a call that drops the last snapshot.
	snapshotAll := func() [][][]byte {
		if _, err := src.flush(0); err != nil {
			b.Fatal(err)
		}
		chunks := make([][][]byte, 128)
		for kg := range 128 {
			chunks[kg] = src.chunks(b, kg)
		}
		return chunks
	}
	chunks := snapshotAll()
	raw, stored := 0, 0
	for kg, cs := range chunks {
		for _, c := range cs {
			stored += len(c)
			_, p, err := snapshot.Decode(c, src.header(kg), nil)
			if err != nil {
				b.Fatal(err)
			}
			raw += len(p)
		}
	}
	b.Run("snapshot/keys=1M", func(b *testing.B) {
		for b.Loop() {
			snapshotAll()
		}
		b.SetBytes(int64(raw))
		b.ReportMetric(float64(raw)/float64(stored), "compression-ratio")
		b.ReportMetric(float64(stored)/benchKeys, "stored-bytes/key")
	})
	b.Run("restore/keys=1M", func(b *testing.B) {
		for b.Loop() {
			dst := open(b, spec, &recorder{})
			for kg, cs := range chunks {
				for _, c := range cs {
					if err := dst.Restore(kg, c); err != nil {
						b.Fatal(err)
					}
				}
			}
			if st, _ := dst.Stats(); st.Keys != benchKeys {
				b.Fatalf("restored %d keys", st.Keys)
			}
			dst.Close()
		}
		b.SetBytes(int64(raw))
	})
}

// benchKeys is the key count of benchState.
const benchKeys = 1_000_000

// benchState returns an operator holding the benchmarks' state (BenchmarkSnapshot) and its spec.
func benchState(b *testing.B) (testSession, string) { return benchStateOf(b, benchKeys) }

// benchStateOf is benchState with n keys.
func benchStateOf(b *testing.B, n int) (testSession, string) {
	spec := `{"kind":"group_aggregate","inputs":[{"fields":[{"name":"auction","type":"BIGINT","nullable":false},{"name":"price","type":"BIGINT"}],"keys":[0]}],
		"max_parallelism":128,"params":{"aggs":[{"func":"COUNT"},{"func":"SUM","args":[1]},{"func":"MAX","args":[1]},{"func":"AVG","args":[1]}]}}`
	types := []engine.Type{{ID: engine.BigInt}, {ID: engine.BigInt, Nullable: true}}
	src := open(b, spec, &recorder{})
	for start := 0; start < n; start += 4096 {
		var rows [][]any
		for k := start; k < min(start+4096, n); k++ {
			rows = append(rows, []any{int64(k) * 7919, int64(k % 100_000)})
		}
		if _, err := src.process(0, enginetest.CArray(enginetest.Batch(types, rows, make([]engine.RowKind, len(rows)), enginetest.Options{})), 0); err != nil {
			b.Fatal(err)
		}
	}
	return src, spec
}

// BenchmarkSnapshotParts splits BenchmarkSnapshot's snapshot into its parts, each on one
// goroutine: pass = engine.KeyedState.Snapshot alone (chunk buffers reused); zstd =
// snapshot.Encode of every chunk (zstd's fastest level, CRC, header); s2 = S2 compression of every
// chunk, for comparison (not used by Ferry). MB/s counts the uncompressed payload.
func BenchmarkSnapshotParts(b *testing.B) {
	src, _ := benchState(b)
	var payloads [][]byte
	if err := src.state.Snapshot(snapshot.MaxChunk, func(kg int, c []byte, last bool) ([]byte, error) {
		payloads = append(payloads, c)
		return nil, nil
	}); err != nil {
		b.Fatal(err)
	}
	raw := 0
	for _, p := range payloads {
		raw += len(p)
	}
	compress := func(b *testing.B, enc func(dst, p []byte) []byte) {
		var dst []byte
		stored := 0
		for b.Loop() {
			stored = 0
			for _, p := range payloads {
				dst = enc(dst[:0], p)
				stored += len(dst)
			}
		}
		b.SetBytes(int64(raw))
		b.ReportMetric(float64(raw)/float64(stored), "compression-ratio")
	}
	b.Run("pass", func(b *testing.B) {
		for b.Loop() {
			if err := src.state.Snapshot(snapshot.MaxChunk, func(kg int, c []byte, last bool) ([]byte, error) {
				return c[:0], nil
			}); err != nil {
				b.Fatal(err)
			}
		}
		b.SetBytes(int64(raw))
	})
	b.Run("zstd", func(b *testing.B) {
		compress(b, func(dst, p []byte) []byte { return snapshot.Encode(dst, snapshot.Header{Kind: "group_aggregate"}, p) })
	})
	b.Run("s2", func(b *testing.B) {
		compress(b, func(dst, p []byte) []byte { return s2.Encode(dst[:cap(dst)], p) })
	})
}
