package enginetest

import (
	"testing"

	"github.com/ferrystream/ferry/engine"
)

// Snapshot returns the chunks KeyedState.Snapshot writes with chunk limit limit, per key group,
// failing t when the calls break Snapshot's contract: a key group outside the range, a chunk
// after the key group's last, an empty chunk, or one that ends before limit without being last.
func Snapshot(t testing.TB, s *engine.KeyedState, limit int) map[int][][]byte {
	t.Helper()
	out := map[int][][]byte{}
	done := map[int]bool{}
	err := s.Snapshot(limit, func(kg int, chunk []byte, last bool) ([]byte, error) {
		switch {
		case !s.HasState(kg):
			t.Fatalf("a chunk for key group %d, which holds no key", kg)
		case done[kg]:
			t.Fatalf("key group %d: a chunk after the last", kg)
		case len(chunk) == 0 || (!last && len(chunk) < limit):
			t.Fatalf("key group %d: a chunk of %d bytes (limit %d, last %v)", kg, len(chunk), limit, last)
		}
		out[kg], done[kg] = append(out[kg], chunk), last
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for kg := range out {
		if !done[kg] {
			t.Fatalf("key group %d: no last chunk", kg)
		}
	}
	return out
}

// Restore restores the chunks Snapshot returned into s, in order per key group.
func Restore(t testing.TB, s *engine.KeyedState, snap map[int][][]byte) {
	t.Helper()
	for kg, chunks := range snap {
		for _, c := range chunks {
			if err := s.RestoreKeyGroup(kg, c); err != nil {
				t.Fatalf("restore key group %d: %v", kg, err)
			}
		}
	}
}
