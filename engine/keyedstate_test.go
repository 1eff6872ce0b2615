package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// counterState is a PerKey for the tests: one int64 per key, saved as a varint; Load rejects 0.
type counterState struct{ v []int64 }

func (c *counterState) Grow(n int) {
	for len(c.v) < n {
		c.v = append(c.v, 0)
	}
}
func (c *counterState) Reset(id int32)                   { c.v[id] = 0 }
func (c *counterState) Save(dst []byte, id int32) []byte { return binary.AppendVarint(dst, c.v[id]) }
func (c *counterState) Load(src []byte, id int32) ([]byte, error) {
	v, rest, err := getVarint(src)
	if err != nil {
		return nil, err
	}
	if v == 0 {
		return nil, fmt.Errorf("%w: zero counter", ErrData)
	}
	c.v[id] = v
	return rest, nil
}
func (c *counterState) Bytes() int64 { return int64(cap(c.v)) * 8 }

func testSpec(t testing.TB, extra string) *Spec {
	t.Helper()
	s, err := ParseSpec([]byte(`{"kind":"test_state","inputs":[{"fields":[{"name":"k","type":"BIGINT"}],"keys":[0]}],` +
		`"max_parallelism":128` + extra + `}`))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// bigintKey is the BinaryRowData of one non-null BIGINT: an 8-byte header and the value's slot.
func bigintKey(v int64) []byte {
	k := make([]byte, 16)
	binary.LittleEndian.PutUint64(k[8:], uint64(v))
	return k
}

type testState struct {
	*KeyedState
	t   testing.TB
	cnt *counterState
}

func newTestState(t testing.TB, spec *Spec, cfg StateConfig) *testState {
	cfg.KeySize = 16
	s := &testState{KeyedState: NewKeyedState(spec, cfg), t: t, cnt: &counterState{}}
	s.Register(s.cnt)
	return s
}

// put inserts key v (or finds it) and adds to its counter; it returns the id.
func (s *testState) put(v int64, add int64) int32 {
	s.t.Helper()
	k := bigintKey(v)
	h := HashRow(k)
	kg, err := s.KeyGroupOf(h)
	if err != nil {
		s.t.Fatal(err)
	}
	id := s.Find(k, h, kg)
	if id < 0 {
		id = s.Insert(k, h, kg)
	}
	s.cnt.v[id] += add
	return id
}

func (s *testState) find(v int64) int32 {
	k := bigintKey(v)
	h := HashRow(k)
	return s.Find(k, h, KeyGroup(h, s.maxPar))
}

func kgOf(v int64) int { return KeyGroup(HashRow(bigintKey(v)), 128) }

// snapshotAll returns every key group's chunks, written with chunk limit limit.
func (s *testState) snapshotAll(limit int) map[int][][]byte {
	s.t.Helper()
	out := map[int][][]byte{}
	err := s.Snapshot(limit, func(kg int, chunk []byte, last bool) ([]byte, error) {
		if len(chunk) == 0 || (!last && len(chunk) < limit) {
			s.t.Fatalf("key group %d: a chunk of %d bytes (limit %d, last %v)", kg, len(chunk), limit, last)
		}
		out[kg] = append(out[kg], chunk)
		return nil, nil
	})
	if err != nil {
		s.t.Fatal(err)
	}
	return out
}

func (s *testState) restoreAll(snap map[int][][]byte) {
	s.t.Helper()
	for kg, chunks := range snap {
		for _, p := range chunks {
			if err := s.RestoreKeyGroup(kg, p); err != nil {
				s.t.Fatal(err)
			}
		}
	}
}

func TestKeyedStateInsertRemoveReset(t *testing.T) {
	s := newTestState(t, testSpec(t, ""), StateConfig{})
	a := s.put(1, 5)
	b := s.put(2, 7)
	if s.Len() != 2 || s.Cap() != 2 || len(s.cnt.v) != 2 {
		t.Fatalf("Len %d Cap %d counters %d", s.Len(), s.Cap(), len(s.cnt.v))
	}
	s.Remove(a)
	if s.find(1) >= 0 || s.keys.Live(a) {
		t.Fatal("removed key still found")
	}
	if s.cnt.v[a] != 5 {
		t.Fatal("a removed key's state must stay readable until EndBatch")
	}
	s.EndBatch()
	if s.cnt.v[a] != 0 || s.cnt.v[b] != 7 {
		t.Fatalf("EndBatch reset %v", s.cnt.v)
	}
	if c := s.put(3, 1); c != a {
		t.Fatalf("id %d, want the freed id %d", c, a)
	}
	st := s.Stats()
	if st.Keys != 2 || st.StateBytes < s.cnt.Bytes() {
		t.Fatalf("stats %+v", st)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Register after the first key must panic")
		}
	}()
	s.Register(&counterState{})
}

