package engine

import (
	"errors"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// writeFrozen writes f on another goroutine and returns a channel that yields its chunks per key
// group once written.
func writeFrozen(t *testing.T, f *Frozen, limit int) <-chan map[int][][]byte {
	done := make(chan map[int][][]byte, 1)
	go func() {
		out := map[int][][]byte{}
		err := f.Snapshot(limit, func(kg int, chunk []byte, last bool) ([]byte, error) {
			out[kg] = append(out[kg], slices.Clone(chunk))
			return chunk[:0], nil // the buffer comes back, as the session's encoders hand them back
		})
		if err != nil {
			t.Error(err)
		}
		done <- out
	}()
	return done
}

// mutate changes the state the way kinds do, under its lock: counters of existing keys, new keys,
// removed keys whose ids are reused, TTL writes, timers registered and fired.
func mutate(s *testState, r *rand.Rand, n int64) {
	s.Lock()
	defer s.Unlock()
	for range 64 {
		v := r.Int64N(n)
		switch r.IntN(6) {
		case 0, 1:
			s.Touch(s.put(v, 1), 5000+v)
		case 2:
			if id := s.find(v); id >= 0 {
				s.Remove(id)
			}
		case 3:
			s.put(n+r.Int64N(n), 7) // a new key, often on a freed id
		case 4:
			if id := s.find(v); id >= 0 {
				s.Timers().Register(TimeDomain(r.IntN(2)), id, r.Int64N(50), 9)
			}
		case 5:
			if tm, ok := s.Timers().Next(TimeDomain(r.IntN(2)), 30); ok {
				s.cnt.v[tm.Key] += 100 // a timer firing changes its key's state
			}
		}
	}
	s.EndBatch()
}

// A frozen view written while the state keeps changing equals the snapshot of the state at the
// freeze, byte for byte and chunk for chunk; two views open at once each keep their own instant.
func TestFrozenSnapshotWhileMutating(t *testing.T) {
	defer func(s int32) { frozeStripe = s }(frozeStripe)
	frozeStripe = 64 // many turns of the lock, so that changes land between them
	cfg := StateConfig{TTL: TTL{Ms: 1 << 40}, Timers: true, Layout: "v1"}
	s := newTestState(t, testSpec(t, ""), cfg)
	r := rand.New(rand.NewPCG(3, 4))
	const n = 20000
	for v := range int64(n) {
		id := s.put(v, v+1)
		s.Touch(id, 100+v)
		for range r.IntN(3) {
			s.Timers().Register(TimeDomain(r.IntN(2)), id, r.Int64N(50), r.Int64N(3))
		}
	}
	for _, limit := range []int{64, 1 << 30} {
		wantA := s.snapshotAll(limit)
		a := s.Freeze()
		for range 50 {
			mutate(s, r, n)
		}
		wantB := s.snapshotAll(limit)
		b := s.Freeze()
		gotA, gotB := writeFrozen(t, a, limit), writeFrozen(t, b, limit)
		var outA, outB map[int][][]byte
		saved := 0
		for outA == nil || outB == nil {
			mutate(s, r, n)
			if k, _ := a.Pending(); k > saved {
				saved = k
			}
			select {
			case outA = <-gotA:
			case outB = <-gotB:
			default:
			}
		}
		if saved == 0 {
			t.Fatalf("limit %d: no key changed before the writer reached it; the test proves nothing", limit)
		}
		if !maps.EqualFunc(outA, wantA, chunksEqual) || !maps.EqualFunc(outB, wantB, chunksEqual) {
			t.Fatalf("limit %d: a frozen view differs from the state at its freeze", limit)
		}
		s.Lock()
		if len(s.frozen) != 0 || s.timers.onKey != nil {
			t.Fatal("views still open after being written")
		}
		s.Unlock()
		// The state itself went on: a restore of its snapshot holds the changes.
		now := s.snapshotAll(1 << 30)
		if maps.EqualFunc(now, wantB, chunksEqual) {
			t.Fatal("the changes did not reach the state")
		}
	}
}

// A released view stops its writer and takes no more pre-images.
func TestFrozenRelease(t *testing.T) {
	s := newTestState(t, testSpec(t, ""), StateConfig{})
	for v := range int64(1000) {
		s.put(v, 1)
	}
	f := s.Freeze()
	s.put(1, 1)
	if k, _ := f.Pending(); k != 1 {
		t.Fatalf("%d pre-images after changing one key, want 1", k)
	}
	f.Release()
	s.put(2, 1)
	if len(s.frozen) != 0 || f.pre != nil {
		t.Fatal("the view is still open")
	}
	calls := 0
	if err := f.Snapshot(1<<30, func(int, []byte, bool) ([]byte, error) { calls++; return nil, nil }); !errors.Is(err, ErrState) || calls != 0 {
		t.Fatalf("a released view wrote %d chunks (%v)", calls, err)
	}
}

func chunksEqual(a, b [][]byte) bool {
	return slices.EqualFunc(a, b, func(x, y []byte) bool { return string(x) == string(y) })
}
