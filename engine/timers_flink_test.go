package engine

import (
	"bufio"
	"compress/gzip"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
)

// timerVector is one line of testdata/timers.jsonl.gz, written by tests/timervectors from Flink
// 2.3.0's own heap timer queues (HeapPriorityQueueSet of TimerHeapInternalTimer): a random
// sequence of operations on the two queues of one timer service and Flink's results.
type timerVector struct {
	Seed           int                 `json:"seed"`
	MaxParallelism int                 `json:"max_parallelism"`
	Keys           []json.RawMessage   `json:"keys"` // [value, key bytes (hex), key group]
	Ops            [][]json.RawMessage `json:"ops"`
}

// vectorTimer is a timer of a vector: key index, time, namespace.
type vectorTimer [3]int64

func readTimerVectors(t *testing.T) []timerVector {
	f, err := os.Open("testdata/timers.jsonl.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var vs []timerVector
	sc := bufio.NewScanner(z)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var v timerVector
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		vs = append(vs, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return vs
}

// TestTimerVectors replays the vectors through the TimerService of a KeyedState and compares
// every result with Flink's, timer for timer: whether a registration added a timer and a
// deletion found one (set semantics), the timers each fire polls in order, and at every
// snapshot and import the heap arrays, position for position. A snapshot goes through
// KeyedState.Snapshot and RestoreKeyGroup into a new state, the key groups' payloads in random
// order with the figures read between them; an import adds each key's timers with their
// positions (ImportFlink), key by key. The vectors hold many timers of equal time, so the order
// of every tie is Flink's heap order.
func TestTimerVectors(t *testing.T) {
	vs := readTimerVectors(t)
	if len(vs) < 200 {
		t.Fatalf("%d vectors", len(vs))
	}
	var ops, fired, ties, snapshots, imports int
	for _, v := range vs {
		r := &timerReplay{t: t, v: &v, rnd: rand.New(rand.NewPCG(uint64(v.Seed), 5))}
		r.run()
		ops += len(v.Ops)
		fired, ties, snapshots, imports = fired+r.fired, ties+r.ties, snapshots+r.snapshots, imports+r.imports
	}
	t.Logf("%d vectors, %d operations: %d timers fired (%d right after one of the same time), %d snapshots, %d imports",
		len(vs), ops, fired, ties, snapshots, imports)
	if ties < fired/3 || snapshots == 0 || imports == 0 {
		t.Fatal("the vectors no longer exercise ties, snapshots and imports")
	}
}

type timerReplay struct {
	t     *testing.T
	v     *timerVector
	rnd   *rand.Rand
	spec  *Spec
	keys  [][]byte // per key index, the key's bytes
	state *KeyedState
	op    int

	fired, ties, snapshots, imports int
}

func (r *timerReplay) fail(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("vector %d, op %d %s: %s", r.v.Seed, r.op, r.v.Ops[r.op], fmt.Sprintf(format, args...))
}

func (r *timerReplay) run() {
	var err error
	r.spec, err = ParseSpec(fmt.Appendf(nil, `{"kind":"test_timers","inputs":[{"fields":[{"name":"k","type":"BIGINT"}],"keys":[0]}],"max_parallelism":%d}`, r.v.MaxParallelism))
	if err != nil {
		r.t.Fatal(err)
	}
	for i, raw := range r.v.Keys {
		var k struct {
			value    int64
			bytes    string
			keyGroup int
		}
		if err := json.Unmarshal(raw, &[]any{&k.value, &k.bytes, &k.keyGroup}); err != nil {
			r.t.Fatal(err)
		}
		b := bigintKey(k.value)
		if hex.EncodeToString(b) != k.bytes || KeyGroup(HashRow(b), r.v.MaxParallelism) != k.keyGroup {
			r.t.Fatalf("vector %d: key %d (%d) is %s in key group %d in Flink, %x in key group %d in Ferry", r.v.Seed, i, k.value,
				k.bytes, k.keyGroup, b, KeyGroup(HashRow(b), r.v.MaxParallelism))
		}
		r.keys = append(r.keys, b)
	}
	r.state = r.newState()
	for r.op = range r.v.Ops {
		r.step(r.v.Ops[r.op])
	}
	if n := r.state.Timers().Len(); n != 0 {
		r.fail("%d timers left after the last fires", n)
	}
}

func (r *timerReplay) newState() *KeyedState {
	return NewKeyedState(r.spec, StateConfig{KeySize: 16, Timers: true})
}

// id returns the id of key index k in s, inserting it if create.
func (r *timerReplay) id(s *KeyedState, k int64, create bool) int32 {
	key := r.keys[k]
	h := HashRow(key)
	kg := KeyGroup(h, r.v.MaxParallelism)
	id := s.Find(key, h, kg)
	if id < 0 && create {
		id = s.Insert(key, h, kg)
	}
	return id
}

func (r *timerReplay) step(op []json.RawMessage) {
	var kind string
	args := make([]int64, len(op)-1)
	if err := json.Unmarshal(op[0], &kind); err != nil {
		r.t.Fatal(err)
	}
	ts := r.state.Timers()
	switch kind {
	case "r", "x":
		for i := range args {
			if err := json.Unmarshal(op[1+i], &args[i]); err != nil {
				r.t.Fatal(err)
			}
		}
		d, k, tm, ns, want := TimeDomain(args[0]), args[1], args[2], args[3], args[4] == 1
		var got bool
		if kind == "r" {
			got = ts.Register(d, r.id(r.state, k, true), tm, ns)
		} else if id := r.id(r.state, k, false); id >= 0 {
			got = ts.Delete(d, id, tm, ns)
		}
		if got != want {
			r.fail("Ferry says %v, Flink %v", got, want)
		}
	case "f":
		var d TimeDomain
		var upTo int64
		var want []vectorTimer
		r.decode(op[1:], &d, &upTo, &want)
		var got []vectorTimer
		for {
			tm, ok := ts.Next(d, upTo)
			if !ok {
				break
			}
			if tm.Domain != d {
				r.fail("a timer of domain %d fired", tm.Domain)
			}
			got = append(got, vectorTimer{r.index(tm.Key), tm.Time, tm.Namespace})
		}
		if !slices.Equal(got, want) {
			r.fail("fired\n%v\nFlink fired\n%v", got, want)
		}
		for i := range got {
			if i > 0 && got[i][1] == got[i-1][1] {
				r.ties++
			}
		}
		r.fired += len(got)
	case "s":
		var before, after [2][]vectorTimer
		r.decode(op[1:], &before[0], &before[1], &after[0], &after[1])
		r.checkHeaps(before)
		r.snapshotRestore()
		r.checkHeaps(after)
		r.checkNext(after)
		r.snapshots++
	case "i":
		var heaps [2][]vectorTimer
		r.decode(op[1:], &heaps[0], &heaps[1])
		r.checkHeaps(heaps)
		r.importHeaps(heaps)
		r.checkHeaps(heaps) // an import rebuilds the heaps as they are
		r.checkNext(heaps)
		r.imports++
	default:
		r.fail("unknown operation")
	}
}

func (r *timerReplay) decode(raw []json.RawMessage, targets ...any) {
	r.t.Helper()
	for i, x := range targets {
		if err := json.Unmarshal(raw[i], x); err != nil {
			r.t.Fatal(err)
		}
	}
}

// index is the vector's key index of key id of the current state.
func (r *timerReplay) index(id int32) int64 {
	k := slices.IndexFunc(r.keys, func(b []byte) bool { return string(b) == string(r.state.Key(id)) })
	if k < 0 {
		r.fail("a timer of an unknown key")
	}
	return int64(k)
}

// checkHeaps checks that each domain's heap holds Flink's heap array, position for position.
func (r *timerReplay) checkHeaps(heaps [2][]vectorTimer) {
	ts := r.state.Timers()
	if ts.Len() != len(heaps[0])+len(heaps[1]) {
		r.fail("%d timers, Flink holds %d", ts.Len(), len(heaps[0])+len(heaps[1]))
	}
	for d, h := range heaps {
		for i, x := range h {
			pos, ok := ts.Position(TimeDomain(d), r.id(r.state, x[0], false), x[1], x[2])
			if !ok || pos != i+1 {
				r.fail("domain %d: timer %v at position %d (%v), Flink's at %d; Ferry's heap %v", d, x, pos, ok, i+1, r.heap(TimeDomain(d)))
			}
		}
	}
}

// heap is the heap array of domain d.
func (r *timerReplay) heap(d TimeDomain) []vectorTimer {
	ts := r.state.Timers()
	var h []vectorTimer
	for _, s := range ts.heaps[d][1:] {
		e := &ts.entries[s.e]
		h = append(h, vectorTimer{r.index(e.key), e.time, e.ns})
	}
	return h
}

// snapshotRestore moves the timers through a snapshot into a new state: the key groups'
// payloads in random order, chunks of a random size, the figures read between them.
func (r *timerReplay) snapshotRestore() {
	limit := []int{1, 40, 1 << 20}[r.rnd.IntN(3)]
	chunks := map[int][][]byte{}
	if err := r.state.Snapshot(limit, func(kg int, c []byte, _ bool) ([]byte, error) {
		chunks[kg] = append(chunks[kg], slices.Clone(c))
		return nil, nil
	}); err != nil {
		r.fail("snapshot: %v", err)
	}
	kgs := make([]int, 0, len(chunks))
	for kg := range chunks {
		kgs = append(kgs, kg)
	}
	r.rnd.Shuffle(len(kgs), func(i, j int) { kgs[i], kgs[j] = kgs[j], kgs[i] })
	fresh := r.newState()
	for _, kg := range kgs {
		for _, c := range chunks[kg] {
			if err := fresh.RestoreKeyGroup(kg, c); err != nil {
				r.fail("restore: %v", err)
			}
			fresh.Stats()
		}
	}
	r.state = fresh
}

// importHeaps moves the timers into a new state as an import of Flink's own heaps: key by key in
// random order, each key's timers in position order, the figures read between the keys.
func (r *timerReplay) importHeaps(heaps [2][]vectorTimer) {
	type imported struct {
		d   TimeDomain
		x   vectorTimer
		pos int
	}
	perKey := make([][]imported, len(r.keys))
	for d, h := range heaps {
		for i, x := range h {
			perKey[x[0]] = append(perKey[x[0]], imported{TimeDomain(d), x, i + 1})
		}
	}
	fresh := r.newState()
	for _, k := range r.rnd.Perm(len(r.keys)) {
		ps := perKey[k]
		slices.SortFunc(ps, func(a, b imported) int { return a.pos - b.pos })
		for _, p := range ps {
			if !fresh.Timers().ImportFlink(p.d, r.id(fresh, int64(k), true), p.x[1], p.x[2], uint64(p.pos)) {
				r.fail("import of %v refused", p.x)
			}
		}
		fresh.Stats()
	}
	r.state = fresh
}

// checkNext checks the figures' next processing-time timer against Flink's heap.
func (r *timerReplay) checkNext(heaps [2][]vectorTimer) {
	want := int64(math.MaxInt64)
	for _, x := range heaps[ProcessingTime] {
		want = min(want, x[1])
	}
	if got := r.state.Stats().NextTimerMs; got != want {
		r.fail("next processing-time timer %d, want %d", got, want)
	}
}
