package engine

import (
	"encoding/binary"
	"errors"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestTimersSetSemantics: registering a timer twice keeps one, a namespace or a domain makes
// another timer, the domains fire independently, a deletion finds only registered timers, and a
// fired timer may be registered again. The order among equal times is Flink's heap order
// (TestTimerVectors); here, a, b and c at one time fire a, c, b: polling a moves c, the last, to
// the head, and b, its equal, does not sift past it.
func TestTimersSetSemantics(t *testing.T) {
	s := newTestState(t, testSpec(t, ""), StateConfig{Timers: true})
	ts := s.Timers()
	a, b, c := s.put(1, 1), s.put(2, 1), s.put(3, 1)
	for _, id := range []int32{a, b, c} {
		if !ts.Register(EventTime, id, 10, 0) {
			t.Fatal("a new timer not added")
		}
	}
	if ts.Register(EventTime, a, 10, 0) || !ts.Register(EventTime, a, 10, 1) || !ts.Register(ProcessingTime, a, 10, 0) {
		t.Fatal("set semantics")
	}
	if ts.Len() != 5 || !ts.Has(EventTime, a, 10, 1) || ts.Has(ProcessingTime, b, 10, 0) {
		t.Fatalf("%d timers", ts.Len())
	}
	if !ts.Delete(EventTime, a, 10, 1) || ts.Delete(EventTime, a, 10, 1) || ts.Delete(EventTime, a, 11, 0) {
		t.Fatal("Delete")
	}
	if tm, ok := ts.Peek(EventTime); !ok || tm != (Timer{EventTime, a, 10, 0}) {
		t.Fatalf("peek %+v", tm)
	}
	if _, ok := ts.Next(EventTime, 9); ok {
		t.Fatal("a timer fired before its time")
	}
	var got []int32
	for {
		tm, ok := ts.Next(EventTime, 10)
		if !ok {
			break
		}
		got = append(got, tm.Key)
	}
	if !slices.Equal(got, []int32{a, c, b}) {
		t.Fatalf("fired %v, want %v", got, []int32{a, c, b})
	}
	if tm, ok := ts.Next(ProcessingTime, 10); !ok || tm != (Timer{ProcessingTime, a, 10, 0}) || ts.Len() != 0 {
		t.Fatalf("processing-time timer %+v, %d left", tm, ts.Len())
	}
	if !ts.Register(ProcessingTime, a, 10, 0) || ts.HasTimers(b) || !ts.HasTimers(a) {
		t.Fatal("a fired timer registers again")
	}
}

// TestTimersOfRemovedKeys: a key's timers go with it, and the timers left fire as if each had
// been deleted (Delete), in both domains; the figures report the earliest processing-time timer.
func TestTimersOfRemovedKeys(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	spec := testSpec(t, "")
	s := newTestState(t, spec, StateConfig{Timers: true})
	ref := newTestState(t, spec, StateConfig{Timers: true}) // deletes instead of removing keys
	type timer struct {
		d       TimeDomain
		key     int64
		time, n int64
	}
	live := map[timer]bool{}
	for step := range 20000 {
		switch op := r.IntN(10); {
		case op < 6:
			tm := timer{TimeDomain(r.IntN(2)), r.Int64N(30), r.Int64N(20), r.Int64N(2)}
			if s.Timers().Register(tm.d, s.put(tm.key, 0), tm.time, tm.n) != !live[tm] {
				t.Fatalf("step %d: Register %+v", step, tm)
			}
			ref.Timers().Register(tm.d, ref.put(tm.key, 0), tm.time, tm.n)
			live[tm] = true
		case op < 7:
			v := r.Int64N(30)
			id, rid := s.find(v), ref.find(v)
			if id < 0 {
				continue
			}
			var mine []Timer // ref deletes the key's timers in the order Remove does: its chain
			s.Timers().Each(id, func(tm Timer) { mine = append(mine, tm) })
			for _, tm := range mine {
				if !ref.Timers().Delete(tm.Domain, rid, tm.Time, tm.Namespace) {
					t.Fatalf("step %d: Each listed %+v, which is not registered", step, tm)
				}
				delete(live, timer{tm.Domain, v, tm.Time, tm.Namespace})
			}
			s.Remove(id)
			s.EndBatch()
			if s.Timers().HasTimers(id) {
				t.Fatalf("step %d: a removed key has timers", step)
			}
		default:
			d, upTo := TimeDomain(r.IntN(2)), r.Int64N(20)
			for {
				tm, ok := s.Timers().Next(d, upTo)
				want, wok := ref.Timers().Next(d, upTo)
				if ok != wok || ok && (tm.Time != want.Time || tm.Namespace != want.Namespace || string(s.Key(tm.Key)) != string(ref.Key(want.Key))) {
					t.Fatalf("step %d: fired %+v %v, want %+v %v", step, tm, ok, want, wok)
				}
				if !ok {
					break
				}
				delete(live, timer{d, int64(binary.LittleEndian.Uint64(s.Key(tm.Key)[8:])), tm.Time, tm.Namespace})
			}
		}
		if s.Timers().Len() != len(live) {
			t.Fatalf("step %d: %d timers, want %d", step, s.Timers().Len(), len(live))
		}
		next := int64(math.MaxInt64)
		for k := range live {
			if k.d == ProcessingTime {
				next = min(next, k.time)
			}
		}
		if got := s.Stats().NextTimerMs; got != next {
			t.Fatalf("step %d: next processing-time timer %d, want %d", step, got, next)
		}
	}
}

// TestTimersRestoreWaits: restored timers join their heaps only at the next use of the service,
// in key-group order whatever the order of the payloads; the figures read between payloads
// report the earliest restored processing-time timer and change nothing; a payload that fails
// leaves none of its timers, pending or not; a pending timer can be deleted.
func TestTimersRestoreWaits(t *testing.T) {
	spec := testSpec(t, "")
	cfg := StateConfig{Timers: true}
	src := newTestState(t, spec, cfg)
	r := rand.New(rand.NewPCG(7, 8))
	for v := range int64(300) {
		id := src.put(v, 1)
		for range 1 + r.IntN(3) {
			src.Timers().Register(TimeDomain(r.IntN(2)), id, 100+r.Int64N(5), r.Int64N(2))
		}
	}
	snap := src.snapshotAll(1 << 30)
	order := func(reversed, stats bool) []string {
		dst := newTestState(t, spec, cfg)
		kgs := make([]int, 0, len(snap))
		for kg := range snap {
			kgs = append(kgs, kg)
		}
		slices.Sort(kgs)
		if reversed {
			slices.Reverse(kgs)
		}
		for i, kg := range kgs {
			if err := dst.RestoreKeyGroup(kg, snap[kg][0]); err != nil {
				t.Fatal(err)
			}
			if stats && dst.Stats().NextTimerMs > 104 {
				t.Fatalf("after %d payloads: next timer %d", i+1, dst.Stats().NextTimerMs)
			}
		}
		return firing(dst.KeyedState)
	}
	want := order(false, false)
	if got := order(true, true); !slices.Equal(got, want) {
		t.Fatal("the restored timers fire in another order when the payloads come in another order or the figures are read")
	}
	if len(want) != src.Timers().Len() {
		t.Fatalf("%d timers restored, want %d", len(want), src.Timers().Len())
	}

	// A failing payload: its keys' pending timers go; a pending timer is deleted.
	dst := newTestState(t, spec, cfg)
	var kgs []int
	for kg := range snap {
		kgs = append(kgs, kg)
	}
	slices.Sort(kgs)
	good, bad := snap[kgs[0]][0], snap[kgs[1]][0]
	if err := dst.RestoreKeyGroup(kgs[0], good); err != nil {
		t.Fatal(err)
	}
	n := dst.Timers().Len()
	if err := dst.RestoreKeyGroup(kgs[1], bad[:len(bad)-1]); !errors.Is(err, ErrData) {
		t.Fatalf("truncated payload: %v", err)
	}
	if dst.Timers().Len() != n {
		t.Fatalf("%d timers after a failed payload, want %d", dst.Timers().Len(), n)
	}
	var victim Timer
	var id int32 = -1
	for k := range int32(dst.Cap()) {
		if dst.Live(k) && dst.Timers().HasTimers(k) {
			id = k
			dst.Timers().Each(k, func(tm Timer) { victim = tm })
			break
		}
	}
	if !dst.Timers().Delete(victim.Domain, id, victim.Time, victim.Namespace) || dst.Timers().Len() != n-1 {
		t.Fatal("a pending timer was not deleted")
	}
	fired := firing(dst.KeyedState)
	if len(fired) != n-1 || dst.Timers().Len() != 0 {
		t.Fatalf("%d timers fired, want %d", len(fired), n-1)
	}
	if err := dst.RestoreKeyGroup(kgs[1], bad); err != nil {
		t.Fatalf("the key group is not restorable after a failed restore: %v", err)
	}
}

// TestTimersKeepTheirKey: under idle-state TTL a key with timers outlives its expired value state
// (Flink's TTL never expires timers): the sweep keeps it, and ExpireValue resets its value.
func TestTimersKeepTheirKey(t *testing.T) {
	s := newTestState(t, testSpec(t, ""), StateConfig{TTL: TTL{Ms: 100}, Timers: true})
	a, b := s.put(1, 5), s.put(2, 5)
	s.Touch(a, 0)
	s.Touch(b, 0)
	s.Timers().Register(EventTime, a, 500, 0)
	for range 3 {
		s.Sweep(1000)
	}
	if s.find(1) != a || s.find(2) >= 0 {
		t.Fatal("the sweep must keep the key with a timer and remove the other")
	}
	if s.ExpireValue(a, 1000) != a || s.cnt.v[a] != 0 || s.Timers().Len() != 1 {
		t.Fatal("ExpireValue must keep a key with a timer, its value reset")
	}
	s.Timers().Next(EventTime, 500)
	if s.ExpireValue(a, 1000) != -1 {
		t.Fatal("without timers the expired key goes")
	}
	s.EndBatch()
}

// TestTimersRestoreRefusesBadTimers: a corrupt timer list is ErrData naming the problem.
func TestTimersRestoreRefusesBadTimers(t *testing.T) {
	spec := testSpec(t, "")
	src := newTestState(t, spec, StateConfig{Timers: true})
	id := src.put(1, 3)
	src.Timers().Register(EventTime, id, 10, 0)
	kg := kgOf(1)
	payload := src.snapshotAll(1 << 30)[kg][0]
	// key length byte, 16 key bytes, timer count, domain, time, namespace, position, counter
	if payload[17] != 1 || payload[18] != 0 || payload[21] != 1 {
		t.Fatalf("unexpected payload %x", payload)
	}
	edit := func(i int, b ...byte) []byte { return slices.Concat(payload[:i], b, payload[i+1:]) }
	for name, c := range map[string]struct {
		payload []byte
		want    string
	}{
		"domain":    {edit(18, 2), "timer domain 2 unknown"},
		"position":  {edit(21, 0), "timer heap position 0 out of range"},
		"count":     {edit(17, 60), "timer count 60 out of range"},
		"duplicate": {slices.Concat(payload[:17], []byte{2}, payload[18:22], payload[18:22], payload[22:]), "duplicate timer"},
	} {
		dst := newTestState(t, spec, StateConfig{Timers: true})
		if err := dst.RestoreKeyGroup(kg, c.payload); !errors.Is(err, ErrData) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrData %q", name, err, c.want)
		}
		if dst.Len() != 0 || dst.Timers().Len() != 0 {
			t.Errorf("%s: the failed restore left state behind", name)
		}
	}
}

