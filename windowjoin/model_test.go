package windowjoin

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
)

// model is the state of Flink's WindowJoinOperator written plainly, for one BIGINT key: per key
// and window end the rows of each side in arrival order (those the host keeps: the others join
// nothing), one timer per (key, window) in a transliteration of Flink's timer heap (mHeap), of
// its own, rebuilt on restore as Flink's restore rebuilds its heap. A fired window emits its
// left rows, its right rows and its end; after a restore the open windows' rows come first in
// the next call's output.
type model struct {
	p        Params
	maxPar   int
	ids      map[string]int32 // key -> id in timers
	keys     []any
	lists    map[[2]int64][2][]string // (key id, window end) -> names of the rows per side
	timers   mHeap
	wm       int64
	late     [2]int64
	restored []string // the rows restored and not yet handed back, in output form
	out      []string
}

func newModel(p Params) *model {
	return &model{p: p, maxPar: 8, ids: map[string]int32{}, lists: map[[2]int64][2][]string{},
		timers: mHeap{{}}, wm: math.MinInt64}
}

// mTimer is a timer of the model: its time, its window's end (the namespace) and its key's id.
type mTimer struct {
	time, end int64
	key       int32
}

// mHeap is Flink's HeapPriorityQueue as the window join uses it, transliterated: a 1-based
// binary heap ordered by time alone; add is addInternal (append, sift up), poll is
// removeInternal(1) (the last element to the head, sifted down).
type mHeap []mTimer

func (h *mHeap) add(t mTimer) {
	*h = append(*h, t)
	q := *h
	i := len(q) - 1
	for i > 1 && t.time < q[i/2].time {
		q[i] = q[i/2]
		i /= 2
	}
	q[i] = t
}

func (h *mHeap) poll() mTimer {
	q := *h
	head, last := q[1], q[len(q)-1]
	q = q[:len(q)-1]
	*h = q
	if len(q) == 1 {
		return head
	}
	i := 1
	for {
		c := 2 * i
		if c+1 < len(q) && q[c+1].time < q[c].time {
			c++
		}
		if c >= len(q) || !(q[c].time < last.time) {
			break
		}
		q[i] = q[c]
		i = c
	}
	q[i] = last
	return head
}

// begin starts a call: the restored rows go out first, left then right.
func (m *model) begin() {
	m.out, m.restored = m.restored, nil
}

func (m *model) element(side int, key any, end int64, name string) {
	if m.wm >= end-1 { // UTC: the timer is at end - 1
		m.late[side]++
		return
	}
	ks := fmt.Sprint(key)
	id, ok := m.ids[ks]
	if !ok {
		id = int32(len(m.keys))
		m.ids[ks] = id
		m.keys = append(m.keys, key)
	}
	k := [2]int64{int64(id), end}
	ls, ok := m.lists[k]
	if !ok { // the timer set holds (key, window) once
		m.timers.add(mTimer{time: end - 1, end: end, key: id})
	}
	if keeps(m.p, side, []any{key}) {
		ls[side] = append(ls[side], name)
	}
	m.lists[k] = ls
}

func (m *model) advance(wm int64) {
	m.wm = wm
	for len(m.timers) > 1 && m.timers[1].time <= wm {
		t := m.timers.poll()
		k := [2]int64{int64(t.key), t.end}
		for side, names := range m.lists[k] {
			for _, n := range names {
				m.out = append(m.out, "LR"[side:side+1]+n)
			}
		}
		m.out = append(m.out, "E")
		delete(m.lists, k)
	}
}