func TestKeyedStateTTL(t *testing.T) {
	s := newTestState(t, testSpec(t, ""), StateConfig{TTL: TTL{Ms: 100}})
	a := s.put(1, 1)
	s.Touch(a, 1000)
	if s.Expired(a, 1099) || !s.Expired(a, 1100) {
		t.Fatal("expired iff lastWrite + ttl <= now")
	}
	// The sweep removes expired keys nobody reads, a bounded slice per call.
	for v := range int64(3000) {
		s.Touch(s.put(v+10, 1), 1000)
	}
	s.Touch(s.put(5000, 1), 2000) // still fresh at 2050
	for range 3 {
		s.Sweep(2050)
	}
	if s.Len() != 1 || s.find(5000) < 0 {
		t.Fatalf("%d keys left after sweeping, want the one fresh key", s.Len())
	}
	none := newTestState(t, testSpec(t, ""), StateConfig{})
	id := none.put(1, 1)
	none.Touch(id, 5)
	none.Sweep(1 << 62)
	if none.Expired(id, 1<<62) || none.Len() != 1 {
		t.Fatal("without TTL nothing expires")
	}
}

func TestKeyedStateSnapshotRestore(t *testing.T) {
	spec := testSpec(t, "")
	cfg := StateConfig{TTL: TTL{Ms: 1000}, Timers: true, Layout: "v1"}
	s := newTestState(t, spec, cfg)
	r := rand.New(rand.NewPCG(1, 2))
	for v := range int64(2000) {
		id := s.put(v, v+1)
		s.Touch(id, 100+v)
		for range r.IntN(3) {
			s.Timers().Register(TimeDomain(r.IntN(2)), id, r.Int64N(50), r.Int64N(3))
		}
	}
	for _, limit := range []int{1, 64, 1 << 30} {
		snap := s.snapshotAll(limit)
		fresh := newTestState(t, spec, cfg)
		fresh.restoreAll(snap)
		if fresh.Len() != s.Len() || fresh.Timers().Len() != s.Timers().Len() {
			t.Fatalf("limit %d: restored %d keys, %d timers; want %d, %d", limit, fresh.Len(), fresh.Timers().Len(), s.Len(), s.Timers().Len())
		}
		for v := range int64(2000) {
			id, want := fresh.find(v), s.find(v)
			if id < 0 || fresh.cnt.v[id] != v+1 || fresh.lastWrite[id] != s.lastWrite[want] {
				t.Fatalf("limit %d: key %d restored wrong", limit, v)
			}
		}
		if !slices.Equal(firing(fresh.KeyedState), firing(s.snapshotCopy(t, cfg))) {
			t.Fatalf("limit %d: restored timers fire differently", limit)
		}
		for kg := range 128 {
			if fresh.HasState(kg) != s.HasState(kg) {
				t.Fatalf("HasState(%d) differs", kg)
			}
		}
	}
	if s.Fingerprint() == newTestState(t, spec, StateConfig{TTL: TTL{Ms: 1000}, Timers: true, Layout: "v2"}).Fingerprint() ||
		s.Fingerprint() == newTestState(t, spec, StateConfig{Timers: true, Layout: "v1"}).Fingerprint() ||
		s.Fingerprint() == newTestState(t, spec, StateConfig{TTL: TTL{Ms: 1000}, Layout: "v1"}).Fingerprint() {
		t.Fatal("the fingerprint must cover the kind's layout, TTL and timers")
	}
	// A layout version: 1 is the fingerprint without one; an earlier form is recognized by the
	// fingerprint its configuration had.
	v2 := StateConfig{TTL: TTL{Ms: 1000}, Timers: true, Layout: "v1", Version: 2,
		Earlier: []EarlierLayout{{Layout: "v0", Advice: "take the long way"}}}
	if newTestState(t, spec, v2).Fingerprint() == s.Fingerprint() ||
		newTestState(t, spec, StateConfig{TTL: TTL{Ms: 1000}, Timers: true, Layout: "v1", Version: 1}).Fingerprint() != s.Fingerprint() {
		t.Fatal("the fingerprint must cover a layout version from 2 on, and only from 2 on")
	}
	e := newTestState(t, spec, v2).EarlierLayouts()
	if len(e) != 1 || e[0].Fingerprint != newTestState(t, spec, StateConfig{TTL: TTL{Ms: 1000}, Layout: "v0"}).Fingerprint() ||
		e[0].Refusal != "written by Ferry's test state state layout 1, which this library does not read (it reads layout 2); take the long way" {
		t.Fatalf("earlier layouts %+v", e)
	}
	if s.Fingerprint() != newTestState(t, testSpec(t, `,"name":"x","key_group_start":3,"key_group_end":9,"chunk_rows":7`),
		StateConfig{TTL: TTL{Ms: 1000}, Timers: true, Layout: "v1"}).Fingerprint() {
		t.Fatal("name, key-group range and chunk size do not shape state")
	}
}

