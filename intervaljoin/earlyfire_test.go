package intervaljoin

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
	"github.com/ferrystream/ferry/joincore"
)

// enginetestBatch is one row (k, t, v) of an input of types.
func enginetestBatch(types []engine.Type, k any, tm int64, v string) *engine.Batch {
	return enginetest.Batch(types, [][]any{{k, enginetest.Timestamp{Millis: tm}, v}}, []engine.RowKind{0}, enginetest.Options{})
}

// efParams is the join of the early-fire examples: L.t BETWEEN R.t - 5 AND R.t + 9 (left
// cleanup at t + 6, right at t + 10), with EARLY_FIRE delay ms in timeMode ("" : the join's).
func efParams(jt, mode string, delay int64, timeMode string) Params {
	p := Params{JoinType: jt, TimeMode: mode, LeftLowerBound: -5, LeftUpperBound: 9, LeftTimeIndex: 1, RightTimeIndex: 1,
		FilterNulls: []bool{true}, EarlyFireDelayMs: &delay, EarlyFireTimeMode: timeMode}
	return p
}

// efState checks the fired bits: aligned with the rows of every bucket with early fire, absent
// without.
func efState(t *testing.T, op *IntervalJoin) {
	t.Helper()
	for id := range op.keys.k {
		ks := &op.keys.k[id]
		for side, m := range []*bucketMap{ks.left, ks.right} {
			if m == nil {
				continue
			}
			for _, b := range m.AppendOrder(nil) {
				if op.earlyFire && len(b.rows) > 0 && len(b.fired) != len(b.rows) || !op.earlyFire && b.fired != nil {
					t.Fatalf("key %d side %d bucket %d: %d fired bits for %d rows (early fire %v)", id, side, b.time, len(b.fired), len(b.rows), op.earlyFire)
				}
				for i, f := range b.fired {
					if f && !op.padded(side) {
						t.Fatalf("key %d side %d bucket %d row %d: fired on an unpadded side", id, side, b.time, i)
					}
				}
			}
		}
	}
}

// joinedRow is the output row of a pair, of row kind kind.
func joinedRow(kind string, k any, lt int64, lv string, rt int64, rw string) string {
	return kind + "[" + rowString(k, lt, lv) + ", " + rowString(k, rt, rw) + "]"
}

// padOf is pad with row kind kind.
func padOf(kind string, left bool, k any, tm int64, v string) string {
	return kind + strings.TrimPrefix(pad(left, k, tm, v), "+I")
}

