package intervaljoin

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
)

// The inputs of the tests: left (k BIGINT, t TIMESTAMP(3), v VARCHAR), right (k BIGINT,
// t TIMESTAMP(3), w VARCHAR NOT NULL), keyed by k.
var (
	leftTypes  = []engine.Type{{ID: engine.BigInt, Nullable: true}, {ID: engine.Timestamp, Precision: 3}, {ID: engine.Varchar, Nullable: true}}
	rightTypes = []engine.Type{{ID: engine.BigInt, Nullable: true}, {ID: engine.Timestamp, Precision: 3}, {ID: engine.Varchar}}
)

func specJSON(p Params, maxPar, chunk int) []byte {
	in := func(third string, nullable bool) string {
		return fmt.Sprintf(`{"fields":[{"name":"k","type":"BIGINT"},{"name":"t","type":"TIMESTAMP(3)","nullable":false},{"name":%q,"type":"VARCHAR","nullable":%v}],"keys":[0]}`, third, nullable)
	}
	params, _ := json.Marshal(p)
	return []byte(fmt.Sprintf(`{"kind":"interval_join","name":"test","inputs":[%s,%s],"max_parallelism":%d,"chunk_rows":%d,"params":%s}`,
		in("v", true), in("w", false), maxPar, chunk, params))
}

func openJoin(t testing.TB, p Params, maxPar, chunk int) *IntervalJoin {
	t.Helper()
	spec, err := engine.ParseSpec(specJSON(p, maxPar, chunk))
	if err != nil {
		t.Fatal(err)
	}
	op, err := enginetest.Open(spec)
	if err != nil {
		t.Fatal(err)
	}
	return op.(*IntervalJoin)
}

// drain collects every chunk of a call's output as strings.
func drain(t testing.TB, op *IntervalJoin, more bool, err error, out *engine.OutBatch) []string {
	t.Helper()
	var rows []string
	for {
		if err != nil {
			t.Fatal(err)
		}
		if out.Len > op.chunk {
			t.Fatalf("chunk of %d rows, limit %d", out.Len, op.chunk)
		}
		for _, r := range enginetest.Rows(out) {
			rows = append(rows, r.String())
		}
		if !more {
			return rows
		}
		more, err = op.Continue(out)
	}
}

// event is one step of a scenario.
type event struct {
	kind  byte // 'L', 'R' rows; 'W' watermark (rowtime) or processing time (proctime); 'S' snapshot and restore; 'P' processing time of a row-time join (the time of later rows' arrival and a processing-time callback)
	key   any  // int64 or nil
	time  int64
	value string
}

func rowString(k any, t int64, v string) string {
	return strings.Join([]string{enginetest.Format(k), enginetest.Format(enginetest.Timestamp{Millis: t}), enginetest.Format(v)}, ", ")
}

func encodeKey(k any) []byte {
	b := enginetest.Batch(leftTypes[:1], [][]any{{k}}, []engine.RowKind{0}, enginetest.Options{})
	e := engine.NewKeyEncoder([]int{0}, leftTypes[:1])
	if err := e.Encode(b); err != nil {
		panic(err)
	}
	return append([]byte(nil), e.Key(0)...)
}

// runScenario feeds events to the operator (same-side runs as batches) and to the model, and
// compares their output after every call.
func runScenario(t *testing.T, p Params, events []event) {
	runScenarioWith(t, p, events, scenarioOptions{})
}

// scenarioOptions vary runScenarioWith.
type scenarioOptions struct {
	// multiset compares the whole run's output with the model's as multisets, not call by call.
	multiset bool
	// state, if set, checks the operator's state after every call.
	state func(t *testing.T, op *IntervalJoin)
	// calls ends each call's output with a "|" in the returned output.
	calls bool
	// noModel checks nothing against the model (which knows no residual condition).
	noModel bool
	// runs hands the rows of both sides between two watermarks (or snapshots) to one
	// ProcessRuns call, in arrival order, instead of one Process call per run of one side.
	runs bool
}