// TestTimersDeleteAfterRestore: a timer deleted right after a restore leaves the heap Flink's
// does, which holds every restored timer before the deletion moves its last element: the same
// order as deleting once the restored timers were in their heaps.
func TestTimersDeleteAfterRestore(t *testing.T) {
	spec := testSpec(t, "")
	cfg := StateConfig{Timers: true}
	src := newTestState(t, spec, cfg)
	r := rand.New(rand.NewPCG(3, 4))
	for v := range int64(200) {
		src.Timers().Register(EventTime, src.put(v, 1), 100+r.Int64N(4), 0)
	}
	snap := src.snapshotAll(1 << 30)
	fired := func(settleFirst bool) []string {
		dst := newTestState(t, spec, cfg)
		for _, kg := range slices.Sorted(maps.Keys(snap)) { // the same key ids in both runs
			if err := dst.RestoreKeyGroup(kg, snap[kg][0]); err != nil {
				t.Fatal(err)
			}
		}
		if settleFirst {
			dst.Timers().Peek(EventTime)
		}
		for k := range int32(dst.Cap()) {
			if dst.Live(k) && k%7 == 3 {
				var victim Timer
				dst.Timers().Each(k, func(tm Timer) { victim = tm })
				if !dst.Timers().Delete(EventTime, k, victim.Time, 0) {
					t.Fatal("a restored timer was not deleted")
				}
			}
		}
		return firing(dst.KeyedState)
	}
	if want, got := fired(true), fired(false); !slices.Equal(got, want) {
		t.Fatal("timers deleted right after a restore fire in another order than once the restored timers are in their heap")
	}
}