// restore rebuilds the timer heap as Flink's restore does: key group by key group, each in
// the snapshot's heap order; the watermark and the late counts start over; every row of an
// open window is handed back.
func (m *model) restore() {
	type saved struct {
		kg, pos int
		t       mTimer
	}
	var all []saved
	for pos, t := range m.timers[1:] {
		all = append(all, saved{engine.KeyGroup(engine.HashRow(encodeKey(m.keys[t.key])), m.maxPar), pos, t})
	}
	slices.SortFunc(all, func(a, b saved) int { return cmp.Or(a.kg-b.kg, a.pos-b.pos) })
	m.timers = mHeap{{}}
	for _, s := range all {
		m.timers.add(s.t)
	}
	m.restored = nil
	for _, ls := range m.lists {
		for side, names := range ls {
			for _, n := range names {
				m.restored = append(m.restored, "+"+"LR"[side:side+1]+n)
			}
		}
	}
	slices.SortFunc(m.restored, func(a, b string) int { // left first, then by name
		if a[1] != b[1] {
			return int(a[1]) - int(b[1])
		}
		return strings.Compare(a, b)
	})
	m.wm = math.MinInt64
	m.late = [2]int64{}
}

// encodeKey is the key bytes of a BIGINT key value (nil: NULL), as the operator's state keys it.
func encodeKey(k any) []byte {
	types := inputTypes(1)[:1]
	b := enginetest.Batch(types, [][]any{{k}}, []engine.RowKind{0}, enginetest.Options{})
	e := engine.NewKeyEncoder([]int{0}, types)
	if err := e.Encode(b); err != nil {
		panic(err)
	}
	return append([]byte(nil), e.Key(0)...)
}

// expected is the model's output for events in run's format.
func expected(p Params, events []event) []string {
	m := newModel(p)
	var all []string
	for _, c := range calls(events) {
		switch c[0].kind {
		case 'L', 'R':
			m.begin()
			for _, e := range c {
				m.element(strings.IndexByte("LR", e.kind), e.key, e.end, e.name)
			}
		case 'W':
			m.begin()
			m.advance(c[0].end)
		case 'S':
			m.restore()
			continue
		}
		all = append(append(all, m.out...), "|")
	}
	return append(all, fmt.Sprintf("late %d %d", m.late[0], m.late[1]))
}

// randomEvents makes a stream over window ends that are multiples of 10 (several open at once,
// as HOP and CUMULATE windows are), with late rows, NULL keys, repeated watermarks and
// snapshots (some back to back), ending with the final watermark. Rows are named by their
// position.
func randomEvents(r *rand.Rand, n, nullPct int) []event {
	var evs []event
	wm := int64(0)
	for i := range n {
		switch x := r.IntN(100); {
		case x < 8:
			wm += int64(r.IntN(12))
			evs = append(evs, event{kind: 'W', end: wm})
		case x < 11:
			evs = append(evs, event{kind: 'S'})
		default:
			var key any = int64(r.IntN(5))
			if r.IntN(100) < nullPct {
				key = nil
			}
			end := (wm/10 + int64(r.IntN(4))) * 10 // some late
			kind := byte('L')
			if r.IntN(2) == 0 {
				kind = 'R'
			}
			evs = append(evs, event{kind: kind, key: key, end: end, name: fmt.Sprint(i)})
		}
	}
	return append(evs, event{kind: 'W', end: math.MaxInt64})
}

// TestAgainstModel runs random streams through the operator (driven by host, which checks the
// output's contract and maps restored handles back to the rows) and the model, every join type,
// with `=` and IS NOT DISTINCT FROM keys, snapshots and restores mid-stream, and compares the
// output call by call, in order: per fired window the (kind, row) sequence, and the rows
// restored.
func TestAgainstModel(t *testing.T) {
	for _, jt := range []string{"INNER", "LEFT", "RIGHT", "FULL", "SEMI", "ANTI"} {
		for _, filter := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/filterNulls=%v", jt, filter), func(t *testing.T) {
				p := Params{JoinType: jt, FilterNulls: []bool{filter}}
				for seed := range 40 {
					r := rand.New(rand.NewPCG(uint64(seed), 7))
					evs := randomEvents(r, 300, 20)
					got, want := run(t, p, evs), expected(p, evs)
					if !slices.Equal(got, want) {
						t.Fatalf("seed %d: output differs\ngot:\n%s\nwant:\n%s", seed, strings.Join(got, " "), strings.Join(want, " "))
					}
				}
			})
		}
	}
}