// The golden scenarios of the EARLY_FIRE runtime (each call's output ends with "|"; the model
// checks every call as well, but where noModel is set).
func TestEarlyFireGoldens(t *testing.T) {
	k1 := int64(1)
	L := func(tm int64, v string) event { return event{kind: 'L', key: k1, time: tm, value: v} }
	R := func(tm int64, v string) event { return event{kind: 'R', key: k1, time: tm, value: v} }
	W := func(tm int64) event { return event{kind: 'W', time: tm} }
	P := func(tm int64) event { return event{kind: 'P', time: tm} }
	S := event{kind: 'S'}
	padL := pad(true, k1, 10, "a")
	cases := []struct {
		name    string
		p       Params
		events  []event
		want    []string
		noModel bool
	}{
		// 9.2: padded at t + delay, not again at cleanup
		{"never-matched", efParams("LEFT", "rowtime", 3, ""), []event{L(10, "a"), W(13), W(20)},
			[]string{"|", padL, "|", "|"}, false},
		// 9.3: a match after the fire corrects the pad
		{"fire-then-match", efParams("LEFT", "rowtime", 3, ""), []event{L(10, "a"), W(13), R(12, "b"), W(30)},
			[]string{"|", padL, "|", padOf("-U", true, k1, 10, "a"), joinedRow("+U", k1, 10, "a", 12, "b"), "|", "|"}, false},
		// 9.4: a match before the fire: the early-fire timer finds the row matched
		{"match-then-fire", efParams("LEFT", "rowtime", 3, ""), []event{L(10, "a"), R(12, "b"), W(13), W(30)},
			[]string{"|", joinedRow("+I", k1, 10, "a", 12, "b"), "|", "|", "|"}, false},
		// 9.5: the second match of a fired row is a plain +I
		{"two-matches", efParams("LEFT", "rowtime", 3, ""), []event{L(10, "a"), W(13), R(12, "b"), R(14, "c"), W(30)},
			[]string{"|", padL, "|", padOf("-U", true, k1, 10, "a"), joinedRow("+U", k1, 10, "a", 12, "b"), joinedRow("+I", k1, 10, "a", 14, "c"), "|", "|"}, false},
		// row 7 of the matrix: RIGHT, the right row fired, then matched
		{"right", efParams("RIGHT", "rowtime", 3, ""), []event{R(12, "b"), W(15), L(10, "a"), W(40)},
			[]string{"|", pad(false, k1, 12, "b"), "|", padOf("-U", false, k1, 12, "b"), joinedRow("+U", k1, 10, "a", 12, "b"), "|", "|"}, false},
		// 9.6: FULL, the left row fires and matches, the right one fires at 43 only
		{"full", efParams("FULL", "rowtime", 3, ""), []event{L(10, "a"), R(40, "x"), W(13), R(12, "b"), W(43), W(60)},
			[]string{"|", "|", padL, "|", padOf("-U", true, k1, 10, "a"), joinedRow("+U", k1, 10, "a", 12, "b"), "|", pad(false, k1, 40, "x"), "|", "|"}, false},
		// 9.7: delay 20 > span 14: the pad comes from cleanup (16), timer 30 finds no bucket
		{"delay-exceeds-span", efParams("LEFT", "rowtime", 20, ""), []event{L(10, "a"), W(35)},
			[]string{"|", padL, "|"}, false},
		// row 10: delay 6 = the left cleanup offset: one timer, early fire first, one pad
		{"delay-is-cleanup", efParams("LEFT", "rowtime", 6, ""), []event{L(10, "a"), W(16), W(30)},
			[]string{"|", padL, "|", "|"}, false},
		// 9.8: the early-fire time had passed at arrival: the pad comes at the next watermark
		{"fire-time-passed", efParams("LEFT", "rowtime", 3, ""), []event{W(14), L(10, "a"), W(15), W(20)},
			[]string{"|", "|", padL, "|", "|"}, false},
		// 9.9: a late row is padded at once, with no timer
		{"late-row", efParams("LEFT", "rowtime", 3, ""), []event{W(20), L(2, "a")},
			[]string{"|", pad(true, k1, 2, "a"), "|"}, false},
		// row 27: the final watermark pads every unfired, unmatched row once (10 fired at 13)
		{"final-watermark", efParams("LEFT", "rowtime", 3, ""), []event{L(10, "a"), L(11, "b"), {kind: 'L', key: int64(2), time: 30, value: "c"}, W(13), W(math.MaxInt64)},
			[]string{"|", padL, "|", pad(true, k1, 11, "b"), pad(true, int64(2), 30, "c"), "|"}, false},
		// 9.11: a processing-time join, times being processing times
		{"proctime", efParams("LEFT", "proctime", 3, ""), []event{W(10), L(0, "a"), W(13), W(14), R(0, "b"), W(40)},
			[]string{"|", "|", pad(true, k1, 0, "a"), "|", "|", padOf("-U", true, k1, 0, "a"), joinedRow("+U", k1, 0, "a", 0, "b"), "|", "|"}, false},
		// 9.12: processing-time early fire on a row-time join: the pad at processing time 3,
		// no watermark needed; cleanup at 16 pads nothing more
		{"cross-domain", efParams("LEFT", "rowtime", 3, "proctime"), []event{P(0), L(10, "a"), P(2), P(3), R(12, "b"), W(30), P(100)},
			[]string{"|", "|", "|", padL, "|", padOf("-U", true, k1, 10, "a"), joinedRow("+U", k1, 10, "a", 12, "b"), "|", "|", "|"}, false},
		// cross-domain: the event-time cleanup comes first; the processing-time timer is a no-op
		{"cross-domain/cleanup-first", efParams("LEFT", "rowtime", 3, "proctime"), []event{P(0), L(10, "a"), W(20), P(3)},
			[]string{"|", "|", padL, "|", "|"}, false},
		// cross-domain: a timer fires its whole bucket, as a row-time timer does: the row that
		// arrived at processing time 2 is padded with the first row, at 3, its own timer (5) a no-op
		{"cross-domain/bucket", efParams("LEFT", "rowtime", 3, "proctime"), []event{P(0), L(10, "a"), P(2), L(10, "b"), P(3), P(5), W(30), P(100)},
			[]string{"|", "|", "|", "|", padL, pad(true, k1, 10, "b"), "|", "|", "|", "|"}, false},
		// snapshots with a pending early fire and with a fired row: the same output
		{"snapshot", efParams("LEFT", "rowtime", 3, ""), []event{L(10, "a"), S, W(13), S, R(12, "b"), W(30)},
			[]string{"|", padL, "|", padOf("-U", true, k1, 10, "a"), joinedRow("+U", k1, 10, "a", 12, "b"), "|", "|"}, false},
		{"cross-domain/snapshot", efParams("LEFT", "rowtime", 3, "proctime"), []event{P(0), L(10, "a"), S, P(3), S, R(12, "b"), W(30), P(100)},
			[]string{"|", "|", padL, "|", padOf("-U", true, k1, 10, "a"), joinedRow("+U", k1, 10, "a", 12, "b"), "|", "|", "|"}, false},
		// 9.13 with delay 3: a NULL key's left row is padded once at 13, the right row never stored
		{"null-key", efParams("LEFT", "rowtime", 3, ""), []event{{kind: 'L', time: 10, value: "a"}, {kind: 'R', time: 12, value: "b"}, W(13), W(20), W(30)},
			[]string{"|", "|", pad(true, nil, 10, "a"), "|", "|", "|"}, false},
		// row 1: an inner join ignores the hint
		{"inner", efParams("INNER", "rowtime", 3, ""), []event{L(10, "a"), W(13), R(12, "b"), W(30)},
			[]string{"|", "|", joinedRow("+I", k1, 10, "a", 12, "b"), "|", "|"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := runScenarioWith(t, c.p, c.events, scenarioOptions{calls: true, state: efState, noModel: c.noModel})
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Fatalf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

// TestEarlyFireResidualCondition is example 9.10: two left rows of one bucket, a residual
// condition L.v < R.w that only the first passes: both fire, only the first is corrected, and
// neither is padded again at cleanup.
func TestEarlyFireResidualCondition(t *testing.T) {
	p := efParams("LEFT", "rowtime", 3, "")
	p.Condition = &joincore.Expr{Op: "lt", Args: []joincore.Expr{{Op: "field", Field: 2}, {Op: "field", Field: 5}}}
	k1 := int64(1)
	got := runScenarioWith(t, p, []event{
		{kind: 'L', key: k1, time: 10, value: "1"}, {kind: 'L', key: k1, time: 10, value: "5"}, {kind: 'W', time: 13},
		{kind: 'R', key: k1, time: 12, value: "3"}, {kind: 'W', time: 30},
	}, scenarioOptions{calls: true, state: efState, noModel: true})
	want := []string{"|", pad(true, k1, 10, "1"), pad(true, k1, 10, "5"), "|",
		padOf("-U", true, k1, 10, "1"), joinedRow("+U", k1, 10, "1", 12, "3"), "|", "|"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestEarlyFireInnerIgnored: an inner join with the hint keeps no fired bits and registers no
// early-fire timer: its timers are those of the join without the hint.
func TestEarlyFireInnerIgnored(t *testing.T) {
	for _, mode := range []string{"rowtime", "proctime"} {
		with := efParams("INNER", mode, 3, "")
		without := with
		without.EarlyFireDelayMs = nil
		r := rand.New(rand.NewPCG(1, 2))
		evs := randomEvents(r, 300, mode == "rowtime", 20)
		a := runScenarioWith(t, with, evs, scenarioOptions{state: efState})
		b := runScenarioWith(t, without, evs, scenarioOptions{})
		if strings.Join(a, "\n") != strings.Join(b, "\n") {
			t.Fatalf("%s: the hint changed an inner join's output", mode)
		}
		op := openJoin(t, with, 8, 10)
		if op.earlyFire || op.crossDomain {
			t.Fatalf("%s: early fire enabled on an inner join", mode)
		}
	}
}

// crossEvents adds processing-time callbacks of a row-time join to a random stream: its rows
// arrive at the processing times before them; a last callback after everything fires every
// processing-time timer.
func crossEvents(r *rand.Rand, evs []event, spread int64) []event {
	var out []event
	clock := int64(r.IntN(5))
	for _, e := range evs {
		if r.IntN(100) < 15 {
			clock += r.Int64N(spread/2 + 1)
			out = append(out, event{kind: 'P', time: clock})
		}
		out = append(out, e)
	}
	return append(out, event{kind: 'P', time: clock + 1000*spread})
}

// TestEarlyFireAgainstModel: random streams (late rows, NULL keys, rows at times <= 0,
// snapshots) on every join type, each time mode and processing-time early fire on a row-time
// join, with delays below the span, equal to the left and right cleanup offsets and beyond the
// span, against the model, call by call; fired bits stay aligned.
func TestEarlyFireAgainstModel(t *testing.T) {
	type mode struct{ join, fire string }
	for _, jt := range []string{"INNER", "LEFT", "RIGHT", "FULL"} {
		for _, m := range []mode{{"rowtime", ""}, {"proctime", ""}, {"rowtime", "proctime"}} {
			for _, delay := range []int64{0, 1, 3, 6, 10, 40} {
				p := efParams(jt, m.join, delay, m.fire)
				p.FilterNulls = []bool{delay%2 == 0}
				t.Run(fmt.Sprintf("%s/%s/%s/%d", jt, m.join, m.fire, delay), func(t *testing.T) {
					for seed := range 4 {
						r := rand.New(rand.NewPCG(uint64(seed), uint64(delay)))
						spread := int64(20)
						if seed == 3 {
							spread = 400
						}
						evs := randomEventsNulls(r, 400, m.join == "rowtime", spread, 15)
						if m.fire == "proctime" {
							evs = crossEvents(r, evs, spread)
						}
						runScenarioWith(t, p, evs, scenarioOptions{state: efState, runs: seed == 1})
					}
				})
			}
		}
	}
}

// TestEarlyFireEmitNullKeys: with NullKeyEmitImmediately a padded side's NULL-key rows are padded
// on arrival and get no early-fire timer: the same output as the model's as a multiset (row
// times > 0), and no NULL-key row is stored.
func TestEarlyFireEmitNullKeys(t *testing.T) {
	for _, jt := range []string{"LEFT", "RIGHT", "FULL"} {
		for _, fire := range []string{"", "proctime"} {
			p := efParams(jt, "rowtime", 3, fire)
			p.NullKeyEmitImmediately = true
			t.Run(jt+"/"+fire, func(t *testing.T) {
				for seed := range 4 {
					r := rand.New(rand.NewPCG(uint64(seed), 11))
					evs := randomEventsNulls(r, 400, true, 20, 30)
					for i := range evs {
						if evs[i].time != math.MaxInt64 {
							evs[i].time += 1000
						}
					}
					if fire == "proctime" {
						evs = crossEvents(r, evs, 20)
					}
					runScenarioWith(t, p, evs, scenarioOptions{multiset: true, state: nullKeyState})
				}
			})
		}
	}
}

// TestEarlyFireSnapshotCompat: the hint is not part of the state's layout. A snapshot with fired
// bits and pending early fires restores into a join without the hint (the bits are dropped: the
// fired row is padded again at cleanup, as in Flink with the hint removed), and a snapshot
// without bits into a join with the hint (every bit false; restored rows have no early-fire
// timer of their own).
func TestEarlyFireSnapshotCompat(t *testing.T) {
	with := efParams("LEFT", "rowtime", 3, "")
	without := with
	without.EarlyFireDelayMs = nil
	k1 := int64(1)
	out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
	feed := func(op *IntervalJoin, input int, tm int64, v string) []string {
		types := leftTypes
		if input == 1 {
			types = rightTypes
		}
		b := enginetestBatch(types, k1, tm, v)
		more, err := op.Process(engine.Of(input, 2, b), 0, out)
		return drain(t, op, more, err, out)
	}
	advance := func(op *IntervalJoin, wm int64) []string {
		more, err := op.Advance(wm, 0, out)
		return drain(t, op, more, err, out)
	}
	op := openJoin(t, with, 8, 100)
	feed(op, 0, 10, "a")
	feed(op, 0, 11, "b")
	if got := advance(op, 13); len(got) != 1 || got[0] != pad(true, k1, 10, "a") {
		t.Fatalf("WM 13: %v", got)
	}
	op = snapshotRestore(t, op, without, 8) // the early fire of b (14) is pending
	if got := advance(op, 14); len(got) != 0 {
		t.Fatalf("WM 14 without the hint: %v", got)
	}
	if got := feed(op, 1, 12, "x"); len(got) != 2 || !strings.HasPrefix(got[0], "+I") || !strings.HasPrefix(got[1], "+I") {
		t.Fatalf("match without the hint: %v, want two +I", got)
	}
	if got := advance(op, math.MaxInt64); len(got) != 0 {
		t.Fatalf("end without the hint: %v", got)
	}

	op = openJoin(t, without, 8, 100)
	feed(op, 0, 10, "a")
	op = snapshotRestore(t, op, with, 8)
	if got := advance(op, 13); len(got) != 0 {
		t.Fatalf("WM 13, restored without an early-fire timer: %v", got)
	}
	// a new row of the bucket has its bit and its timer (13), which early-fires the whole
	// bucket, the restored row included, as Flink's timer at rowTime + delay does
	feed(op, 0, 10, "c")
	if got := advance(op, 15); len(got) != 2 || got[0] != pad(true, k1, 10, "a") || got[1] != pad(true, k1, 10, "c") {
		t.Fatalf("WM 15: %v", got)
	}
	if got := advance(op, 16); len(got) != 0 {
		t.Fatalf("WM 16 (cleanup): %v", got)
	}
}

// TestEarlyFireNextProcessingTimer: a row-time join with processing-time early fire reports its
// earliest early-fire timer (also right after a restore), fires it on a processing-time callback
// without touching the watermark, and an event-time advance fires none.
func TestEarlyFireNextProcessingTimer(t *testing.T) {
	p := efParams("LEFT", "rowtime", 5, "proctime")
	op := openJoin(t, p, 8, 100)
	out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
	if _, ok := nextProcessingTimer(op); ok {
		t.Fatal("a timer before any row")
	}
	more, err := op.Process(engine.Of(0, 2, enginetestBatch(leftTypes, int64(1), 50, "a")), 100, out)
	drain(t, op, more, err, out)
	more, err = op.Process(engine.Of(0, 2, enginetestBatch(leftTypes, int64(2), 50, "b")), 102, out)
	drain(t, op, more, err, out)
	if ms, ok := nextProcessingTimer(op); !ok || ms != 105 {
		t.Fatalf("next timer %d %v, want 105", ms, ok)
	}
	op = snapshotRestore(t, op, p, 8)
	if ms, ok := nextProcessingTimer(op); !ok || ms != 105 {
		t.Fatalf("after restore: next timer %d %v, want 105", ms, ok)
	}
	more, err = op.Advance(40, 1000, out) // an event-time advance: no processing-time timer
	if got := drain(t, op, more, err, out); len(got) != 0 {
		t.Fatalf("WM 40: %v", got)
	}
	more, err = op.Advance(math.MinInt64, 105, out)
	if got := drain(t, op, more, err, out); len(got) != 1 || got[0] != pad(true, int64(1), 50, "a") {
		t.Fatalf("processing time 105: %v", got)
	}
	if op.watermark != 40 {
		t.Fatalf("the processing-time callback moved the watermark to %d", op.watermark)
	}
	if ms, ok := nextProcessingTimer(op); !ok || ms != 107 {
		t.Fatalf("next timer %d %v, want 107", ms, ok)
	}
}

func TestEarlyFireParams(t *testing.T) {
	cases := []struct {
		p    Params
		want string
	}{
		{efParams("LEFT", "proctime", 3, "rowtime"), "params.early_fire_time_mode: rowtime on a proctime join"},
		{efParams("LEFT", "rowtime", 3, "wall"), "params.early_fire_time_mode: \"wall\""},
	}
	for _, c := range cases {
		spec, err := engine.ParseSpec(specJSON(c.p, 8, 10))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := enginetest.Open(spec); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
	for _, c := range []struct {
		p              Params
		enabled, cross bool
	}{
		{efParams("LEFT", "rowtime", 3, ""), true, false},
		{efParams("FULL", "rowtime", 0, "proctime"), true, true},
		{efParams("RIGHT", "proctime", 3, "proctime"), true, false},
		{efParams("INNER", "rowtime", 3, "proctime"), false, false},
		{efParams("LEFT", "rowtime", -1, ""), false, false},
	} {
		op := openJoin(t, c.p, 8, 10)
		if op.earlyFire != c.enabled || op.crossDomain != c.cross {
			t.Errorf("%+v: enabled %v cross %v", c.p, op.earlyFire, op.crossDomain)
		}
		without := c.p
		without.EarlyFireDelayMs, without.EarlyFireTimeMode = nil, ""
		if op.State().Fingerprint() != openJoin(t, without, 8, 10).State().Fingerprint() {
			t.Errorf("%+v: the hint changes the state fingerprint", c.p)
		}
	}
}