// snapshotCopy restores a snapshot of s into a new state, its key groups in ascending order.
func (s *testState) snapshotCopy(t *testing.T, cfg StateConfig) *KeyedState {
	snap := s.snapshotAll(1 << 30)
	c := newTestState(t, testSpec(t, ""), cfg)
	for kg := range 128 {
		for _, p := range snap[kg] {
			if err := c.RestoreKeyGroup(kg, p); err != nil {
				t.Fatal(err)
			}
		}
	}
	return c.KeyedState
}

// firing pops every timer of both domains (it empties s) in firing order.
func firing(s *KeyedState) []string {
	var out []string
	for _, d := range []TimeDomain{EventTime, ProcessingTime} {
		for {
			tm, ok := s.Timers().Next(d, 1<<62)
			if !ok {
				break
			}
			out = append(out, fmt.Sprintf("%d %x %d %d", d, s.Key(tm.Key), tm.Time, tm.Namespace))
		}
	}
	return out
}

func TestKeyedStateRestoreRejectsAndRollsBack(t *testing.T) {
	spec := testSpec(t, `,"key_group_start":0,"key_group_end":63`)
	cfg := StateConfig{Timers: true}
	src := newTestState(t, testSpec(t, ""), cfg)
	v1, v2 := int64(0), int64(1) // two keys of one key group below 64
	for kgOf(v1) >= 64 {
		v1++
	}
	for v2 = v1 + 1; kgOf(v2) != kgOf(v1); v2++ {
	}
	kg := kgOf(v1)
	src.Timers().Register(EventTime, src.put(v1, 3), 10, 0)
	single := src.snapshotAll(1 << 30)[kg][0] // v1 alone, with its timer
	src.put(v2, 4)
	payload := src.snapshotAll(1 << 30)[kg][0]
	// One key of another key group, hand-encoded like Snapshot does.
	var foreign int64
	for kgOf(foreign) == kg {
		foreign++
	}
	other := newTestState(t, testSpec(t, ""), cfg)
	other.put(foreign, 1)
	otherPayload := other.snapshotAll(1 << 30)[kgOf(foreign)][0]

	cases := map[string]struct {
		payload []byte
		want    string
	}{
		"truncated":      {payload[:len(payload)-1], "truncated"},
		"zero counter":   {append(slices.Clone(payload[:len(payload)-1]), 0), "zero counter"},
		"foreign key":    {append(slices.Clone(payload), otherPayload...), "hashes to key group"},
		"duplicate key":  {append(slices.Clone(payload), payload...), "duplicate key"},
		"bad key length": {append([]byte{24}, payload[1:]...), "key length 24 invalid"},
		"bad timer":      {badTimerDomain(single), "timer domain"},
	}
	keep := v2 + 1 // state of another key group the failing restores must leave alone
	for kgOf(keep) >= 64 || kgOf(keep) == kg {
		keep++
	}
	for name, c := range cases {
		dst := newTestState(t, spec, cfg)
		dst.put(keep, 1)
		before := dst.Stats().Keys
		err := dst.RestoreKeyGroup(kg, c.payload)
		if !errors.Is(err, ErrData) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), fmt.Sprintf("key group %d", kg)) {
			t.Errorf("%s: err %v, want ErrData mentioning %q", name, err, c.want)
			continue
		}
		if dst.Stats().Keys != before || dst.find(v1) >= 0 || dst.find(v2) >= 0 || dst.Timers().Len() != 0 || dst.Stats().NextTimerMs != math.MaxInt64 {
			t.Errorf("%s: the failed restore left keys or timers behind", name)
		}
		if err := dst.RestoreKeyGroup(kg, payload); err != nil {
			t.Errorf("%s: the key group is not restorable after a failed restore: %v", name, err)
		}
	}
	dst := newTestState(t, spec, cfg)
	if err := dst.RestoreKeyGroup(64, payload); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "outside this operator's range [0, 63]") {
		t.Errorf("restore outside the range: %v", err)
	}
	if dst.HasState(64) || dst.HasState(-1) {
		t.Error("HasState outside the range")
	}
}

// badTimerDomain returns payload (one key with one timer first) with that timer's domain byte
// set to 7: key length byte, 16 key bytes, timer count, domain.
func badTimerDomain(payload []byte) []byte {
	p := slices.Clone(payload)
	if p[0] != 16 || p[17] != 1 {
		panic("unexpected payload layout")
	}
	p[18] = 7
	return p
}

