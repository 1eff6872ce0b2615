package windowjoin

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
	"github.com/ferrystream/ferry/joincore"
)

// model is Flink's WindowJoinOperator written plainly: every row stored (NULL keys included),
// the key check made on every pair as JoinConditionWithNullFilters makes it, timers in a
// joincore.TimerQueue as Flink's heap timer service keeps them, rebuilt on restore as Flink's
// restore rebuilds its heap.
type model struct {
	p      Params
	cond   func(v, w any) bool
	maxPar int
	ids    map[string]int32 // key -> id in timers
	keys   []any
	lists  map[[2]int64][2][][]any // (key id, window end) -> rows per side
	timers *joincore.TimerQueue
	wm     int64
	late   [2]int64
	out    []string
}

func newModel(p Params, cond func(v, w any) bool) *model {
	return &model{p: p, cond: cond, maxPar: 8, ids: map[string]int32{}, lists: map[[2]int64][2][][]any{},
		timers: joincore.NewTimerQueue(), wm: math.MinInt64}
}

func (m *model) element(side int, row []any) {
	end := row[1].(int64)
	if m.wm >= end-1 { // UTC: the timer is at end - 1
		m.late[side]++
		return
	}
	ks := fmt.Sprint(row[0])
	id, ok := m.ids[ks]
	if !ok {
		id = int32(len(m.keys))
		m.ids[ks] = id
		m.keys = append(m.keys, row[0])
	}
	k := [2]int64{int64(id), end}
	ls, ok := m.lists[k]
	if !ok { // the timer set holds (key, window) once
		m.timers.Add(joincore.Timer{Time: end - 1, NS: end, Key: id})
	}
	ls[side] = append(ls[side], row)
	m.lists[k] = ls
}

func (m *model) str(r []any) string {
	if r == nil {
		return nullRow
	}
	return rowString(r[0], r[1].(int64), r[2])
}

func (m *model) emit(l, r []any, semi bool) {
	if semi {
		m.out = append(m.out, "+I["+m.str(l)+"]")
		return
	}
	m.out = append(m.out, "+I["+m.str(l)+", "+m.str(r)+"]")
}

func (m *model) advance(wm int64) {
	m.wm = wm
	for {
		t, ok := m.timers.Peek()
		if !ok || t.Time > wm {
			break
		}
		m.timers.Poll()
		k := [2]int64{int64(t.Key), t.NS}
		ls := m.lists[k]
		delete(m.lists, k)
		keyNull := m.keys[t.Key] == nil && m.p.FilterNulls[0]
		cond := func(l, r []any) bool { return !keyNull && m.cond(l[2], r[2]) }
		L, R := ls[0], ls[1]
		switch m.p.JoinType {
		case "SEMI", "ANTI":
			for _, l := range L {
				found := slices.ContainsFunc(R, func(r []any) bool { return cond(l, r) })
				if found == (m.p.JoinType == "SEMI") {
					m.emit(l, nil, true)
				}
			}
		case "RIGHT":
			for _, r := range R {
				found := false
				for _, l := range L {
					if cond(l, r) {
						m.emit(l, r, false)
						found = true
					}
				}
				if !found {
					m.emit(nil, r, false)
				}
			}
		default:
			matched := make([]bool, len(R))
			for _, l := range L {
				found := false
				for i, r := range R {
					if cond(l, r) {
						m.emit(l, r, false)
						found, matched[i] = true, true
					}
				}
				if !found && m.p.JoinType != "INNER" {
					m.emit(l, nil, false)
				}
			}
			if m.p.JoinType == "FULL" {
				for i, r := range R {
					if !matched[i] {
						m.emit(nil, r, false)
					}
				}
			}
		}
	}
}

// restore rebuilds the timer heap as Flink's restore does: key group by key group, each in
// the snapshot's heap order; the watermark is forgotten.
func (m *model) restore() {
	var all []joincore.RestoredTimer
	for k := range m.lists {
		t := joincore.Timer{Time: k[1] - 1, NS: k[1], Key: int32(k[0])}
		pos, _ := m.timers.Position(t)
		kg := engine.KeyGroup(engine.HashRow(encodeKey(m.keys[t.Key])), m.maxPar)
		all = append(all, joincore.RestoredTimer{KeyGroup: kg, Pos: uint64(pos), Timer: t})
	}
	joincore.SortRestored(all)
	m.timers = joincore.NewTimerQueue()
	for _, t := range all {
		m.timers.Add(t.Timer)
	}
	m.wm = math.MinInt64
	m.late = [2]int64{} // metrics start over with the restored operator
}