// runScenarioWith is runScenario with options; it returns the operator's output.
func runScenarioWith(t *testing.T, p Params, events []event, o scenarioOptions) []string {
	const maxPar = 8
	op := openJoin(t, p, maxPar, 3)
	md := newModel(p, maxPar)
	out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
	var batch [][]any
	side := -1
	now := int64(0)
	var all, allWant []string
	check := func(step string, got []string) {
		t.Helper()
		want := md.out
		md.out = nil
		all, allWant = append(all, got...), append(allWant, want...)
		if o.calls {
			all = append(all, "|")
		}
		if o.state != nil {
			o.state(t, op)
		}
		if !o.multiset && !o.noModel && strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("%s: output differs\ngot:\n%s\nwant:\n%s", step, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	var pend [2][][]any // runs: each side's pending rows
	var runs []engine.Run
	flush := func() {
		if o.runs {
			if len(runs) == 0 {
				return
			}
			var in [2]*engine.Batch
			for s, types := range [][]engine.Type{leftTypes, rightTypes} {
				if len(pend[s]) > 0 {
					in[s] = enginetest.Batch(types, pend[s], make([]engine.RowKind, len(pend[s])), enginetest.Options{Offset: 1})
				}
			}
			more, err := op.Process(inputsOf(in[:], runs), now, out)
			check(fmt.Sprintf("%d runs (%d left, %d right rows)", len(runs), len(pend[0]), len(pend[1])), drain(t, op, more, err, out))
			pend[0], pend[1], runs = nil, nil, nil
			return
		}
		if len(batch) == 0 {
			return
		}
		types := leftTypes
		if side == 1 {
			types = rightTypes
		}
		b := enginetest.Batch(types, batch, make([]engine.RowKind, len(batch)), enginetest.Options{Offset: 1})
		more, err := op.Process(engine.Of(side, 2, b), now, out)
		check(fmt.Sprintf("batch of %d rows of input %d", len(batch), side), drain(t, op, more, err, out))
		batch = batch[:0]
	}
	for i, e := range events {
		switch e.kind {
		case 'L', 'R':
			s := 0
			if e.kind == 'R' {
				s = 1
			}
			row := []any{e.key, enginetest.Timestamp{Millis: e.time}, e.value}
			if o.runs {
				if n := len(runs); n > 0 && runs[n-1].Input == s {
					runs[n-1].Rows++
				} else {
					runs = append(runs, engine.Run{Input: s, Rows: 1})
				}
				pend[s] = append(pend[s], row)
			} else {
				if s != side {
					flush()
					side = s
				}
				batch = append(batch, row)
			}
			kb := string(encodeKey(e.key))
			k := md.keys[kb]
			if k == nil {
				k = &mKey{key: kb, joinable: e.key != nil || !p.FilterNulls[0]}
				md.keys[kb] = k
			}
			md.element(s, k, rowString(e.key, e.time, e.value), e.time, now)
		case 'W':
			flush()
			if p.rowtimeMode() {
				md.advance(e.time, now)
				more, err := op.Advance(e.time, now, out)
				check(fmt.Sprintf("event %d: watermark %d", i, e.time), drain(t, op, more, err, out))
			} else {
				now = e.time
				md.advance(0, now)
				more, err := op.Advance(math.MinInt64, now, out)
				check(fmt.Sprintf("event %d: processing time %d", i, now), drain(t, op, more, err, out))
			}
		case 'P':
			flush()
			now = e.time
			md.procAdvance(now)
			more, err := op.Advance(math.MinInt64, now, out)
			check(fmt.Sprintf("event %d: processing-time callback at %d", i, now), drain(t, op, more, err, out))
		case 'S':
			flush()
			op = snapshotRestore(t, op, p, maxPar)
			md.restore()
		}
	}
	flush()
	if p.rowtimeMode() { // the final watermark expires everything: no key, timer or byte is left
		if op.State().Len() != 0 || op.timers.Len() != 0 || op.keys.bytes != 0 {
			t.Fatalf("after the final watermark: %d keys, %d timers, %d bytes", op.State().Len(), op.timers.Len(), op.keys.bytes)
		}
	}
	if o.multiset && !o.noModel {
		got := slices.Sorted(slices.Values(slices.DeleteFunc(slices.Clone(all), func(s string) bool { return s == "|" })))
		want := slices.Sorted(slices.Values(allWant))
		if !slices.Equal(got, want) {
			t.Fatalf("output multiset differs\ngot:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	return all
}

func (p Params) rowtimeMode() bool { return p.TimeMode == "rowtime" }

// snapshotRestore snapshots every key group of op (in small pieces) and restores them into a
// new operator.
func snapshotRestore(t *testing.T, op *IntervalJoin, p Params, maxPar int) *IntervalJoin {
	t.Helper()
	fresh := openJoin(t, p, maxPar, 3)
	enginetest.Restore(t, fresh.State(), enginetest.Snapshot(t, op.State(), 16))
	if fresh.State().Len() != op.State().Len() {
		t.Fatalf("restored %d keys, had %d", fresh.State().Len(), op.State().Len())
	}
	op.Close()
	return fresh
}

// randomEvents makes a stream with late rows, NULL keys, rows at times <= 0, repeated
// watermarks and snapshots.
func randomEvents(r *rand.Rand, n int, rowtime bool, spread int64) []event {
	return randomEventsNulls(r, n, rowtime, spread, 100/7)
}

// randomEventsNulls is randomEvents with nullPct percent of the rows' keys NULL.
func randomEventsNulls(r *rand.Rand, n int, rowtime bool, spread int64, nullPct int) []event {
	var evs []event
	clock := int64(-5)
	for i := range n {
		var key any = int64(r.IntN(4))
		if r.IntN(100) < nullPct {
			key = nil
		}
		switch x := r.IntN(100); {
		case x < 42 || x >= 44 && x < 86:
			kind := byte('L')
			if x >= 44 {
				kind = 'R'
			}
			tm := clock + r.Int64N(2*spread+1) - spread/2
			evs = append(evs, event{kind: kind, key: key, time: tm, value: fmt.Sprintf("%c%d", kind+32, i)})
		case x < 44:
			evs = append(evs, event{kind: 'S'})
		default:
			clock += r.Int64N(spread/2 + 1)
			evs = append(evs, event{kind: 'W', time: clock})
		}
	}
	if rowtime {
		evs = append(evs, event{kind: 'W', time: math.MaxInt64})
	} else {
		evs = append(evs, event{kind: 'W', time: clock + 10*spread})
	}
	return evs
}

func TestAgainstModel(t *testing.T) {
	bounds := [][2]int64{{-5, 10}, {0, 0}, {-3, -1}, {2, 7}, {-40, 60}}
	for _, jt := range []string{"INNER", "LEFT", "RIGHT", "FULL"} {
		for _, mode := range []string{"rowtime", "proctime"} {
			for bi, b := range bounds {
				for _, filter := range []bool{true, false} {
					p := Params{JoinType: jt, TimeMode: mode, LeftLowerBound: b[0], LeftUpperBound: b[1],
						LeftTimeIndex: 1, RightTimeIndex: 1, FilterNulls: []bool{filter}, MinCleanUpIntervalMs: int64(bi % 2 * 3)}
					t.Run(fmt.Sprintf("%s/%s/%d_%d/filter=%v", jt, mode, b[0], b[1], filter), func(t *testing.T) {
						for seed := range 6 {
							r := rand.New(rand.NewPCG(uint64(seed), uint64(bi)))
							spread := int64(20)
							if seed%3 == 2 {
								spread = 400 // many buckets per key: map resizes
							}
							runScenario(t, p, randomEvents(r, 400, mode == "rowtime", spread))
						}
					})
				}
			}
		}
	}
}

// TestProcessRunsAgainstModel hands the rows of both sides between two watermarks to one
// ProcessRuns call: the output equals the model's, row for row.
func TestProcessRunsAgainstModel(t *testing.T) {
	for _, jt := range []string{"INNER", "LEFT", "RIGHT", "FULL"} {
		for _, mode := range []string{"rowtime", "proctime"} {
			for bi, b := range [][2]int64{{-5, 10}, {-40, 60}} {
				p := Params{JoinType: jt, TimeMode: mode, LeftLowerBound: b[0], LeftUpperBound: b[1],
					LeftTimeIndex: 1, RightTimeIndex: 1, FilterNulls: []bool{bi == 0}, MinCleanUpIntervalMs: int64(bi * 3)}
				t.Run(fmt.Sprintf("%s/%s/%d_%d", jt, mode, b[0], b[1]), func(t *testing.T) {
					for seed := range 4 {
						r := rand.New(rand.NewPCG(uint64(seed), 99))
						runScenarioWith(t, p, randomEvents(r, 400, mode == "rowtime", int64(20+seed%2*380)), scenarioOptions{runs: true})
					}
				})
			}
		}
	}
}

// TestFlinkHarnessLeftOuter replays Flink's RowTimeIntervalJoinTest-style example: L.t BETWEEN
// R.t - 5 AND R.t + 9 (leftLowerBound -5, leftUpperBound 9), left cleanup at t+6, right at t+10.
func TestFlinkExampleLeftOuter(t *testing.T) {
	p := Params{JoinType: "LEFT", TimeMode: "rowtime", LeftLowerBound: -5, LeftUpperBound: 9, LeftTimeIndex: 1, RightTimeIndex: 1, FilterNulls: []bool{true}}
	op := openJoin(t, p, 128, 100)
	out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
	left := enginetest.Batch(leftTypes, [][]any{{int64(1), enginetest.Timestamp{Millis: 10}, "a"}}, []engine.RowKind{0}, enginetest.Options{})
	more, err := op.Process(engine.Of(0, 2, left), 0, out)
	if got := drain(t, op, more, err, out); len(got) != 0 {
		t.Fatalf("arrival: %v", got)
	}
	more, err = op.Advance(13, 0, out)
	if got := drain(t, op, more, err, out); len(got) != 0 {
		t.Fatalf("WM 13: %v", got)
	}
	more, err = op.Advance(20, 0, out)
	got := drain(t, op, more, err, out)
	if want := `+I[1, ts(10,0), "a", null, null, null]`; len(got) != 1 || got[0] != want {
		t.Fatalf("WM 20: %v, want %s", got, want)
	}
	if op.State().Len() != 0 || op.timers.Len() != 0 {
		t.Fatalf("state left behind: %d keys, %d timers", op.State().Len(), op.timers.Len())
	}
	// A late row (20 >= 2 + 5) is padded at once and not cached.
	late := enginetest.Batch(leftTypes, [][]any{{int64(1), enginetest.Timestamp{Millis: 2}, "b"}}, []engine.RowKind{0}, enginetest.Options{})
	more, err = op.Process(engine.Of(0, 2, late), 0, out)
	got = drain(t, op, more, err, out)
	if want := `+I[1, ts(2,0), "b", null, null, null]`; len(got) != 1 || got[0] != want {
		t.Fatalf("late row: %v, want %s", got, want)
	}
	if op.State().Len() != 0 {
		t.Fatal("a late row was cached")
	}
}

func TestSpecValidation(t *testing.T) {
	base := Params{JoinType: "INNER", TimeMode: "rowtime", LeftLowerBound: -1, LeftUpperBound: 1, LeftTimeIndex: 1, RightTimeIndex: 1, FilterNulls: []bool{true}}
	cases := []struct {
		edit func(*Params)
		want string
	}{
		{func(p *Params) { p.JoinType = "SEMI" }, "params.join_type"},
		{func(p *Params) { p.TimeMode = "x" }, "params.time_mode"},
		{func(p *Params) { p.LeftTimeIndex = 2 }, "params.left_time_index"},
		{func(p *Params) { p.RightTimeIndex = 3 }, "params.right_time_index"},
		{func(p *Params) { p.LeftUpperBound = -2 }, "negative window"},
		{func(p *Params) { p.AllowedLateness = -1 }, "params.allowed_lateness"},
		{func(p *Params) { p.FilterNulls = nil }, "params.filter_nulls"},
	}
	for _, c := range cases {
		p := base
		c.edit(&p)
		spec, err := engine.ParseSpec(specJSON(p, 128, 10))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := enginetest.Open(spec); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", p, err, c.want)
		}
	}
	spec, _ := engine.ParseSpec([]byte(strings.Replace(string(specJSON(base, 128, 10)), `"join_type"`, `"joinType"`, 1)))
	if _, err := enginetest.Open(spec); err == nil || !strings.Contains(err.Error(), "unknown field") {
		t.Errorf("unknown param: %v", err)
	}
}

// TestNextProcessingTimer: a processing-time join reports its earliest cleanup timer, also right
// after a restore (before the restored timers are registered), so the host knows when to call
// Advance; a row-time join reports none.
func TestNextProcessingTimer(t *testing.T) {
	p := Params{JoinType: "LEFT", TimeMode: "proctime", LeftLowerBound: -5, LeftUpperBound: 9, FilterNulls: []bool{true}}
	op := openJoin(t, p, 8, 100)
	out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
	if _, ok := nextProcessingTimer(op); ok {
		t.Fatal("a timer before any row")
	}
	row := func(k int64) *engine.Batch {
		return enginetest.Batch(leftTypes, [][]any{{k, enginetest.Timestamp{}, "a"}}, []engine.RowKind{0}, enginetest.Options{})
	}
	more, err := op.Process(engine.Of(0, 2, row(1)), 100, out)
	drain(t, op, more, err, out)
	more, err = op.Process(engine.Of(0, 2, row(2)), 103, out)
	drain(t, op, more, err, out)
	// a left row at 100 is cleaned up at 100 + leftRelativeSize 5 + 1
	if ms, ok := nextProcessingTimer(op); !ok || ms != 106 {
		t.Fatalf("next timer %d %v, want 106", ms, ok)
	}
	op = snapshotRestore(t, op, p, 8)
	if ms, ok := nextProcessingTimer(op); !ok || ms != 106 {
		t.Fatalf("after restore: next timer %d %v, want 106", ms, ok)
	}
	more, err = op.Advance(math.MinInt64, 106, out)
	got := drain(t, op, more, err, out)
	if len(got) != 1 {
		t.Fatalf("at 106: %v, want one pad", got)
	}
	if ms, ok := nextProcessingTimer(op); !ok || ms != 109 {
		t.Fatalf("next timer %d %v, want 109", ms, ok)
	}
	more, err = op.Advance(math.MinInt64, 200, out)
	drain(t, op, more, err, out)
	if _, ok := nextProcessingTimer(op); ok {
		t.Fatal("a timer after every row expired")
	}
	p.TimeMode, p.LeftTimeIndex, p.RightTimeIndex = "rowtime", 1, 1
	if _, ok := nextProcessingTimer(openJoin(t, p, 8, 100)); ok {
		t.Fatal("a row-time join reports a processing-time timer")
	}
}

// nextProcessingTimer is the earliest processing-time timer the state's figures report.
func nextProcessingTimer(op *IntervalJoin) (int64, bool) {
	ms := op.State().Stats().NextTimerMs
	return ms, ms != math.MaxInt64
}

// inputsOf is the Inputs of one call: in holds a batch per side (nil: none), runs their order.
func inputsOf(in []*engine.Batch, runs []engine.Run) *engine.Inputs {
	return &engine.Inputs{Batches: in, Runs: runs}
}
