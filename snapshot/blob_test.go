package snapshot

import (
	"errors"
	"strings"
	"testing"

	"github.com/ferrystream/ferry/engine"
)

func TestRoundTripAndRejections(t *testing.T) {
	h := Header{Kind: "group_aggregate", MaxParallelism: 128, KeyGroup: 7, Fingerprint: 0xfeed}
	payload := []byte("some state bytes")
	blob := make([]byte, Size(len(payload)))
	Encode(blob, h, payload)
	got, err := Decode(blob, h)
	if err != nil || string(got) != string(payload) {
		t.Fatalf("round trip: %q, %v", got, err)
	}
	mutate := func(f func(b []byte) []byte) []byte {
		b := append([]byte(nil), blob...)
		return f(b)
	}
	cases := []struct {
		name string
		blob []byte
		want Header
		msg  string
	}{
		{"truncated header", blob[:10], h, "truncated"},
		{"truncated payload", blob[:len(blob)-1], h, "payload length"},
		{"padded", append(append([]byte(nil), blob...), 0), h, "payload length"},
		{"foreign", mutate(func(b []byte) []byte { copy(b, "PK\x03\x04"); return b }), h, "not a Ferry state blob"},
		{"version", mutate(func(b []byte) []byte { b[4] = 9; return b }), h, "unknown format version 9"},
		{"kind", blob, Header{Kind: "interval_join", MaxParallelism: 128, KeyGroup: 7, Fingerprint: 0xfeed}, "another operator kind"},
		{"max parallelism", blob, Header{Kind: h.Kind, MaxParallelism: 256, KeyGroup: 7, Fingerprint: 0xfeed}, "max parallelism changed from 128 to 256"},
		{"key group", blob, Header{Kind: h.Kind, MaxParallelism: 128, KeyGroup: 8, Fingerprint: 0xfeed}, "holds key group 7"},
		{"spec", blob, Header{Kind: h.Kind, MaxParallelism: 128, KeyGroup: 7, Fingerprint: 1}, "different spec"},
		{"corrupt", mutate(func(b []byte) []byte { b[len(b)-1] ^= 1; return b }), h, "checksum mismatch"},
	}
	for _, c := range cases {
		_, err := Decode(c.blob, c.want)
		if err == nil || !errors.Is(err, engine.ErrData) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: got %v, want ErrData containing %q", c.name, err, c.msg)
		}
	}
}