// entryState is an EntryState for the tests: a value per key (counterState) and entries per key,
// each just its last write.
type entryState struct {
	counterState
	at    [][]int64 // per key: its entries' last writes
	ttl   TTL
	swept int // entries SweepEntries inspected
}

func (e *entryState) Grow(n int) {
	e.counterState.Grow(n)
	for len(e.at) < n {
		e.at = append(e.at, nil)
	}
}
func (e *entryState) Reset(id int32)      { e.counterState.Reset(id); e.at[id] = nil }
func (e *entryState) ResetValue(id int32) { e.counterState.Reset(id) }
func (e *entryState) LiveEntries(id int32, nowMs int64) bool {
	for _, t := range e.at[id] {
		if !e.ttl.Expired(t, nowMs) {
			return true
		}
	}
	return false
}
func (e *entryState) SweepEntries(nowMs int64, budget int) {
	for id := range e.at {
		live := e.at[id][:0]
		for _, t := range e.at[id] {
			e.swept++
			if !e.ttl.Expired(t, nowMs) {
				live = append(live, t)
			}
		}
		e.at[id] = live
	}
}

// TestKeyedStateEntryTTL: a key whose value state expired stays while an entry of it is live
// (its value state reset, its entries kept), and goes with the last live entry; a state of
// entries only keeps a key while it holds entries.
func TestKeyedStateEntryTTL(t *testing.T) {
	ttl := TTL{Ms: 10}
	s := NewKeyedState(testSpec(t, ""), StateConfig{KeySize: 16, TTL: ttl})
	es := &entryState{ttl: ttl}
	s.Register(es)
	k := bigintKey(1)
	h := HashRow(k)
	id := s.Insert(k, h, KeyGroup(h, 128))
	es.v[id] = 7
	s.Touch(id, 95)
	es.at[id] = []int64{100, 90} // an entry written after the value (the clock stepped back)
	if !s.Expired(id, 105) {
		t.Fatal("the value expires at 95 + 10")
	}
	if got := s.ExpireValue(id, 105); got != id || s.Len() != 1 || es.v[id] != 0 || len(es.at[id]) != 2 {
		t.Fatalf("kept key: id %d, %d keys, value %d, %d entries", got, s.Len(), es.v[id], len(es.at[id]))
	}
	s.Sweep(105) // the value is expired, the entry of 100 is live: the key stays
	if s.Len() != 1 || len(es.at[id]) != 1 || es.swept == 0 {
		t.Fatalf("after the sweep at 105: %d keys, entries %v", s.Len(), es.at[id])
	}
	s.Sweep(110) // the last entry expired
	if s.Len() != 0 {
		t.Fatalf("after the sweep at 110: %d keys", s.Len())
	}
	id = s.Insert(k, h, KeyGroup(h, 128))
	s.Touch(id, 200)
	es.at[id] = []int64{150}
	if got := s.ExpireValue(id, 210); got != -1 || s.Len() != 0 {
		t.Fatalf("no live entry: ExpireValue %d, %d keys", got, s.Len())
	}
	s.EndBatch()

	only := NewKeyedState(testSpec(t, ""), StateConfig{KeySize: 16, TTL: ttl, EntriesOnly: true})
	oe := &entryState{ttl: ttl}
	only.Register(oe)
	id = only.Insert(k, h, KeyGroup(h, 128))
	oe.at[id] = []int64{0, 5}
	if only.Expired(id, 1000) {
		t.Fatal("entries only: no value state to expire")
	}
	only.Sweep(14)
	if only.Len() != 1 {
		t.Fatal("entries only: the key with a live entry stays")
	}
	only.Sweep(15)
	if only.Len() != 0 {
		t.Fatal("entries only: a key without live entries goes")
	}
}

// TestKeyedStateLiveIDs: a walk in chunks visits every live id once, in id order, and skips
// removed ones.
func TestKeyedStateLiveIDs(t *testing.T) {
	s := NewKeyedState(testSpec(t, ""), StateConfig{KeySize: 16})
	for k := range int64(5) {
		key := bigintKey(k)
		h := HashRow(key)
		s.Insert(key, h, KeyGroup(h, 128))
	}
	s.Remove(1)
	s.Remove(3)
	var next int32
	var chunks [][]int32
	for ids := s.LiveIDs(nil, &next, 2); len(ids) > 0; ids = s.LiveIDs(nil, &next, 2) {
		chunks = append(chunks, ids)
	}
	if fmt.Sprint(chunks) != "[[0 2] [4]]" || next != int32(s.Cap()) {
		t.Fatalf("chunks %v, next %d of %d", chunks, next, s.Cap())
	}
}