func encodeKey(k any) []byte {
	b := enginetest.Batch(leftTypes[:1], [][]any{{k}}, []engine.RowKind{0}, enginetest.Options{})
	e := engine.NewKeyEncoder([]int{0}, leftTypes[:1])
	if err := e.Encode(b); err != nil {
		panic(err)
	}
	return append([]byte(nil), e.Key(0)...)
}

// expected is the model's output for events in run's format.
func expected(p Params, cond func(v, w any) bool, events []event) []string {
	m := newModel(p, cond)
	var all []string
	pending := 0
	side := -1
	flush := func() {
		if pending > 0 {
			all = append(append(all, m.out...), "|")
			m.out, pending = nil, 0
		}
	}
	for _, e := range events {
		switch e.kind {
		case 'L', 'R':
			s := 0
			if e.kind == 'R' {
				s = 1
			}
			if s != side {
				flush()
				side = s
			}
			m.element(s, []any{e.key, e.end, e.value})
			pending++
		case 'W':
			flush()
			m.advance(e.end)
			all = append(append(all, m.out...), "|")
			m.out = nil
		case 'S':
			flush()
			m.restore()
		}
	}
	flush()
	return append(all, fmt.Sprintf("late %d %d", m.late[0], m.late[1]))
}

// randomEvents makes a stream over window ends that are multiples of 10 (several open at once,
// as HOP and CUMULATE windows are), with late rows, NULL keys and values, repeated watermarks
// and snapshots, ending with the final watermark.
func randomEvents(r *rand.Rand, n, nullPct int) []event {
	var evs []event
	wm := int64(0)
	for range n {
		switch x := r.IntN(100); {
		case x < 8:
			wm += int64(r.IntN(12))
			evs = append(evs, event{kind: 'W', end: wm})
		case x < 10:
			evs = append(evs, event{kind: 'S'})
		default:
			var key any = int64(r.IntN(5))
			if r.IntN(100) < nullPct {
				key = nil
			}
			var v any = fmt.Sprint(r.IntN(3))
			if r.IntN(10) == 0 {
				v = nil
			}
			end := (wm/10 + int64(r.IntN(4))) * 10 // some late
			kind := byte('L')
			if r.IntN(2) == 0 {
				kind = 'R'
			}
			evs = append(evs, event{kind: kind, key: key, end: end, value: v})
		}
	}
	return append(evs, event{kind: 'W', end: math.MaxInt64})
}

// TestAgainstModel runs random streams through the operator and the model, every join type,
// with and without a residual condition (v <> w) and with `=` and IS NOT DISTINCT FROM keys,
// and compares the output call by call, in order.
func TestAgainstModel(t *testing.T) {
	ne := &joincore.Expr{Op: "ne", Args: []joincore.Expr{{Op: "field", Field: 2}, {Op: "field", Field: 5}}}
	semiNe := ne
	for _, jt := range []string{"INNER", "LEFT", "RIGHT", "FULL", "SEMI", "ANTI"} {
		for _, withCond := range []bool{false, true} {
			for _, filter := range []bool{true, false} {
				name := fmt.Sprintf("%s/cond=%v/filterNulls=%v", jt, withCond, filter)
				t.Run(name, func(t *testing.T) {
					p := Params{JoinType: jt, LeftWindowEndIndex: 1, RightWindowEndIndex: 1, FilterNulls: []bool{filter}}
					cond := func(v, w any) bool { return true }
					if withCond {
						p.Condition = semiNe
						cond = func(v, w any) bool { return v != nil && w != nil && v != w }
					}
					for seed := range 40 {
						r := rand.New(rand.NewPCG(uint64(seed), 7))
						evs := randomEvents(r, 300, 20)
						got, want := run(t, p, evs), expected(p, cond, evs)
						if !slices.Equal(got, want) {
							t.Fatalf("seed %d: output differs\ngot:\n%s\nwant:\n%s", seed, strings.Join(got, "\n"), strings.Join(want, "\n"))
						}
					}
				})
			}
		}
	}
}
