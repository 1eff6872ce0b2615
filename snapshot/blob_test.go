package snapshot

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ferrystream/ferry/engine"
)

var h = Header{Kind: "group_aggregate", MaxParallelism: 128, KeyGroup: 7, Fingerprint: 0xfeed, Chunk: 3, Last: true}

func TestRoundTrip(t *testing.T) {
	compressible := bytes.Repeat([]byte("state of many groups "), 1000)
	random := make([]byte, 1000)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range random {
		random[i] = byte(r.Uint32()) // zstd cannot shrink it
	}
	for _, payload := range [][]byte{compressible, random, {}} {
		chunk := Encode([]byte("prefix"), h, payload)[len("prefix"):]
		got, p, err := Decode(chunk, h, nil)
		if err != nil || !bytes.Equal(p, payload) || got != h {
			t.Fatalf("round trip of %d bytes: header %+v, %d bytes, %v", len(payload), got, len(p), err)
		}
		if len(payload) == len(compressible) && len(chunk) > len(payload)/10 {
			t.Errorf("compressible payload stored in %d bytes", len(chunk))
		}
		if len(payload) == len(random) && len(chunk) != HeaderSize+len(random) {
			t.Errorf("incompressible payload stored in %d bytes, want it raw", len(chunk))
		}
	}
}

// resealHeader recomputes the header checksum so a test can change one field at a time.
func resealHeader(b []byte) []byte {
	binary.LittleEndian.PutUint32(b[44:], crc32.Checksum(b[:44], castagnoli))
	return b
}

func TestRejections(t *testing.T) {
	chunk := Encode(nil, h, bytes.Repeat([]byte("abc"), 100))
	mutate := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), chunk...)) }
	other := func(f func(*Header)) Header { w := h; f(&w); return w }
	cases := []struct {
		name string
		blob []byte
		want Header
		msg  string
	}{
		{"truncated header", chunk[:10], h, "truncated"},
		{"truncated payload", chunk[:len(chunk)-1], h, "stored length"},
		{"padded", append(append([]byte(nil), chunk...), 0), h, "stored length"},
		{"foreign", mutate(func(b []byte) []byte { copy(b, "PK\x03\x04"); return b }), h, "not a Ferry state blob"},
		{"version", mutate(func(b []byte) []byte { b[4] = 9; return b }), h, "unknown format version 9"},
		{"header bit flip", mutate(func(b []byte) []byte { b[20] ^= 1; return b }), h, "header checksum mismatch"},
		{"kind", chunk, other(func(w *Header) { w.Kind = "interval_join" }), "another operator kind"},
		{"max parallelism", chunk, other(func(w *Header) { w.MaxParallelism = 256 }), "max parallelism changed from 128 to 256"},
		{"key group", chunk, other(func(w *Header) { w.KeyGroup = 8 }), "holds key group 7"},
		{"spec", chunk, other(func(w *Header) { w.Fingerprint = 1 }), "different spec"},
		{"payload bit flip", mutate(func(b []byte) []byte { b[len(b)-1] ^= 1; return b }), h, "payload checksum mismatch"},
		{"flags", mutate(func(b []byte) []byte { b[6] |= 0x80; return resealHeader(b) }), h, "unknown flags"},
		{"raw length lies", mutate(func(b []byte) []byte { b[32]++; return resealHeader(b) }), h, "decompressed to"},
	}
	for _, c := range cases {
		_, _, err := Decode(c.blob, c.want, nil)
		if err == nil || !errors.Is(err, engine.ErrData) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: got %v, want ErrData containing %q", c.name, err, c.msg)
		}
	}
}

// TestCodersAreReused checks that encoding a small chunk allocates nothing of encoder size.
func TestCodersAreReused(t *testing.T) {
	payload := bytes.Repeat([]byte("x"), 4096)
	dst := make([]byte, 0, 1<<16)
	allocs := testing.AllocsPerRun(100, func() { dst = Encode(dst[:0], h, payload) })
	if allocs > 2 {
		t.Fatalf("Encode allocates %.0f times per call; the encoder must be reused", allocs)
	}
	scratch := make([]byte, 0, 1<<16)
	allocs = testing.AllocsPerRun(100, func() { _, scratch, _ = Decode(dst, h, scratch) })
	if allocs > 2 {
		t.Fatalf("Decode allocates %.0f times per call; the decoder must be reused", allocs)
	}
}
